"""The virtual task table on its own: 10,000 rows cost a screenful of lines, not 10,000.

The table is mounted alone in a small app (no store), fed fabricated summaries, and its
`render_line` calls are counted per refresh.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Tabs

from core.engine import TaskSummary
from core.models import Budget, Task, TaskStatus
from tui.app import PitstopApp
from tui.messages import TasksLoaded
from tui.screens.dashboard import DashboardScreen
from tui.widgets.summary_bar import SummaryBar
from tui.widgets.task_cells import COLUMNS, column_layout
from tui.widgets.task_table import TaskTable, matches, triage_order

pytestmark = pytest.mark.usefixtures("tui_environment")

STATUSES = list(TaskStatus)
SIZE = (120, 30)


def summary(number: int, status: TaskStatus | None = None, **counts: Any) -> TaskSummary:
    minute = number % 60
    hour = (number // 60) % 24
    day = 1 + (number // 1440) % 28
    at = f"2026-11-{day:02d}T{hour:02d}:{minute:02d}:00.000000Z"
    task = Task(
        id=f"task-{number:05d}",
        repo_root=f"/work/{('shopfront', 'invoicer', 'search')[number % 3]}",
        store_repo=f"/store/repos/task-{number:05d}.git",
        objective=f"objective number {number} about {('cache', 'login', 'export')[number % 3]}",
        status=status or STATUSES[number % len(STATUSES)],
        created_at=at,
        updated_at=at,
        budget=Budget(usd=10.0),
        usd_used=number % 10,
    )
    return TaskSummary(task, number % 7, at, **counts)


def many(count: int) -> list[TaskSummary]:
    return [summary(number) for number in range(count)]


class CountingTable(TaskTable):
    """Counts the lines it is asked for."""

    calls = 0

    def render_line(self, y: int) -> Any:
        CountingTable.calls += 1
        return super().render_line(y)


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield CountingTable(id="tasks")


@contextmanager
def counting() -> Iterator[list[int]]:
    CountingTable.calls = 0
    result: list[int] = []
    yield result
    result.append(CountingTable.calls)


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(3):
        await pilot.pause()


def of_type(posted: list[Any], kind: type) -> list[Any]:
    """Messages of `kind`, once each (the hook sees a message again as it bubbles up)."""
    return list({id(m): m for m in posted if isinstance(m, kind)}.values())


def ids(table: TaskTable) -> list[str]:
    return [s.task.id for s in table.shown]


async def test_ten_thousand_rows_render_only_the_visible_lines() -> None:
    app = TableApp()
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(CountingTable)
        with counting() as first:
            table.show(many(10_000))
            await settle(pilot)
        height = table.size.height
        assert height <= SIZE[1]
        assert table.row_count == 10_000
        assert table.virtual_size.height == 10_001  # the header and every row, drawn lazily
        assert 0 < first[0] <= 3 * height  # a repaint or two of the viewport, not 10,000 lines
        # The scrollbar took two cells: the objective gave them up, the budget is whole.
        width = table.scrollable_content_region.width
        assert table.show_vertical_scrollbar and width < SIZE[0]
        for y in (0, 1, 2):
            assert table.render_line(y).cell_length == width
        assert table.render_line(1).text.rstrip().endswith("%")

        for _ in range(3):
            with counting() as again:
                table.refresh()
                await pilot.pause()
            assert 0 < again[0] <= height + 1

        with counting() as scrolled:
            await pilot.press("pagedown", "pagedown", "G")
            await settle(pilot)
        assert table.selected_task_id == table.shown[-1].task.id
        assert table.scroll_y == table.max_scroll_y
        assert scrolled[0] <= 6 * height

        with counting() as filtered:
            table.set_filter("cache 42")
            await settle(pilot)
        assert filtered[0] <= 3 * height
        assert ids(table) == [
            s.task.id for s in triage_order(many(10_000)) if matches(s, "42 cache")
        ]


async def test_visible_lines_show_the_rows_under_the_scroll_offset() -> None:
    app = TableApp()
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(CountingTable)
        table.show(many(500))
        await settle(pilot)
        assert "Status" in table.render_line(0).text and "Objective" in table.render_line(0).text
        assert table.shown[0].task.id in table.render_line(1).text
        table.scroll_to(y=100, animate=False)
        await settle(pilot)
        assert "Status" in table.render_line(0).text  # the header does not scroll
        assert table.shown[100].task.id in table.render_line(1).text
        assert table.shown[101].task.id in table.render_line(2).text


async def test_filter_narrows_widens_and_matches_every_word() -> None:
    app = TableApp()
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(CountingTable)
        rows = many(3000)
        table.show(rows)
        await settle(pilot)
        expected_order = [s.task.id for s in triage_order(rows)]
        for text in (
            "c",
            "ca",
            "cache",
            "cache 1",
            "cache 12",
            "cache 1",
            "login",
            "",
            "SHOPFRONT",
        ):
            table.set_filter(text)
            assert ids(table) == [i for i in expected_order if matches(table_row(rows, i), text)]
        table.set_filter("no such words")
        assert table.row_count == 0 and table.selected_task_id is None
        table.set_filter("")
        assert ids(table) == expected_order


def table_row(rows: list[TaskSummary], task_id: str) -> TaskSummary:
    return next(s for s in rows if s.task.id == task_id)


async def test_sorting_by_a_column_then_reversed_then_back_to_triage() -> None:
    app = TableApp()
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(CountingTable)
        rows = [
            summary(1, TaskStatus.DONE, pending_approvals=2),
            summary(2, TaskStatus.WAITING),
            summary(3, TaskStatus.RUNNING, uncertain_effects=1),
            summary(4, TaskStatus.PAUSED, pending_approvals=1),
        ]
        table.show(rows)
        await settle(pilot)
        # Triage: the uncertain effect, then the pending approval, then status (issue 18).
        triage = ["task-00003", "task-00004", "task-00002", "task-00001"]
        assert ids(table) == triage
        table.sort_by("task")
        assert ids(table) == ["task-00001", "task-00002", "task-00003", "task-00004"]
        table.sort_by("task")
        assert ids(table) == ["task-00004", "task-00003", "task-00002", "task-00001"]
        table.sort_by("task")
        assert ids(table) == triage
        table.sort_by("approvals")
        assert ids(table)[-2:] == ["task-00004", "task-00001"]
        table.sort_by("age")  # newest first
        assert ids(table) == ["task-00004", "task-00003", "task-00002", "task-00001"]
        table.set_filter("task-0000")
        table.sort_by("age")  # a sort keeps the filter
        assert ids(table) == ["task-00001", "task-00002", "task-00003", "task-00004"]


async def test_header_click_sorts_and_row_click_selects_then_opens() -> None:
    posted: list[Any] = []
    app = TableApp()
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        table = app.query_one(CountingTable)
        table.show(many(50))
        await settle(pilot)
        header = table.render_line(0).text
        await pilot.click(CountingTable, offset=(header.index("Task") + 1, 0))
        await settle(pilot)
        sorts = of_type(posted, TaskTable.HeaderSelected)
        assert [m.column for m in sorts] == ["task"]
        await pilot.click(CountingTable, offset=(20, 3))  # the third row
        await settle(pilot)
        third = table.shown[2].task.id
        assert table.selected_task_id == third
        assert not of_type(posted, TaskTable.RowSelected)
        await pilot.click(CountingTable, offset=(20, 3))  # again: open it
        await settle(pilot)
        opened = [m.task_id for m in of_type(posted, TaskTable.RowSelected)]
        assert opened == [third]
        highlighted = [m.task_id for m in of_type(posted, TaskTable.RowHighlighted)]
        assert highlighted[-1] == third


async def test_keys_move_the_cursor_and_enter_selects() -> None:
    posted: list[Any] = []
    app = TableApp()
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        table = app.query_one(CountingTable)
        table.focus()
        table.show(many(100))
        await settle(pilot)
        await pilot.press("j", "j", "down", "k")
        assert table.cursor_row == 2
        await pilot.press("G")
        assert table.cursor_row == 99
        await pilot.press("g", "pagedown")
        assert table.cursor_row == table.size.height - 1
        await pilot.press("up", "enter")
        await settle(pilot)
        selected = [m.task_id for m in of_type(posted, TaskTable.RowSelected)]
        assert selected == [table.shown[table.size.height - 2].task.id]


async def test_selection_is_kept_across_a_refresh_and_a_filter() -> None:
    app = TableApp()
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(CountingTable)
        rows = many(2000)
        table.show(rows)
        await settle(pilot)
        table.move_cursor(1500)
        chosen = table.selected_task_id
        chosen_summary = table.selected_summary
        assert chosen is not None and chosen_summary is not None
        scrolled = table.scroll_y
        assert scrolled > 0  # the cursor was scrolled into view

        # A live refresh: new data, in another order, one new task on top.
        fresh = [summary(9999, TaskStatus.WAITING), *reversed(rows)]
        table.show(fresh)
        await settle(pilot)
        assert table.selected_task_id == chosen
        row = table.cursor_row
        assert table.scroll_y <= row < table.scroll_y + table.size.height - 1

        # Filtering keeps it while it matches, and returns to it when the filter is cleared.
        number = chosen.removeprefix("task-")
        table.set_filter(number)
        assert table.selected_task_id == chosen
        table.set_filter("")
        assert table.selected_task_id == chosen

        # A filter that hides it leaves the cursor where it was (within the rows left).
        hiding = next(
            w for w in ("cache", "login", "export") if w not in chosen_summary.task.objective
        )
        row = table.cursor_row
        table.set_filter(hiding)
        assert table.selected_task_id != chosen
        assert table.cursor_row == min(row, table.row_count - 1)


async def test_the_dashboard_paints_a_first_screen_then_the_whole_list(
    demo_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DashboardScreen, "FIRST_SCREEN", 2)
    shown: list[tuple[list[TaskSummary], Any]] = []
    show = TaskTable.show

    def recording(self: TaskTable, summaries: list[TaskSummary], *args: Any) -> None:
        show(self, summaries, *args)
        shown.append((list(summaries), getattr(self.screen, "_status_counts", None)))

    monkeypatch.setattr(TaskTable, "show", recording)
    posted: list[Any] = []
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(shown) == 2
        (first, first_counts), (whole, whole_counts) = shown
        assert len(first) == 2 and len(whole) == 7
        # The store-wide counts stand in for the whole list until it arrives.
        assert sum(first_counts.values()) == 7 and whole_counts is None
        # The first screen holds the head of the triage order (the table orders it itself).
        assert [s.task.id for s in triage_order(first)] == [s.task.id for s in triage_order(whole)][
            :2
        ]
        # The whole list came from the worker, once; the first screen was shown on mount.
        (loaded,) = of_type(posted, TasksLoaded)
        assert loaded.status_counts is None and len(loaded.summaries) == 7
        table = app.screen.query_one(TaskTable)
        assert ids(table) == [s.task.id for s in triage_order(whole)]
        assert "7 tasks" in str(app.screen.query_one(SummaryBar).render())


@pytest.mark.parametrize("width", [60, 80, 120, 220])
def test_the_essential_columns_always_show_and_the_layout_fills_the_width(width: int) -> None:
    layout = column_layout(width)
    keys = [COLUMNS[index].key for index, _ in layout]
    assert {"status", "task", "approvals", "effects", "verdict"} <= set(keys)
    assert sum(cells + 2 for _, cells in layout) == width
    if width >= 120:
        assert len(keys) == len(COLUMNS)  # nothing dropped from 120 columns on


async def test_at_80_columns_the_header_names_every_essential_column(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        header = app.screen.query_one(TaskTable).render_line(0).text
        for name in ("Status", "Task", "Appr", "Unc", "Verdict"):
            assert name in header
        assert len(header) == 80


async def test_at_80_columns_a_tab_key_scrolls_its_tab_into_view(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        await pilot.press("enter")
        await pilot.pause()
        for key, tab_id in (("u", "--content-tab-resume"), ("o", "--content-tab-overview")):
            await pilot.press(key)
            await pilot.pause(0.3)
            tabs = app.screen.query_one(Tabs)
            tab = app.screen.query_one(f"#{tab_id}")
            assert tabs.region.contains_region(tab.region), (key, tab.region, tabs.region)
