"""The dashboard shows agent-written controls as text, never as controls (issue #17).

A task's objective, a checkpoint's note, an evidence label and a command's output carry OSC 52,
CSI and C1 sequences; every screen that shows them is rendered and its output must hold none of
those characters, only their escaped spelling (`core.terminal_text.printable`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from settling import settle

from core.engine import CheckpointRequest, Engine
from core.models import Interface
from tui.app import PitstopApp
from tui.screens.task import TaskScreen
from tui.widgets.evidence_view import EvidenceView

pytestmark = pytest.mark.usefixtures("tui_environment")

HOSTILE = "go \x1b]52;c;SGVsbG8=\x07 \x1b[2J \x9b31m \x9d0;t\x9c end"
CONTROLS = ("\x1b", "\x07", "\x9b", "\x9c", "\x9d")


@pytest.fixture
def hostile_store(tmp_path: Path) -> Path:
    repo = tmp_path / "work"
    repo.mkdir()
    for args in (("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "start")):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    store = tmp_path / "store"
    with Engine(store, interface=Interface.API, actor="agent") as engine:
        engine.start_task(repo=repo, objective=HOSTILE, task_id="esc")
        engine.add_evidence_output(
            "esc", (HOSTILE + "\n").encode(), argv=["printf", HOSTILE], label=HOSTILE
        )
        engine.checkpoint("esc", CheckpointRequest(note=HOSTILE))
    return store


def assert_shown_as_text(app: PitstopApp, where: str) -> None:
    screen = app.export_screenshot()
    assert not [c for c in CONTROLS if c in screen], where
    assert "\\x1b]52;c;SGVsbG8=" in screen, where


async def test_every_pane_shows_controls_as_text(hostile_store: Path) -> None:
    app = PitstopApp(hostile_store)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert_shown_as_text(app, "dashboard: objective")
        app.open_task("esc")
        await settle(pilot)
        assert isinstance(app.screen, TaskScreen)
        assert_shown_as_text(app, "overview: objective and note")
        await pilot.press("e")
        await settle(pilot)
        view = app.screen.query_one(EvidenceView)
        assert view.shown is not None
        assert_shown_as_text(app, "evidence: label and tail")
        await pilot.press("f")
        await settle(pilot)
        assert_shown_as_text(app, "evidence: the full log")
        app.notify(HOSTILE, markup=False)
        await settle(pilot)
        assert_shown_as_text(app, "a toast quoting agent text")
