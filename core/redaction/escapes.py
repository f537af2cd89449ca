"""Seeing through terminal escape sequences: a colour code inside a token hides it from a regex.

Agent output is often coloured: ``\\x1b[31m`` inside ``ghp_…`` (or right before it, where the
``m`` defeats a token's left boundary) would let the token through. Where a region holds an ESC
byte, the rules run on a view of it with the escape sequences (CSI, OSC and two-byte ones)
removed, and every redaction is mapped back to the original text: a secret becomes one
``[REDACTED:rule]`` per stretch of it between escape sequences, and the escape sequences
themselves are kept, so the output shows the same colours and keeps every non-secret byte.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable

from core.redaction.buffer import CONTEXT
from core.redaction.checks import lazy_pattern
from core.redaction.scanning import JOIN_HEAD, Raw, run_rules

Gate = Callable[[str, int, int, dict[int, int], set[tuple[int, int]]], None]
"""A literal gate: fills (active rules, tries) for text[start:end]."""

ESCAPE = lazy_pattern(
    r"\x1b\[[0-?]{0,64}[ -/]{0,8}[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b\r\n]{0,512}(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
    r"|\x1b[@-Z\\-_]",  # two-byte sequences
    re.ASCII,
)


class View:
    """A stretch of text with its escape sequences removed, and the way back."""

    __slots__ = ("keep_at", "text", "view_at")

    def __init__(self, source: str, first: int, stop: int) -> None:
        kept: list[str] = []
        self.view_at: list[int] = []  # where each kept piece starts in the view
        self.keep_at: list[int] = []  # and in the source
        cursor = first
        length = 0
        for m in ESCAPE().finditer(source, first, stop):
            if m.start() > cursor:
                self.view_at.append(length)
                self.keep_at.append(cursor)
                kept.append(source[cursor : m.start()])
                length += m.start() - cursor
            cursor = m.end()
        if stop > cursor:
            self.view_at.append(length)
            self.keep_at.append(cursor)
            kept.append(source[cursor:stop])
        self.text = "".join(kept)

    def to_view(self, position: int) -> int:
        """The view position of a source position (one inside an escape maps to what follows)."""
        i = bisect_right(self.keep_at, position) - 1
        if i < 0:
            return 0
        offset = position - self.keep_at[i]
        size = (self.view_at[i + 1] if i + 1 < len(self.view_at) else len(self.text)) - (
            self.view_at[i]
        )
        return self.view_at[i] + min(offset, size)

    def to_source(self, start: int, end: int) -> list[tuple[int, int]]:
        """The source stretches of view[start:end], escape sequences left out."""
        pieces: list[tuple[int, int]] = []
        i = max(0, bisect_right(self.view_at, start) - 1)
        while i < len(self.view_at) and self.view_at[i] < end:
            lo = self.view_at[i]
            hi = self.view_at[i + 1] if i + 1 < len(self.view_at) else len(self.text)
            s, e = max(start, lo), min(end, hi)
            if s < e:
                pieces.append((self.keep_at[i] + s - lo, self.keep_at[i] + e - lo))
            i += 1
        return pieces


def scan_reach(buf: str, start: int, end: int) -> tuple[int, int]:
    """What a scan of buf[start:end] reads: the context before it (look-behinds, key names)
    and the next line's head (joins across a wrapped line)."""
    stop = buf.find("\n", end, min(len(buf), end + 2 * JOIN_HEAD))
    return max(0, start - CONTEXT), min(len(buf), end + 2 * JOIN_HEAD) if stop < 0 else stop


def needs_view(buf: str, start: int, end: int) -> bool:
    """Whether anything a scan of buf[start:end] reads holds an ESC byte. The rules always see
    text through its escape sequences; text without any is its own view, so scanning it as it
    is gives the same result. The region alone is not enough: a region whose last line joins a
    coloured next line must see that line without its colours too, or a region boundary (where
    a stream's chunks fell) would change what the join finds."""
    first, stop = scan_reach(buf, start, end)
    return buf.find("\x1b", first, stop) >= 0


def see_through_escapes(buf: str, start: int, end: int, gate: Gate) -> Raw:
    """The rules' redactions of buf[start:end], found on a view without escape sequences."""
    first, stop = scan_reach(buf, start, end)
    view = View(buf, first, stop)
    vstart, vend = view.to_view(start), view.to_view(end)
    active: dict[int, int] = {}
    tries: set[tuple[int, int]] = set()
    gate(view.text, vstart, vend, active, tries)
    raw: Raw = []
    for s, e, index in run_rules(view.text, vstart, vend, active, tries):
        raw += [(ps, pe, index) for ps, pe in view.to_source(s, e)]
    return raw
