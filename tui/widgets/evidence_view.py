"""The Evidence tab: what commands showed up to a checkpoint, their tails, and the full log.

A tail opens with its last line in view; `f` shows the whole output (`tui.widgets.lazy_log`,
read lazily, following its end as it grows) and `/` searches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer, Vertical
from textual.content import Content
from textual.widgets import DataTable, Static

from core.errors import PitstopError
from tui.messages import EvidenceListed, EvidenceLoaded, LoadFailed
from tui.widgets.formatting import counted, human_bytes, shown, truncate
from tui.widgets.lazy_log import TAIL_LINES, ChunkedLog, LazyLogView, clean_line
from tui.widgets.search_bar import SearchBar

__all__ = ["ChunkedLog", "EvidenceView", "LazyLogView", "clean_line"]

if TYPE_CHECKING:
    from core.evidence.storage import Evidence
    from tui.host import PitstopHost


class EvidenceTable(DataTable[Any]):
    """Evidence items; the highlighted one's facts and tail show below."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="evidence.down"),
        Binding("k", "cursor_up", "Up", show=False, id="evidence.up"),
    ]


def outcome_markup(item: Evidence) -> str:
    """`exit 0` in the success colour; failures, signals and timeouts in the error colour."""
    outcome = shown(item.outcome)
    if item.exit_code == 0 and not item.signal and not item.timed_out:
        return f"[$success]✓ {outcome}[/]"
    if item.state == "running":
        return f"[$warning]{outcome}[/]"
    return f"[$error]✗ {outcome}[/]"


def facts_markup(item: Evidence) -> str:
    """The facts of one item: command, outcome, sizes, redactions, truncation."""
    command = item.command or {}
    argv = " ".join(str(part) for part in command.get("argv") or []) or command.get("file") or "—"
    lines = [
        f"[b]#{item.id}[/] {shown(item.label or item.source)}  {outcome_markup(item)}",
        f"[dim]command[/]  {shown(str(argv))}",
    ]
    if command.get("cwd"):
        lines.append(f"[dim]in[/]       {shown(str(command['cwd']))}")
    if item.summary_text:
        lines.append(f"[dim]summary[/]  {shown(item.summary_text)}")
    lines.append(
        f"[dim]output[/]   {human_bytes(item.bytes_total)} · {item.lines_total:,} lines · "
        f"{item.redactions} redacted"
    )
    if item.truncated:
        lines.append(
            f"[$warning b]truncated:[/] {human_bytes(item.omitted_bytes)} of the middle were "
            f"dropped over the {human_bytes(item.cap_bytes)} cap; head and tail are kept"
        )
    if item.failure:
        lines.append(f"[$error]failed:[/] {shown(item.failure)}")
    return "\n".join(lines)


def shown_evidence(items: Sequence[Evidence], seq: int, newest: int | None) -> list[Evidence]:
    """What the tab lists for checkpoint `seq`: evidence up to it, and, on the task's newest
    checkpoint, what the agent recorded since (not yet in a checkpoint; a drill's replays,
    which never belong to one, left out)."""
    return [
        item
        for item in items
        if (item.checkpoint_seq is not None and item.checkpoint_seq <= seq)
        or (item.checkpoint_seq is None and seq == newest and item.source != "drill")
    ]


def is_since(item: Evidence) -> bool:
    """Recorded after the newest checkpoint: the next checkpoint will hold it."""
    return item.checkpoint_seq is None


class EvidenceView(Vertical):
    """Evidence up to the selected checkpoint: a list, then the chosen item's tail or full log."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "f",
            "toggle_full_log",
            "Full log",
            id="evidence.full_log",
            tooltip="Scroll the whole output (read lazily) or go back to the tail",
        ),
        Binding(
            "slash",
            "search",
            "Search",
            key_display="/",
            id="evidence.search",
            tooltip="Find lines in the full log; n and N go to the next and previous",
        ),
    ]

    DEFAULT_CSS = """
    EvidenceView { height: 1fr; }
    EvidenceView #evidence-heading { height: auto; padding: 0 1; background: $panel; }
    EvidenceView #evidence-table {
        height: auto; max-height: 9; background: $surface; border-bottom: solid $panel-lighten-1;
    }
    EvidenceView #evidence-table:focus { border-bottom: solid $primary; }
    EvidenceView #evidence-detail { height: 1fr; background: $background; }
    EvidenceView #evidence-facts { padding: 0 1; height: auto; }
    EvidenceView #evidence-tail { padding: 0 1; width: auto; height: auto; }
    EvidenceView #evidence-log { display: none; }
    EvidenceView #evidence-log-status { display: none; height: 1; padding: 0 1; }
    EvidenceView #evidence-log-status { background: $panel; color: $foreground-muted; }
    EvidenceView.full-log #evidence-log { display: block; }
    EvidenceView.full-log #evidence-log-status { display: block; }
    EvidenceView.full-log #evidence-detail { display: none; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ref: str | None = None
        self.items: list[Evidence] = []
        self.shown: Evidence | None = None

    @property
    def pitstop(self) -> PitstopHost:
        """The app, typed."""
        return cast("PitstopHost", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="evidence-heading")
        yield EvidenceTable(
            id="evidence-table",
            cursor_type="row",
            zebra_stripes=True,
            cursor_foreground_priority="renderable",
        )
        with ScrollableContainer(id="evidence-detail"):
            yield Static(id="evidence-facts")
            yield Static(id="evidence-tail")
        yield SearchBar(id="evidence-search")
        yield Static(id="evidence-log-status")
        yield LazyLogView(id="evidence-log")

    def on_mount(self) -> None:
        table = self.query_one(EvidenceTable)
        table.add_column("#", key="id", width=4)
        table.add_column("Label", key="label", width=16)
        table.add_column("Outcome", key="outcome", width=11)
        table.add_column("Summary", key="summary", width=25)
        table.add_column("Size", key="size", width=9)
        table.add_column("", key="truncated", width=5)  # ✂ cut, or since (not yet checkpointed)
        self.show_message("[dim]Select a checkpoint to see its evidence.[/]")
        status = self.query_one("#evidence-log-status", Static)
        self.query_one(LazyLogView).on_status = lambda text: status.update(text)

    def show_message(self, markup: str) -> None:
        """Empty the view and say why."""
        self.query_one("#evidence-heading", Static).update(Content.from_markup(markup))
        self.items = []
        self.shown = None
        self.query_one(EvidenceTable).clear()
        self.query_one(EvidenceTable).display = False
        self.query_one("#evidence-facts", Static).update("")
        self.query_one("#evidence-tail", Static).update("")
        self.remove_class("full-log")

    def load(self, ref: str) -> None:
        """Read the evidence recorded up to checkpoint `ref`."""
        self.ref = ref
        self.show_message(f"[dim]Loading the evidence of {shown(ref)}…[/]")
        self._list(ref)

    @work(thread=True, exit_on_error=False, group="evidence-list", exclusive=True)
    def _list(self, ref: str) -> None:
        task_id, _, seq = ref.partition("@")
        try:
            with self.pitstop.engine.for_thread() as engine:
                items = engine.list_evidence(task_id)
                newest = max((cp.seq for cp in engine.list_checkpoints(task_id)), default=None)
        except PitstopError as exc:
            self.post_message(LoadFailed("evidence", exc.message, ref))
            return
        self.post_message(EvidenceListed(ref, shown_evidence(items, int(seq), newest)))

    @work(thread=True, exit_on_error=False, group="evidence-item", exclusive=True)
    def _load_item(self, evidence_id: int) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                item = engine.get_evidence(evidence_id)
                tail = [
                    line.decode("utf-8", errors="replace")
                    for line in engine.evidence_last_lines(evidence_id, TAIL_LINES)
                ]
        except PitstopError as exc:
            self.post_message(LoadFailed("evidence", exc.message, self.ref))
            return
        self.post_message(EvidenceLoaded(item, tail))

    @on(EvidenceListed)
    def _listed(self, event: EvidenceListed) -> None:
        event.stop()
        if event.ref != self.ref:
            return
        if not event.items:
            self.show_message(
                f"[dim]No evidence up to {shown(event.ref)}. An agent records some with "
                "`pitstop run --task TASK -- CMD`.[/]"
            )
            return
        failed = sum(1 for item in event.items if item.outcome not in ("exit 0", "running"))
        since = sum(1 for item in event.items if is_since(item))
        self.query_one("#evidence-heading", Static).update(
            Content.from_markup(
                f"[b]{shown(event.ref)}[/] · {len(event.items)} "
                + ("item" if len(event.items) == 1 else "items")
                + (f" · [$accent]{since} since {shown(event.ref)}[/]" if since else "")
                + (f" · [$error]{failed} not passing[/]" if failed else "")
                + " · [dim]f: full log · /: search[/]"
            )
        )
        self.items = list(event.items)
        table = self.query_one(EvidenceTable)
        table.clear()
        table.display = True
        for item in reversed(self.items):  # newest first: what the agent saw last
            table.add_row(
                Text(str(item.id), style="dim"),
                Text(truncate(item.label or item.source, 16)),
                Content.from_markup(outcome_markup(item)),
                Text(truncate(item.summary_text, 25)),
                Text(human_bytes(item.bytes_total), justify="right"),
                Text("since" if is_since(item) else "✂ cut" if item.truncated else ""),
                key=str(item.id),
            )
        table.move_cursor(row=0)
        self._select(self.items[-1].id)

    @on(DataTable.RowHighlighted, "#evidence-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self._select(int(event.row_key.value))

    def _select(self, evidence_id: int) -> None:
        if self.shown is not None and self.shown.id == evidence_id:
            return
        self.shown = next((item for item in self.items if item.id == evidence_id), None)
        self.query_one("#evidence-facts", Static).update(
            Content.from_markup(f"[dim]Loading evidence {evidence_id}…[/]")
        )
        self.query_one("#evidence-tail", Static).update("")
        self._load_item(evidence_id)
        if self.has_class("full-log"):
            self.query_one(LazyLogView).open(evidence_id)

    @on(EvidenceLoaded)
    def _loaded(self, event: EvidenceLoaded) -> None:
        event.stop()
        if self.shown is None or event.item.id != self.shown.id:
            return
        self.query_one("#evidence-facts", Static).update(
            Content.from_markup(facts_markup(event.item))
        )
        count = len(event.tail)
        heading = f"\n[b $primary]Last {counted(count, 'line')}[/] [dim](f: the full log)[/]\n"
        body = "\n".join(clean_line(line.encode()) for line in event.tail)
        self.query_one("#evidence-tail", Static).update(
            Content.assemble(Content.from_markup(heading), Content(body))
        )
        # A tail is read from its end: open it with the last line in view.
        detail = self.query_one("#evidence-detail")
        self.call_after_refresh(detail.scroll_end, animate=False)

    def action_toggle_full_log(self) -> None:
        """Show the highlighted item's whole output (read lazily), or go back to its tail."""
        log = self.query_one(LazyLogView)
        if self.has_class("full-log"):
            self.remove_class("full-log")
            self.query_one(EvidenceTable).focus()
            return
        if self.shown is None:
            self.notify("Pick an evidence item first.", severity="warning")
            return
        self.add_class("full-log")
        log.open(self.shown.id)
        log.focus()

    def action_search(self) -> None:
        """Search the full log of the highlighted item (opening it first)."""
        if self.shown is None:
            self.notify("Pick an evidence item first.", severity="warning")
            return
        if not self.has_class("full-log"):
            self.action_toggle_full_log()
        self.query_one(SearchBar).open()

    @on(SearchBar.Search, "#evidence-search")
    def _searched(self, event: SearchBar.Search) -> None:
        event.stop()
        log = self.query_one(LazyLogView)
        log.search(event.needle)
        if event.needle:
            log.focus()
