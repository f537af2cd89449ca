"""The full log of one evidence item, read lazily, searchable with `/`, following as it grows.

The full log of an item can be 100 MB. It is never read whole: `ChunkedLog` maps line numbers
to the stored chunks (each chunk records the line it starts in and how many newlines it holds),
and `LazyLogView` asks a thread worker for a chunk only when a line in it scrolls into view,
keeping a handful decoded. A stretch dropped over the storage cap shows as one marker line,
never as head and tail silently joined (invariant 4). A search reads the chunks in a worker,
one at a time, and keeps only the matching line numbers.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.segment import Segment
from rich.style import Style
from textual import on, work
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from core.errors import PitstopError
from core.terminal_text import printable
from tui.messages import EvidenceChunkLoaded, EvidenceIndexLoaded, LoadFailed, LogSearched
from tui.widgets.search_bar import MAX_MATCHES, Matches, line_matches

if TYPE_CHECKING:
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

    @classmethod
    def of(cls, data: bytes) -> _Chunk:
        return cls(data, [match.start() for match in re.finditer(b"\n", data)])


def resolve_line(
    index: ChunkedLog, line: int, chunk_of: Callable[[int], _Chunk | None]
) -> str | None:
    """Virtual line `line` of the log as shown, or None while a chunk it needs is not read."""
    if line >= index.line_count:
        return ""
    segment, within = index.locate(line)
    if segment.chunk_seq is None:
        return f"[… {segment.gap_bytes:,} bytes of output omitted here: over the storage cap …]"
    chunk = chunk_of(segment.chunk_seq)
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
        after = chunk_of(following)
        if after is None:
            return None
        piece += after.data[: after.newlines[0]] if after.newlines else after.data
    return clean_line(piece)


def search_log(
    index: ChunkedLog,
    read_chunk: Callable[[int], bytes],
    needle: str,
    cancelled: Callable[[], bool],
) -> list[int]:
    """Every line of the log holding `needle` (as `search_bar.line_matches` sees it), reading
    chunks one after another and keeping two decoded: a 100 MB log never sits in memory."""
    kept: OrderedDict[int, _Chunk] = OrderedDict()

    def chunk_of(seq: int) -> _Chunk:
        chunk = kept.get(seq)
        if chunk is None:
            chunk = kept[seq] = _Chunk.of(read_chunk(seq))
            while len(kept) > 2:
                kept.popitem(last=False)
        return chunk

    found = []
    for line in range(index.line_count):
        if line % 4096 == 0 and cancelled():
            break
        if line_matches(resolve_line(index, line, chunk_of) or "", needle):
            found.append(line)
            if len(found) >= MAX_MATCHES:
                break
    return found


class LazyLogView(ScrollView, can_focus=True):
    """A line-based view of one evidence item's full output that reads chunks as they show."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "scroll_down", "Down", show=False, id="log.down"),
        Binding("k", "scroll_up", "Up", show=False, id="log.up"),
        Binding("g", "scroll_home", "Top", show=False, id="log.top"),
        Binding("G", "scroll_end", "End", key_display="G", id="log.end", tooltip="Last line"),
        Binding("F", "toggle_follow", "Follow", key_display="F", id="log.follow",
                tooltip="Keep the last line in view as the output grows (as tail -f)"),
        Binding("n", "next_match(True)", "Next", show=False, id="log.next"),
        Binding("N", "next_match(False)", "Previous", show=False, id="log.previous"),
    ]  # fmt: skip
    FOLLOW_SECONDS = 1.0  # how often a followed log asks the store whether it grew

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
        self.following = True  # a log opens at its end and stays there as it grows
        self._index_key: tuple[tuple[int, int], ...] = ()
        self.matches = Matches()
        self.on_status: Callable[[str], None] = lambda _text: None

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
        self.following = True
        self.matches = Matches(self.matches.needle)  # the same words, looked for in this log
        self.virtual_size = Size(0, 1)
        self.scroll_home(animate=False, immediate=True)  # not after the index: it goes to the end
        self.refresh()
        self._load_index(evidence_id)

    def on_mount(self) -> None:
        self.set_interval(self.FOLLOW_SECONDS, self._follow_tick)

    def _follow_tick(self) -> None:
        """While following a shown log, read its index again: new lines scroll into view."""
        if self.following and self.display and self.evidence_id is not None:
            self._load_index(self.evidence_id)

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
        before = self.log_index.line_count if self.log_index is not None else None
        key = tuple((chunk["seq"], chunk["raw_len"]) for chunk in event.chunks)
        if self.log_index is not None and key == self._index_key:
            return  # nothing new: keep the decoded chunks
        self._index_key = key
        self.log_index = ChunkedLog(event.chunks)
        last = self.log_index.segments[-1].chunk_seq if self.log_index.segments else None
        if last is not None and last in self._chunks:  # read before the log grew past it
            self.log_index.trim_final_newline(last, self._chunks[last].data)
        self.virtual_size = Size(self._width, max(1, self.log_index.line_count))
        if self.following and before != self.log_index.line_count:
            # Before a paint reads the top (the scrollbar is not laid out yet: force).
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        if self.matches.needle and before is None:
            self.search(self.matches.needle)
        self.refresh()
        self._say()

    @on(EvidenceChunkLoaded)
    def _chunk_loaded(self, event: EvidenceChunkLoaded) -> None:
        event.stop()
        self._pending.discard(event.seq)
        if event.evidence_id != self.evidence_id:
            return
        self._chunks[event.seq] = _Chunk.of(event.data)
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
        if self.log_index is None:
            return ""
        return resolve_line(self.log_index, line, self._chunk)

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
            if line == self.matches.line:
                segments = [gutter, Segment(body, base + Style(reverse=True))]
            elif self.matches.lines and line_matches(body, self.matches.needle):
                segments = [gutter, Segment(body, base + Style(underline=True))]
            else:
                segments = [gutter, Segment(body, base)]
            cells = len(body) + 11
            if cells > self._width:
                self._width = cells
                self.virtual_size = Size(cells, self.log_index.line_count)
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base)

    def action_scroll_home(self) -> None:
        """Jump to the first line (without animating through every chunk on the way)."""
        self.following = False
        self.scroll_home(animate=False)
        self._say()

    def action_scroll_up(self) -> None:
        """One line up: reading back stops following the end."""
        self.following = False
        self.scroll_up(animate=False)
        self._say()

    def action_page_up(self) -> None:
        self.following = False
        super().action_page_up()
        self._say()

    def action_toggle_follow(self) -> None:
        """Follow the end of the log as it grows, or stop."""
        self.following = not self.following
        if self.following:
            self.scroll_end(animate=False)
        self._say()

    def _say(self) -> None:
        """Tell the view above what the log is doing (following, a search's matches)."""
        parts = ["following the end · F stops" if self.following else "F follows the end"]
        if self.matches.needle:
            parts.append(self.matches.label())
        self.on_status(" · ".join(parts))

    # --- search ----------------------------------------------------------------------------

    def search(self, needle: str) -> None:
        """Find the lines holding `needle` (a worker reads the chunks); empty: stop searching."""
        self.matches = Matches(needle)
        self.refresh()
        self._say()
        if needle and self.evidence_id is not None and self.log_index is not None:
            self._search(self.evidence_id, self.log_index, needle)

    @work(thread=True, exit_on_error=False, group="evidence-search", exclusive=True)
    def _search(self, evidence_id: int, index: ChunkedLog, needle: str) -> None:
        worker = get_current_worker()
        try:
            with self.pitstop.engine.for_thread() as engine:
                found = search_log(
                    index,
                    lambda seq: engine.evidence_chunk(evidence_id, seq),
                    needle,
                    lambda: worker.is_cancelled,
                )
        except PitstopError as exc:
            self.post_message(LoadFailed("evidence output", exc.message))
            return
        if not worker.is_cancelled:
            self.post_message(LogSearched(evidence_id, needle, found))

    @on(LogSearched)
    def _searched(self, event: LogSearched) -> None:
        event.stop()
        if event.evidence_id != self.evidence_id or event.needle != self.matches.needle:
            return
        self.matches = Matches(event.needle, event.lines)
        line = self.matches.start_at(int(self.scroll_offset.y))
        if line is not None:
            self._go_to(line)
        self.refresh()
        self._say()

    def action_next_match(self, forward: bool) -> None:
        """The next (or previous) line the search found."""
        line = self.matches.step(forward)
        if line is not None:
            self._go_to(line)
            self.refresh()
        self._say()

    def _go_to(self, line: int) -> None:
        self.following = False
        self.scroll_to(y=max(0, line - self.size.height // 2), animate=False)

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
