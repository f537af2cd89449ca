"""Every other list with a cursor stays readable on its cursor row (issue 18), as the dashboard's
task table does (tests/tui/test_cursor_contrast.py): the approvals inbox, and on the task screen
the checkpoint timeline and the Diff, Evidence, Side effects and Approvals tables.

What each widget really draws for its highlighted row, in every shipped theme, focused and then
blurred: every visible, coloured segment against its own background, at least 4.5:1 (WCAG AA).
Dimmed segments are left out, as on the dashboard: they carry no colour signal. And each table
row's cells keep under the cursor the colours they have without it: the old accent cursor drew
every cell in its one foreground (the risk, state, outcome and +/- colours gone, 4.28:1 in the
light theme), and the timeline's incomplete red fell to 4.2:1 on the selection blue.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.segment import Segment
from textual.color import Color
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable, OptionList, TabbedContent

from core.demo import BUMP_DEPENDENCIES, INVOICE_CURRENCY, RATE_LIMIT, RELEASE
from core.engine import Engine
from core.models import Interface, Risk
from tests.tui.test_cursor_contrast import AA, SHIPPED, contrast
from tui.app import PitstopApp
from tui.screens.inbox import InboxScreen, InboxTable
from tui.screens.task import TaskScreen
from tui.widgets.inbox_table import risk_variable

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (160, 40)


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def table_cursor_lines(table: DataTable[object]) -> Iterator[list[Segment]]:
    """The drawn line of each row under the cursor, row by row (line 0 is the header)."""
    for row in range(table.row_count):
        table.move_cursor(row=row, animate=False)
        table.scroll_to(y=0, animate=False)
        table.refresh()
        y = row - round(table.scroll_y) + (1 if table.show_header else 0)
        if y >= table.size.height:
            break
        yield list(table.render_line(y))


def option_cursor_lines(options: OptionList) -> Iterator[list[Segment]]:
    """The drawn lines of each enabled option under the highlight (an option is several lines)."""
    for index in range(options.option_count):
        if options.get_option_at_index(index).disabled:
            continue
        options.highlighted = index
        options.scroll_to(y=0, animate=False)
        options.refresh()
        lines = [y for y in range(options.size.height) if highlighted_line(options, y)]
        yield [segment for y in lines for segment in options.render_line(y)]


def highlighted_line(options: OptionList, y: int) -> bool:
    line = options._lines[y + round(options.scroll_y)] if y < len(options._lines) else None
    return line is not None and line[0] == options.highlighted


def unreadable(lines: list[Segment], where: str, seen: set[str]) -> list[str]:
    failures = []
    for segment in lines:
        style = segment.style
        if not segment.text.strip() or style is None or style.dim:
            continue
        assert style.color and style.bgcolor, segment
        fg, bg = Color.from_rich_color(style.color), Color.from_rich_color(style.bgcolor)
        seen.add(fg.hex)
        if contrast(fg, bg) < AA:
            failures.append(
                f"{where}: {segment.text.strip()!r} {fg.hex} on {bg.hex} {contrast(fg, bg):.2f}"
            )
    return failures


def widget_focus(widget: Widget, focused: bool) -> None:
    widget.focus() if focused else widget.blur()


async def check(pilot: Pilot[None], widget: Widget, name: str) -> tuple[list[str], set[str]]:
    """Focused then blurred, every row of `widget` under its cursor."""
    failures: list[str] = []
    seen: set[str] = set()
    for focused in (True, False):
        widget_focus(widget, focused)
        await pilot.pause()
        assert widget.has_focus is focused
        lines = (
            table_cursor_lines(widget)
            if isinstance(widget, DataTable)
            else option_cursor_lines(widget)  # type: ignore[arg-type]
        )
        count = 0
        for count, drawn in enumerate(lines, start=1):
            await pilot.pause()
            where = f"{name} {'focused' if focused else 'blurred'} row {count - 1}"
            failures += unreadable(drawn, where, seen)
        assert count, f"{name} drew no row under its cursor"
        if isinstance(widget, DataTable):
            failures += await colours_kept(pilot, widget, name)
    return failures, seen


def colours(drawn: list[Segment]) -> list[tuple[str, str]]:
    return [
        (s.text.strip(), Color.from_rich_color(s.style.color).hex)
        for s in drawn
        if s.text.strip() and s.style is not None and s.style.color and not s.style.dim
    ]


async def colours_kept(pilot: Pilot[None], table: DataTable[object], name: str) -> list[str]:
    """Each row's cells in the same colours under the cursor as without it: the cursor changes
    the background, never hides a risk, state or outcome colour under one cursor colour."""
    failures = []
    for row in range(min(table.row_count, table.size.height - 1)):
        table.move_cursor(row=row, animate=False)
        drawn = {}
        for shown in (False, True):
            table.show_cursor = shown
            table.refresh()
            await pilot.pause()
            drawn[shown] = colours(list(table.render_line(row + 1)))
        if drawn[True] != drawn[False]:
            failures.append(f"{name} row {row}: {drawn[False]} became {drawn[True]} on the cursor")
    return failures


@pytest.mark.parametrize("theme", SHIPPED)
async def test_the_inbox_cursor_row_reads_in_every_theme(demo_store: Path, theme: str) -> None:
    with Engine(demo_store, interface=Interface.HOOK, actor="agent") as engine:
        for risk in Risk:  # every risk colour in the queue
            engine.request_approval(RATE_LIMIT, f"Deploy at {risk.value} risk", risk=risk)
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, InboxScreen)
        table = app.screen.query_one(InboxTable)
        assert {a.risk for a in table.approvals} == set(Risk)
        table.marked = {a.id for a in table.approvals[:1]}  # the accent mark drawn too
        table._render_rows()
        await pilot.pause()
        failures, seen = await check(pilot, table, "inbox")
        for focused in (True, False):
            widget_focus(table, focused)
            await pilot.pause()
            for approval, drawn in zip(table.approvals, table_cursor_lines(table), strict=True):
                risk = risk_variable(approval.risk)
                want = Color.parse(app.theme_variables[risk]).hex
                cell = [s for s in drawn if approval.risk.value in s.text]
                assert cell and cell[0].style and cell[0].style.color, drawn
                got = Color.from_rich_color(cell[0].style.color).hex
                if got != want:  # the accent cursor's one colour hid the risk colour
                    failures.append(f"inbox {risk} drawn {got} on the cursor, not {want}")
    assert not failures, "\n".join(failures)
    assert len(seen) >= 3  # risk colours and the plain text really drawn


# (task, tab, widget selector): a demo task whose list has coloured rows.
TASK_LISTS = [
    (BUMP_DEPENDENCIES, "overview", "#timeline"),
    (RATE_LIMIT, "diff", "#diff-files"),
    (RATE_LIMIT, "evidence", "#evidence-table"),
    (RELEASE, "effects", "#effects-table"),
    (INVOICE_CURRENCY, "approvals", "#approvals-table"),
]


@pytest.mark.parametrize("theme", SHIPPED)
async def test_the_task_screen_cursor_rows_read_in_every_theme(
    demo_store: Path, theme: str
) -> None:
    failures: list[str] = []
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme
        await settle(pilot)
        for task_id, tab, selector in TASK_LISTS:
            app.open_task(task_id)
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, TaskScreen)
            screen.query_one(TabbedContent).active = tab
            await settle(pilot)
            widget = screen.query_one(selector)
            found, seen = await check(pilot, widget, f"{task_id} {selector}")
            assert len(seen) >= 2, f"{selector}: {seen}"
            failures += found
            app.pop_screen()
            await settle(pilot)
    assert not failures, "\n".join(failures)
