"""The dashboard's cursor row stays readable in every shipped theme (issue 18: red or green on
the orange cursor could hardly be read in the dark theme).

WCAG 2 contrast ratio, (L1 + 0.05) / (L2 + 0.05) of the relative luminances: every colour a
task row's cells can take (each status colour, the approvals / uncertain / verdict / budget
colours, the muted and the plain text) against the cursor row's background, focused and not,
at least 4.5:1 (AA for normal text). Checked twice: on the theme's resolved variables, and on
the very segments the table draws for its cursor row on the demo store.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.segment import Segment
from textual.color import Color

from core.models import TaskStatus
from tui.app import PitstopApp
from tui.themes import load_bundled_themes
from tui.widgets.formatting import status_variable
from tui.widgets.task_cells import VERDICT_LABELS
from tui.widgets.task_table import TaskTable

pytestmark = pytest.mark.usefixtures("tui_environment")

AA = 4.5
SHIPPED = sorted(load_bundled_themes().themes)
# Every colour `row_cells` gives a cell, by theme variable.
ROW_COLOURS = sorted(
    {status_variable(status) for status in TaskStatus}
    | {colour for _, colour in VERDICT_LABELS.values()}
    | {"warning", "error", "budget-over", "foreground-muted", "foreground"}
)


def luminance(colour: Color) -> float:
    """WCAG 2 relative luminance of an opaque colour."""

    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.r) + 0.7152 * channel(colour.g) + 0.0722 * channel(colour.b)


def contrast(one: Color, other: Color) -> float:
    high, low = sorted((luminance(one), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_ratio_is_wcags() -> None:
    """The formula's known points: black on white 21:1, a colour on itself 1:1, and the
    WCAG example #777777 on white just under 4.5:1."""
    white, black = Color.parse("#FFFFFF"), Color.parse("#000000")
    assert contrast(white, black) == pytest.approx(21)
    assert contrast(black, white) == pytest.approx(21)
    assert contrast(white, white) == 1
    assert 4.47 < contrast(Color.parse("#777777"), white) < 4.5


async def resolved_variables(store: Path) -> dict[str, dict[str, str]]:
    """Each shipped theme's variables as the app resolves them (Pitstop's own included)."""
    found = {}
    app = PitstopApp(store)
    async with app.run_test() as pilot:
        for name in SHIPPED:
            app.theme = name
            await pilot.pause()
            found[name] = dict(app.theme_variables)
    return found


@pytest.mark.parametrize("cursor", ["cursor-row", "cursor-row-blurred"])
async def test_every_row_colour_reads_on_the_cursor_row_in_every_theme(
    demo_store: Path, cursor: str
) -> None:
    assert SHIPPED == ["pitstop-contrast", "pitstop-dark", "pitstop-light"]
    failures = []
    for theme, variables in (await resolved_variables(demo_store)).items():
        background = Color.parse(variables["surface"]) + Color.parse(variables[cursor])
        for name in ROW_COLOURS:
            colour = background + Color.parse(variables[name])  # a translucent one, blended
            ratio = contrast(colour, background)
            if ratio < AA:
                failures.append(f"{theme}: {name} {colour.hex} on {background.hex} {ratio:.2f}")
    assert not failures, "\n".join(failures)


def cursor_segments(table: TaskTable) -> list[Segment]:
    y = table.cursor_row - round(table.scroll_y) + 1  # line 0 is the header
    return [s for s in table.render_line(y) if s.text.strip() and s.style is not None]


@pytest.mark.parametrize("theme", SHIPPED)
async def test_the_drawn_cursor_row_reads_in_every_theme(demo_store: Path, theme: str) -> None:
    """What the table really draws: each cursor row of the demo, focused and then blurred,
    every visible segment's colour against its own background."""
    app = PitstopApp(demo_store)
    async with app.run_test(size=(160, 34)) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        app.theme = theme
        await pilot.pause()
        table = app.screen.query_one(TaskTable)
        table.focus()
        await pilot.pause()
        failures, seen = [], set()
        for focused in (True, False):
            if not focused:
                table.blur()
                await pilot.pause()
            for row in range(table.row_count):
                table.move_cursor(row)
                for segment in cursor_segments(table):
                    style = segment.style
                    assert style is not None and style.color and style.bgcolor, segment
                    if style.dim:
                        continue  # the `·` of an empty cell: dimmed on purpose, no signal
                    fg = Color.from_rich_color(style.color)
                    bg = Color.from_rich_color(style.bgcolor)
                    seen.add(fg.hex)
                    if contrast(fg, bg) < AA:
                        failures.append(
                            f"row {row} {'focused' if focused else 'blurred'}: "
                            f"{segment.text.strip()!r} {fg.hex} on {bg.hex} {contrast(fg, bg):.2f}"
                        )
    assert len(seen) >= 4  # the demo's rows really show several status colours
    assert not failures, "\n".join(failures)
