"""`pitstop hook …`: the harness hooks (Claude Code, Codex) and their installation.

`hook claude-code` and `hook codex` are what the harness runs; `tui.launch` answers them
without loading click when it can, and these commands are the same thing for every other way
in (`pitstop --store DIR hook claude-code`, tests). `hook install|uninstall|status` edit Claude
Code's settings files, touching only Pitstop's own entries.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tui.cli.base import Context, F, emit, json_option, pass_ctx


@click.group()
def hook() -> None:
    """Harness hooks: Claude Code and Codex feed Pitstop and are guarded by it."""


@hook.command("claude-code")
@click.option("--event", "event_hint", help="The event this hook is installed for (fail-safe).")
@pass_ctx
def hook_claude_code(ctx: Context, event_hint: str | None) -> None:
    """Answer one Claude Code hook event read as JSON from stdin.

    \b
    Exit 0: go on (a blocked command is a JSON "deny" decision on stdout).
    Exit 2: blocked because Pitstop could not decide (the reason is on stderr).
    """
    from core.harness.claude_code import claude_code
    from core.harness.context import HookContext
    from tui.launch import emit_reply

    reply = claude_code(sys.stdin.buffer.read(), HookContext(store=ctx.store), event_hint)
    sys.exit(emit_reply(reply))


@hook.command("codex")
@click.argument("payload", required=False)
@click.option("--event", "event_hint", help="The event this hook is installed for (fail-safe).")
@pass_ctx
def hook_codex(ctx: Context, payload: str | None, event_hint: str | None) -> None:
    """Codex's hooks: notify (evidence of the finished turn and a checkpoint) and PreToolUse.

    \b
    Set `notify = ["pitstop", "hook", "codex"]` in ~/.codex/config.toml, and a PreToolUse
    command hook `pitstop hook codex --event PreToolUse` in ~/.codex/hooks.json.
    A notification always exits 0; a PreToolUse refusal is a JSON "deny" decision (exit 0),
    and a guard that cannot decide exits 2 with the reason on stderr.
    """
    from core.harness.codex import codex_notify
    from core.harness.context import HookContext
    from tui.launch import emit_reply

    text = payload if payload is not None else sys.stdin.read()
    sys.exit(emit_reply(codex_notify(text, HookContext(store=ctx.store), event_hint)))


def _scope_option(func: F) -> F:
    func = click.option(
        "--user", "scope", flag_value="user", help="~/.claude/settings.json (every project)."
    )(func)
    return click.option(
        "--project",
        "scope",
        flag_value="project",
        default=True,
        help=".claude/settings.json of this repository (the default).",
    )(func)


def _harness_argument(func: F) -> F:
    return click.argument("harness", type=click.Choice(["claude-code", "codex"]))(func)


def _program() -> str:
    """The absolute path of the `pitstop` this command runs as, for the hooks to name.

    Claude Code may be started where this virtualenv is not on PATH (an IDE, another shell), so
    the hooks never name a bare `pitstop`: the script this process was started as, else the
    `pitstop` beside this interpreter, else the one on PATH. The path is made absolute but its
    symlinks are kept (a pipx shim stays valid across reinstalls).
    """
    import os
    import shutil
    from pathlib import Path

    from core.errors import UsageError

    candidates = []
    if sys.argv and Path(sys.argv[0]).name == "pitstop":
        candidates.append(shutil.which(sys.argv[0]) if os.sep not in sys.argv[0] else sys.argv[0])
    candidates += [str(Path(sys.executable).parent / "pitstop"), shutil.which("pitstop")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return os.path.abspath(candidate)
    raise UsageError(
        "cannot find the `pitstop` program this runs as, for the hooks to name; "
        "install Pitstop with pip (it creates a `pitstop` script), then run this again"
    )


@hook.command("install")
@_harness_argument
@_scope_option
@json_option
def hook_install(harness: str, scope: str, as_json: bool) -> None:
    """Add Pitstop's hooks to the harness's settings, leaving other hooks untouched.

    \b
    claude-code: .claude/settings.json (--user: ~/.claude/settings.json).
    codex: .codex/hooks.json (--user: $CODEX_HOME/hooks.json), and `notify` in
    $CODEX_HOME/config.toml unless another program is set there.
    """
    from core.harness import install as settings

    program = _program()
    path = _hooks_path(harness, scope)
    if harness == "codex":
        settings.check_codex_config()  # a damaged config.toml: refused before anything is written
    added = settings.install(path, program, harness)
    notify = settings.install_codex_notify(program) if harness == "codex" else None
    document: dict[str, object] = {"harness": harness, "settings": str(path), "added": added}
    if notify is not None:
        document["notify"] = notify

    def human() -> str:
        done = (
            f"installed Pitstop's hooks in {path} ({', '.join(added)})"
            if added
            else f"Pitstop's hooks were already installed in {path}; nothing changed"
        )
        return f"{done}\n{notify}" if notify else done

    emit(as_json, document, human)


def _hooks_path(harness: str, scope: str) -> Path:
    """Where the harness reads its hooks for this scope."""
    from core.harness import install as settings

    if harness == "codex":
        return settings.codex_hooks_path(scope)
    return settings.settings_path(scope)


@hook.command("uninstall")
@_harness_argument
@_scope_option
@json_option
def hook_uninstall(harness: str, scope: str, as_json: bool) -> None:
    """Remove exactly Pitstop's hooks from the harness's settings (and Codex's notify)."""
    from core.harness import install as settings

    path = _hooks_path(harness, scope)
    removed = settings.uninstall(path, harness)
    if harness == "codex" and settings.uninstall_codex_notify():
        removed.append("notify")
    emit(
        as_json,
        {"harness": harness, "settings": str(path), "removed": removed},
        lambda: (
            f"removed Pitstop's hooks from {path} ({', '.join(removed)})"
            if removed
            else f"no Pitstop hook in {path}; nothing changed"
        ),
    )


@hook.command("status")
@click.argument("harness", required=False, type=click.Choice(["claude-code", "codex"]))
@json_option
def hook_status(harness: str | None, as_json: bool) -> None:
    """Show where Pitstop's hooks are installed."""
    from core.harness import install as hook_settings

    places = []
    for name in ("claude-code", "codex"):
        if harness not in (None, name):
            continue
        for scope in ("project", "user"):
            path = _hooks_path(name, scope)
            events = hook_settings.installed_events(path, name) if path.exists() else []
            missing = [e for e, _ in hook_settings.EVENTS[name] if e not in events]
            programs = hook_settings.installed_programs(path, name)
            places.append(
                {
                    "harness": name,
                    "scope": scope,
                    "settings": str(path),
                    "events": events,
                    "missing": missing if events else [],
                    "programs": programs,
                    "missing_programs": [p for p in programs if hook_settings.missing_program(p)],
                }
            )
    codex = hook_settings.codex_notify_installed() if harness in (None, "codex") else None
    document = {
        "claude_code": [p for p in places if p["harness"] == "claude-code"],
        "codex": [p for p in places if p["harness"] == "codex"],
        "codex_notify": codex,
    }

    def human() -> str:
        lines = []
        for place in places:
            state = (
                "not installed"
                if not place["events"]
                else "installed"
                + (f" (missing: {', '.join(place['missing'])})" if place["missing"] else "")
            )
            lines.append(
                f"{place['harness']:<12} {place['scope']:<8} {state:<14} {place['settings']}"
            )
        if harness in (None, "codex"):
            said = {True: "installed", False: "not installed", None: "no Codex config"}[codex]
            lines.append(f"codex        notify   {said}")
        return "\n".join(lines)

    emit(as_json, document, human)
    for place in places:
        for program in place["missing_programs"]:
            flag = " --user" if place["scope"] == "user" else ""
            click.echo(
                f"warning: the hooks in {place['settings']} run {program}, which cannot be "
                f"found, so {place['harness']} cannot start Pitstop: run "
                f"`pitstop hook install {place['harness']}{flag}` again",
                err=True,
            )
