"""The approvals inbox (`a`): every pending approval across tasks, oldest first, one key to decide.

Approvers clear a queue here without opening each task: the table shows how long each request
has waited, its risk in the theme's risk colours, the task and the action; `y` or `n` asks for
a reason and the decision goes through `Engine.decide_approval` in a thread worker, so it is
audited like any other (with interface `tui`, the app's engine's interface).
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static
from textual.widgets.data_table import CellDoesNotExist, RowDoesNotExist
from textual.worker import Worker, WorkerState, get_current_worker

from core import clock
from core.errors import PitstopError
from core.models import Approval, Risk
from tui.messages import DecisionRecorded, InboxLoaded
from tui.screens.modals import ReasonModal
from tui.widgets.formatting import shown, truncate

if TYPE_CHECKING:
    from tui.host import PitstopHost

RISK_GLYPHS = {Risk.LOW: "○", Risk.MEDIUM: "◑", Risk.HIGH: "●"}

# (column key, header, width); the action takes whatever width the others leave.
COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    ("waited", "Waited", 6),
    ("risk", "Risk", 8),
    ("task", "Task", 28),
    ("request", "#", 3),
    ("action", "Action", None),
)
MIN_ACTION_WIDTH = 20


def risk_variable(risk: Risk) -> str:
    """The theme variable that colours a risk level, e.g. `risk-high`."""
    return f"risk-{risk.value}"


def risk_markup(risk: Risk) -> str:
    """A coloured glyph and name for a risk level, as Textual content markup."""
    return f"[${risk_variable(risk)}]{RISK_GLYPHS[risk]} {risk.value}[/]"


def detail_markup(approval: Approval) -> str:
    """The highlighted approval in full: the whole action, who asked, what it gates."""
    lines = [
        f"[b]{shown(approval.id)}[/]  {risk_markup(approval.risk)} risk  "
        f"[dim]requested by {shown(approval.requested_by)}, "
        f"waiting {clock.humanize_age(approval.requested_at)}[/]",
        shown(approval.action),
    ]
    facts = []
    if approval.effect_key:
        facts.append(f"gates side effect {shown(approval.effect_key)}")
    if approval.checkpoint_seq is not None:
        facts.append(f"checkpoint {shown(approval.task_id)}@{approval.checkpoint_seq}")
    if approval.expires_at:
        facts.append(f"expires {shown(approval.expires_at[:16].replace('T', ' '))} UTC")
    if facts:
        lines.append("[dim]" + " · ".join(facts) + "[/]")
    return "\n".join(lines)


class InboxTable(DataTable[Any]):
    """Pending approvals as rows keyed by approval id; the cursor stays on its approval."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="inbox.down"),
        Binding("k", "cursor_up", "Up", show=False, id="inbox.up"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.approvals: list[Approval] = []
        self._action_width = 40

    def on_mount(self) -> None:
        for key, header, width in COLUMNS:
            self.add_column(header, key=key, width=width)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._render_rows())

    def on_resize(self) -> None:
        fixed = sum(width or 0 for _, _, width in COLUMNS)
        padding = 2 * self.cell_padding * len(COLUMNS)
        scrollbar = self.styles.scrollbar_size_vertical
        width = max(MIN_ACTION_WIDTH, self.size.width - fixed - padding - scrollbar)
        if width != self._action_width:
            self._action_width = width
            self._render_rows()

    @property
    def selected_id(self) -> str | None:
        """The approval under the cursor, if any."""
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except CellDoesNotExist:
            return None
        return str(key.value) if key.value is not None else None

    @property
    def selected(self) -> Approval | None:
        """The approval under the cursor, if any."""
        selected_id = self.selected_id
        return next((a for a in self.approvals if a.id == selected_id), None)

    def show(self, approvals: list[Approval]) -> None:
        """Replace the rows (oldest request first), keeping the cursor where it was."""
        self.approvals = sorted(approvals, key=lambda a: (a.requested_at, a.id))
        self._render_rows()

    def _risk_cell(self, risk: Risk) -> Text:
        colour = self.app.theme_variables.get(risk_variable(risk), "")
        style = f"bold {colour}" if risk is Risk.HIGH else colour
        return Text(f"{RISK_GLYPHS[risk]} {risk.value}", style=style)

    def _render_rows(self) -> None:
        keep = self.selected_id
        keep_row = self.cursor_row
        self.clear()
        now = clock.now()
        for approval in self.approvals:
            self.add_row(
                Text(clock.humanize_age(approval.requested_at, now), justify="right"),
                self._risk_cell(approval.risk),
                Text(approval.task_id),
                Text(str(approval.seq), justify="right"),
                Text(truncate(approval.action, self._action_width)),
                key=approval.id,
            )
        if not self.row_count:
            return
        if keep is not None:
            with suppress(RowDoesNotExist):
                self.move_cursor(row=self.get_row_index(keep), animate=False)
                return
        # The approval under the cursor was decided: stay at the same place in the queue.
        self.move_cursor(row=min(keep_row, self.row_count - 1), animate=False)


class InboxScreen(Screen[None]):
    """Pending approvals across tasks; `y`/`n` decide the highlighted one with a reason."""

    AUTO_FOCUS = "#inbox"

    DEFAULT_CSS = """
    InboxScreen #inbox-summary {
        height: 1;
        padding: 0 1;
        background: $panel;
    }
    InboxScreen #inbox {
        height: 1fr;
        background: $surface;
        border-top: solid $panel-lighten-1;
    }
    InboxScreen #inbox:focus {
        border-top: solid $primary;
    }
    InboxScreen #inbox > .datatable--header {
        color: $primary;
        background: $panel;
        text-style: bold;
    }
    InboxScreen #inbox-detail {
        height: auto;
        max-height: 10;
        padding: 0 1;
        background: $panel;
        border-top: solid $panel-lighten-1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="inbox.back", tooltip="Back to where you were"),
        Binding(
            "y",
            "decide(True)",
            "Approve",
            id="inbox.approve",
            tooltip="Approve the highlighted request (asks for a reason)",
        ),
        Binding(
            "n",
            "decide(False)",
            "Reject",
            id="inbox.reject",
            tooltip="Reject the highlighted request (asks for a reason)",
        ),
        Binding(
            "enter",
            "open_task",
            "Open task",
            id="inbox.open_task",
            tooltip="Open the task that asked, with its checkpoints",
        ),
        Binding("r", "refresh", "Refresh", id="inbox.refresh", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.loaded = False

    @property
    def pitstop(self) -> PitstopHost:
        """The app, typed."""
        return cast("PitstopHost", self.app)

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        yield Static("Loading approvals…", id="inbox-summary")
        yield InboxTable(id="inbox")
        yield Static("", id="inbox-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Approvals inbox"
        self.load_approvals()

    # --- workers: read or write on their own engine, post one message -------------------------

    @work(thread=True, exit_on_error=False, group="inbox", exclusive=True)
    def load_approvals(self) -> None:
        """Every pending approval across tasks."""
        try:
            with self.pitstop.engine.for_thread() as engine:
                approvals = engine.list_approvals(None, pending_only=True)
        except PitstopError as exc:
            self.post_message(DecisionRecorded("", None, f"Could not load approvals: {exc}"))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(InboxLoaded(approvals))

    @work(thread=True, exit_on_error=False, group="decide")
    def decide(self, approval_id: str, approve: bool, reason: str) -> None:
        """Record the decision; never exclusive, so a second decision cannot cancel a first."""
        try:
            with self.pitstop.engine.for_thread() as engine:
                decided = engine.decide_approval(approval_id, approve, reason)
        except PitstopError as exc:
            self.post_message(DecisionRecorded(approval_id, None, exc.message))
            return
        self.post_message(DecisionRecorded(approval_id, decided, None))

    # --- results ---------------------------------------------------------------------------

    @on(InboxLoaded)
    def _show_approvals(self, event: InboxLoaded) -> None:
        self.loaded = True
        table = self.query_one(InboxTable)
        table.show(event.approvals)
        self._update_summary()
        self._update_detail()

    @on(DecisionRecorded)
    def _decision_recorded(self, event: DecisionRecorded) -> None:
        if event.approval is None:
            self.notify(
                event.error or "the decision was not recorded",
                title=f"Could not decide {event.approval_id}" if event.approval_id else "Inbox",
                severity="error",
                markup=False,
            )
        else:
            self.notify(
                f"{event.approval.id} {event.approval.state.value}: {event.approval.reason}",
                title="Decision recorded",
                markup=False,
            )
        self.pitstop.reload_open_screens()  # this inbox, and the dashboard's counts under it

    @on(Worker.StateChanged)
    def _worker_crashed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.notify(
                str(event.worker.error),
                title="Something went wrong",
                severity="error",
                markup=False,
            )

    @on(DataTable.RowHighlighted, "#inbox")
    def _row_highlighted(self) -> None:
        self._update_detail()

    @on(DataTable.RowSelected, "#inbox")
    def _row_selected(self) -> None:
        self.action_open_task()

    def _update_summary(self) -> None:
        approvals = self.query_one(InboxTable).approvals
        if not approvals:
            text = (
                "[$success]No approvals are waiting.[/] "
                "[dim]Agents ask with `pitstop approval request`.[/]"
            )
        else:
            high = sum(1 for a in approvals if a.risk is Risk.HIGH)
            tasks = len({a.task_id for a in approvals})
            text = (
                f"[b $warning]{len(approvals)} waiting[/] across {tasks} "
                f"task{'s' if tasks != 1 else ''}"
                + (f" · [b ${risk_variable(Risk.HIGH)}]{high} high risk[/]" if high else "")
                + " [dim]· oldest first · y approve · n reject[/]"
            )
        self.query_one("#inbox-summary", Static).update(Content.from_markup(text))

    def _update_detail(self) -> None:
        selected = self.query_one(InboxTable).selected
        detail = self.query_one("#inbox-detail", Static)
        detail.display = selected is not None
        if selected is not None:
            detail.update(Content.from_markup(detail_markup(selected)))

    # --- actions ---------------------------------------------------------------------------

    def action_decide(self, approve: bool) -> None:
        """Ask for a reason, then approve or reject the highlighted request."""
        selected = self.query_one(InboxTable).selected
        if selected is None:
            self.notify("No approval is highlighted.", severity="warning")
            return
        verb = "Approve" if approve else "Reject"
        prompt = (
            f"{selected.risk.value.upper()} risk, task {selected.task_id}:\n{selected.action}\n\n"
            "Why? The reason is kept in the audit log."
        )

        def decided(reason: str | None) -> None:
            if reason:
                self.decide(selected.id, approve, reason)

        self.app.push_screen(
            ReasonModal(f"{verb} {selected.id}", prompt, action_label=verb), decided
        )

    def action_open_task(self) -> None:
        """Open the task whose request is highlighted."""
        selected = self.query_one(InboxTable).selected
        if selected is not None:
            self.pitstop.open_task(selected.task_id)

    def action_back(self) -> None:
        """Close the inbox."""
        self.app.pop_screen()

    def action_refresh(self) -> None:
        """Read the pending approvals again."""
        self.load_approvals()
