"""The Evidence tab: what commands showed up to a checkpoint, their tails, and the full log.

The full log of an item can be 100 MB. It is never read whole: `ChunkedLog` maps line numbers
to the stored chunks (each chunk records the line it starts in and how many newlines it holds),
and `LazyLogView` asks a thread worker for a chunk only when a line in it scrolls into view,
keeping a handful decoded. A stretch dropped over the storage cap shows as one marker line,
never as head and tail silently joined (invariant 4).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer, Vertical
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import DataTable, Static

from core.errors import PitstopError
from core.terminal_text import printable
from tui.messages import (
    EvidenceChunkLoaded,
    EvidenceIndexLoaded,
    EvidenceListed,
    EvidenceLoaded,
    LoadFailed,
)
from tui.widgets.formatting import counted, human_bytes, shown, truncate

if TYPE_CHECKING:
    from core.evidence.storage import Evidence
    from tui.host import PitstopHost

TAIL_LINES = 40
CACHED_CHUNKS = 6
MAX_LINE_CHARS = 2000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def clean_line(raw: bytes) -> str:
    """One output line as a terminal would leave it (last `\\r` rewrite, no colour codes), and
    any other control in it shown escaped, never sent to the operator's terminal."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r").rsplit("\r", 1)[-1]
    text = printable(_ANSI.sub("", text).expandtabs(8), single_line=True)
    if len(text) > MAX_LINE_CHARS:
        text = text[:MAX_LINE_CHARS] + f" … ({len(text) - MAX_LINE_CHARS:,} more characters)"
    return text


@dataclass(frozen=True)
class _Segment:
    """A stretch of the virtual line list: one stored chunk, or a marker for a dropped gap."""

    first_line: int
    line_count: int
    chunk_seq: int | None  # None: a gap marker
    starts_run: bool = False  # the chunk's first byte begins a line
    gap_bytes: int = 0


class ChunkedLog:
    """Line numbers of a chunked output, resolved to chunks and byte positions on demand."""

    def __init__(self, chunks: Sequence[Mapping[str, Any]]) -> None:
        self.segments: list[_Segment] = []
        self.next_seq: dict[int, int] = {}  # chunk -> the contiguous chunk after it
        line = 0
        expected_offset = 0
        previous: int | None = None
        for chunk in sorted(chunks, key=lambda c: c["seq"]):
            gap = chunk["offset"] - expected_offset
            starts_run = previous is None or gap > 0
            if gap > 0:
                self.segments.append(_Segment(line, 1, None, gap_bytes=gap))
                line += 1
            elif previous is not None:
                self.next_seq[previous] = chunk["seq"]
            count = chunk["line_count"] + (1 if starts_run else 0)
            self.segments.append(_Segment(line, count, chunk["seq"], starts_run=starts_run))
            line += count
            expected_offset = chunk["offset"] + chunk["raw_len"]
            previous = chunk["seq"]
        self.line_count = line
        self._trimmed = False
        self._firsts = [segment.first_line for segment in self.segments]

    def trim_final_newline(self, seq: int, data: bytes) -> bool:
        """Drop the empty line after the stream's final newline, once its chunk is read."""
        last = self.segments[-1] if self.segments else None
        if self._trimmed or last is None or last.chunk_seq != seq or not data.endswith(b"\n"):
            return False
        self._trimmed = True
        self.line_count -= 1
        return True

    def locate(self, line: int) -> tuple[_Segment, int]:
        """The segment holding virtual line `line` and the line's index within it."""
        segment = self.segments[bisect_right(self._firsts, line) - 1]
        return segment, line - segment.first_line


@dataclass
class _Chunk:
    data: bytes
    newlines: list[int]


class LazyLogView(ScrollView, can_focus=True):
    """A line-based view of one evidence item's full output that reads chunks as they show."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "scroll_down", "Down", show=False, id="log.down"),
        Binding("k", "scroll_up", "Up", show=False, id="log.up"),
        Binding("g", "scroll_home", "Top", show=False, id="log.top"),
        Binding("G", "scroll_end", "End", key_display="G", id="log.end", tooltip="Last line"),
    ]

    DEFAULT_CSS = """
    LazyLogView {
        height: 1fr;
        background: $background;
        color: $foreground;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.evidence_id: int | None = None
        self.log_index: ChunkedLog | None = None
        self._chunks: OrderedDict[int, _Chunk] = OrderedDict()
        self._pending: set[int] = set()
        self._wanted: set[int] = set()
        self._width = 0

    @property
    def pitstop(self) -> PitstopHost:
        """The app, typed."""
        return cast("PitstopHost", self.app)

    def open(self, evidence_id: int) -> None:
        """Show evidence `evidence_id`'s output (its chunk index is read in a worker)."""
        self.evidence_id = evidence_id
        self.log_index = None
        self._chunks.clear()
        self._pending.clear()
        self._width = 0
        self.virtual_size = Size(0, 1)
        self.scroll_home(animate=False)
        self.refresh()
        self._load_index(evidence_id)

    @work(thread=True, exit_on_error=False, group="evidence-index", exclusive=True)
    def _load_index(self, evidence_id: int) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                chunks = engine.evidence_chunk_index(evidence_id)
        except PitstopError as exc:
            self.post_message(LoadFailed("evidence output", exc.message))
            return
        self.post_message(EvidenceIndexLoaded(evidence_id, chunks))

    @work(thread=True, exit_on_error=False, group="evidence-chunk")
    def _load_chunk(self, evidence_id: int, seq: int) -> None:
        try:
            with self.pitstop.engine.for_thread() as engine:
                data = engine.evidence_chunk(evidence_id, seq)
        except PitstopError as exc:
            self.post_message(LoadFailed("evidence output", exc.message))
            return
        self.post_message(EvidenceChunkLoaded(evidence_id, seq, data))

    @on(EvidenceIndexLoaded)
    def _index_loaded(self, event: EvidenceIndexLoaded) -> None:
        event.stop()
        if event.evidence_id != self.evidence_id:
            return
        self.log_index = ChunkedLog(event.chunks)
        self.virtual_size = Size(self._width, max(1, self.log_index.line_count))
        self.refresh()

    @on(EvidenceChunkLoaded)
    def _chunk_loaded(self, event: EvidenceChunkLoaded) -> None:
        event.stop()
        self._pending.discard(event.seq)
        if event.evidence_id != self.evidence_id:
            return
        newlines = [match.start() for match in re.finditer(b"\n", event.data)]
        self._chunks[event.seq] = _Chunk(event.data, newlines)
        index = self.log_index
        if index is not None and index.trim_final_newline(event.seq, event.data):
            self.virtual_size = Size(self._width, max(1, index.line_count))
        while len(self._chunks) > CACHED_CHUNKS:
            self._chunks.popitem(last=False)
        self.refresh()

    @property
    def loaded_chunks(self) -> list[int]:
        """Chunk numbers decoded and held right now (at most `CACHED_CHUNKS`)."""
        return list(self._chunks)

    def _chunk(self, seq: int) -> _Chunk | None:
        chunk = self._chunks.get(seq)
        if chunk is None:
            self._wanted.add(seq)
            return None
        self._chunks.move_to_end(seq)
        return chunk

    def line_text(self, line: int) -> str | None:
        """Virtual line `line` as text, or None while its chunk is being read."""
        index = self.log_index
        if index is None or line >= index.line_count:
            return ""
        segment, within = index.locate(line)
        if segment.chunk_seq is None:
            return f"[… {segment.gap_bytes:,} bytes of output omitted here: over the storage cap …]"
        chunk = self._chunk(segment.chunk_seq)
        if chunk is None:
            return None
        if segment.starts_run:
            start = 0 if within == 0 else chunk.newlines[within - 1] + 1
        else:
            start = chunk.newlines[within] + 1
        end_index = bisect_right(chunk.newlines, start - 1)
        if end_index < len(chunk.newlines):
            return clean_line(chunk.data[start : chunk.newlines[end_index]])
        piece = chunk.data[start:]
        following = index.next_seq.get(segment.chunk_seq)
        if following is not None:  # the line goes on in the next chunk
            after = self._chunk(following)
            if after is None:
                return None
            piece += after.data[: after.newlines[0]] if after.newlines else after.data
        return clean_line(piece)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        line = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if self.log_index is None:
            text = "Reading the log's index…" if y == 0 and self.evidence_id is not None else ""
            return Strip([Segment(text, base + Style(dim=True))]).crop_extend(0, width, base)
        if line >= self.log_index.line_count:
            return Strip.blank(width, base)
        body = self.line_text(line)
        if self._wanted:
            self.call_later(self._request_wanted)
        gutter = Segment(f"{line + 1:>8} │ ", base + Style(dim=True))
        if body is None:
            segments = [gutter, Segment("…", base + Style(dim=True))]
        else:
            segments = [gutter, Segment(body, base)]
            cells = len(body) + 11
            if cells > self._width:
                self._width = cells
                self.virtual_size = Size(cells, self.log_index.line_count)
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base)

    def action_scroll_home(self) -> None:
        """Jump to the first line (without animating through every chunk on the way)."""
        self.scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        """Jump to the last line, reading only the chunks at the end."""
        self.scroll_end(animate=False)

    def _visible_chunks(self) -> set[int]:
        index = self.log_index
        if index is None:
            return set()
        top = int(self.scroll_offset.y)
        seqs: set[int] = set()
        for line in range(top, min(index.line_count, top + self.size.height + 1)):
            segment, _ = index.locate(line)
            if segment.chunk_seq is not None:
                seqs.add(segment.chunk_seq)
                following = index.next_seq.get(segment.chunk_seq)
                if following is not None:
                    seqs.add(following)
        return seqs

    def _request_wanted(self) -> None:
        # Only what is still on screen: a fast scroll past a chunk does not read it.
        wanted, self._wanted = self._wanted & self._visible_chunks(), set()
        if self.evidence_id is None:
            return
        for seq in sorted(wanted - self._pending):
            self._pending.add(seq)
            self._load_chunk(self.evidence_id, seq)


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
    EvidenceView.full-log #evidence-log { display: block; }
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
        yield EvidenceTable(id="evidence-table", cursor_type="row", zebra_stripes=True)
        with ScrollableContainer(id="evidence-detail"):
            yield Static(id="evidence-facts")
            yield Static(id="evidence-tail")
        yield LazyLogView(id="evidence-log")

    def on_mount(self) -> None:
        table = self.query_one(EvidenceTable)
        table.add_column("#", key="id", width=4)
        table.add_column("Label", key="label", width=16)
        table.add_column("Outcome", key="outcome", width=11)
        table.add_column("Summary", key="summary", width=25)
        table.add_column("Size", key="size", width=9)
        table.add_column("", key="truncated", width=5)
        self.show_message("[dim]Select a checkpoint to see its evidence.[/]")

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
                items = [
                    item
                    for item in engine.list_evidence(task_id)
                    if item.checkpoint_seq is not None and item.checkpoint_seq <= int(seq)
                ]
        except PitstopError as exc:
            self.post_message(LoadFailed("evidence", exc.message, ref))
            return
        self.post_message(EvidenceListed(ref, items))

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
        failed = sum(1 for item in event.items if item.outcome != "exit 0")
        self.query_one("#evidence-heading", Static).update(
            Content.from_markup(
                f"[b]{shown(event.ref)}[/] · {len(event.items)} "
                + ("item" if len(event.items) == 1 else "items")
                + (f" · [$error]{failed} not passing[/]" if failed else "")
                + " · [dim]f: full log[/]"
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
                Text("✂ cut" if item.truncated else ""),
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
