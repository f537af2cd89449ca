"""Checkpoint when it pays (issue 23): real Claude Code payload sequences, recorded durations.

The payloads are the real client's (tests/fixtures/claude_code/real/), their commands and
`duration_ms` set to what a four-hour migration and a two-minute lint fix record; the wall clock
is pinned per step (`PITSTOP_FROZEN_NOW`). Default policy and economics throughout.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from core.engine import Engine
from core.harness.claude_code import claude_code
from core.harness.context import HookContext, HookReply
from core.models import CheckpointReason

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "real"
START = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


class Session:
    """Replays real payloads into one repository, at pinned moments."""

    def __init__(self, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.repo, self.monkeypatch = repo, monkeypatch

    def at(self, minutes: float) -> Session:
        moment = START + timedelta(minutes=minutes)
        self.monkeypatch.setenv("PITSTOP_FROZEN_NOW", moment.isoformat())
        return self

    def send(self, name: str, **fields: Any) -> HookReply:
        text = (REAL / f"{name}.json").read_text()
        text = text.replace("$CWD", str(self.repo)).replace("$TRANSCRIPT", "")
        body = {**json.loads(text), **fields}
        return claude_code(json.dumps(body).encode(), HookContext())

    def bash(self, command: str, minutes: float) -> HookReply:
        body = json.loads((REAL / "post_tool_use_bash.json").read_text())
        return self.send(
            "post_tool_use_bash",
            tool_input={"command": command, "description": f"run {command}"},
            tool_response={**body["tool_response"], "stdout": "ok\n"},
            duration_ms=int(minutes * 60_000),
        )

    def edit(self, text: str) -> None:
        (self.repo / "app.py").write_text(text)

    def reasons(self) -> list[CheckpointReason]:
        with Engine() as engine:
            [task] = engine.list_tasks()
            return [c.reason for c in engine.list_checkpoints(task.id)]

    def decisions(self) -> list[dict[str, Any]]:
        with Engine() as engine:
            [task] = engine.list_tasks()
            return engine.checkpoint_decisions(task.id)


@pytest.fixture
def session(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Session:
    return Session(repo, monkeypatch)


def test_a_four_hour_migration_gets_milestones_and_before_waits(session: Session) -> None:
    session.at(0).send("session_start")
    session.at(5).edit("v = 1\n")
    # a quick install early on: five minutes of work is cheaper to redo than to keep
    assert "milestone skipped: restart is cheaper" in session.bash("uv sync", 4).recorded
    session.at(90).edit("v = 2\n")
    green = session.bash("pytest -q", 25).recorded
    assert any(line.startswith("milestone ") and "skipped" not in line for line in green), green
    session.at(95).edit("v = 3\n")
    waiting = session.send(
        "permission_request", hook_event_name="Notification", notification_type="idle_prompt"
    )
    assert any(line.startswith("checkpoint ") for line in waiting.recorded), waiting.recorded
    session.at(150).edit("v = 4\n")
    assert any(
        line.startswith("milestone ") and "skipped" not in line
        for line in session.bash("alembic upgrade head", 12).recorded
    )
    session.at(200).edit("v = 5\n")
    assert session.send("stop_background_tasks").recorded[0].startswith("checkpoint ")
    session.at(240).edit("v = 6\n")
    session.send("session_end")
    assert session.reasons() == [
        CheckpointReason.MILESTONE,
        CheckpointReason.BEFORE_WAIT,
        CheckpointReason.MILESTONE,
        CheckpointReason.BEFORE_WAIT,
        CheckpointReason.INTERRUPT,
    ]
    decisions = session.decisions()
    skipped = decisions[0]
    assert skipped["outcome"] == "skipped" and skipped["asked_by"].startswith("a green install")
    assert "restart is cheaper: restart costs $0.03" in skipped["reason"]
    assert skipped["numbers"]["machine_minutes"] == 4
    milestone = decisions[1]
    assert milestone["outcome"].startswith("taken") and "a green test" in milestone["asked_by"]
    # 90 minutes of work: 20 re-orientation minutes at $90/h + 29 machine minutes at $1/h
    assert milestone["numbers"]["exposure_usd"] == pytest.approx(30 + 29 / 60)
    assert milestone["numbers"]["p_interrupt"] == 0.075  # 5% per hour × 1.5 hours
    assert len(milestone["numbers"]["evidence"]) == 2
    assert all("numbers" in d and "checkpoint_usd" in d["numbers"] for d in decisions)


def test_a_two_minute_lint_fix_gets_only_the_final_interrupt(session: Session) -> None:
    session.at(0).send("session_start")
    session.at(1).edit("v = 1  # fixed\n")
    assert (
        "milestone skipped: restart is cheaper" in session.bash("ruff check --fix .", 0.05).recorded
    )
    assert session.at(2).send("stop").recorded[0] == "skipped: restart is cheaper"
    assert session.at(2).send("session_end").recorded[0].startswith("checkpoint ")
    assert session.reasons() == [CheckpointReason.INTERRUPT]
    lint, turn, end = session.decisions()
    assert lint["asked_by"].startswith("a green test") and lint["outcome"] == "skipped"
    assert turn["outcome"] == "skipped" and turn["checkpoint_reason"] == "turn"
    # two minutes of work: $3 of re-orientation × 5%/h × 2/60 h against a $0.10 checkpoint
    assert turn["reason"] == (
        "turn checkpoint skipped (a turn ended): restart is cheaper: restart costs $0.005 "
        "(0.17% × $3.00), a checkpoint $0.1003"
    )
    assert end["outcome"].startswith("taken") and end["checkpoint_reason"] == "interrupt"
    with Engine() as engine:
        [task] = engine.list_tasks()
        logged = [e for e in engine.events(task.id) if e.action == "decide"]
        assert [e.to_state for e in logged] == ["skipped", "skipped", "taken"]


def test_a_trivially_restartable_task_ends_without_a_checkpoint(
    session: Session, isolated_env: dict[str, Path]
) -> None:
    (isolated_env["config"] / "config.toml").write_text("[policy]\ntrivial_restart_usd = 5\n")
    session.at(0).send("session_start")
    session.at(1).edit("v = 1\n")
    reply = session.at(2).send("session_end")
    assert reply.recorded[:1] == ("skipped: restart is cheaper",), reply
    assert session.reasons() == []
    [end] = session.decisions()
    assert end["outcome"] == "skipped: trivially restartable"
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.status.value == "paused"
