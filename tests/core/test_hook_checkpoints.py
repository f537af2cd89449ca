"""Checkpoints a hook asks for, with nothing new since the last one (issue #15, bug 6).

Every hook checkpoint carries a note that names its moment ("the agent finished a turn"). A note
the operator writes is news, so it makes a checkpoint worth taking; the hook's is not, so a
turn, a compaction or a Codex turn with nothing new is skipped like any no-op checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.engine import CheckpointRequest, Engine
from core.harness.claude_code import claude_code
from core.harness.codex import codex_notify
from core.harness.context import HookContext, HookReply
from core.models import CheckpointReason, TaskStatus

SESSION = "1b2c3d4e-5f60-4718-a9b0-c1d2e3f4a5b6"


@pytest.fixture(autouse=True)
def every_turn(isolated_env: dict[str, Path]) -> None:
    """No minimum interval between turn checkpoints, and checkpoints that cost nothing (so a
    turn's always pays, core.engine.pays): only "nothing new" can skip one."""
    (isolated_env["config"] / "config.toml").write_text(FREE_CHECKPOINTS)


FREE_CHECKPOINTS = """[policy]
min_interval_seconds = 0
p_interrupt_per_hour = 1
machine_usd_per_hour = 0
[economics]
create_usd = 0
restore_usd = 0
validation_usd = 0
storage_usd_per_gib_month = 0
"""


def event(name: str, cwd: Path, **fields: Any) -> bytes:
    body = {"session_id": SESSION, "cwd": str(cwd), "hook_event_name": name, **fields}
    return json.dumps(body).encode()


def run(raw: bytes) -> HookReply:
    return claude_code(raw, HookContext())


def checkpoints() -> int:
    with Engine() as engine:
        [task] = engine.list_tasks()
        return len(engine.list_checkpoints(task.id))


@pytest.mark.parametrize(("name", "fields"), [("PreCompact", {"trigger": "auto"}), ("Stop", {})])
def test_a_hook_checkpoint_with_nothing_new_is_skipped(
    repo: Path, name: str, fields: dict[str, Any]
) -> None:
    run(event("SessionStart", repo, source="startup"))
    (repo / "README.md").write_text("# changed\n")
    assert run(event(name, repo, **fields)).recorded[0].startswith("checkpoint ")
    again = run(event(name, repo, **fields))
    assert again.recorded[0].startswith("skipped: nothing changed since "), again
    assert checkpoints() == 1
    (repo / "README.md").write_text("# changed again\n")  # a change: taken
    assert run(event(name, repo, **fields)).recorded[0].startswith("checkpoint ")
    assert checkpoints() == 2


def test_new_evidence_is_new(repo: Path) -> None:
    run(event("SessionStart", repo))
    (repo / "README.md").write_text("# changed\n")
    run(event("Stop", repo))
    run(
        event(
            "PostToolUse",
            repo,
            tool_name="Bash",
            tool_input={"command": "ls -la"},  # a test run would be a milestone of its own
            tool_response={"stdout": "README.md\n", "stderr": ""},
        )
    )
    assert run(event("Stop", repo)).recorded[0].startswith("checkpoint ")  # the listing is new
    assert run(event("SubagentStop", repo)).recorded[0].startswith("skipped: nothing changed")


def test_the_session_end_is_still_recorded(repo: Path) -> None:
    """The session's end pauses the task: forced, even with nothing new."""
    run(event("SessionStart", repo))
    (repo / "README.md").write_text("# changed\n")
    run(event("Stop", repo))
    assert run(event("SessionEnd", repo, reason="exit")).recorded[0].startswith("checkpoint ")
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.status is TaskStatus.PAUSED


def test_an_operators_note_is_still_news(repo: Path) -> None:
    run(event("SessionStart", repo))
    (repo / "README.md").write_text("# changed\n")
    run(event("Stop", repo))
    with Engine() as engine:
        [task] = engine.list_tasks()
        said = engine.checkpoint(
            task.id,
            CheckpointRequest(reason=CheckpointReason.MANUAL, note="the parser is half done"),
        )
        assert said.checkpoint is not None
        quiet = engine.checkpoint(task.id, CheckpointRequest(reason=CheckpointReason.MANUAL))
        assert quiet.checkpoint is None and quiet.skipped


def test_a_codex_turn_with_nothing_new_is_skipped(repo: Path) -> None:
    def turn(number: int) -> HookReply:
        payload = {
            "type": "agent-turn-complete",
            "thread-id": "0199a213-81c0-7800-8aa1-bbab2a035a53",
            "turn-id": str(number),
            "cwd": str(repo),
            "input-messages": ["go on"],
            "last-assistant-message": "",
        }
        return codex_notify(json.dumps(payload), HookContext())

    (repo / "README.md").write_text("# changed\n")
    assert turn(1).recorded[-1].startswith("checkpoint ")
    assert turn(2).recorded[-1] == "skipped"
