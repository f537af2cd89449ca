"""Running the gated rules over a region, and joining a line to the next where a token wraps.

The literal gate says which rules to run over a region of complete lines and where anchored
rules are to be tried (:mod:`core.redaction.literal_gate`, :mod:`core.redaction.hyperscan_gate`);
:func:`run_rules` runs them. No rule's regex crosses a line end, so a token hard-wrapped over two
lines (a terminal's width, or split on purpose) would escape every rule. Where an anchored rule
was tried on a line and found nothing there, or stopped right at the line's end, and that line
ends and the next begins with token characters, the rule is tried once more on the line joined
to the head of the next one; a match that crosses the join is redacted as two pieces, one on
each line, so the line feed and every byte around the secret stay as they were.

What a join looks at is bounded and depends only on the text: at most :data:`JOIN_BEFORE`
characters of the line before the try (less than the context the machine keeps before its
position) and the next line's head up to :data:`JOIN_HEAD` characters. The machine holds a line
that ends in a token character until the next line's head is known
(:func:`next_line_undecided`), so streaming still equals whole.
"""

from __future__ import annotations

import re

from core.redaction.buffer import rfind_terminator
from core.redaction.checks import lazy_pattern
from core.redaction.ruleset import RULES

PATTERNS: list[re.Pattern[str] | None] = [None] * len(RULES)
"""Each rule's compiled regex by index, once compiled (a list index is cheaper than the
property's cache lookup, on a path taken once per try)."""


def compiled(index: int) -> re.Pattern[str]:
    """Rule ``index``'s regex, compiled on first use and kept in :data:`PATTERNS`."""
    pattern = PATTERNS[index] = RULES[index].pattern
    return pattern


Raw = list[tuple[int, int, int]]
"""Redactions before merging: (start, end, rule index)."""

JOIN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-.")
"""Characters a wrapped token is made of on both sides of the line break."""
JOIN_BEFORE = 96
"""Characters before a try kept in a joined line (key names, look-behinds)."""
JOIN_REACH = 256
"""A try this far or farther from its line's end cannot be the start of a wrapped token."""
JOIN_HEAD = 1024
"""Most characters of the next line's head a join takes."""


def run_rules(
    text: str, start: int, end: int, active: dict[int, int], tries: set[tuple[int, int]]
) -> Raw:
    """The matches of the scanned rules in ``active`` and of the anchored ``tries`` in
    text[start:end], with their joins across wrapped lines (which may reach past ``end``)."""
    raw: Raw = []
    for index in sorted(active):
        select = RULES[index].select
        for m in (PATTERNS[index] or compiled(index)).finditer(text, active[index], end):
            for s, e in select(m):
                raw.append((s, e, index))
    size = len(text)
    for index, at in tries:
        x = start + at
        if x < start:
            continue  # a match starting before the region would cross a line start
        hit = (PATTERNS[index] or compiled(index)).match(text, x, end)
        extending = False
        if hit is not None:
            spans = RULES[index].select(hit)
            if spans:
                for s, e in spans:
                    raw.append((s, e, index))
                e = spans[-1][1]
                if e >= size or text[e] not in "\r\n":
                    continue
                extending = True
            elif hit.end() < size and text[hit.end()] not in "\r\n":
                continue  # its value ended on the line and was no secret: nothing wraps
        # the cheap half of a join's conditions first, inline: the try's line ends in a token
        # character and the next line starts with one
        t = text.find("\n", x, x + JOIN_REACH)
        if t > x and t + 1 < size and text[t + 1] in JOIN_CHARS:
            last = t - 2 if text[t - 1] == "\r" else t - 1
            if last >= x and text[last] in JOIN_CHARS and text.find("\r", x, last) < 0:
                raw += _join(text, index, x, t, last, extending)
    return raw


def try_anchored(text: str, index: int, x: int, end: int) -> Raw:
    """Anchored rule ``index`` tried at ``x`` alone, exactly as :func:`run_rules` tries it
    (its join included): what trying every rule everywhere means in the tests."""
    return run_rules(text, x, end, {}, {(index, 0)})


def _random_piece(piece: str) -> bool:
    """Whether text looks like (part of) a token: letters and digits mixed; not words that
    happen to meet at a line break (``True`` + ``nntplib.py``, a token + ``Collecting``)."""
    return any(c.isdigit() for c in piece) and any(c.isalpha() for c in piece)


def _join(text: str, index: int, x: int, t: int, last: int, extending: bool) -> Raw:
    """Rule ``index`` tried at ``x`` on its line joined to the next line's head: the pieces of
    a match that crosses the join, or nothing. ``extending``: the rule matched on the line
    alone, up to its end; the join only counts when the next line's piece looks random (a
    complete token followed by a line that starts with a word stays as it was). ``t`` is the
    line feed ending the try's line, ``last`` the line's last character."""
    size = len(text)
    after = t + 1
    limit = min(size, after + JOIN_HEAD)
    head = _HEAD_RUN().match(text, after, limit).end()  # type: ignore[union-attr]
    if extending and not _random_piece(text[after:head]):
        return []  # a whole token, then a line that starts with a word
    # the line must end in the token (or the value) this try starts: a run of token
    # characters reaching back to the try, or to just after the key's separator
    run = _TAIL_RUN().search(text, x, last + 1)
    if run is None:
        return []
    if run.start() > x:
        if index in _AFTER_ANY_PREFIX:
            pass
        elif index not in _AFTER_SEPARATOR or _SEPARATOR().search(text, x, run.start()) is None:
            return []
    if text.startswith("-----", after):
        return []  # a PEM marker line, the machine's own
    head_run = head - after  # the token characters the next line starts with
    # the rest of the next line comes too (a closing quote, what follows a value), up to its
    # end or JOIN_HEAD characters
    stop = text.find("\n", head, limit)
    head = limit if stop < 0 else stop
    line = rfind_terminator(text, max(0, x - JOIN_BEFORE), x) + 1
    first = max(line, x - JOIN_BEFORE)
    joined = text[first : last + 1] + text[after:head]
    seam = last + 1 - first
    rule = RULES[index]
    m = rule.pattern.match(joined, x - first, len(joined))
    if m is None:
        return []
    pieces: Raw = []
    for s, e in rule.select(m):
        if s < seam < e:
            if e - seam > head_run or not _random_piece(joined[s:e]):
                continue  # two lines that are words, not a token cut in two
            if extending and not _random_piece(joined[seam:e]):
                continue
            pieces.append((first + s, last + 1, index))
            pieces.append((after, after + e - seam, index))
    return pieces


_NAMES = [rule.name for rule in RULES]
_AFTER_SEPARATOR = frozenset(
    _NAMES.index(name)
    for name in (
        "generic-secret",
        "named-value-secret",
        "aws-secret-access-key",
        "authorization-header",
    )
)
"""Rules whose secret is a value after a key and a separator (``TOKEN=``, ``"password": "``)."""
_AFTER_ANY_PREFIX = frozenset(_NAMES.index(name) for name in ("bearer-token", "curl-credentials"))
"""Rules whose secret follows a word and blanks (``Bearer …``, ``-u user:…``)."""
_HEAD_RUN = lazy_pattern(r"[A-Za-z0-9+/=_.-]*", re.ASCII)
_TAIL_RUN = lazy_pattern(r"[A-Za-z0-9+/=_.-]{1,256}\Z", re.ASCII)
_SEPARATOR = lazy_pattern(r"[:=]", re.ASCII)


def next_line_undecided(buf: str, end: int, final: bool) -> bool:
    """Whether a region ending at ``end`` (just after a line terminator) must wait: its last
    line ends in a token character and the next line is not all there yet, so a join could
    still change how that line is redacted."""
    if final:
        return False
    r = end - 1
    last = r - 1
    if buf[r] == "\n" and last >= 0 and buf[last] == "\r":
        last -= 1
    if last < 0 or buf[last] not in JOIN_CHARS:
        return False
    size = len(buf)
    head = end
    if buf[r] == "\r":
        if head >= size:
            return True  # "\r" then maybe "\n"
        if buf[head] == "\n":
            head += 1
    # a join takes the next line up to its end or JOIN_HEAD characters (more, before escape
    # sequences are taken out of it): decided once either is there
    return buf.find("\n", head, head + 2 * JOIN_HEAD) < 0 and size < head + 2 * JOIN_HEAD
