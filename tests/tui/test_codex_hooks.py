"""`pitstop hook install codex`: Codex's `hooks.json` and its `notify`, through the real CLI.

Codex's hooks speak Claude Code's protocol (event JSON on stdin, `hook_event_name`); its notify
program gets one JSON argument after each turn. Both reach the same task for one thread. The
installed commands are run the way Codex runs them: through a shell, from the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
THREAD = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"


def _pitstop_script(tmp_path: Path) -> Path:
    """A `pitstop` script as pip writes one, for the installer to name."""
    script = tmp_path / "bin" / "pitstop"
    script.parent.mkdir(exist_ok=True)
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        "from tui.launch import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return script


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    repo = tmp_path / "proj"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    return {"repo": repo, "codex_home": codex_home, "script": _pitstop_script(tmp_path)}


def _env(world: dict[str, Path]) -> dict[str, str]:
    return {**os.environ, "CODEX_HOME": str(world["codex_home"])}


def _cli(world: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(world["script"]), *args],
        capture_output=True,
        text=True,
        cwd=world["repo"],
        env=_env(world),
        check=False,
    )


def _installed(world: dict[str, Path]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((world["repo"] / ".codex" / "hooks.json").read_text())
    return data


def _command(world: dict[str, Path], event: str) -> str:
    [group] = _installed(world)["hooks"][event]
    [hook] = group["hooks"]
    return str(hook["command"])


def _run_installed(
    world: dict[str, Path], event: str, payload: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """Run the installed command through a shell, as Codex does, with the event on stdin."""
    return subprocess.run(
        ["sh", "-c", _command(world, event)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=world["repo"],
        env=_env(world),
        check=False,
    )


def _hook_event(world: dict[str, Path], name: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": THREAD,
        "transcript_path": None,
        "cwd": str(world["repo"]),
        "hook_event_name": name,
        "model": "gpt-5-codex",
        **fields,
    }


def test_install_writes_hooks_json_and_notify_and_both_feed_one_task(
    world: dict[str, Path],
) -> None:
    installed = _cli(world, "hook", "install", "codex")
    assert installed.returncode == 0, installed.stderr
    assert set(_installed(world)["hooks"]) == {
        "SessionStart",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "PreCompact",
        "SessionEnd",
    }
    assert _command(world, "PreToolUse").endswith("|| exit 2")  # the guard fails closed
    assert _command(world, "PreToolUse").startswith(str(world["script"]))
    config = (world["codex_home"] / "config.toml").read_text()
    assert config.splitlines()[0] == f'notify = ["{world["script"]}", "hook", "codex"]'

    start = _run_installed(
        world, "SessionStart", _hook_event(world, "SessionStart", source="startup")
    )
    assert start.returncode == 0, start.stderr
    ran = _run_installed(
        world,
        "PostToolUse",
        _hook_event(
            world,
            "PostToolUse",
            tool_name="Bash",
            tool_use_id="call_1",
            tool_input={"command": "pytest -q"},
            tool_response="4 passed in 0.1s",
        ),
    )
    assert ran.returncode == 0, ran.stderr
    # the notify program after the turn: the same thread, so the same task
    turn = {
        "type": "agent-turn-complete",
        "thread-id": THREAD,
        "turn-id": "1",
        "cwd": str(world["repo"]),
        "input-messages": ["run the tests"],
        "last-assistant-message": "All 4 tests pass.",
    }
    notify = json.loads(config.splitlines()[0].split("=", 1)[1])
    notified = subprocess.run(
        [*notify, json.dumps(turn)], capture_output=True, text=True, env=_env(world), check=False
    )
    assert notified.returncode == 0, notified.stderr
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.harness is not None and task.harness.name == "codex"
        labels = [item.label for item in engine.list_evidence(task.id)]
        assert any("pytest" in (label or "") or "test" in (label or "") for label in labels)
        assert any("Codex turn" in (label or "") for label in labels)
        [item] = [i for i in engine.list_evidence(task.id) if "Codex turn" not in (i.label or "")]
        assert item.exit_code is None  # Codex's PostToolUse says no exit status: never success


def test_the_installed_guard_stops_a_repeat_push_and_blocks_when_pitstop_is_gone(
    world: dict[str, Path],
) -> None:
    assert _cli(world, "hook", "install", "codex").returncode == 0
    push = _hook_event(world, "PreToolUse", tool_name="Bash", tool_use_id="call_2",
                       tool_input={"command": "git push origin main"})  # fmt: skip
    first = _run_installed(world, "PreToolUse", push)
    assert first.returncode == 0
    assert json.loads(first.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    world["script"].rename(world["script"].with_name("pitstop-moved"))
    gone = _run_installed(world, "PreToolUse", push)
    assert gone.returncode == 2  # Codex blocks the call: a guard that cannot start fails closed


def test_without_the_key_the_guard_blocks_and_the_rest_say_one_line(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _cli(world, "hook", "install", "codex").returncode == 0
    monkeypatch.setenv("PITSTOP_KEY", "")  # the key is not available (keyring locked, unset)
    push = _hook_event(world, "PreToolUse", tool_name="Bash", tool_use_id="call_3",
                       tool_input={"command": "git push origin main"})  # fmt: skip
    guard = _run_installed(world, "PreToolUse", push)
    assert guard.returncode == 2, guard  # Codex blocks the call
    assert "cannot decide whether this tool call may run" in guard.stderr
    ran = _run_installed(
        world,
        "PostToolUse",
        _hook_event(
            world,
            "PostToolUse",
            tool_name="Bash",
            tool_use_id="call_4",
            tool_input={"command": "pytest -q"},
            tool_response="4 passed",
        ),
    )
    assert ran.returncode == 0 and ran.stderr.count("\n") == 1, ran
    assert "PostToolUse not recorded" in ran.stderr and "Traceback" not in ran.stderr
    turn = {"type": "agent-turn-complete", "thread-id": THREAD, "turn-id": "1",
            "cwd": str(world["repo"]), "last-assistant-message": "done"}  # fmt: skip
    notified = _cli(world, "hook", "codex", json.dumps(turn))
    assert notified.returncode == 0 and notified.stderr.count("\n") == 1, notified
    assert "not recorded" in notified.stderr


def test_someone_elses_notify_is_kept_and_uninstall_removes_only_pitstops(
    world: dict[str, Path],
) -> None:
    config = world["codex_home"] / "config.toml"
    config.write_text('model = "gpt-5-codex"\nnotify = ["notify-send", "codex"]\n\n[tui]\nx = 1\n')
    hooks = world["repo"] / ".codex" / "hooks.json"
    hooks.parent.mkdir()
    theirs = {"type": "command", "command": "./scripts/log-tool.sh"}
    hooks.write_text(
        json.dumps({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [theirs]}]}})
    )
    installed = _cli(world, "hook", "install", "codex")
    assert installed.returncode == 0, installed.stderr
    assert "keeps its own notify program" in installed.stdout
    setting = [line for line in config.read_text().splitlines() if line.startswith("notify")]
    assert setting == ['notify = ["notify-send", "codex"]']
    assert _cli(world, "hook", "install", "codex").returncode == 0  # idempotent
    assert len(json.loads(hooks.read_text())["hooks"]["PostToolUse"]) == 2
    removed = _cli(world, "hook", "uninstall", "codex")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(hooks.read_text()) == {
        "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [theirs]}]}
    }
    assert "notify-send" in config.read_text()  # not Pitstop's: left alone


def test_pitstops_notify_is_upgraded_in_place_and_removed_whole(world: dict[str, Path]) -> None:
    config = world["codex_home"] / "config.toml"
    config.write_text('notify = ["pitstop", "hook", "codex"]\nmodel = "o4"\n')
    assert _cli(world, "hook", "install", "codex").returncode == 0
    lines = config.read_text().splitlines()
    assert lines == [f'notify = ["{world["script"]}", "hook", "codex"]', 'model = "o4"']
    status = _cli(world, "hook", "status", "codex", "--json")
    document = json.loads(status.stdout)
    assert document["codex_notify"] is True
    assert [p["events"] != [] for p in document["codex"]] == [True, False]  # project, user
    assert _cli(world, "hook", "uninstall", "codex").returncode == 0
    assert config.read_text().splitlines() == ['model = "o4"']


def test_a_damaged_codex_config_is_refused_and_untouched(world: dict[str, Path]) -> None:
    config = world["codex_home"] / "config.toml"
    config.write_text("notify = [\n")
    result = _cli(world, "hook", "install", "codex")
    assert result.returncode != 0
    assert "not valid TOML" in result.stderr and "Traceback" not in result.stderr
    assert config.read_text() == "notify = [\n"
    assert not (world["repo"] / ".codex" / "hooks.json").exists()  # nothing changed
