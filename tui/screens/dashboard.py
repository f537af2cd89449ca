"""The dashboard: every task in the store, triaged, filterable, one key from its checkpoints."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static
from textual.worker import Worker, WorkerState, get_current_worker

from core.errors import PitstopError
from core.models import TaskStatus
from tui.messages import LoadFailed, TasksLoaded
from tui.widgets.summary_bar import SummaryBar
from tui.widgets.task_preview import TaskPreview
from tui.widgets.task_table import TRIAGE_STATUSES, TaskTable

if TYPE_CHECKING:
    from tui.app import PitstopApp


class DashboardScreen(Screen[None]):
    """The task table with a summary bar above and the highlighted task below."""

    AUTO_FOCUS = "#tasks"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "slash",
            "filter",
            "Filter",
            key_display="/",
            id="dashboard.filter",
            tooltip="Filter tasks by words in their id, status, repo or objective",
        ),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="dashboard.clear_filter"),
        Binding(
            "r",
            "refresh",
            "Refresh",
            id="dashboard.refresh",
            tooltip="Read the task list from the store again",
        ),
    ]

    @property
    def pitstop(self) -> PitstopApp:
        """The app, typed."""
        return cast("PitstopApp", self.app)

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        yield SummaryBar(id="summary")
        with Horizontal(id="filter-bar"):
            yield Static("filter /", id="filter-prompt")
            yield Input(placeholder="words in id, status, repo or objective", id="filter")
        yield TaskTable(id="tasks")
        yield TaskPreview(id="preview")
        yield Footer()

    _listed = False  # a task list has arrived (later loads read it whole)
    _first_shown: threading.Event  # the first screen is painted (made in on_mount)
    _status_counts: dict[TaskStatus, int] | None = None  # while only the first screen is shown

    def on_mount(self) -> None:
        self._first_shown = threading.Event()
        self.query_one("#filter-bar").display = False
        self.query_one(TaskPreview).show(None)
        self.load_tasks()

    # --- reading the store ---------------------------------------------------------------

    # The first load shows this many tasks at once, then the whole list (issue 6: instant with
    # 10,000 tasks); stores this small are read whole in one go.
    FIRST_SCREEN = 200

    @work(thread=True, exit_on_error=False, group="tasks", exclusive=True)
    def load_tasks(self) -> None:
        """Read every task with its checkpoint count, off the UI thread."""
        try:
            with self.pitstop.engine.for_thread() as engine:
                if not self._listed:
                    first = engine.first_task_summaries(self.FIRST_SCREEN, TRIAGE_STATUSES)
                    counts = engine.task_status_counts()
                    if sum(counts.values()) <= len(first):
                        summaries = first  # that was every task
                    else:
                        if get_current_worker().is_cancelled:
                            return
                        self._first_shown.clear()
                        self.post_message(TasksLoaded(first, counts))
                        # Let the UI paint the first screen before the long read competes with
                        # it for the interpreter.
                        self._first_shown.wait(timeout=2.0)
                        summaries = engine.task_summaries()
                else:
                    summaries = engine.task_summaries()
        except PitstopError as exc:
            self.post_message(LoadFailed("tasks", exc.message))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(TasksLoaded(summaries))

    @on(TasksLoaded)
    def _show_tasks(self, event: TasksLoaded) -> None:
        self._listed = True
        self._status_counts = event.status_counts
        if event.status_counts is not None:
            self.call_after_refresh(self._first_shown.set)
        self.pitstop.remember_tasks(event.summaries)
        table = self.query_one(TaskTable)
        table.show(event.summaries)
        self._update_summary()
        self._update_preview()

    @on(LoadFailed)
    def _load_failed(self, event: LoadFailed) -> None:
        self.notify(
            event.message, title=f"Could not load {event.what}", severity="error", markup=False
        )

    @on(Worker.StateChanged)
    def _worker_crashed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.notify(
                str(event.worker.error),
                title="Something went wrong",
                severity="error",
                markup=False,
            )

    # --- the table -------------------------------------------------------------------------

    def _update_summary(self) -> None:
        table = self.query_one(TaskTable)
        self.query_one(SummaryBar).show(
            table.summaries, len(table.shown), table.filter_text, self._status_counts
        )

    def _update_preview(self) -> None:
        self.query_one(TaskPreview).show(self.query_one(TaskTable).selected_summary)

    @on(TaskTable.RowHighlighted, "#tasks")
    def _row_highlighted(self) -> None:
        self._update_preview()

    @on(TaskTable.RowSelected, "#tasks")
    def _row_selected(self, event: TaskTable.RowSelected) -> None:
        self.pitstop.open_task(event.task_id)

    @on(TaskTable.HeaderSelected, "#tasks")
    def _header_selected(self, event: TaskTable.HeaderSelected) -> None:
        self.query_one(TaskTable).sort_by(event.column)

    def action_refresh(self) -> None:
        """Read the task list again."""
        self.load_tasks()

    # --- the filter ------------------------------------------------------------------------

    def action_filter(self) -> None:
        """Show the filter box and type into it."""
        self.query_one("#filter-bar").display = True
        self.query_one("#filter", Input).focus()

    def action_clear_filter(self) -> None:
        """Clear and hide the filter, back to the full table."""
        box = self.query_one("#filter", Input)
        if box.value:
            box.value = ""
        self.query_one("#filter-bar").display = False
        self.query_one(TaskTable).focus()

    def set_filter(self, text: str) -> None:
        """Filter the table to `text` (as if typed after `/`)."""
        self.query_one("#filter-bar").display = bool(text)
        self.query_one("#filter", Input).value = text

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.query_one(TaskTable).set_filter(event.value)
        self._update_summary()
        self._update_preview()

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#filter-bar").display = bool(event.value)
        self.query_one(TaskTable).focus()

    def sort_by(self, column: str) -> None:
        """Sort the table by `column` (as if its header were clicked)."""
        self.query_one(TaskTable).sort_by(column)
