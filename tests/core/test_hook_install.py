"""`pitstop hook install`: the installed commands, run the way Claude Code runs them (`sh -c`).

Issue #15, bug 1: a hook that names a bare `pitstop` exits 127 when Claude Code is started
without the virtualenv on PATH, and Claude Code lets a tool call through on any exit code but 2.
These tests install through a real `pitstop` script (shaped like the one pip writes), then run
the installed command strings through a shell with that script present, and gone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from core.harness.install import hook_command, install, installed_programs, is_pitstop_hook

ROOT = Path(__file__).resolve().parents[2]
PUSH = {
    "session_id": "0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "git push origin main"},
    "tool_use_id": "toolu_01",
}


def pitstop_script(where: Path) -> Path:
    """A `pitstop` console script like pip's, running this checkout."""
    where.mkdir(parents=True, exist_ok=True)
    script = where / "pitstop"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        "from tui.launch import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return script


def run_pitstop(
    program: Path, *args: str, cwd: Path, path_env: str = "/usr/bin:/bin"
) -> subprocess.CompletedProcess[str]:
    """Run a `pitstop` command with PATH lacking any virtualenv (as from an IDE)."""
    return subprocess.run(
        [str(program), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PATH": path_env},
        check=False,
    )


def installed_command(settings: Path, event: str) -> str:
    data = json.loads(settings.read_text())
    [command] = [
        h["command"] for g in data["hooks"][event] for h in g["hooks"] if is_pitstop_hook(h)
    ]
    assert isinstance(command, str)
    return command


def shell(command: str, payload: dict[str, object], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run one hook command as Claude Code does: through a shell, the event on stdin."""
    return subprocess.run(
        ["sh", "-c", command],
        input=json.dumps({**payload, "cwd": str(cwd)}),
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_installed_guard_names_its_program_and_blocks_when_it_is_gone(
    repo: Path, tmp_path: Path
) -> None:
    program = pitstop_script(tmp_path / "venv with space" / "bin")
    done = run_pitstop(program, "hook", "install", "claude-code", "--json", cwd=repo)
    assert done.returncode == 0, done.stderr
    settings = repo / ".claude" / "settings.json"
    assert installed_programs(settings) == [str(program)]  # absolute, not a bare `pitstop`
    guard = installed_command(settings, "PreToolUse")
    stop = installed_command(settings, "Stop")

    # Present: the guard answers (the push waits for an approval: a JSON deny, exit 0).
    answered = shell(guard, PUSH, repo)
    assert answered.returncode == 0, answered.stderr
    decision = json.loads(answered.stdout)["hookSpecificOutput"]
    assert (
        decision["permissionDecision"] == "deny"
        and "approval" in decision["permissionDecisionReason"]
    )

    status = run_pitstop(program, "hook", "status", "claude-code", cwd=repo)
    assert status.returncode == 0 and "warning" not in status.stderr

    # Gone (uninstalled, moved, its venv deleted): the guard blocks with Claude Code's code 2.
    moved = program.rename(program.with_name("pitstop.moved"))
    blocked = shell(guard, PUSH, repo)
    assert blocked.returncode == 2, (blocked.returncode, blocked.stderr)
    # An observation does not block the agent (Claude Code shows a non-blocking error).
    observation = shell(stop, {"hook_event_name": "Stop", "session_id": "s"}, repo)
    assert observation.returncode not in (0, 2)

    status = run_pitstop(moved, "hook", "status", "claude-code", cwd=repo)
    assert status.returncode == 0, status.stderr
    [warning] = [line for line in status.stderr.splitlines() if line]
    assert warning.startswith("warning: ") and str(program) in warning
    assert "pitstop hook install claude-code" in warning


def test_a_guard_that_cannot_start_python_blocks(repo: Path, tmp_path: Path) -> None:
    """Not only a missing file: a `pitstop` whose interpreter is gone (exit 126/127) blocks."""
    broken = tmp_path / "bin" / "pitstop"
    broken.parent.mkdir()
    broken.write_text("#!/nonexistent/python3\n")
    broken.chmod(0o755)
    reply = shell(hook_command("PreToolUse", str(broken)), PUSH, repo)
    assert reply.returncode == 2
    crashing = tmp_path / "crash" / "pitstop"
    crashing.parent.mkdir()
    crashing.write_text("#!/bin/sh\nexit 1\n")
    crashing.chmod(0o755)
    assert shell(hook_command("PreToolUse", str(crashing)), PUSH, repo).returncode == 2


def test_install_again_upgrades_an_old_bare_command(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"type": "command", "command": "./guard.sh"}
    old = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash|Write|Edit|MultiEdit|NotebookEdit",
                    "hooks": [
                        theirs,
                        {
                            "type": "command",
                            "command": "pitstop hook claude-code --event PreToolUse",
                        },
                    ],
                }
            ]
        }
    }
    settings.write_text(json.dumps(old))
    program = "/opt/pitstop venv/bin/pitstop"
    assert "PreToolUse" in install(settings, program)
    [group] = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert group["hooks"][0] == theirs  # theirs untouched, in place
    assert group["hooks"][1]["command"] == (
        "'/opt/pitstop venv/bin/pitstop' hook claude-code --event PreToolUse || exit 2"
    )
    assert installed_programs(settings) == [program]
    assert install(settings, program) == []  # now current: not rewritten
