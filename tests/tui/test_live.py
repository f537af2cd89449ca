"""Live refresh: what another process writes to the store shows up in the running app."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from core.engine import Engine
from core.models import Interface, Risk
from tui import live
from tui.app import PitstopApp
from tui.screens.inbox import InboxScreen, InboxTable
from tui.screens.task import TaskScreen
from tui.widgets.task_table import TaskTable
from tui.widgets.timeline import CheckpointTimeline

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (120, 34)
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def agent_repo(tmp_path: Path) -> Path:
    """A small repository of its own, so the other process never depends on the demo's repos."""
    repo = tmp_path / "agent-repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("print('hello')\n")
    git(repo, "add", "app.py")
    git(repo, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-qm", "init")
    return repo


def other_process(store: Path, *args: str) -> None:
    """Run `pitstop --store STORE ARGS…` as a separate process, as an agent would."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(PROJECT_ROOT), env.get("PYTHONPATH"))))
    result = subprocess.run(
        [sys.executable, "-m", "tui.cli", "--store", str(store), "--init", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


async def eventually(pilot: Pilot[None], condition: Callable[[], bool], seconds: float = 5) -> None:
    """Let the app run until `condition` holds; the watcher worker never completes, so no settle."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the app did not show the change in time"
        await pilot.pause(0.05)


def test_store_commits_reports_other_connections_only(tmp_path: Path) -> None:
    store = tmp_path / "store"
    watching = Engine(store)
    stop = threading.Event()
    seen: list[int] = []
    started = threading.Event()

    def watch() -> None:
        started.set()
        for version in watching.watch_commits(stop):
            seen.append(version)
            stop.set()

    watcher = threading.Thread(target=watch)
    watcher.start()
    started.wait()
    time.sleep(0.3)  # let the watch arm
    assert seen == []
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    with Engine(store) as engine:
        engine.start_task(repo=repo, objective="write something", task_id="writer")
    watcher.join(timeout=10)
    stop.set()
    watching.close()
    assert len(seen) == 1


def test_the_message_coalesces_a_burst() -> None:
    assert live.StoreChanged().can_replace(live.StoreChanged())


async def test_a_checkpoint_written_by_another_process_appears_live(
    demo_store: Path, agent_repo: Path
) -> None:
    with Engine(demo_store, interface=Interface.CLI) as engine:
        engine.start_task(repo=agent_repo, objective="Live refresh probe", task_id="live-probe")
    app = PitstopApp(demo_store, live=True)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(TaskTable)

        def count() -> int | None:
            found = [s for s in table.summaries if s.task.id == "live-probe"]
            return found[0].checkpoint_count if found else None

        await eventually(pilot, lambda: count() == 0)
        await pilot.press("j", "j", "j")
        selected = table.selected_task_id
        (agent_repo / "app.py").write_text("print('hello, world')\n")
        other_process(demo_store, "checkpoint", "live-probe", "--note", "from another process")
        await eventually(pilot, lambda: count() == 1)
        assert table.selected_task_id == selected  # the selection survived the refresh

        # The task screen's timeline follows too.
        app.open_task("live-probe")
        await eventually(
            pilot,
            lambda: (
                isinstance(app.screen, TaskScreen) and bool(app.screen.query(CheckpointTimeline))
            ),
        )
        timeline = app.screen.query_one(CheckpointTimeline)
        await eventually(pilot, lambda: timeline.option_count == 1)
        (agent_repo / "app.py").write_text("print('hello, again')\n")
        other_process(demo_store, "checkpoint", "live-probe", "--note", "second")
        await eventually(pilot, lambda: timeline.option_count == 2)

        # And the inbox, when an agent asks for a decision.
        await pilot.press("a")
        await eventually(
            pilot,
            lambda: isinstance(app.screen, InboxScreen) and bool(app.screen.query(InboxTable)),
        )
        inbox = app.screen.query_one(InboxTable)
        await eventually(pilot, lambda: app.screen.loaded)  # type: ignore[attr-defined]
        before = len(inbox.approvals)
        other_process(
            demo_store,
            "approval",
            "request",
            "--task",
            "live-probe",
            "--action",
            "push the branch",
            "--risk",
            Risk.HIGH.value,
        )
        await eventually(pilot, lambda: len(inbox.approvals) == before + 1)
        assert "live-probe:1" in [a.id for a in inbox.approvals]
