"""The task screen's timeline shows the automatic checkpoint decisions (issues 23 and 18), as
`pitstop log` and `pitstop cost TASK --why` do: a skipped one with the two amounts the model
weighed, a taken milestone with its amounts under the checkpoint it took."""

from __future__ import annotations

import os
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList

from core.economics.amounts import money
from core.engine import CheckpointRequest, Engine
from core.models import CheckpointReason
from tui.app import PitstopApp
from tui.screens.task import TaskScreen
from tui.widgets.timeline import DECISION_PREFIX, CheckpointTimeline

pytestmark = pytest.mark.usefixtures("tui_environment")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def at(monkeypatch: pytest.MonkeyPatch, moment: str) -> None:
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", f"2026-03-02T{moment}:00Z")


@pytest.fixture
def decided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[dict[str, Any]]]:
    """A task with a skipped milestone (a minute in), a taken one (90 minutes in, its green
    tests worth keeping) and a skipped turn right after it; default policy and economics."""
    repo = tmp_path / "work" / "calc"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start")
    frozen = os.environ["PITSTOP_FROZEN_NOW"]
    with Engine() as engine:
        at(monkeypatch, "13:00")
        task = engine.start_task(repo=repo, objective="decide checkpoints by what they pay")
        milestone = CheckpointRequest(
            reason=CheckpointReason.MILESTONE, note="after a green test", note_is_ours=True
        )
        at(monkeypatch, "13:01")
        (repo / "calc.py").write_text("def add(a, b):\n    return a + b + 0\n")
        _, skipped = engine.decide_checkpoint(task.id, milestone, why="a green install, evidence 1")
        assert skipped is None
        at(monkeypatch, "14:30")
        _, taken = engine.decide_checkpoint(task.id, milestone, why="a green test, evidence 2")
        assert taken is not None and taken.checkpoint is not None
        at(monkeypatch, "14:31")
        turn = CheckpointRequest(reason=CheckpointReason.TURN)
        _, later = engine.decide_checkpoint(task.id, turn, why="the turn ended")
        assert later is None
        decisions = engine.checkpoint_decisions(task.id)
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", frozen)
    return task.id, decisions


def usd(value: float) -> str:
    return money(Decimal(str(value)))


async def test_the_timeline_shows_skipped_and_taken_decisions_with_their_numbers(
    decided: tuple[str, list[dict[str, Any]]],
) -> None:
    task_id, decisions = decided
    first, milestone, _ = decisions
    assert [d["outcome"] for d in decisions] == ["skipped", f"taken: {task_id}@1", "skipped"]
    app = PitstopApp(Path(os.environ["PITSTOP_HOME"]))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        app.open_task(task_id)
        for _ in range(4):
            await pilot.pause()
            await app.workers.wait_for_complete()
        screen = app.screen
        assert isinstance(screen, TaskScreen)
        timeline = screen.query_one(CheckpointTimeline)
        options = [timeline.get_option_at_index(i) for i in range(timeline.option_count)]
        texts = [str(option.prompt) for option in options]
        # newest first: the turn skipped after the checkpoint, the checkpoint, the first skip
        assert [option.id for option in options] == [
            f"{DECISION_PREFIX}2",
            f"{task_id}@1",
            f"{DECISION_PREFIX}0",
        ]
        assert [option.disabled for option in options] == [True, False, True]
        skip = texts[2]
        assert "milestone skipped" in skip and "a green install, evidence 1" in skip
        numbers = first["numbers"]
        assert f"skipped: restart costs {usd(numbers['avoided_usd'])}," in skip
        assert f"a checkpoint {usd(numbers['checkpoint_usd'])}" in skip
        assert numbers["take"] is False and numbers["avoided_usd"] < numbers["checkpoint_usd"]
        assert "turn skipped" in texts[0] and "restart costs" in texts[0]
        # the milestone: 20 re-orientation minutes at $90/h × 7.5% (5%/h × 1.5 h) = $2.25
        kept = texts[1]
        taken = milestone["numbers"]
        assert taken["avoided_usd"] == pytest.approx(2.25)
        assert f"pays: restart $2.25 vs {usd(taken['checkpoint_usd'])}" in kept
        assert "milestone" in kept
        # the cursor starts on the checkpoint and never rests on a decision
        assert timeline.selected_ref == f"{task_id}@1"
        timeline.focus()
        for key in ("k", "k", "j", "j", "j"):
            await pilot.press(key)
            await pilot.pause()
            assert timeline.selected_ref == f"{task_id}@1"
            assert not options[timeline.highlighted or 0].disabled


async def test_a_task_without_decisions_lists_its_checkpoints_alone(demo_store: Path) -> None:
    from core.demo import RELEASE

    with Engine(demo_store) as engine:
        expected = [c.ref for c in sorted(engine.list_checkpoints(RELEASE), key=lambda c: -c.seq)]
        assert engine.checkpoint_decisions(RELEASE) == []
    app = PitstopApp(demo_store)
    async with app.run_test(size=(120, 34)) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        app.open_task(RELEASE)
        for _ in range(4):
            await pilot.pause()
            await app.workers.wait_for_complete()
        timeline = app.screen.query_one(OptionList)
        ids = [timeline.get_option_at_index(i).id for i in range(timeline.option_count)]
    assert ids == expected
