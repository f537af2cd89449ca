"""The Approvals tab: what a task's agent asked a person to decide, and deciding it here.

A decision is final and audited (with the TUI as the interface), so it always carries a reason,
asked for in `ReasonModal`; the write runs in a thread worker on its own engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, DataTable, Static

from core import clock
from core.errors import PitstopError
from core.ledger.merge import describe_conflict
from core.models import Approval, ApprovalState, Risk
from tui.messages import ActionDone, ApprovalsLoaded, LoadFailed
from tui.screens.modals import ReasonModal
from tui.widgets.formatting import counted, shown, truncate

if TYPE_CHECKING:
    from tui.host import PitstopHost

RISK_COLOURS = {Risk.LOW: "$success", Risk.MEDIUM: "$warning", Risk.HIGH: "$error"}
STATE_MARKUP = {
    ApprovalState.PENDING: "[$warning b]◐ pending[/]",
    ApprovalState.APPROVED: "[$success]✓ approved[/]",
    ApprovalState.REJECTED: "[$error]✗ rejected[/]",
    ApprovalState.EXPIRED: "[dim]◌ expired[/]",
}


def waited(approval: Approval) -> str:
    """How long the request waited: until its decision, or until now while pending."""
    until = clock.parse(approval.decided_at) if approval.decided_at else None
    return clock.humanize_age(approval.requested_at, until)


class ApprovalsTable(DataTable[Any]):
    """One row per approval, keyed by its id (`TASK:N`)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="approvals.down"),
        Binding("k", "cursor_up", "Up", show=False, id="approvals.up"),
    ]


class ApprovalsView(Vertical):
    """A task's approvals, oldest first; approve or reject the highlighted pending one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "y",
            "decide(True)",
            "Approve",
            id="approvals.approve",
            tooltip="Approve the highlighted request (asks why)",
        ),
        Binding(
            "n",
            "decide(False)",
            "Reject",
            id="approvals.reject",
            tooltip="Reject the highlighted request (asks why)",
        ),
    ]

    DEFAULT_CSS = """
    ApprovalsView { height: 1fr; }
    ApprovalsView #approvals-heading { height: auto; padding: 0 1; background: $panel; }
    ApprovalsView #approvals-table { height: 1fr; background: $surface; }
    ApprovalsView #approvals-detail { height: auto; padding: 0 1; background: $panel; }
    ApprovalsView .tab-buttons { height: auto; padding: 0 1; background: $panel; }
    ApprovalsView .tab-buttons Button { margin-right: 1; min-width: 10; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.task_id: str | None = None
        self.approvals: list[Approval] = []
        self.conflicts: dict[str, list[str]] = {}

    @property
    def pitstop(self) -> PitstopHost:
        """The app, typed."""
        return cast("PitstopHost", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="approvals-heading")
        yield ApprovalsTable(
            id="approvals-table",
            cursor_type="row",
            zebra_stripes=True,
            cursor_foreground_priority="renderable",
        )
        yield Static(id="approvals-detail")
        with Horizontal(classes="tab-buttons"):
            yield Button("Approve…", id="approval-approve", variant="success", tooltip="(y)")
            yield Button("Reject…", id="approval-reject", variant="error", tooltip="(n)")

    def on_mount(self) -> None:
        table = self.query_one(ApprovalsTable)
        table.add_column("State", key="state", width=11)
        table.add_column("Risk", key="risk", width=6)
        table.add_column("Action", key="action", width=28)
        table.add_column("Waited", key="waited", width=6)
        table.add_column("By", key="decided_by", width=9)
        table.add_column("Why", key="reason", width=10)

    @property
    def selected(self) -> Approval | None:
        """The highlighted approval."""
        table = self.query_one(ApprovalsTable)
        if not self.approvals or table.cursor_row < 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((a for a in self.approvals if a.id == key), None)

    def load(self, task_id: str) -> None:
        """Read the task's approvals."""
        self.task_id = task_id
        self._list(task_id)

    @work(thread=True, exit_on_error=False, group="approvals-list", exclusive=True)
    def _list(self, task_id: str) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                approvals = engine.list_approvals(task_id)
                conflicts: dict[str, list[str]] = {}
                for record in engine.ledger_conflicts(task_id, "approval"):
                    conflicts.setdefault(record["entity_id"], []).append(describe_conflict(record))
        except PitstopError as exc:
            self.post_message(LoadFailed("approvals", exc.message))
            return
        self.post_message(ApprovalsLoaded(task_id, approvals, conflicts))

    @on(ApprovalsLoaded)
    def _loaded(self, event: ApprovalsLoaded) -> None:
        event.stop()
        if event.task_id != self.task_id:
            return
        keep = self.selected.id if self.selected else None
        self.approvals = list(event.approvals)
        self.conflicts = event.conflicts
        pending = [a for a in self.approvals if a.state is ApprovalState.PENDING]
        if self.approvals:
            heading = f"[b]{shown(event.task_id)}[/] · {counted(len(self.approvals), 'approval')}"
            if pending:
                heading += f" · [$warning b]{len(pending)} pending: y approve, n reject[/]"
        else:
            heading = (
                f"[dim]{shown(event.task_id)} has asked for no approvals. An agent asks with "
                "`pitstop approval request`.[/]"
            )
        self.query_one("#approvals-heading", Static).update(Content.from_markup(heading))
        table = self.query_one(ApprovalsTable)
        table.clear()
        for approval in self.approvals:
            table.add_row(
                Content.from_markup(STATE_MARKUP[approval.state]),
                Content.from_markup(f"[{RISK_COLOURS[approval.risk]}]{approval.risk.value}[/]"),
                Text(truncate(approval.action, 28)),
                Text(waited(approval), justify="right"),
                Text(truncate(approval.decided_by or "—", 9)),
                Text(truncate(approval.reason or "", 10), style="dim"),
                key=approval.id,
            )
        table.display = bool(self.approvals)
        if keep is not None and any(a.id == keep for a in self.approvals):
            table.move_cursor(row=table.get_row_index(keep))
        elif pending:
            table.move_cursor(row=self.approvals.index(pending[0]))
        self._show_detail()

    @on(DataTable.RowHighlighted, "#approvals-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail()

    def _show_detail(self) -> None:
        approval = self.selected
        detail = self.query_one("#approvals-detail", Static)
        self.query_one(".tab-buttons").display = approval is not None
        if approval is None:
            detail.update("")
            return
        parts = [
            f"[b]{shown(approval.id)}[/]  {STATE_MARKUP[approval.state]}  "
            f"[{RISK_COLOURS[approval.risk]}]{approval.risk.value} risk[/]",
            shown(approval.action),
            f"[dim]asked by {shown(approval.requested_by)} · waited {waited(approval)}"
            + (f" · effect {shown(approval.effect_key)}" if approval.effect_key else "")
            + (f" · expires {shown(approval.expires_at)}" if approval.expires_at else "")
            + "[/]",
        ]
        if approval.decided_by:
            parts.append(
                f"[dim]decided by[/] {shown(approval.decided_by)}: {shown(approval.reason or '')}"
            )
        parts.extend(f"[$warning]{shown(line)}[/]" for line in self.conflicts.get(approval.id, []))
        detail.update(Content.from_markup("\n".join(parts)))
        pending = approval.state is ApprovalState.PENDING
        self.query_one("#approval-approve", Button).disabled = not pending
        self.query_one("#approval-reject", Button).disabled = not pending

    @on(Button.Pressed, "#approval-approve")
    def _approve_pressed(self) -> None:
        self.action_decide(True)

    @on(Button.Pressed, "#approval-reject")
    def _reject_pressed(self) -> None:
        self.action_decide(False)

    def action_decide(self, approve: bool) -> None:
        """Approve or reject the highlighted pending approval, after asking why."""
        approval = self.selected
        if approval is None or approval.state is not ApprovalState.PENDING:
            self.notify("Highlight a pending approval first.", severity="warning")
            return
        verb = "Approve" if approve else "Reject"
        modal = ReasonModal(
            f"{verb} {approval.id} ({approval.risk.value} risk)",
            f"{approval.action}\n\nThe decision is final and audited. Why?",
            action_label=verb,
        )

        def decided(reason: str | None) -> None:
            if reason is not None:
                self._decide(approval.id, approve, reason)

        self.app.push_screen(modal, decided)

    @work(thread=True, exit_on_error=False, group="approvals-write")
    def _decide(self, approval_id: str, approve: bool, reason: str) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                decided = engine.decide_approval(approval_id, approve, reason)
        except PitstopError as exc:
            self.post_message(ActionDone("approval", exc.message, ok=False))
            return
        self.post_message(ActionDone("approval", f"{decided.id} {decided.state.value}"))

    @on(ActionDone)
    def _done(self, event: ActionDone) -> None:
        self.notify(
            event.message,
            title="Approval" if event.ok else "Approval not decided",
            severity="information" if event.ok else "error",
            markup=False,
        )
        if self.task_id is not None:
            self._list(self.task_id)
