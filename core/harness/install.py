"""Installing Pitstop's hooks into a harness's settings, and reading whether they are there.

Claude Code reads its hooks from `.claude/settings.json` (the project's, or the user's), a file
people also edit by hand: install and uninstall touch exactly Pitstop's own entries, keep every
other hook as it was, rewrite the file only when something changed (atomically, keeping its
mode), and refuse a file they cannot read rather than overwrite it. Codex reads the same shape
from `hooks.json` (its home's, or the project's `.codex/`), and runs one `notify` program from
its `config.toml`: Pitstop sets it when nobody else has, and never replaces someone else's.

A guard must not fail open when Pitstop cannot start. Claude Code runs a hook's command through
a shell and blocks a tool call only on exit code 2; a program that is not found exits 127, a
Python that cannot start exits 1, and both let the call through. So the command names the
absolute path of the `pitstop` it was installed from (Claude Code may be started without the
virtualenv on PATH), and the guard's command ends in `|| exit 2`: whatever keeps the guard from
answering blocks the call. Observations (a turn ended, a command ran) get no such suffix: exit 2
from them would stop a turn or a prompt, and a missing observer must not stop the agent.
Installing again rewrites Pitstop's own entries written by an older version into this form.

Never on a hook's path: only `pitstop hook install|uninstall|status` load it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path

from core.errors import UsageError
from core.harness.context import CLAUDE_CODE, CODEX

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

# Every Claude Code event `hook install` subscribes to, with its matcher (None: all).
CLAUDE_CODE_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("SessionStart", None),
    ("UserPromptSubmit", None),
    ("PreToolUse", "Bash|Write|Edit|MultiEdit|NotebookEdit"),
    ("PostToolUse", "Bash"),
    ("PostToolUseFailure", "Bash"),
    ("Notification", None),
    ("PermissionRequest", None),
    ("Stop", None),
    ("PreCompact", None),
    ("SessionEnd", None),
)
# Codex's `hooks.json` speaks Claude Code's protocol for the events it has (0.124 and later).
CODEX_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("SessionStart", None),
    ("PreToolUse", "Bash|apply_patch"),
    ("PostToolUse", "Bash"),
    ("Stop", None),
    ("PreCompact", None),
    ("SessionEnd", None),
)
EVENTS = {CLAUDE_CODE: CLAUDE_CODE_EVENTS, CODEX: CODEX_EVENTS}
HOOK_TIMEOUT_S = 60
# A permission prompt is held open while someone decides in Pitstop (`[hooks]
# permission_wait_seconds`, at most `core.config.MAX_HOOK_WAIT_SECONDS`): its hook may run long.
EVENT_TIMEOUT_S = {"PermissionRequest": 600}
# Events whose hook decides whether a tool call runs: a hook that cannot start must block them.
GUARD_EVENTS = frozenset({"PreToolUse"})
# Claude Code blocks a tool call when its PreToolUse hook exits with this code (and only this).
BLOCKING_EXIT = 2
# Matchers earlier versions installed, upgraded in place when the group is Pitstop's alone.
_OLD_MATCHERS = {"PreToolUse": ("Bash",)}


def hook_command(event: str, program: str = "pitstop", harness: str = CLAUDE_CODE) -> str:
    """The command line Claude Code runs (through a shell) for one event.

    A guard's command ends in `|| exit 2`, so a `pitstop` that is missing or cannot start
    blocks the tool call instead of letting it through.
    """
    command = f"{shlex.quote(program)} hook {harness} --event {event}"
    return f"{command} || exit {BLOCKING_EXIT}" if event in GUARD_EVENTS else command


def _command_words(hook: Any) -> list[str] | None:
    """The words of a hook entry's command line, or None when it has none."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return None
    command: str = hook["command"]
    try:
        return shlex.split(command)
    except ValueError:  # unbalanced quotes: not a command Pitstop wrote
        return command.split()


def is_pitstop_hook(hook: Any, harness: str = CLAUDE_CODE) -> bool:
    """True for a hook entry that Pitstop installed (`… pitstop hook <harness> …`)."""
    words = _command_words(hook)
    return (
        words is not None
        and len(words) >= 3
        and os.path.basename(words[0]) == "pitstop"
        and words[1:3] == ["hook", harness]
    )


def installed_programs(path: Path, harness: str = CLAUDE_CODE) -> list[str]:
    """The programs the settings file's Pitstop hooks run (each once, in file order)."""
    data = _read_settings(path) if path.exists() else {}
    found: list[str] = []
    for groups in data.get("hooks", {}).values():
        for group in groups:
            for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                words = _command_words(hook)
                if is_pitstop_hook(hook, harness) and words and words[0] not in found:
                    found.append(words[0])
    return found


def missing_program(program: str) -> bool:
    """True when an installed hook's program cannot be started: its path is gone (or, for a
    bare name, it is not on PATH)."""
    if os.sep not in program:
        return shutil.which(program) is None
    return not os.access(program, os.X_OK)


def settings_path(scope: str, project_dir: Path | None = None) -> Path:
    """`.claude/settings.json` of the project (its git top level) or `~/.claude/settings.json`."""
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope != "project":
        raise UsageError(f"unknown scope {scope!r}: use --project or --user")
    start = (project_dir or Path.cwd()).absolute()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate / ".claude" / "settings.json"
    return start / ".claude" / "settings.json"


def _read_settings(path: Path) -> dict[str, Any]:
    """A settings file's JSON object (empty when absent); a damaged file is refused, untouched."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise UsageError(
            f"{path} is not valid JSON ({exc}); fix it first, nothing changed"
        ) from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object; nothing changed")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise UsageError(f'{path}: "hooks" is not an object of event lists; nothing changed')
    return data


def _write_settings(path: Path, data: dict[str, Any]) -> None:
    """Replace the settings file atomically, keeping its permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.pitstop-tmp")
    temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if path.exists():
        os.chmod(temporary, path.stat().st_mode & 0o7777)
    os.replace(temporary, path)


def installed_events(path: Path, harness: str = CLAUDE_CODE) -> list[str]:
    """The events for which the settings file runs Pitstop's hook."""
    data = _read_settings(path)
    return [
        event
        for event, groups in data.get("hooks", {}).items()
        if any(
            is_pitstop_hook(hook, harness)
            for group in groups
            if isinstance(group, dict)
            for hook in group.get("hooks", [])
        )
    ]


def install(path: Path, program: str = "pitstop", harness: str = CLAUDE_CODE) -> list[str]:
    """Add Pitstop's hook to every event it uses, leaving other hooks as they are; idempotent.

    Returns the events added or brought up to date (an older matcher, program or command form);
    empty when everything was already installed: the file is then not rewritten.
    """
    data = _read_settings(path)
    present = set(installed_events(path, harness)) if path.exists() else set()
    added = []
    hooks: dict[str, Any] = data.setdefault("hooks", {})
    for event, matcher in EVENTS[harness]:
        if event in present:
            upgraded = _upgrade_matcher(hooks.get(event, []), event, matcher)
            command = hook_command(event, program, harness)
            if _upgrade_commands(hooks.get(event, []), command, harness) or upgraded:
                added.append(event)
            continue
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [
            {
                "type": "command",
                "command": hook_command(event, program, harness),
                "timeout": EVENT_TIMEOUT_S.get(event, HOOK_TIMEOUT_S),
            }
        ]
        hooks.setdefault(event, []).append(group)
        added.append(event)
    if added:
        _write_settings(path, data)
    return added


def _upgrade_matcher(groups: list[Any], event: str, matcher: str | None) -> bool:
    """Give Pitstop's own group of `event` the matcher this version needs (not a shared group)."""
    changed = False
    for group in groups:
        if (
            isinstance(group, dict)
            and group.get("matcher") in _OLD_MATCHERS.get(event, ())
            and isinstance(group.get("hooks"), list)
            and group["hooks"]
            and all(is_pitstop_hook(hook) for hook in group["hooks"])
        ):
            group["matcher"] = matcher
            changed = True
    return changed


def _upgrade_commands(groups: list[Any], command: str, harness: str = CLAUDE_CODE) -> bool:
    """Rewrite Pitstop's own entries of one event to `command` (an older program or form)."""
    changed = False
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        for hook in group["hooks"]:
            if is_pitstop_hook(hook, harness) and hook["command"] != command:
                hook["command"] = command
                changed = True
    return changed


def uninstall(path: Path, harness: str = CLAUDE_CODE) -> list[str]:
    """Remove exactly Pitstop's hooks (and the groups and events only they filled); idempotent."""
    if not path.exists():
        return []
    data = _read_settings(path)
    hooks = data.get("hooks", {})
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        kept_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            kept = [hook for hook in group["hooks"] if not is_pitstop_hook(hook, harness)]
            if len(kept) == len(group["hooks"]):
                kept_groups.append(group)
            elif kept:
                kept_groups.append({**group, "hooks": kept})
        if len(kept_groups) != len(groups) or kept_groups != groups:
            removed.append(event)
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if not removed:
        return []
    if not hooks:
        del data["hooks"]
    _write_settings(path, data)
    return removed


def codex_notify_installed(env: Mapping[str, str] | None = None) -> bool | None:
    """Whether Codex's `config.toml` runs `pitstop hook codex` as its notify program."""
    import tomllib

    path = codex_home(env) / "config.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    notify = data.get("notify")
    return isinstance(notify, list) and any("pitstop" in str(word) for word in notify[:2])


# --- Codex ------------------------------------------------------------------------------------


def codex_home(env: Mapping[str, str] | None = None) -> Path:
    """Codex's own directory: `$CODEX_HOME`, else `~/.codex`."""
    environment = env if env is not None else os.environ
    return Path(environment.get("CODEX_HOME") or Path.home() / ".codex")


def codex_hooks_path(scope: str, project_dir: Path | None = None) -> Path:
    """The `hooks.json` Codex reads: the project's `.codex/` (its git top level) or Codex's home."""
    if scope == "user":
        return codex_home() / "hooks.json"
    return settings_path(scope, project_dir).parent.parent / ".codex" / "hooks.json"


def notify_line(program: str) -> str:
    """Codex's `notify` setting that runs Pitstop after every turn."""
    return "notify = " + json.dumps([program, "hook", CODEX])


def check_codex_config(env: Mapping[str, str] | None = None) -> None:
    """Refuse, before anything is written, a Codex `config.toml` that is not valid TOML."""
    import tomllib

    path = codex_home(env) / "config.toml"
    try:
        tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid TOML ({exc}); nothing changed") from exc


def install_codex_notify(program: str, env: Mapping[str, str] | None = None) -> str:
    """Make Codex's `config.toml` run Pitstop as its `notify` program; what was done, in words.

    Codex runs one notify program. One someone else set is kept (they chain Pitstop themselves);
    Pitstop's own, one line, is rewritten to `program`; none: the line goes first in the file,
    where TOML keeps top-level keys.
    """
    import tomllib

    path = codex_home(env) / "config.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        notify = tomllib.loads(text).get("notify")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{path} is not valid TOML ({exc}); fix it first, nothing changed"
        ) from exc
    line = notify_line(program)
    lines = text.splitlines()
    mine = _notify_line_number(lines, notify)
    if notify is None:
        lines.insert(0, line)
    elif _is_pitstop_notify(notify) and mine is not None:
        if lines[mine].strip() == line:
            return f"{path} already runs Pitstop after every turn"
        lines[mine] = line
    else:
        return f"{path} keeps its own notify program ({notify!r}); add Pitstop to it yourself"
    _write_text(path, "\n".join(lines) + "\n")
    return f"{path} runs Pitstop after every turn"


def uninstall_codex_notify(env: Mapping[str, str] | None = None) -> bool:
    """Remove Pitstop's `notify` line from Codex's `config.toml`; True when one was removed."""
    import tomllib

    path = codex_home(env) / "config.toml"
    try:
        text = path.read_text(encoding="utf-8")
        notify = tomllib.loads(text).get("notify")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    lines = text.splitlines()
    mine = _notify_line_number(lines, notify)
    if not _is_pitstop_notify(notify) or mine is None:
        return False
    del lines[mine]
    _write_text(path, "\n".join(lines) + ("\n" if lines else ""))
    return True


def _notify_line_number(lines: list[str], notify: Any) -> int | None:
    """The one line that sets `notify` by itself (None: several, or spread over lines)."""
    import tomllib

    found = [n for n, text in enumerate(lines) if text.strip().startswith("notify")]
    if len(found) != 1:
        return None
    try:
        alone = tomllib.loads(lines[found[0]]).get("notify")
    except tomllib.TOMLDecodeError:
        return None
    return found[0] if alone == notify else None


def _is_pitstop_notify(notify: Any) -> bool:
    return (
        isinstance(notify, list)
        and len(notify) >= 3
        and os.path.basename(str(notify[0])) == "pitstop"
        and [str(word) for word in notify[1:3]] == ["hook", CODEX]
    )


def _write_text(path: Path, text: str) -> None:
    """Replace a file atomically, keeping its permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.pitstop-tmp")
    temporary.write_text(text, encoding="utf-8")
    if path.exists():
        os.chmod(temporary, path.stat().st_mode & 0o7777)
    os.replace(temporary, path)
