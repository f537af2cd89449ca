"""The dashboard's task table: a virtualised, line-based view that renders only what is visible.

Textual's `DataTable` builds every row up front (seconds for 10,000 tasks); this table keeps the
task list as plain data and draws one `Strip` per visible line in `render_line`, so start-up,
scrolling and filtering cost the height of the window, not the size of the store (STYLE.md 9:
toolong's line-based lazy views). Line 0 is the header and does not scroll; the other lines show
`shown[scroll_y + y - 1]`.

What stays fixed is the small surface the dashboard and palette use: `show`, `set_filter`,
`sort_by`, `shown`, `selected_task_id`, and the `RowHighlighted`, `RowSelected` and
`HeaderSelected` messages.

Remote-only tasks (`tui.remotes.RemoteSummary`, from the last remote listings) are rows like any
other, sorted and filtered with the local ones; their objective cell starts with a `↓ remote`
badge (and `no key` when the operator cannot read them), and local tasks shared through a remote
start with a small `⇅`. What each cell says is `tui.widgets.task_cells`; this module draws it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.color import Color
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from core import clock
from core.engine import TaskSummary
from core.engine.attention import attention
from core.models import TaskStatus
from tui.remotes import DashboardRow, RemoteSummary, RemoteView
from tui.widgets.formatting import STATUS_ATTENTION, budget_fraction, repo_name
from tui.widgets.task_cells import (
    CELL_PADDING,
    COLUMNS,
    badged_cell,
    column_layout,
    fit,
    fit_budget,
    last_activity,
    minutes_spent,
    row_badges,
    row_cells,
)

# Statuses in triage order, for reading the first screenful in the order the table shows it.
TRIAGE_STATUSES: tuple[TaskStatus, ...] = tuple(
    sorted(STATUS_ATTENTION, key=STATUS_ATTENTION.__getitem__)
)


SORT_KEYS: dict[str, Callable[[DashboardRow], Any]] = {
    "status": lambda s: STATUS_ATTENTION[s.task.status],
    "task": lambda s: s.task.id,
    "objective": lambda s: s.task.objective.lower(),
    "repo": lambda s: repo_name(s.task),
    "age": last_activity,  # sorted newest first: see `_order`
    "checkpoints": lambda s: s.checkpoint_count,
    "approvals": lambda s: s.pending_approvals,
    "effects": lambda s: s.uncertain_effects,
    "verdict": lambda s: s.last_verdict or "",
    "budget": lambda s: budget_fraction(s.task, minutes_spent(s)) or 0.0,
}


def haystack(summary: DashboardRow) -> str:
    """The lower-cased text a filter searches: id, status, repo and objective."""
    task = summary.task
    return " ".join((task.id, task.status.value, repo_name(task), task.objective)).lower()


def matches(summary: DashboardRow, filter_text: str) -> bool:
    """True when every word of the filter appears in the task's id, status, repo or objective."""
    text = haystack(summary)
    return all(word in text for word in filter_text.lower().split())


@lru_cache(maxsize=16)
def _cached_layout(width: int) -> tuple[tuple[int, int], ...]:
    """`column_layout`, once per width the table is drawn at."""
    return column_layout(width)


def attention_score(summary: DashboardRow, now: datetime | None = None) -> float:
    """How much the row needs a person (`core.engine.attention`); a remote-only task: 0."""
    return 0.0 if isinstance(summary, RemoteSummary) else attention(summary, now).score


def triage_order(summaries: Sequence[DashboardRow]) -> list[DashboardRow]:
    """What needs a person most first (the attention score), then by status, then the most
    recently active."""
    now = clock.now()
    by_recent = sorted(summaries, key=last_activity, reverse=True)
    by_status = sorted(by_recent, key=lambda s: STATUS_ATTENTION[s.task.status])
    return sorted(by_status, key=lambda s: attention_score(s, now), reverse=True)


class TaskTable(ScrollView, can_focus=True):
    """Tasks as lines keyed by task id; `enter` or a click on the cursor row opens one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select_cursor",
            "Open",
            id="table.open",
            tooltip="Open the highlighted task's checkpoints",
        ),
        Binding("j", "cursor_down", "Down", show=False, id="table.down"),
        Binding("k", "cursor_up", "Up", show=False, id="table.up"),
        Binding("g", "scroll_top", "Top", show=False, id="table.top"),
        Binding("G", "scroll_bottom", "Bottom", show=False, id="table.bottom"),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("up", "cursor_up", "Up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("home", "scroll_top", "Top", show=False),
        Binding("end", "scroll_bottom", "Bottom", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "task-table--header",
        "task-table--header-hover",
        "task-table--cursor",
        "task-table--hover",
        "task-table--even-row",
    }

    DEFAULT_CSS = """
    TaskTable {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        &:focus {
            background-tint: $foreground 5%;
            & > .task-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .task-table--header {
                background-tint: $foreground 5%;
            }
        }
        & > .task-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .task-table--header-hover {
            background: $accent 30%;
        }
        & > .task-table--even-row {
            background: $surface-lighten-1 50%;
        }
        &:dark > .task-table--even-row {
            background: $surface-darken-1 40%;
        }
        & > .task-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .task-table--hover {
            background: $block-hover-background;
        }
    }
    """

    class RowHighlighted(Message):
        """The cursor moved to another task (or the table emptied: `task_id` is None)."""

        def __init__(self, table: TaskTable, task_id: str | None) -> None:
            super().__init__()
            self.table = table
            self.task_id = task_id

        @property
        def control(self) -> TaskTable:
            """The table, so `@on(..., "#tasks")` selectors match."""
            return self.table

    class RowSelected(Message):
        """The user chose a task (enter, or a click on the highlighted row)."""

        def __init__(self, table: TaskTable, task_id: str) -> None:
            super().__init__()
            self.table = table
            self.task_id = task_id

        @property
        def control(self) -> TaskTable:
            """The table, so `@on(..., "#tasks")` selectors match."""
            return self.table

    class HeaderSelected(Message):
        """A column header was clicked; `column` is its key."""

        def __init__(self, table: TaskTable, column: str) -> None:
            super().__init__()
            self.table = table
            self.column = column

        @property
        def control(self) -> TaskTable:
            """The table, so `@on(..., "#tasks")` selectors match."""
            return self.table

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.summaries: list[TaskSummary] = []  # the local tasks
        self.remote = RemoteView()  # remote-only rows and which local tasks are shared
        self._rows: list[DashboardRow] = []  # local tasks, then remote-only ones
        self.filter_text = ""
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.cursor_row = 0
        self.hover_row: int | None = None
        self.hover_column: str | None = None
        self._ordered: list[tuple[DashboardRow, str]] = []  # every task, in display order
        self._shown: list[DashboardRow] = []
        self._shown_pairs: list[tuple[DashboardRow, str]] = []
        self._narrowable = False
        self._haystacks: dict[str, str] = {}
        self._layout: tuple[tuple[int, int], ...] = column_layout(120)
        self._generation = 0  # bumped whenever cached lines may be stale
        self._lines: LRUCache[tuple[Any, ...], Strip] = LRUCache(1024)
        self._colours: dict[str, Style] = {}
        self._cell_cache: dict[str, list[tuple[str, Style | None]]] = {}
        self._last_highlighted: str | None = None

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._invalidate())
        self._update_virtual_size()

    # --- the data --------------------------------------------------------------------------

    @property
    def shown(self) -> list[DashboardRow]:
        """The tasks the table shows now, in display order."""
        return self._shown

    @property
    def row_count(self) -> int:
        """How many tasks the table shows."""
        return len(self._shown)

    @property
    def selected_summary(self) -> DashboardRow | None:
        """The task under the cursor, with its counts, if any."""
        if 0 <= self.cursor_row < len(self._shown):
            return self._shown[self.cursor_row]
        return None

    @property
    def selected_task_id(self) -> str | None:
        """The task under the cursor, if any."""
        summary = self.selected_summary
        return summary.task.id if summary is not None else None

    @property
    def selected_remote(self) -> RemoteSummary | None:
        """The remote-only task under the cursor, if that is what it is on."""
        summary = self.selected_summary
        return summary if isinstance(summary, RemoteSummary) else None

    def show(self, summaries: Sequence[TaskSummary], remote: RemoteView | None = None) -> None:
        """Replace the rows (local tasks, and remote-only ones from `remote`), keeping the cursor
        on the same task when it is still listed."""
        keep = self.selected_task_id
        self.summaries = list(summaries)
        self.remote = remote or RemoteView()
        self._rows = [*self.summaries, *self.remote.rows]
        shared = self.remote.links
        repos: dict[str, str] = {}
        haystacks: dict[str, str] = {}
        for summary in self._rows:
            task = summary.task
            repo = repos.get(task.repo_root)
            if repo is None:
                repo = repos[task.repo_root] = repo_name(task)
            text = f"{task.id} {task.status.value} {repo} {task.objective}"
            if task.id in self.remote.refused:
                text += " refused"
            if shared and task.id in shared:
                text += " shared " + " ".join(shared[task.id])
            elif isinstance(summary, RemoteSummary):
                text += " remote " + summary.url + ("" if summary.readable else " no key")
            haystacks[task.id] = text.lower()
        self._haystacks = haystacks
        self._generation += 1
        self._cell_cache.clear()
        self._reorder()
        self._apply_filter(self.filter_text, keep)

    def set_filter(self, text: str) -> None:
        """Show only tasks matching `text` (every word, anywhere, case-insensitive)."""
        self._apply_filter(text.strip(), self.selected_task_id)

    def sort_by(self, column: str) -> None:
        """Sort by a column; choosing it again reverses, a third time restores triage order."""
        if self.sort_column != column:
            self.sort_column, self.sort_reverse = column, False
        elif not self.sort_reverse:
            self.sort_reverse = True
        else:
            self.sort_column, self.sort_reverse = None, False
        keep = self.selected_task_id
        self._reorder()
        self._apply_filter(self.filter_text, keep)

    def _reorder(self) -> None:
        if self.sort_column is None:
            ordered = triage_order(self._rows)
        else:
            # Youngest first is the natural order for ages, so "age" starts out reversed.
            reverse = self.sort_reverse != (self.sort_column == "age")
            ordered = sorted(self._rows, key=SORT_KEYS[self.sort_column], reverse=reverse)
        haystacks = self._haystacks
        self._ordered = [(s, haystacks[s.task.id]) for s in ordered]
        self._narrowable = False  # the order changed: the next filter starts from every task

    def _apply_filter(self, text: str, keep: str | None) -> None:
        # A filter that extends the previous one can only narrow it: search what is shown.
        words = text.lower().split()
        narrowing = (
            self._narrowable
            and bool(self.filter_text)
            and text.lower().startswith(self.filter_text.lower())
        )
        pairs = self._shown_pairs if narrowing else self._ordered
        for word in words:
            pairs = [pair for pair in pairs if word in pair[1]]
        self.filter_text = text
        self._shown_pairs = pairs
        self._narrowable = True
        self._shown = [summary for summary, _ in pairs]
        self._after_rows_changed(keep)

    def _after_rows_changed(self, keep: str | None) -> None:
        row = self.cursor_row
        if keep is not None:
            found = self._index_of(keep)
            if found is not None:
                row = found  # filtered out: the cursor stays where it is
        self.cursor_row = max(0, min(row, len(self._shown) - 1))
        self.hover_row = None
        self._update_virtual_size()
        self.refresh()
        self._scroll_cursor_into_view()
        self._highlighted()

    def _highlighted(self) -> None:
        """Tell the screen when the task under the cursor changed (not for every redraw)."""
        task_id = self.selected_task_id
        if task_id != self._last_highlighted:
            self._last_highlighted = task_id
            self.post_message(self.RowHighlighted(self, task_id))

    def _index_of(self, task_id: str) -> int | None:
        for index, summary in enumerate(self._shown):
            if summary.task.id == task_id:
                return index
        return None

    # --- geometry --------------------------------------------------------------------------

    def _update_virtual_size(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self._shown) + 1)

    def on_resize(self) -> None:
        self._update_virtual_size()
        self._invalidate()
        self._scroll_cursor_into_view()

    def _page_height(self) -> int:
        """Rows visible under the header."""
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_cursor_into_view(self) -> None:
        page = self._page_height()
        top = round(self.scroll_y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + page:
            self.scroll_to(y=self.cursor_row - page + 1, animate=False)

    # --- the cursor ------------------------------------------------------------------------

    def move_cursor(self, row: int) -> None:
        """Put the cursor on display row `row` (clamped), scrolled into view."""
        if not self._shown:
            return
        row = max(0, min(row, len(self._shown) - 1))
        if row == self.cursor_row:
            return
        old = self.cursor_row
        self.cursor_row = row
        self._refresh_row(old)
        self._refresh_row(row)
        self._scroll_cursor_into_view()
        self._highlighted()

    def _refresh_row(self, row: int) -> None:
        line = row - round(self.scroll_y) + 1
        if 1 <= line < self.size.height:
            self.refresh_lines(line + round(self.scroll_y))

    def action_cursor_down(self) -> None:
        """Highlight the next task."""
        self.move_cursor(self.cursor_row + 1)

    def action_cursor_up(self) -> None:
        """Highlight the previous task."""
        self.move_cursor(self.cursor_row - 1)

    def action_page_down(self) -> None:
        """Move the cursor one screenful down."""
        self.move_cursor(self.cursor_row + self._page_height())

    def action_page_up(self) -> None:
        """Move the cursor one screenful up."""
        self.move_cursor(self.cursor_row - self._page_height())

    def action_scroll_top(self) -> None:
        """Highlight the first task."""
        self.move_cursor(0)

    def action_scroll_bottom(self) -> None:
        """Highlight the last task."""
        self.move_cursor(len(self._shown) - 1)

    def action_select_cursor(self) -> None:
        """Open the highlighted task."""
        task_id = self.selected_task_id
        if task_id is not None:
            self.post_message(self.RowSelected(self, task_id))

    # --- the mouse -------------------------------------------------------------------------

    async def _on_click(self, event: events.Click) -> None:
        meta = event.style.meta
        if "column" in meta:
            self.post_message(self.HeaderSelected(self, str(meta["column"])))
        elif "task" in meta:
            row = self._index_of(str(meta["task"]))
            if row is None:
                return
            if row == self.cursor_row:
                self.action_select_cursor()
            else:
                self.move_cursor(row)

    def _on_mouse_move(self, event: events.MouseMove) -> None:
        meta = event.style.meta
        row = self._index_of(str(meta["task"])) if "task" in meta else None
        column = meta.get("column")
        if row != self.hover_row or column != self.hover_column:
            self.hover_row = row
            self.hover_column = column
            self.refresh()

    def _on_leave(self, _event: events.Leave) -> None:
        if self.hover_row is not None or self.hover_column is not None:
            self.hover_row = self.hover_column = None
            self.refresh()

    # --- drawing ---------------------------------------------------------------------------

    def _invalidate(self) -> None:
        self._generation += 1
        self._colours.clear()
        self._cell_cache.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        """Styles changed (focus, theme, CSS): drop cached lines and colours."""
        super().notify_style_update()
        self._generation += 1
        self._colours.clear()
        self._cell_cache.clear()

    def _colour(self, variable: str) -> Style:
        """A foreground style from a theme variable (`status-waiting`, `warning`)."""
        style = self._colours.get(variable)
        if style is None:
            value = self.app.theme_variables.get(variable)
            style = Style(color=Color.parse(value).rich_color) if value else Style()
            self._colours[variable] = style
        return style

    def render_line(self, y: int) -> Strip:
        """Line `y` of the viewport: the header, or the task `scroll_y + y - 1` rows down."""
        width = self.scrollable_content_region.width  # narrower once the scrollbar shows
        self._layout = _cached_layout(width)
        if y == 0:
            key: tuple[Any, ...] = ("header", width, self.hover_column, self._generation)
            strip = self._lines.get(key)
            if strip is None:
                strip = self._lines[key] = self._header_strip(width)
            return strip
        row = round(self.scroll_y) + y - 1
        if row >= len(self._shown):
            return Strip.blank(width, self.rich_style)
        # Keyed by task and stripe, not position: lines survive filtering, sorting and scrolling.
        task_id = self._shown[row].task.id
        key = (task_id, row % 2, row == self.cursor_row, row == self.hover_row)
        key += (width, self._generation)
        strip = self._lines.get(key)
        if strip is None:
            strip = self._lines[key] = self._row_strip(row, width)
        return strip

    def _header_strip(self, width: int) -> Strip:
        base = self.rich_style + self.get_component_rich_style("task-table--header")
        hover = self.get_component_rich_style("task-table--header-hover", partial=True)
        pad = " " * CELL_PADDING
        segments = []
        for index, cells in self._layout:
            column = COLUMNS[index]
            label = column.header
            if column.key == self.sort_column and cell_len(label) < cells:
                label += "▼" if self.sort_reverse != (column.key == "age") else "▲"
            style = base + Style.from_meta({"column": column.key})
            if column.key == self.hover_column:
                style += hover
            segments.append(Segment(pad + fit(label, cells, column.right) + pad, style))
        return Strip(segments).adjust_cell_length(width, base)

    def _row_strip(self, row: int, width: int) -> Strip:
        summary = self._shown[row]
        style = self.rich_style
        if row % 2 == 0:
            style += self.get_component_rich_style("task-table--even-row", partial=True)
        if row == self.cursor_row:
            style += self.get_component_rich_style("task-table--cursor", partial=True)
        elif row == self.hover_row:
            style += self.get_component_rich_style("task-table--hover", partial=True)
        style += Style.from_meta({"task": summary.task.id})
        pad = " " * CELL_PADDING
        segments = []
        texts = self._cell_cache.get(summary.task.id)
        if texts is None:
            texts = self._cell_cache[summary.task.id] = row_cells(summary, self._colour)
        for index, cells in self._layout:
            column, (text, colour) = COLUMNS[index], texts[index]
            cell_style = style + colour if colour is not None else style
            if column.key == "objective":
                on_cursor = row == self.cursor_row
                shared = summary.task.id in self.remote.links
                refused = self.remote.refused.get(summary.task.id, 0)
                badges = row_badges(summary, on_cursor, shared, self._colour, refused)
                if badges:
                    segments += badged_cell(badges, text, cells, style, cell_style)
                    continue
            shown = (
                fit_budget(text, cells)
                if column.key == "budget"
                else fit(text, cells, column.right)
            )
            segments.append(Segment(pad + shown + pad, cell_style))
        return Strip(segments).adjust_cell_length(width, style)
