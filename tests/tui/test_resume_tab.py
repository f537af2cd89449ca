"""The Resume tab after a launch: a harness that cannot start leaves a way on (in the tab's own
keys, never a CLI command that does not exist), and work that ran is judged from the tab."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from core import store
from core.engine import CheckpointRequest, Engine
from core.models import Interface, TaskStatus
from tui.app import PitstopApp
from tui.screens.modals import ConfirmModal, ReasonModal
from tui.screens.task import TaskScreen
from tui.widgets.resume_view import ResumeView

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (120, 34)
TASK = "resume-tab"


@pytest.fixture
def paused(demo_store: Path, tmp_path: Path) -> Path:
    """The demo store plus a paused task on a private repository with one checkpoint."""
    repo = tmp_path / "work" / "calc"
    repo.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"],):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "start"],
        cwd=repo,
        check=True,
    )
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b + 0\n")
    with Engine(demo_store, interface=Interface.API, actor="agent") as engine:
        engine.start_task(repo=repo, objective="Fix calc rounding", task_id=TASK)
        engine.checkpoint(TASK, CheckpointRequest(note="half done"))
        engine.set_task_activity(TASK, TaskStatus.WAITING, "waiting for input")
    return demo_store


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@contextmanager
def handed_over() -> Iterator[None]:  # the headless driver cannot give the terminal away
    yield


async def prepare(pilot: Pilot[None]) -> ResumeView:
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, PitstopApp)
    app.open_task(TASK)
    await settle(pilot)
    await pilot.press("u")
    await settle(pilot)
    assert isinstance(app.screen, TaskScreen)
    view = app.screen.query_one(ResumeView)
    await pilot.press("enter")
    await pilot.pause()
    assert isinstance(app.screen, ConfirmModal)
    await pilot.press("y")
    await settle(pilot)
    assert view.plan is not None, str(view.query_one("#resume-heading").render())
    return view


async def test_a_harness_that_is_not_installed_leaves_the_tab_a_way_on(
    paused: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHELL", str(tmp_path / "no-such-harness"))  # the generic harness
    app = PitstopApp(paused)
    monkeypatch.setattr(app, "suspend", handed_over)
    async with app.run_test(size=SIZE) as pilot:
        view = await prepare(pilot)
        workdir = view.plan.workdir  # type: ignore[union-attr]
        await pilot.press("L")
        await settle(pilot)
        heading = str(view.query_one("#resume-heading").render())
        assert "Could not launch:" in heading
        assert "enter prepares the resume again" in heading and "O opens a shell" in heading
        assert str(workdir) in heading and workdir.is_dir()  # kept for the next resume
        messages = " ".join(n.message for n in app._notifications)
        assert "resume accept" not in messages and "resume accept" not in heading
        assert view.plan is None and view.ran is None
        with Engine(paused) as engine:
            assert engine.get_task(TASK).status is TaskStatus.WAITING  # put back, not resuming
            latest = store.latest_resume(engine.db, TASK)
            assert latest is not None and latest["state"] == "failed"
        await pilot.press("C")  # clean up: asks first, No focused
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("enter")
        await settle(pilot)
        assert workdir.is_dir()  # the safe choice kept it
        await pilot.press("C")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert not workdir.exists() and view.kept_workdir is None
    branches = subprocess.run(
        ["git", "branch", "--list", f"pitstop/{TASK}*"], cwd=workdir.parent / "calc",
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert branches.strip() == ""
    with Engine(paused) as engine:
        cleaned = [e for e in engine.events(TASK) if e.action == "clean"]
        assert len(cleaned) == 1 and str(workdir) in (cleaned[0].reason or "")


async def test_work_that_ran_is_accepted_from_the_tab_with_a_reason(
    paused: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\necho done > resumed.txt\n")
    agent.chmod(0o755)
    monkeypatch.setenv("SHELL", str(agent))
    app = PitstopApp(paused)
    monkeypatch.setattr(app, "suspend", handed_over)
    async with app.run_test(size=SIZE) as pilot:
        view = await prepare(pilot)
        await pilot.press("A")  # nothing ran yet: nothing to judge
        await pilot.pause()
        assert not isinstance(app.screen, ReasonModal)
        await pilot.press("L")
        await settle(pilot)
        assert view.ran is not None
        heading = str(view.query_one("#resume-heading").render())
        assert "A accepts it" in heading and "X rejects it" in heading
        assert any("A accepts it, X rejects it" in n.message for n in app._notifications)
        await pilot.press("A")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ReasonModal)
        modal.query_one("#reason-input", Input).value = "tests pass again"
        await pilot.press("enter")
        await settle(pilot)
        assert view.ran is None
    with Engine(paused) as engine:
        latest = store.latest_resume(engine.db, TASK)
        assert latest is not None and latest["accepted"] == 1
        accepted = [e for e in engine.events(TASK) if e.action == "accepted"]
        assert len(accepted) == 1 and accepted[0].interface == "tui"
        assert accepted[0].reason == "tests pass again"
