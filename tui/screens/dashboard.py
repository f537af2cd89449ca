"""The dashboard: every task in the store, triaged, filterable, one key from its checkpoints.

Tasks seen on remotes sit beside the local ones; `f` (or enter) fetches one and `S` syncs every
shared task, each in a thread worker that reports its steps on a status line.
"""

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
from tui import remotes
from tui.first_screen import read_first_screen, rows_on_screen
from tui.messages import LoadFailed, RemoteFinished, RemoteProgress, TasksLoaded
from tui.widgets.summary_bar import SummaryBar
from tui.widgets.task_preview import TaskPreview, home_relative
from tui.widgets.task_table import TRIAGE_STATUSES, TaskTable

if TYPE_CHECKING:
    from tui.host import PitstopHost


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
        # Shown (and active) only where there is something remote: see `check_action`.
        Binding(
            "f",
            "fetch",
            "Fetch",
            id="dashboard.fetch",
            tooltip="Fetch the highlighted remote task into this store "
            "(a shared task: its newest checkpoints and decisions)",
        ),
        Binding(
            "S",
            "sync",
            "Sync",
            key_display="S",
            id="dashboard.sync",
            tooltip="Sync every shared task with its remote (fetch, merge, push) and list the "
            "remotes again",
        ),
    ]

    @property
    def pitstop(self) -> PitstopHost:
        """The app, typed."""
        return cast("PitstopHost", self.app)

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        yield SummaryBar(id="summary")
        with Horizontal(id="filter-bar"):
            yield Static("filter /", id="filter-prompt")
            yield Input(placeholder="words in id, status, repo or objective", id="filter")
        yield TaskTable(id="tasks")
        yield Static(id="remote-status", markup=False)
        yield TaskPreview(id="preview")
        yield Footer()

    _listed = False  # a task list has arrived (later loads read it whole)
    _first_shown: threading.Event  # the first screen is painted (made in on_mount)
    _status_counts: dict[TaskStatus, int] | None = None  # while only the first screen is shown

    _remote_busy = False  # a fetch or sync worker is running (one at a time)

    def on_mount(self) -> None:
        self._first_shown = threading.Event()
        self._first_shown.set()  # nothing partial is on screen yet
        self.query_one("#filter-bar").display = False
        self.query_one("#remote-status").display = False
        self.query_one(TaskPreview).show(None)
        first = read_first_screen(self.pitstop.engine, self.FIRST_SCREEN, TRIAGE_STATUSES)
        if first is None:
            self.load_tasks()
        elif first.complete:
            self._show_tasks(TasksLoaded(first.summaries, remote=first.remote))
        else:
            # Shown in the first frame (handled here, not posted: a posted message would be
            # handled after that frame). The whole list is read once that frame is painted: a
            # worker thread started sooner competes with the paint for the interpreter.
            self._show_tasks(TasksLoaded(first.summaries, first.status_counts, first.remote))
            self.call_after_refresh(self.load_tasks)

    # --- reading the store ---------------------------------------------------------------

    # The first load shows at most this many tasks at once (no more than the terminal has
    # lines), then the whole list (issue 6: instant with 10,000 tasks); stores this small are
    # read whole in one go. Each row more costs its lookups and sealed fields before the first
    # paint.
    FIRST_SCREEN = 64

    @work(thread=True, exit_on_error=False, group="tasks", exclusive=True)
    def load_tasks(self) -> None:
        """Read every task with its checkpoint count, off the UI thread."""
        try:
            with self.pitstop.engine.for_thread() as engine:
                remote = remotes.read_remote_view(engine)
                if not self._listed:
                    first = engine.first_task_summaries(
                        rows_on_screen(self.FIRST_SCREEN), TRIAGE_STATUSES
                    )
                    counts = engine.task_status_counts()
                    if sum(counts.values()) <= len(first):
                        summaries = first  # that was every task
                    else:
                        if get_current_worker().is_cancelled:
                            return
                        self._first_shown.clear()
                        self.post_message(TasksLoaded(first, counts, remote))
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
            self.post_message(TasksLoaded(summaries, remote=remote))

    @on(TasksLoaded)
    def _show_tasks(self, event: TasksLoaded) -> None:
        self._listed = True
        self._status_counts = event.status_counts
        if event.status_counts is not None:
            self.call_after_refresh(self._first_shown.set)
        self.pitstop.remember_tasks(event.summaries, event.remote.rows)
        table = self.query_one(TaskTable)
        table.show(event.summaries, event.remote)
        self._update_summary()
        self._update_preview()
        self.refresh_bindings()

    @on(LoadFailed)
    def _load_failed(self, event: LoadFailed) -> None:
        self.notify(
            event.message, title=f"Could not load {event.what}", severity="error", markup=False
        )

    @on(Worker.StateChanged)
    def _worker_crashed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            if event.worker.group == "remote":
                self._remote_ended()
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
            table.summaries,
            len(table.shown),
            table.filter_text,
            self._status_counts,
            remote_count=len(table.remote.rows),
        )

    def _update_preview(self) -> None:
        table = self.query_one(TaskTable)
        summary = table.selected_summary
        shared_with = table.remote.links.get(summary.task.id, ()) if summary else ()
        refused = table.remote.refused.get(summary.task.id, 0) if summary else 0
        preview = self.query_one(TaskPreview)
        if summary is None and self._listed and not table.summaries and table.remote.is_empty:
            preview.show_first_run(home_relative(str(self.pitstop.engine.paths.root)))
            return
        preview.show(summary, shared_with, refused)

    @on(TaskTable.RowHighlighted, "#tasks")
    def _row_highlighted(self) -> None:
        self._update_preview()
        self.refresh_bindings()

    @on(TaskTable.RowSelected, "#tasks")
    def _row_selected(self, event: TaskTable.RowSelected) -> None:
        if self.query_one(TaskTable).selected_remote is not None:
            self.fetch_task(event.task_id)  # not here yet: enter brings it
        else:
            self.pitstop.open_task(event.task_id)

    @on(TaskTable.HeaderSelected, "#tasks")
    def _header_selected(self, event: TaskTable.HeaderSelected) -> None:
        self.query_one(TaskTable).sort_by(event.column)

    def action_refresh(self) -> None:
        """Read the task list again."""
        self.load_tasks()

    # --- remotes ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer `f` on remote and shared tasks and `S` once anything remote is known, so the
        footer of a store that never used a remote stays as it was."""
        if action not in ("fetch", "sync"):
            return True
        tables = self.query(TaskTable)
        if not tables:
            return False  # not composed yet (or being torn down)
        table = tables.first()
        if action == "sync":
            return not table.remote.is_empty
        task_id = table.selected_task_id
        return task_id is not None and (
            table.selected_remote is not None or task_id in table.remote.links
        )

    def action_fetch(self) -> None:
        """Fetch the highlighted task (remote-only or shared)."""
        task_id = self.query_one(TaskTable).selected_task_id
        if task_id is not None:
            self.fetch_task(task_id)

    def fetch_task(self, task_id: str) -> None:
        """Fetch `task_id` in a worker: a remote-only task becomes local, a shared one catches up;
        a task the operator holds no key for is explained instead."""
        table = self.query_one(TaskTable)
        row = next((r for r in table.remote.rows if r.task.id == task_id), None)
        if row is not None and not row.readable:
            self.notify(
                remotes.no_key_help(task_id),
                title="No key for this task",
                severity="warning",
                timeout=15,
                markup=False,
            )
            return
        if row is None and task_id not in table.remote.links:
            self.notify(
                f"{task_id} is not shared through any remote; `pitstop push {task_id}` shares it",
                title="Nothing to fetch",
                markup=False,
            )
            return
        if row is not None:
            url, repo = row.url, row.local_repo
        else:
            url, repo = table.remote.links[task_id][0], None
        if self._remote_started(f"fetching {task_id}…"):
            self._run_fetch(task_id, url, repo)

    def action_sync(self) -> None:
        """Sync every shared task and list the known remotes again, in a worker."""
        if self._remote_started("syncing…"):
            self._run_sync()

    def _remote_started(self, text: str) -> bool:
        """Show the status line for a new remote worker; False (and a note) if one runs."""
        if self._remote_busy:
            self.notify(
                "a fetch or sync is still running; wait for it to finish",
                severity="warning",
                markup=False,
            )
            return False
        self._remote_busy = True
        self._show_status(text)
        return True

    def _show_status(self, text: str) -> None:
        status = self.query_one("#remote-status", Static)
        status.update(f"⇅ {text}")
        status.display = True

    def _remote_ended(self) -> None:
        self._remote_busy = False
        self.query_one("#remote-status").display = False

    @work(thread=True, exit_on_error=False, group="remote")
    def _run_fetch(self, task_id: str, url: str, repo: str | None) -> None:
        """Fetch one task with the worker's own engine; post its steps and its outcome."""
        try:
            with self.pitstop.engine.for_thread() as engine:
                outcome = remotes.fetch_task(
                    engine, task_id, url, repo, lambda text: self.post_message(RemoteProgress(text))
                )
        except PitstopError as exc:
            error = f"could not fetch {task_id}: {remotes.one_line(exc.message)}"
            self.post_message(RemoteFinished(None, error))
            return
        self.post_message(RemoteFinished(outcome))

    @work(thread=True, exit_on_error=False, group="remote")
    def _run_sync(self) -> None:
        """Sync with the worker's own engine; post its steps and its outcome."""
        try:
            with self.pitstop.engine.for_thread() as engine:
                outcome = remotes.sync_everything(
                    engine, lambda text: self.post_message(RemoteProgress(text))
                )
        except PitstopError as exc:
            self.post_message(RemoteFinished(None, f"sync failed: {remotes.one_line(exc.message)}"))
            return
        self.post_message(RemoteFinished(outcome))

    @on(RemoteProgress)
    def _remote_progress(self, event: RemoteProgress) -> None:
        if self._remote_busy:
            self._show_status(event.text)

    @on(RemoteFinished)
    def _remote_finished(self, event: RemoteFinished) -> None:
        self._remote_ended()
        outcome = event.outcome
        if outcome is None:
            self.notify(event.error or "failed", title="Remote", severity="error", markup=False)
            return
        self.notify(
            outcome.summary,
            title=outcome.title,
            severity="warning" if outcome.problems else "information",
            timeout=10 if outcome.problems else 6,
            markup=False,
        )
        # Fetched tasks are local now and listings changed: read the list again.
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
