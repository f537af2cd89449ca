"""The redaction machine's state: the text held back, the output so far and what was redacted.

:class:`core.redaction.machine.Machine` decides what to redact; this base owns where it stands
in the text. The held text is kept small: everything before the first character still needed
(a held PEM block, or the current position, less :data:`CONTEXT` for look-behinds) is dropped
as new input is joined, and every offset kept is shifted with it. Offsets in findings are
absolute (``base`` plus an offset into ``buf``).
"""

from __future__ import annotations

from collections import Counter

from core.redaction.ruleset import Finding

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

MAX_MATCH = 24 * 1024
"""Upper bound on the length of any rule's match (every quantifier is bounded)."""
OVERLAP = 2 * MAX_MATCH + 1024
"""How much of a window over an overlong line is re-examined by the next window."""
MAX_LINE = 4 * OVERLAP
"""Lines longer than this are processed in overlapping windows rather than whole."""
BLOCK = 64 * 1024
"""Complete lines are gated and scanned together in blocks of about this many characters."""
CONTEXT = 128
"""Characters kept before the current position for look-behinds and key-name checks."""

Spans = list[tuple[int, int, str]]
"""Redactions of a region: (start, end, rule name), sorted and not overlapping."""


def find_terminator(text: str, start: int, end: int) -> int:
    """First ``\\n`` or ``\\r`` in ``text[start:end]``, or -1."""
    nl = text.find("\n", start, end)
    cr = text.find("\r", start, end if nl < 0 else nl)
    return nl if cr < 0 else cr


def rfind_terminator(text: str, start: int, end: int) -> int:
    """Last ``\\n`` or ``\\r`` in ``text[start:end]``, or -1."""
    return max(text.rfind("\n", start, end), text.rfind("\r", start, end))


class PemBlock:
    """A PEM block being read: where it began and how far it has been classified."""

    __slots__ = ("begin", "body", "last", "scan", "swallowing")

    def __init__(self, begin: int, scan: int) -> None:
        self.begin = begin  # where the BEGIN marker starts
        self.scan = scan  # start of the next line to classify
        self.body = 0  # base64 characters held so far
        self.last = 0  # end of the last key line's content (before its line terminator)
        self.swallowing = False  # past PEM_HOLD_CAP: already redacted, dropping key lines

    def shift(self, drop: int) -> None:
        """The held text lost its first ``drop`` characters."""
        self.begin = max(0, self.begin - drop)  # only used while holding
        self.scan -= drop
        self.last = max(0, self.last - drop)


class RedactionBuffer:
    """Input held back, output written, and the record of every redaction made."""

    __slots__ = (
        "aws_after",
        "base",
        "buf",
        "cache",
        "carry",
        "counts",
        "dropped_newlines",
        "findings",
        "keep_findings",
        "no_pem",
        "no_terminator_before",
        "out",
        "pem",
        "pending",
        "pending_len",
        "pending_raw",
        "pos",
        "raw",
        "scratch",
        "skip",
    )

    def __init__(self, keep_findings: bool, buf: str = "") -> None:
        self.keep_findings = keep_findings
        self.buf = buf
        self.base: int = 0  # absolute offset of buf[0]
        self.pos: int = 0  # first character of buf not yet emitted
        self.skip: int = 0  # PEM BEGIN markers starting before this are not entered again
        self.pem: PemBlock | None = None
        self.out: list[str] = []
        self.findings: list[Finding] = []
        self.counts: Counter[str] = Counter()
        self.pending: list[str] = []
        self.pending_len: int = 0
        self.no_terminator_before: int = 0  # buf[pos:this] is known to hold no line terminator
        # The spans of the region a PEM block was entered from, kept so that releasing a block
        # that was not a key resumes with the same spans instead of scanning the region again
        # (which would make a run of BEGIN lines quadratic): (region end, spans).
        self.cache: tuple[int, Spans] | None = None
        # Hyperscan's scratch space while the Hyperscan gate is on (one per machine: a machine
        # is used by one thread at a time, a scratch must be too).
        self.scratch: Any = None
        # With the Hyperscan gate: buf as bytes (scanned without a copy) and pending as bytes,
        # and the absolute range of the last block scanned when it held no PEM BEGIN marker.
        self.raw: bytes = b""
        self.pending_raw: list[bytes] = []
        self.no_pem: tuple[int, int] = (0, 0)
        # Line feeds of the input that the output does not have (inside redacted spans): the
        # output's line count plus this is the input's, so a caller need not count both.
        self.dropped_newlines: int = 0
        # Pieces of a wrapped token on the line after a region, found when the region was
        # scanned (absolute (start, end, rule index)); and where, after AWS access key ids near
        # the end of a region, a bare secret key is still looked for (absolute (from, to)).
        self.carry: list[tuple[int, int, int]] = []
        self.aws_after: list[tuple[int, int]] = []

    # input ------------------------------------------------------------------

    def keep_from(self) -> int:
        """The first character of buf that must be kept: the context before what is held."""
        held = self.pos
        if self.pem is not None and not self.pem.swallowing:
            held = min(held, self.pem.begin)
        return max(0, held - CONTEXT)

    def join(self) -> None:
        """Append the pending input to buf, dropping what no decision needs any more."""
        drop = self.keep_from()
        if not (drop or self.pending):
            return
        self.buf = self.buf[drop:] + "".join(self.pending)
        self.pending.clear()
        self.pending_len = 0
        if self.scratch is not None:
            self.raw = self.raw[drop:] + b"".join(self.pending_raw)
            self.pending_raw.clear()
        self.base += drop
        self.pos -= drop
        self.skip = max(0, self.skip - drop)
        self.no_terminator_before = max(self.pos, self.no_terminator_before - drop)
        if self.pem is not None:
            self.pem.shift(drop)
        if self.cache is not None and drop:
            end, spans = self.cache
            self.cache = (end - drop, [(s - drop, e - drop, r) for s, e, r in spans])

    def keep_carry(self, raw: list[tuple[int, int, int]], end: int) -> None:
        """Keep the redactions that start at or after ``end`` for the region that follows."""
        base = self.base
        self.carry += [(base + s, base + e, index) for s, e, index in raw if s >= end]

    def take_carry(self, start: int, end: int) -> list[tuple[int, int, int]]:
        """The carried redactions that start in buf[start:end], in buf offsets."""
        base = self.base
        taken = [(s - base, e - base, i) for s, e, i in self.carry if s - base < end]
        self.carry = [c for c in self.carry if c[0] - base >= end]
        return [c for c in taken if c[1] > start]

    # output -----------------------------------------------------------------

    def take(self) -> str:
        """The output written since the last call."""
        text = "".join(self.out)
        self.out.clear()
        return text

    def emit(self, end: int, spans: Spans) -> None:
        """Write buf[pos:end] with the spans (sorted, starting before end) redacted."""
        buf = self.buf
        cursor = self.pos
        out = self.out
        for start, stop, name in spans:
            if start >= end:
                break
            if start < cursor:
                continue
            if start > cursor:
                out.append(buf[cursor:start])
            out.append(f"[REDACTED:{name}]")
            self.record(name, start, stop)
            cursor = stop
        if end > cursor:
            out.append(buf[cursor:end])
            cursor = end
        self.pos = cursor

    def record(self, name: str, start: int, stop: int) -> None:
        """A redaction of buf[start:stop], which the output does not have."""
        self.counts[name] += 1
        self.dropped_newlines += self.buf.count("\n", start, stop)
        if self.keep_findings:
            self.findings.append(Finding(name, self.base + start, self.base + stop))

    def extend_last(self, stop: int) -> None:
        """The last redaction also covers buf[pos:stop] (key lines dropped past the hold cap)."""
        self.dropped_newlines += self.buf.count("\n", self.pos, stop)
        if self.keep_findings and self.findings:
            last = self.findings[-1]
            self.findings[-1] = Finding(last.rule, last.start, self.base + stop)
