"""A restore drill from the dashboard (issue 20): `D` on the Validation tab drills the selected
checkpoint in a worker with progress, `D` again cancels it, the dashboard's preview shows the
newest drill's verdict; a real repository with a real pytest suite, a real child process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from settling import settle
from textual.pilot import Pilot

from core.engine import Engine
from core.models import Interface
from tui.app import PitstopApp
from tui.screens.task import TaskScreen
from tui.widgets.task_preview import triage_lines
from tui.widgets.validation_view import ValidationView

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (120, 34)
TASK = "drill-tab"
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
CALC = "def add(a, b):\n    return a + b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
SLOW = "import time\nfrom calc import add\n\n\ndef test_slow():\n    time.sleep({s})\n"


def suite(store_root: Path, tmp_path: Path, tests: str) -> None:
    """A task on a repository with a pytest suite whose run was recorded, then checkpointed."""
    repo = tmp_path / "suite"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "test_calc.py").write_text(tests)
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "suite"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=repo,
                       check=True, capture_output=True)  # fmt: skip
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with Engine(store_root, interface=Interface.API, actor="agent") as engine:
            engine.start_task(repo=repo, objective="Keep calc green", task_id=TASK)
            engine.run_command(TASK, PYTEST, cwd=repo, out_fd=devnull, err_fd=devnull,
                               use_pty=False)  # fmt: skip
            engine.checkpoint(TASK)
    finally:
        os.close(devnull)


async def validation_tab(pilot: Pilot[None]) -> ValidationView:
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, PitstopApp)
    app.open_task(TASK)
    await settle(pilot)
    await pilot.press("v")
    await settle(pilot)
    assert isinstance(app.screen, TaskScreen)
    return app.screen.query_one(ValidationView)


async def wait_until(pilot: Pilot[None], condition: object, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.1)


async def test_d_drills_the_checkpoint_and_the_preview_shows_the_verdict(
    demo_store: Path, tmp_path: Path
) -> None:
    suite(demo_store, tmp_path, TESTS)
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        view = await validation_tab(pilot)
        await pilot.press("D")
        await pilot.pause()
        assert view.drilling == f"{TASK}@1"
        await wait_until(pilot, lambda: view.drilling is None)
        shown = str(view.query_one("#validation-drill").render())
        assert f"Drill {TASK}@1: faithful" in shown
        assert view.last_drill is not None and view.last_drill.report is not None
    with Engine(demo_store) as engine:
        (drill,) = engine.list_drills(TASK)
        assert drill.verdict.value == "faithful"
        events = [e for e in engine.events(TASK) if e.action == "drill"]
        assert len(events) == 1 and events[0].interface == "tui"
        (summary,) = [s for s in engine.task_summaries() if s.task.id == TASK]
    assert summary.triage.drill_verdict == "faithful" and summary.triage.drilled_at
    lines = "\n".join(triage_lines(summary))  # the dashboard preview's badge
    assert "[dim]drill[/]" in lines and "faithful" in lines


async def test_d_again_cancels_a_running_drill_and_leaves_nothing_behind(
    demo_store: Path, tmp_path: Path
) -> None:
    suite(demo_store, tmp_path, SLOW.format(s=0.2))  # recorded quickly…
    test_file = tmp_path / "suite" / "tests" / "test_calc.py"
    test_file.write_text(SLOW.format(s=60))  # …but the checkpoint holds a minute-long test
    with Engine(demo_store) as engine:
        engine.checkpoint(TASK)
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        view = await validation_tab(pilot)
        await pilot.press("D")
        await wait_until(pilot, lambda: "s ·" in str(view.query_one("#validation-drill").render())
                         or " s " in str(view.query_one("#validation-drill").render()))  # fmt: skip
        started = time.monotonic()
        await pilot.press("D")
        await wait_until(pilot, lambda: view.drilling is None, seconds=20)
        assert time.monotonic() - started < 15
        assert view.last_drill is not None and view.last_drill.cancelled
        assert "cancelled" in str(view.query_one("#validation-drill").render())
    left = sorted((demo_store / "tmp").glob("drill-*"))
    with Engine(demo_store) as engine:
        assert engine.list_drills(TASK) == []  # a cancelled drill records no verdict
        from core.harness.drill_guard import guard_screen

        engine.drill(f"{TASK}@1", screen=guard_screen())  # the next drill sweeps the leftovers
    assert all(not path.exists() for path in left)
