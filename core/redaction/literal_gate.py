"""The literal gate: which rules a block of text can match, found from their literals alone.

DESIGN §9: a rule's regex runs only where one of its literals occurs. One pass of a
multi-literal automaton (Aho-Corasick, in Rust) over the lowercased block finds every literal any
rule needs: scanned rules' keywords (the rule runs over the block when one of them occurs) and
anchored rules' starts (the rule is tried exactly there). Literals are ASCII and lowercase;
lowering is ASCII-only and keeps offsets, as ``re.ASCII|IGNORECASE``
(tests/core/test_redact_short_text.py checks every rule for what the gate assumes).

Short texts (a hook's reason, one command line) look for the literals one by one instead:
building the automaton costs more than redacting them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from functools import cache

from core.redaction.ruleset import RULES

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

if TYPE_CHECKING:
    import ahocorasick_rs


def _index_literals() -> tuple[list[str], dict[str, list[int]], dict[str, list[tuple[int, int]]]]:
    """Every literal, the scanned rules each gates, and the (anchored rule, offset) tries each
    sets."""
    gates: dict[str, list[int]] = {}
    starts: dict[str, list[tuple[int, int]]] = {}
    for index, rule in enumerate(RULES):
        if rule.anchored:
            for literal, offset in rule.starts:
                tries = starts.get(literal)
                if tries is None:
                    starts[literal] = [(index, offset)]
                else:
                    tries.append((index, offset))
        else:
            for keyword in rule.keywords:
                gated = gates.get(keyword)
                if gated is None:
                    gates[keyword] = [index]
                else:
                    gated.append(index)
    return sorted(gates.keys() | starts.keys()), gates, starts


LITERALS, _GATED, _TRIES = _index_literals()
"""Every literal of every rule, sorted; a literal's index here is its id in both gates."""
GATES: tuple[tuple[int, ...], ...] = tuple(tuple(_GATED.get(lit, ())) for lit in LITERALS)
"""By literal id: the scanned rules (indexes into RULES) to run over a block holding it."""
STARTS: tuple[tuple[tuple[int, int], ...], ...] = tuple(
    tuple(_TRIES.get(lit, ())) for lit in LITERALS
)
"""By literal id: ``(anchored rule, offset)``: try the rule ``offset`` characters into it."""
del _GATED, _TRIES

_LITERAL_BYTES = tuple(lit.encode("ascii") for lit in LITERALS)

SHORT_TEXT = 512
"""Bytes up to which, before the automaton exists, literals are looked for one by one: building
it costs ~2 ms, more than a hook's one line of text needs (~0.2 ms for a hundred bytes)."""


DFA_AFTER = 1 << 20
"""Bytes one process scans through the automaton before it builds the DFA: a DFA searches ~2.5×
faster than the contiguous NFA but takes ~2.7 ms to build against ~0.9 ms, which its faster
search repays after ~0.6 MB. A hook's snapshot scans a few dozen changed files (kilobytes) and
never gets there; `pitstop run` over a long stream does at once."""

_scanned = 0  # bytes this process has searched through the automaton so far


@cache
def automaton(dfa: bool = True) -> ahocorasick_rs.BytesAhoCorasick:
    """The literal gate for all but short inputs, built on first use (hooks redact a few lines):
    the DFA, or (`dfa=False`) the contiguous NFA, which gives the same matches."""
    import ahocorasick_rs

    kind = ahocorasick_rs.Implementation
    return ahocorasick_rs.BytesAhoCorasick(
        list(_LITERAL_BYTES), implementation=kind.DFA if dfa else kind.ContiguousNFA
    )


def literal_hits(low: bytes) -> Iterator[tuple[int, int]]:
    """Every occurrence of every literal in ``low``: (literal id, offset), overlapping ones
    included, in no particular order (the callers collect them into sets and maxima)."""
    global _scanned
    if len(low) > SHORT_TEXT or automaton.cache_info().currsize:
        _scanned += len(low)
        gate = automaton(dfa=_scanned > DFA_AFTER)
        for literal, at, _ in gate.find_matches_as_indexes(low, overlapping=True):
            yield literal, at
        return
    for stem, first, end in _stems():
        if stem not in low:
            continue  # none of the literals that start with it can occur
        for literal in range(first, end):
            text = _LITERAL_BYTES[literal]
            at = low.find(text)
            while at != -1:
                yield literal, at
                at = low.find(text, at + 1)


@cache
def _stems() -> tuple[tuple[bytes, int, int], ...]:
    """The literals grouped by their first two bytes, as (stem, first id, end id): most are a
    keyword with two more characters (``sk`` + two hex digits, ``password`` + a separator), so
    a short text is searched for a few dozen stems rather than for each of the ~1,200 literals.
    The literals are sorted, so each group is a run of ids."""
    groups: list[tuple[bytes, int, int]] = []
    first = 0
    while first < len(_LITERAL_BYTES):
        stem = _LITERAL_BYTES[first][:2]
        after = stem[:-1] + bytes([stem[-1] + 1])  # the first two bytes sorting after the stem
        end = bisect_left(_LITERAL_BYTES, after, first)
        groups.append((stem, first, end))
        first = end
    return tuple(groups)
