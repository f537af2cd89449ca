"""The dashboard's first frame shows tasks: the first screen is read before Textual paints.

Read by a worker, the first screen landed after the first frame on a big store and the table
was painted twice (issue 18's first-paint target). These tests pin what the first frame holds
and how many rows the first read takes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.app import PitstopApp
from tui.first_screen import rows_on_screen
from tui.screens.dashboard import DashboardScreen
from tui.widgets.task_table import TaskTable

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (120, 30)


async def test_the_first_frame_already_lists_the_first_screen_of_tasks(
    demo_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DashboardScreen, "FIRST_SCREEN", 3)  # the demo's 7 tasks: a partial read
    painted: list[int] = []
    render_line = TaskTable.render_line

    def recording(self: TaskTable, y: int):  # type: ignore[no-untyped-def]
        painted.append(len(self.summaries))
        return render_line(self, y)

    monkeypatch.setattr(TaskTable, "render_line", recording)
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        assert painted, "the table drew nothing"
        # No frame of the table was drawn empty: its very first line had the tasks to show.
        assert painted[0] == 3, painted[:5]
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(app.screen.query_one(TaskTable).summaries) == 7  # then the whole list


async def test_a_first_screen_that_holds_every_task_starts_no_second_read(
    demo_store: Path,
) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert len(app.screen.query_one(TaskTable).summaries) == 7
        assert not [w for w in app.workers if w.group == "tasks"]


def test_the_first_read_takes_no_more_rows_than_the_terminal_has_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LINES", "24")
    assert rows_on_screen(64) == 24
    assert rows_on_screen(10) == 10  # never more than asked
    monkeypatch.setenv("LINES", "0")  # a terminal that reports nothing: asked for, at most
    monkeypatch.delenv("COLUMNS", raising=False)
    assert 1 <= rows_on_screen(64) <= 64
