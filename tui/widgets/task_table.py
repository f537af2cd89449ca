"""The dashboard's task table: status-coloured rows, a filter, sorting, and a stable cursor.

A `DataTable` for now; DESIGN's 10,000-task target needs a virtualised line widget later, and
this class's small surface (`show`, `filter_text`, `selected_task_id`) is what would stay.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, RowDoesNotExist

from core import clock
from core.engine import TaskSummary
from tui.widgets.formatting import (
    STATUS_ATTENTION,
    STATUS_GLYPHS,
    budget_fraction,
    budget_summary,
    repo_name,
    status_variable,
    truncate,
)

MIN_OBJECTIVE_WIDTH = 16

# (column key, header, width); the objective takes whatever width the others leave.
COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    ("status", "Status", 11),
    ("task", "Task", 26),
    ("objective", "Objective", None),
    ("repo", "Repo", 9),
    ("age", "Age", 4),
    ("checkpoints", "Ckpt", 4),
    ("budget", "Budget", 16),
)


def _last_activity(summary: TaskSummary) -> str:
    return summary.last_checkpoint_at or summary.task.updated_at


SORT_KEYS: dict[str, Callable[[TaskSummary], Any]] = {
    "status": lambda s: STATUS_ATTENTION[s.task.status],
    "task": lambda s: s.task.id,
    "objective": lambda s: s.task.objective.lower(),
    "repo": lambda s: repo_name(s.task),
    "age": _last_activity,  # sorted newest first: see `shown`
    "checkpoints": lambda s: s.checkpoint_count,
    "budget": lambda s: budget_fraction(s.task) or 0.0,
}


def matches(summary: TaskSummary, filter_text: str) -> bool:
    """True when every word of the filter appears in the task's id, status, repo or objective."""
    task = summary.task
    haystack = " ".join((task.id, task.status.value, repo_name(task), task.objective)).lower()
    return all(word in haystack for word in filter_text.lower().split())


def triage_order(summaries: Sequence[TaskSummary]) -> list[TaskSummary]:
    """Tasks that need a person first, then the most recently active."""
    by_recent = sorted(summaries, key=_last_activity, reverse=True)
    return sorted(by_recent, key=lambda s: STATUS_ATTENTION[s.task.status])


class TaskTable(DataTable[Any]):
    """Tasks as rows keyed by task id; `enter` selects (the screen opens the task)."""

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
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.summaries: list[TaskSummary] = []
        self.filter_text = ""
        self.sort_column: str | None = None
        self.sort_reverse = False
        self._objective_width = 36

    def on_mount(self) -> None:
        for key, header, width in COLUMNS:
            self.add_column(header, key=key, width=width)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._render_rows())

    def on_resize(self) -> None:
        fixed = sum(width or 0 for _, _, width in COLUMNS)
        padding = 2 * self.cell_padding * len(COLUMNS)
        scrollbar = self.styles.scrollbar_size_vertical
        width = max(MIN_OBJECTIVE_WIDTH, self.size.width - fixed - padding - scrollbar)
        if width != self._objective_width:
            self._objective_width = width
            self._render_rows()

    @property
    def shown(self) -> list[TaskSummary]:
        """The tasks the table shows now, in display order."""
        shown = [s for s in self.summaries if matches(s, self.filter_text)]
        if self.sort_column is None:
            return triage_order(shown)
        # Youngest first is the natural order for ages, so "age" starts out reversed.
        reverse = self.sort_reverse != (self.sort_column == "age")
        return sorted(shown, key=SORT_KEYS[self.sort_column], reverse=reverse)

    @property
    def selected_task_id(self) -> str | None:
        """The task under the cursor, if any."""
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except CellDoesNotExist:  # the cursor can briefly point past a shrunk table
            return None
        return str(key.value) if key.value is not None else None

    def show(self, summaries: Sequence[TaskSummary]) -> None:
        """Replace the rows, keeping the cursor on the same task when it is still listed."""
        self.summaries = list(summaries)
        self._render_rows()

    def set_filter(self, text: str) -> None:
        """Show only tasks matching `text` (every word, anywhere, case-insensitive)."""
        self.filter_text = text.strip()
        self._render_rows()

    def sort_by(self, column: str) -> None:
        """Sort by a column; choosing it again reverses, a third time restores triage order."""
        if self.sort_column != column:
            self.sort_column, self.sort_reverse = column, False
        elif not self.sort_reverse:
            self.sort_reverse = True
        else:
            self.sort_column, self.sort_reverse = None, False
        self._render_rows()

    def _status_cell(self, summary: TaskSummary) -> Text:
        status = summary.task.status
        colour = self.app.theme_variables.get(status_variable(status), "")
        return Text(f"{STATUS_GLYPHS[status]} {status.value}", style=colour)

    def _render_rows(self) -> None:
        keep = self.selected_task_id
        self.clear()
        now = clock.now()
        for summary in self.shown:
            task = summary.task
            self.add_row(
                self._status_cell(summary),
                Text(task.id),
                Text(truncate(task.objective, self._objective_width)),
                Text(repo_name(task)),
                Text(clock.humanize_age(_last_activity(summary), now), justify="right"),
                Text(str(summary.checkpoint_count), justify="right"),
                Text(budget_summary(task), justify="right"),
                key=task.id,
            )
        if keep is not None:
            with suppress(RowDoesNotExist):  # filtered out: the cursor stays where it is
                self.move_cursor(row=self.get_row_index(keep), animate=False)
