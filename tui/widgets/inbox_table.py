"""The approvals inbox's table: pending requests (or those decided lately), sorted and marked.

Approvers clear a queue: the riskiest or the oldest first (`s` switches), narrowed by words
(`/`), several marked with space and decided with one reason. What is shown is always computed
from the loaded requests by `visible_approvals`, so sorting, filtering and marking never read
the store again and the cursor stays on its request.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import suppress
from enum import StrEnum
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, RowDoesNotExist

from core import clock
from core.models import Approval, ApprovalState, Risk
from tui.widgets.formatting import truncate

RISK_GLYPHS = {Risk.LOW: "○", Risk.MEDIUM: "◑", Risk.HIGH: "●"}
RISK_RANK = {Risk.HIGH: 0, Risk.MEDIUM: 1, Risk.LOW: 2}
MARK = "▶"
DECISION_GLYPHS = {
    ApprovalState.APPROVED: "✓",
    ApprovalState.REJECTED: "✗",
    ApprovalState.EXPIRED: "⌛",
}

# (column key, header, width); the action takes whatever width the others leave.
COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    ("mark", "", 1),
    ("waited", "Waited", 6),
    ("risk", "Risk", 8),
    ("task", "Task", 28),
    ("request", "#", 3),
    ("action", "Action", None),
)
MIN_ACTION_WIDTH = 20


class InboxSort(StrEnum):
    """The order of the queue: oldest request first, or riskiest first (then oldest)."""

    AGE = "oldest first"
    RISK = "riskiest first"


class InboxView(StrEnum):
    """What the inbox lists: requests still waiting, or those decided in the last day."""

    PENDING = "pending"
    DECIDED = "recently decided"


def risk_variable(risk: Risk) -> str:
    """The theme variable that colours a risk level, e.g. `risk-high`."""
    return f"risk-{risk.value}"


def matches(approval: Approval, words: Sequence[str]) -> bool:
    """True when every word is in the request's id, task, risk, action or requester."""
    haystack = " ".join(
        (approval.id, approval.task_id, approval.risk.value, approval.action, approval.requested_by)
    ).lower()
    return all(word in haystack for word in words)


def visible_approvals(
    approvals: Iterable[Approval], sort: InboxSort, filter_text: str, view: InboxView
) -> list[Approval]:
    """The rows the table shows: filtered by every word, in the chosen order (decided ones:
    the latest decision first)."""
    words = filter_text.lower().split()
    shown = [a for a in approvals if matches(a, words)]
    if view is InboxView.DECIDED:
        return sorted(shown, key=lambda a: (a.decided_at or "", a.id), reverse=True)
    if sort is InboxSort.RISK:
        return sorted(shown, key=lambda a: (RISK_RANK[a.risk], a.requested_at, a.id))
    return sorted(shown, key=lambda a: (a.requested_at, a.id))


class InboxTable(DataTable[Any]):
    """Requests as rows keyed by approval id; the cursor stays on its request."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="inbox.down"),
        Binding("k", "cursor_up", "Up", show=False, id="inbox.up"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            cursor_type="row", zebra_stripes=True, cursor_foreground_priority="renderable", **kwargs
        )
        self.pending: list[Approval] = []
        self.decided: list[Approval] = []
        self.order = InboxSort.AGE
        self.view = InboxView.PENDING
        self.filter_text = ""
        self.marked: set[str] = set()
        self.shown: list[Approval] = []
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

    # --- what is selected -------------------------------------------------------------------

    @property
    def approvals(self) -> list[Approval]:
        """The requests shown, in the table's order."""
        return self.shown

    @property
    def selected_id(self) -> str | None:
        """The request under the cursor, if any."""
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except CellDoesNotExist:
            return None
        return str(key.value) if key.value is not None else None

    @property
    def selected(self) -> Approval | None:
        """The request under the cursor, if any."""
        selected_id = self.selected_id
        return next((a for a in self.shown if a.id == selected_id), None)

    @property
    def chosen(self) -> list[Approval]:
        """What a decision applies to: the marked requests still shown, else the highlighted."""
        if self.view is InboxView.PENDING and self.marked:
            return [a for a in self.shown if a.id in self.marked]
        selected = self.selected
        return [selected] if selected is not None and self.view is InboxView.PENDING else []

    # --- changing what is shown -------------------------------------------------------------

    def show(self, pending: list[Approval], decided: list[Approval] | None = None) -> None:
        """Replace the loaded requests, keeping marks on those still pending."""
        self.pending = list(pending)
        if decided is not None:
            self.decided = list(decided)
        still = {a.id for a in self.pending}
        self.marked &= still
        self._render_rows()

    def set_sort(self, sort: InboxSort) -> None:
        self.order = sort
        self._render_rows()

    def set_view(self, view: InboxView) -> None:
        self.view = view
        with suppress(KeyError):  # the header says what the age counts from
            self.columns[ColumnKey("waited")].label = Text(
                "Ago" if view is InboxView.DECIDED else "Waited"
            )
        self._render_rows()

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._render_rows()

    def toggle_mark(self) -> None:
        """Mark or unmark the highlighted pending request, then move down."""
        selected = self.selected
        if selected is None or self.view is not InboxView.PENDING:
            return
        self.marked ^= {selected.id}
        self._render_rows()
        self.action_cursor_down()

    # --- rendering --------------------------------------------------------------------------

    def _risk_cell(self, risk: Risk) -> Text:
        colour = self.app.theme_variables.get(risk_variable(risk), "")
        style = f"bold {colour}" if risk is Risk.HIGH else colour
        return Text(f"{RISK_GLYPHS[risk]} {risk.value}", style=style)

    def _first_cell(self, approval: Approval) -> Text:
        if self.view is InboxView.DECIDED:
            return Text(DECISION_GLYPHS.get(approval.state, "·"))
        if approval.id in self.marked:
            return Text(MARK, style=self.app.theme_variables.get("accent", ""))
        return Text(" ")

    def _render_rows(self) -> None:
        keep = self.selected_id
        keep_row = self.cursor_row
        source = self.decided if self.view is InboxView.DECIDED else self.pending
        self.shown = visible_approvals(source, self.order, self.filter_text, self.view)
        self.clear()
        now = clock.now()
        task_width = next(width for key, _, width in COLUMNS if key == "task") or 28
        for approval in self.shown:
            when = approval.decided_at if self.view is InboxView.DECIDED else None
            self.add_row(
                self._first_cell(approval),
                Text(clock.humanize_age(when or approval.requested_at, now), justify="right"),
                self._risk_cell(approval.risk),
                Text(truncate(approval.task_id, task_width)),
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
        # The request under the cursor was decided: stay at the same place in the queue.
        self.move_cursor(row=min(keep_row, self.row_count - 1), animate=False)
