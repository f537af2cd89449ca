"""The guard's self-protection: an agent's tool calls may not decide, settle or share for its
operator, point Pitstop at another store or identity, or write Pitstop's own files.

Every case goes through `claude_code` (or `codex_notify`), the function the installed hook's
entry point calls, with the JSON a harness sends; tests/tui/test_cli_hooks.py runs the real
process for a few of them. A string that spells a deciding Pitstop command is refused even when
nothing obviously runs it (`echo "pitstop approval approve …"`): nobody can tell statically
whether `eval`, `xargs` or a script will, so the guard errs on the side of refusing.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.harness.claude_code import claude_code
from core.harness.codex import codex_notify
from core.harness.context import HookContext, HookReply

SESSION = "0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9"


def pre_tool_use(cwd: Path | str, tool: str = "Bash", **tool_input: Any) -> bytes:
    """A PreToolUse event as Claude Code sends it."""
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": str(Path(cwd) / "transcript.jsonl"),
            "cwd": str(cwd),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": "toolu_01ABCDEFGHJKLMNPQRSTUVWX",
        }
    ).encode()


def answer(raw: bytes) -> HookReply:
    return claude_code(raw, HookContext())


def refusal(reply: HookReply) -> str | None:
    """The deny reason of a reply (None: the call may go on)."""
    assert reply.exit_code == 0, reply.stderr
    if not reply.stdout:
        return None
    output = json.loads(reply.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == "deny"
    reason: str = output["permissionDecisionReason"]
    return reason


def bash(command: str, cwd: Path | str) -> str | None:
    return refusal(answer(pre_tool_use(cwd, command=command)))


# --- forbidden commands, however they are wrapped -----------------------------------------------

FORBIDDEN = [
    "approval approve demo:1 --reason ok",
    "approval reject demo:1 --reason no",
    "effect confirm --task demo --key deploy:1 --reason done",
    "effect fail --task demo --key deploy:1 --reason nope",
    "effect check --task demo --key deploy:1 --check true",
    "task share demo --recipient age1qqqq",
    "task unshare demo --recipient age1qqqq",
    "task accept demo",
    "task cancel demo",
    "key init",
    "key export",
    "remote add origin /srv/shared.git",
    "hook uninstall claude-code",
    "sync",
    "push --remote origin",
    "gc",
    "doctor --fix",
]
# (what comes before the line, how Pitstop is named)
SPELLINGS = [
    ("", "pitstop"),
    ("", "/usr/local/bin/pitstop"),
    ("", ".venv/bin/pitstop"),
    ("", "python -m tui.cli"),
    ("", "python3 -mtui.launch"),
    ("", "p''itstop"),
    ("", '"pitstop"'),
    ("", "pit\\stop"),
    ("", "$(printf pit)stop"),
    ("", "`echo pitstop`"),
    ("", "uv run pitstop"),
    ("", "pitstop --store /tmp/elsewhere"),
    ("P=pitstop; ", "$P"),
    ("a=pit b=stop; ", "${a}${b}"),
]
PREFIXES = [
    "", "FOO=1 ", "env ", "env -i PATH=/usr/bin ", "command ", "sudo ", "sudo -u me ",
    "nohup ", "time ", "nice -n 5 ", "timeout 5 ", "exec ", "xargs -n1 ", "setsid ",
]  # fmt: skip


def _double_quoted(text: str) -> str:
    return '"' + "".join("\\" + c if c in '"\\$`' else c for c in text) + '"'


WRAPPINGS = [
    lambda c: c,
    lambda c: f"sh -c {shlex.quote(c)}",
    lambda c: f"bash -lc {_double_quoted(c)}",
    lambda c: f"echo $({c})",
    lambda c: f'echo "$({c})"',
    lambda c: f"echo `{c}`",
    lambda c: f"true && {c}",
    lambda c: f"false || {c}",
    lambda c: f"cd /tmp; {c}",
    lambda c: f"cat ids.txt | {c}",
    lambda c: f"{c} &",
    lambda c: f"({c})",
    lambda c: f"{{ {c}; }}",
    lambda c: f"eval {shlex.quote(c)}",
    lambda c: f"git status\n{c}",
    lambda c: f"{c} \\\n  --yes",
    lambda c: f"bash <<'EOF'\n{c}\nEOF",
    lambda c: f"env -S {shlex.quote(c)}",
]


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    verb=st.sampled_from(FORBIDDEN),
    spelling=st.sampled_from(SPELLINGS),
    prefix=st.sampled_from(PREFIXES),
    wraps=st.lists(st.sampled_from(WRAPPINGS), min_size=1, max_size=2),
)
def test_forbidden_commands_are_refused_however_wrapped(
    tmp_path: Path, verb: str, spelling: tuple[str, str], prefix: str, wraps: list[Any]
) -> None:
    preamble, program = spelling
    command = f"{preamble}{prefix}{program} {verb}"
    for wrap in wraps:
        command = wrap(command)
    reason = bash(command, tmp_path)
    assert reason is not None, command
    assert "operator" in reason and "pitstop" in reason


def test_refusal_names_the_operators_command(tmp_path: Path) -> None:
    reason = bash("FOO=1 sh -c 'pitstop approval approve demo:1 --reason ok'", tmp_path)
    assert reason is not None
    assert "deciding an approval" in reason
    assert "`pitstop approval approve demo:1 --reason ok`" in reason
    assert "Ask your operator" in reason
    assert not Path(os.environ["PITSTOP_HOME"]).exists()  # decided without opening the store


ALLOWED = [
    "git status",
    "pytest -q",
    "python -m pytest tests",
    "pitstop task show demo",
    "pitstop task list --json",
    "pitstop task start --repo . 'fix the bug'",
    "grep pitstop README.md",
    "grep -rn 'approval approve' docs/",
    "pitstop approval list",
    "pitstop approval show demo:1",
    "pitstop approval request --task demo 'deploy to prod'",
    "pitstop checkpoint --task demo --note 'tests pass'",
    "pitstop checkpoints demo",
    "pitstop effect guard --task demo --key deploy:1 --kind deploy --check ./is-up -- ./deploy",
    "pitstop effect list --task demo",
    "pitstop evidence add --task demo --label tests < out.txt",
    "pitstop validate demo",
    "pitstop log --task demo",
    "pitstop key show",
    "pitstop remote list",
    "pitstop run -- pytest -q",
    "pitstop --version",
    "pitstop approval --help",
    "ls ~/.local/share/pitstop",
    'cat "$PITSTOP_HOME/README"',
    'cp "$PITSTOP_CONFIG_DIR/config.toml" /tmp/config-copy.toml',
    "rm -rf build dist",
    "echo done > out.txt",
    "sed -i s/old/new/ src/app.py",
    "mkdir -p /tmp/pitstop-scratch && touch /tmp/pitstop-scratch/x",
    "git commit -m 'guard: refuse more'",
]


@pytest.mark.parametrize("command", ALLOWED)
def test_ordinary_commands_are_allowed(repo: Path, command: str) -> None:
    assert bash(command, repo) is None


def test_a_deciding_command_in_a_string_is_refused_too(repo: Path) -> None:
    # Documented choice: the guard cannot know whether a string will be run, so it refuses it.
    assert bash('echo "pitstop approval approve demo:1"', repo) is not None
    assert bash("git commit -m 'run pitstop effect confirm later'", repo) is not None


# --- Pitstop's variables ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "PITSTOP_CONFIG_DIR=/tmp/other pitstop approval list",
        "PITSTOP_HOME=/tmp/other pitstop task show demo",
        "env PITSTOP_IDENTITY=AGE-SECRET-KEY-1XYZ pitstop task show demo",
        "export PITSTOP_SIGNING_KEY=abc; pitstop checkpoint --task demo",
        "PITSTOP_KEY=abc python -m tui.cli task list",
        "sh -c 'PITSTOP_CONFIG_DIR=/tmp/c pitstop approval list'",
    ],
)
def test_pitstop_variables_for_pitstop_are_refused(repo: Path, command: str) -> None:
    reason = bash(command, repo)
    assert reason is not None and "PITSTOP_" in reason


def test_pitstop_variables_without_pitstop_are_allowed(repo: Path) -> None:
    assert bash("PITSTOP_HOME=/tmp/x pytest -q", repo) is None


# --- writes under the store and the config dir ----------------------------------------------------


@pytest.fixture
def dirs(isolated_env: dict[str, Path]) -> dict[str, Path]:
    """The store and config dir of this test (both exist), and the default config dir."""
    isolated_env["store"].mkdir()
    (isolated_env["store"] / "pitstop.db").write_text("")
    (isolated_env["config"] / "config.toml").write_text("")
    return {
        "store": isolated_env["store"],
        "config": isolated_env["config"],
        "default_config": Path(os.environ["HOME"]) / ".config" / "pitstop",
    }


@pytest.mark.parametrize(
    "template",
    [
        "echo '[operator]' > {config}/config.toml",
        "printf x >> {config}/config.toml",
        "echo x 2> {store}/pitstop.db",
        "echo x &> {store}/log",
        "echo x | tee -a {config}/config.toml",
        "cp /tmp/evil.toml {config}/config.toml",
        "cp -t {config} /tmp/config.toml",
        "mv {store}/pitstop.db /tmp/",
        "rm -f {store}/pitstop.db",
        "rm -rf {store}/..",
        "sqlite3 {store}/pitstop.db \"UPDATE approvals SET state='approved'\"",
        "sed -i 's/name = .*/name = \"me\"/' {config}/config.toml",
        "perl -pi -e 's/a/b/' {config}/config.toml",
        "dd if=/dev/zero of={store}/pitstop.db",
        "truncate -s 0 {store}/pitstop.db",
        "git -C {store}/repos/demo update-ref refs/heads/x HEAD",
        "python3 -c \"open('{store}/pitstop.db', 'w')\"",
        "echo x > ~/.config/pitstop/config.toml",
        "echo x > $HOME/.config/pitstop/config.toml",
        "echo x > ${{HOME}}/.config/pitstop/config.toml",
        "echo x > $PITSTOP_HOME/pitstop.db",
        "cd {store} && rm pitstop.db",
        "cd {store}/.. && rm -f _store/pitstop.db",
        "cd {config}; echo x > config.toml",
        "rm {store}/*.db",
        "sh -c 'echo x > {config}/config.toml'",
        'bash -lc "cd {store}; touch new"',
    ],
)
def test_shell_writes_under_pitstops_dirs_are_refused(
    repo: Path, dirs: dict[str, Path], template: str
) -> None:
    command = template.format(store=dirs["store"], config=dirs["config"])
    reason = bash(command, repo)
    assert reason is not None, command
    assert "Pitstop's own directory" in reason


def test_writes_through_a_symlink_and_a_relative_path_are_refused(
    tmp_path: Path, dirs: dict[str, Path]
) -> None:
    link = tmp_path / "innocent"
    link.symlink_to(dirs["config"])
    assert bash(f"echo x > {link}/config.toml", tmp_path) is not None
    assert bash("echo x > innocent/config.toml", tmp_path) is not None
    assert bash("echo x > _store/pitstop.db", tmp_path) is not None
    assert bash("echo x > elsewhere.txt", tmp_path) is None
    assert bash(f"cat {link}/config.toml", tmp_path) is None  # reading is not refused


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit"])
def test_claude_code_file_tools_under_pitstops_dirs_are_refused(
    tmp_path: Path, repo: Path, dirs: dict[str, Path], tool: str
) -> None:
    link = tmp_path / "innocent"
    link.symlink_to(dirs["store"])
    for path in (
        dirs["config"] / "config.toml",
        dirs["store"] / "pitstop.db",
        dirs["default_config"] / "config.toml",
        link / "pitstop.db",
    ):
        reason = refusal(answer(pre_tool_use(repo, tool, file_path=str(path), content="x")))
        assert reason is not None and "Pitstop's own directory" in reason, path
    assert refusal(answer(pre_tool_use(repo, tool, file_path=str(repo / "README.md")))) is None


def test_notebook_edit_under_the_store_is_refused(repo: Path, dirs: dict[str, Path]) -> None:
    raw = pre_tool_use(repo, "NotebookEdit", notebook_path=str(dirs["store"] / "x.ipynb"))
    assert refusal(answer(raw)) is not None
    raw = pre_tool_use(repo, "NotebookEdit", notebook_path=str(repo / "x.ipynb"))
    assert refusal(answer(raw)) is None


def test_other_tools_are_not_judged(repo: Path, dirs: dict[str, Path]) -> None:
    raw = pre_tool_use(repo, "Read", file_path=str(dirs["config"] / "config.toml"))
    assert answer(raw) == HookReply()


# --- Codex --------------------------------------------------------------------------------------


def codex_event(cwd: Path, tool: str, command: str) -> str:
    """A PreToolUse event as Codex sends it (codex-rs/hooks pre-tool-use.command.input)."""
    return json.dumps(
        {
            "session_id": "019d47e6-a041-7600-99af-0233fda42b43",
            "turn_id": "turn-1",
            "transcript_path": None,
            "cwd": str(cwd),
            "hook_event_name": "PreToolUse",
            "model": "gpt-5",
            "permission_mode": "default",
            "tool_name": tool,
            "tool_input": {"command": command},
            "tool_use_id": "call_abc123",
        }
    )


def test_codex_bash_and_apply_patch_are_guarded(repo: Path, dirs: dict[str, Path]) -> None:
    reply = codex_notify(codex_event(repo, "Bash", "pitstop approval approve a:1"), HookContext())
    assert refusal(reply) is not None
    patch = (
        f"*** Begin Patch\n*** Update File: {dirs['config']}/config.toml\n@@\n-a\n+b\n"
        "*** End Patch\n"
    )
    assert refusal(codex_notify(codex_event(repo, "apply_patch", patch), HookContext()))
    moved = "*** Begin Patch\n*** Update File: a.py\n*** Move to: ../_store/x\n*** End Patch\n"
    assert refusal(codex_notify(codex_event(repo, "apply_patch", moved), HookContext()))
    inside = "*** Begin Patch\n*** Add File: src/new.py\n+x = 1\n*** End Patch\n"
    assert refusal(codex_notify(codex_event(repo, "apply_patch", inside), HookContext())) is None
    assert codex_notify(codex_event(repo, "Bash", "git status"), HookContext()) == HookReply()


def test_codex_patch_moving_into_the_store_is_refused(
    tmp_path: Path, dirs: dict[str, Path]
) -> None:
    moved = "*** Begin Patch\n*** Update File: a.py\n*** Move to: _store/x\n*** End Patch\n"
    assert refusal(codex_notify(codex_event(tmp_path, "apply_patch", moved), HookContext()))


def test_codex_damaged_guard_input_blocks(repo: Path) -> None:
    reply = codex_notify('{"hook_event_name": "PreToolUse", "tool_', HookContext())
    assert reply.exit_code == 2 and "blocked to be safe" in reply.stderr
    reply = codex_notify("not json", HookContext(), "PreToolUse")
    assert reply.exit_code == 2 and reply.stderr.strip()
