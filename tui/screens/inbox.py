"""The approvals inbox (`a`): every pending approval across live tasks, one key to decide.

Approvers clear a queue here without opening each task: the table shows how long each request
has waited, its risk in the theme's risk colours, the task and the action; `s` sorts by risk or
age, `/` narrows by words, space marks several, and `y` or `n` asks for one reason and decides
the marked requests (or the highlighted one) through `Engine.decide_approval` in a thread
worker, each audited like any other (with interface `tui`). `d` lists what was decided in the
last day, so a request that vanished can be found again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Static
from textual.worker import Worker, WorkerState, get_current_worker

from core import clock
from core.errors import PitstopError
from core.models import Approval, Risk
from tui.messages import DecisionRecorded, InboxLoaded
from tui.screens.modals import ReasonModal
from tui.widgets.formatting import shown
from tui.widgets.inbox_table import (
    RISK_GLYPHS,
    InboxSort,
    InboxTable,
    InboxView,
    risk_variable,
)

if TYPE_CHECKING:
    from tui.host import PitstopHost

__all__ = ["RISK_GLYPHS", "InboxScreen", "InboxTable", "detail_markup", "risk_markup"]

DECIDED_WITHIN_HOURS = 24  # what the "recently decided" view goes back over


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
    if approval.decided_at:
        facts.append(
            f"{approval.state.value} by {shown(approval.decided_by or 'expiry')} "
            f"{clock.humanize_age(approval.decided_at)} ago"
            + (f": {shown(approval.reason)}" if approval.reason else "")
        )
    if approval.effect_key:
        facts.append(f"gates side effect {shown(approval.effect_key)}")
    if approval.checkpoint_seq is not None:
        facts.append(f"checkpoint {shown(approval.task_id)}@{approval.checkpoint_seq}")
    if approval.expires_at:
        facts.append(f"expires {shown(approval.expires_at[:16].replace('T', ' '))} UTC")
    if facts:
        lines.append("[dim]" + " · ".join(facts) + "[/]")
    return "\n".join(lines)


class InboxScreen(Screen[None]):
    """Pending approvals across live tasks; `y`/`n` decide the marked or highlighted ones."""

    AUTO_FOCUS = "#inbox"

    DEFAULT_CSS = """
    InboxScreen #inbox-summary {
        height: 1;
        padding: 0 1;
        background: $panel;
    }
    InboxScreen #inbox-filter-bar { height: 1; background: $panel; }
    InboxScreen #inbox-filter-prompt { width: auto; padding: 0 1; color: $primary; }
    InboxScreen #inbox-filter { height: 1; border: none; padding: 0; width: 1fr; }
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
        Binding("escape", "back", "Back", id="inbox.back", tooltip="Back (or clear the filter)"),
        Binding(
            "y",
            "decide(True)",
            "Approve",
            id="inbox.approve",
            tooltip="Approve the marked requests, or the highlighted one (asks for a reason)",
        ),
        Binding(
            "n",
            "decide(False)",
            "Reject",
            id="inbox.reject",
            tooltip="Reject the marked requests, or the highlighted one (asks for a reason)",
        ),
        Binding(
            "enter",
            "open_task",
            "Open task",
            key_display="⏎",
            priority=True,
            id="inbox.open_task",
            tooltip="Open the task that asked, with its checkpoints",
        ),
        Binding(
            "space",
            "mark",
            "Mark",
            id="inbox.mark",
            tooltip="Mark the highlighted request to decide several with one reason",
        ),
        Binding("s", "sort", "Sort", id="inbox.sort", tooltip="Riskiest first, or oldest first"),
        Binding(
            "slash",
            "filter",
            "Filter",
            key_display="/",
            id="inbox.filter",
            tooltip="Narrow by words in the id, task, risk, action or requester",
        ),
        Binding(
            "d",
            "decided",
            "Decided",
            id="inbox.decided",
            tooltip="Requests decided (or expired) in the last day; d again for pending",
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
        with Horizontal(id="inbox-filter-bar"):
            yield Static("filter /", id="inbox-filter-prompt")
            yield Input(placeholder="words in id, task, risk or action", id="inbox-filter")
        yield InboxTable(id="inbox")
        yield Static("", id="inbox-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Approvals inbox"
        self.query_one("#inbox-filter-bar").display = False
        self.load_approvals()

    # --- workers: read or write on their own engine, post one message -------------------------

    @work(thread=True, exit_on_error=False, group="inbox", exclusive=True)
    def load_approvals(self) -> None:
        """Every pending approval of a live task, and what was decided in the last day."""
        try:
            with self.pitstop.engine.for_thread() as engine:
                pending = engine.list_approvals(None, pending_only=True)
                decided = engine.recently_decided_approvals(DECIDED_WITHIN_HOURS)
        except PitstopError as exc:
            self.post_message(DecisionRecorded("", None, f"Could not load approvals: {exc}"))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(InboxLoaded(pending, decided))

    @work(thread=True, exit_on_error=False, group="decide")
    def decide(self, approval_ids: list[str], approve: bool, reason: str) -> None:
        """Record each decision in turn (each audited); never exclusive, so a second decision
        cannot cancel a first."""
        for approval_id in approval_ids:
            try:
                with self.pitstop.engine.for_thread() as engine:
                    decided = engine.decide_approval(approval_id, approve, reason)
            except PitstopError as exc:
                self.post_message(DecisionRecorded(approval_id, None, exc.message))
                continue
            self.post_message(DecisionRecorded(approval_id, decided, None))

    # --- results ---------------------------------------------------------------------------

    @on(InboxLoaded)
    def _show_approvals(self, event: InboxLoaded) -> None:
        self.loaded = True
        table = self.query_one(InboxTable)
        table.show(event.approvals, event.decided)
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
        self.query_one(InboxTable).marked.discard(event.approval_id)
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

    @on(Input.Changed, "#inbox-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.query_one(InboxTable).set_filter(event.value)
        self._update_summary()
        self._update_detail()

    @on(Input.Submitted, "#inbox-filter")
    def _filter_submitted(self) -> None:
        self.query_one(InboxTable).focus()

    def _update_summary(self) -> None:
        table = self.query_one(InboxTable)
        if table.view is InboxView.DECIDED:
            text = (
                f"[b]{len(table.shown)} decided[/] in the last {DECIDED_WITHIN_HOURS} h "
                "[dim]· latest first · d back to pending[/]"
            )
        elif not table.pending:
            text = (
                "[$success]No approvals are waiting.[/] "
                "[dim]Agents ask with `pitstop approval request`.[/]"
            )
        else:
            approvals = table.shown
            high = sum(1 for a in approvals if a.risk is Risk.HIGH)
            tasks = len({a.task_id for a in approvals})
            narrowed = f" of {len(table.pending)}" if len(approvals) != len(table.pending) else ""
            count = len(table.chosen) if table.marked else 0
            marked = f" · [b $accent]{count} marked[/]" if count else ""
            text = (
                f"[b $warning]{len(approvals)}{narrowed} waiting[/] across {tasks} "
                f"task{'s' if tasks != 1 else ''}"
                + (f" · [b ${risk_variable(Risk.HIGH)}]{high} high risk[/]" if high else "")
                + marked
                + f" [dim]· {table.order.value} · space marks · y approve · n reject[/]"
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
        """Ask for one reason, then approve or reject the marked requests (or the highlighted)."""
        table = self.query_one(InboxTable)
        chosen = table.chosen
        if not chosen:
            self.notify(
                "No pending request is highlighted or marked."
                if table.view is InboxView.PENDING
                else "Decided requests stay decided; d shows the pending ones.",
                severity="warning",
            )
            return
        verb = "Approve" if approve else "Reject"
        if len(chosen) == 1:
            (one,) = chosen
            title = f"{verb} {one.id}"
            prompt = f"{one.risk.value.upper()} risk, task {one.task_id}:\n{one.action}"
        else:
            high = sum(1 for a in chosen if a.risk is Risk.HIGH)
            title = f"{verb} {len(chosen)} requests"
            listed = "\n".join(
                f"{a.risk.value.upper():6} {a.id}: {' '.join(a.action.split())[:60]}"
                for a in chosen[:8]
            )
            more = f"\n… and {len(chosen) - 8} more" if len(chosen) > 8 else ""
            warning = f"{high} of them HIGH risk.\n" if high else ""
            prompt = f"{warning}{listed}{more}"
        prompt += "\n\nWhy? The reason is kept in the audit log (one entry per request)."
        ids = [a.id for a in chosen]

        def decided(reason: str | None) -> None:
            if reason:
                self.decide(ids, approve, reason)

        self.app.push_screen(ReasonModal(title, prompt, action_label=verb), decided)

    def action_mark(self) -> None:
        """Mark or unmark the highlighted request."""
        self.query_one(InboxTable).toggle_mark()
        self._update_summary()

    def action_sort(self) -> None:
        """Riskiest first, or oldest first."""
        table = self.query_one(InboxTable)
        table.set_sort(InboxSort.RISK if table.order is InboxSort.AGE else InboxSort.AGE)
        self._update_summary()

    def action_decided(self) -> None:
        """Switch between the pending requests and those decided in the last day."""
        table = self.query_one(InboxTable)
        table.set_view(InboxView.PENDING if table.view is InboxView.DECIDED else InboxView.DECIDED)
        self.sub_title = (
            "Approvals inbox · recently decided" if table.view is InboxView.DECIDED
            else "Approvals inbox"
        )  # fmt: skip
        self._update_summary()
        self._update_detail()

    def action_filter(self) -> None:
        """Show the filter line and type into it."""
        self.query_one("#inbox-filter-bar").display = True
        self.query_one("#inbox-filter", Input).focus()

    def action_open_task(self) -> None:
        """Open the task whose request is highlighted (in the filter: back to the table)."""
        if self.query_one("#inbox-filter", Input).has_focus:
            self.query_one(InboxTable).focus()
            return
        selected = self.query_one(InboxTable).selected
        if selected is not None:
            self.pitstop.open_task(selected.task_id)

    def action_back(self) -> None:
        """Clear an active filter first; otherwise close the inbox."""
        field = self.query_one("#inbox-filter", Input)
        if field.value or field.has_focus:
            field.value = ""
            self.query_one("#inbox-filter-bar").display = False
            self.query_one(InboxTable).focus()
            return
        self.app.pop_screen()

    def action_refresh(self) -> None:
        """Read the approvals again."""
        self.load_approvals()
