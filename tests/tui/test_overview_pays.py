"""The task overview says when the next checkpoint pays (issue 23), for the newest checkpoint of
a live task only: a finished task has nothing left to checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from core.demo import CART_ROUNDING, RELEASE
from tui.app import PitstopApp
from tui.screens.task import TaskScreen

pytestmark = pytest.mark.usefixtures("tui_environment")


async def overview_head(pilot: Pilot[None], task_id: str) -> str:
    for _ in range(3):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    app = pilot.app
    assert isinstance(app, PitstopApp)
    app.open_task(task_id)
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    assert isinstance(app.screen, TaskScreen)
    return str(app.screen.query_one("#overview-head").render())


async def test_a_live_tasks_newest_checkpoint_says_when_the_next_pays(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=(120, 34)) as pilot:
        head = await overview_head(pilot, RELEASE)
    assert "pays" in head and "pitstop cost --why" in head


async def test_a_finished_task_says_nothing_of_it(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=(120, 34)) as pilot:
        head = await overview_head(pilot, CART_ROUNDING)
    assert "pays" not in head and "cost --why" not in head
