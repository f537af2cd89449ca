"""The streaming redaction machine: gate a region of lines, run the rules it needs, write it out.

:func:`core.redaction.redact.redact_text`, ``redact_bytes`` and ``StreamRedactor`` all drive one
:class:`Machine`. It takes complete lines in blocks of about :data:`BLOCK` characters (no rule
matches across a line end), asks a literal gate which rules can match there and where anchored
rules are to be tried, merges the matches into redactions, and enters a held PEM block at the
first uncovered BEGIN marker. A line longer than :data:`MAX_LINE` is taken in overlapping
windows. Every decision depends only on the data, never on where chunks were split, so any
chunking gives the same output.
"""

from __future__ import annotations

from core.redaction.buffer import (
    BLOCK,
    MAX_LINE,
    OVERLAP,
    PemBlock,
    Spans,
    find_terminator,
    rfind_terminator,
)
from core.redaction.escapes import needs_view, see_through_escapes
from core.redaction.literal_gate import GATES, STARTS, literal_hits
from core.redaction.pairs import aws_pairs
from core.redaction.pem import PEM_LINE_MAX, PemReader
from core.redaction.ruleset import RULES
from core.redaction.scanning import next_line_undecided, run_rules

Active = dict[int, int]
"""Scanned rules to run over a block: rule index -> where its first match can start."""
Tries = set[tuple[int, int]]
"""Anchored rules to try: (rule index, offset into the block)."""

ACCELERATE_AFTER = 1024 * 1024
"""Bytes a stream must reach before the Hyperscan gate is used (compiled once per process,
~60 ms, unless the cache has it: see :func:`core.redaction.hyperscan_gate.use_hyperscan_cache`).
Below it the module that holds the gate is not even loaded."""


class Machine(PemReader):
    """The redaction state machine shared by every entry point of :mod:`core.redaction.redact`."""

    __slots__ = ()

    def accelerate(self, raw: bytes | None = None) -> bool:
        """Use the Hyperscan gate from now on (``raw``: buf as bytes, when the caller has it);
        False where it is not installed."""
        from core.redaction import hyperscan_gate

        if hyperscan_gate.gate() is None:
            return False
        if self.scratch is None:
            self.scratch = hyperscan_gate.new_scratch()
            self.raw = self.buf.encode("latin-1") if raw is None else raw
            self.pending_raw = [chunk.encode("latin-1") for chunk in self.pending]
        return True

    # input ------------------------------------------------------------------

    def push(self, chunk: str, raw: bytes = b"") -> None:
        """Add input; ``raw`` is the same input as bytes (required with the Hyperscan gate)."""
        if not chunk:
            return
        self.pending.append(chunk)
        self.pending_len += len(chunk)
        if self.scratch is not None:
            assert len(raw) == len(chunk)
            self.pending_raw.append(raw)
        if "\n" in chunk or "\r" in chunk:
            ready = True  # a line (or a PEM block's line) may be complete
        elif self.pem is not None:
            ready = self.pending_len + len(self.buf) - self.pem.scan >= PEM_LINE_MAX
        else:
            ready = self.pending_len + len(self.buf) - self.pos >= MAX_LINE
        if ready:
            self.join()
            self.advance(final=False)

    def finish(self) -> None:
        """End of input: decide and write out everything held."""
        self.join()
        self.advance(final=True)

    # scanning ---------------------------------------------------------------

    def _gate_hyperscan(self, start: int, end: int, active: Active, tries: Tries) -> None:
        """Fill ``active`` and ``tries`` for buf[start:end] from a Hyperscan scan of the bytes."""
        from core.redaction import hyperscan_gate  # loaded by accelerate() already

        gate = hyperscan_gate.gate()
        assert gate is not None
        database, table = gate
        hits: list[tuple[int, int]] = []
        database.scan(
            memoryview(self.raw)[start:end],
            match_event_handler=hyperscan_gate.collect,
            context=hits,
            scratch=self.scratch,
        )
        pem_pattern = len(table) - 1
        marker = False
        buf = self.buf
        for pattern, hit_end in hits:
            if pattern == pem_pattern:
                marker = True
                continue
            gates, starts, width = table[pattern]
            for index in gates:
                # The first place the rule's regex can end (a superset's first match): every
                # match ends there or later, so it lies in that line or after it (no rule
                # matches across a line end).
                last = start + hit_end - 1
                active[index] = max(start, rfind_terminator(buf, start, last) + 1)
            at = hit_end - width
            for index, offset in starts:
                tries.add((index, at + offset))
        if not marker:
            self.no_pem = (self.base + start, self.base + end)

    def _gate_literals(self, text: str, start: int, end: int, active: Active, tries: Tries) -> None:
        """Fill ``active`` and ``tries`` for text[start:end] from the rules' literals."""
        # Lowercased bytes, one per character (a character above U+00FF, only possible in
        # redact_text, becomes "?", which no literal contains).
        low = text[start:end].encode("latin-1", "replace").lower()
        for literal, at in literal_hits(low):
            for index in GATES[literal]:
                active[index] = start
            for index, offset in STARTS[literal]:
                tries.add((index, at + offset))

    def scan(self, start: int, end: int) -> Spans:
        """All redaction spans of matches starting in buf[start:end] (endpos ``end``), merged:
        the rules' matches (seen through terminal escape sequences and across wrapped lines),
        the spans a join on the region before carried over, and bare AWS secret keys near
        their key id."""
        buf = self.buf
        if needs_view(buf, start, end):
            raw = see_through_escapes(buf, start, end, self._gate_literals)
        else:
            active: Active = {}
            tries: Tries = set()
            if self.scratch is not None:
                self._gate_hyperscan(start, end, active, tries)
            else:
                self._gate_literals(buf, start, end, active, tries)
            raw = run_rules(buf, start, end, active, tries)
        if self.carry:
            raw += self.take_carry(start, end)
        aws_pairs(self, start, end, raw)
        if any(s >= end for s, _, _ in raw):
            self.keep_carry(raw, end)
            raw = [r for r in raw if r[0] < end]
        return _merge(raw)

    # the main loop ----------------------------------------------------------

    def advance(self, final: bool) -> None:
        """Decide and write out as much of buf as no later input can change (all when final)."""
        while True:
            if self.pem is not None:
                if not self.pem_step(final):
                    return
                continue
            buf = self.buf
            p = self.pos
            n = len(buf)
            if self.cache is not None:
                end, spans = self.cache
                if p < end:
                    self._region(p, end, spans)
                    continue
                self.cache = None
            if p >= n:
                return
            lim = min(n, p + MAX_LINE)
            t = find_terminator(buf, max(p, self.no_terminator_before), lim)
            if t < 0:
                self.no_terminator_before = max(self.no_terminator_before, lim)
                if n - p >= MAX_LINE:
                    self._window()
                    continue
                if not final:
                    return
                self._region(p, n)
                continue
            # A region of complete lines, all shorter than MAX_LINE.
            e = t + 1 if t + 1 - p >= BLOCK else rfind_terminator(buf, t, min(n, p + BLOCK)) + 1
            if next_line_undecided(buf, e, final):
                # its last line could be the first half of a wrapped token: wait for the next
                # line's head (the lines before it can go now)
                before = rfind_terminator(buf, p, e - 1)
                if before >= 0 and buf[before] == "\r" and before == e - 2:
                    before = rfind_terminator(buf, p, before)
                if before < p:
                    return
                e = before + 1
            self._region(p, e)

    def _region(self, p: int, e: int, spans: Spans | None = None) -> None:
        """Write buf[p:e] redacted, or up to a PEM block it starts (which is then held)."""
        if spans is None:
            spans = self.scan(p, e)
        b = self.pem_marker(p, e, spans)
        if b >= 0:
            self.emit(b, spans)
            self.pem = PemBlock(begin=b, scan=b)
            self.cache = (e, spans)
            return
        self.emit(e, spans)
        self.cache = None
        self.no_terminator_before = self.pos

    def _window(self) -> None:
        """One step over a line longer than MAX_LINE: commit all but the last OVERLAP."""
        p = self.pos
        we = p + MAX_LINE
        c = we - OVERLAP
        spans = self.scan(p, we)
        # No PEM block starts here: a BEGIN marker before c is followed by more than
        # PEM_LINE_MAX characters without a line end, so it could not be a key's first line.
        changed = True
        while changed:
            changed = False
            for s, e, _ in spans:
                if s < c < e:
                    c = e
                    changed = True
        self.emit(c, spans)
        self.no_terminator_before = self.pos


def _merge(raw: list[tuple[int, int, int]]) -> Spans:
    """Overlapping matches become one span, named after the most specific rule among them
    (RULES is in priority order: token formats first, context rules, the generic last)."""
    if not raw:
        return []
    raw.sort()
    merged: list[tuple[int, int, int]] = []
    for s, e, index in raw:
        if merged and s < merged[-1][1]:
            ps, pe, pindex = merged[-1]
            merged[-1] = (ps, max(pe, e), min(pindex, index))
        else:
            merged.append((s, e, index))
    return [(s, e, NAMES[index]) for s, e, index in merged]


NAMES = (*(rule.name for rule in RULES), "aws-secret-access-key")
"""Redaction names by index: the rules', then the bare AWS secret key found next to its key id
(:mod:`core.redaction.pairs`), which yields to every rule."""
