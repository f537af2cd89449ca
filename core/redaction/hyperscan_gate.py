"""The literal gate for large streams: one Hyperscan database, compiled once and cached.

It holds every anchored rule's start literals (caseless, as the automaton sees lowercased text)
or its locator, every scanned rule's own regex as a prefilter, and the PEM BEGIN marker.
Hyperscan scans the raw block at several GB/s without the GIL and needs no lowercased copy. It
reports the end of each match: literals and locators have a fixed width, so a start is known; a
scanned rule's prefilter is reported once per block (SINGLEMATCH), at the first place the rule's
regex could end. Each pattern id maps to (rules gated, (rule, offset) tries, width); the last one
is the marker. Output is identical to the automaton's: a rule is skipped only where it has no
match, and it runs from the same places as behind the automaton.

This module, and the ``hyperscan`` package, are imported only when a stream gets large
(``core.redaction.machine.ACCELERATE_AFTER``) or a caller asks: a harness hook that redacts
one line never loads them.
"""

from __future__ import annotations

import re
from functools import cache

from core.redaction.literal_gate import LITERALS, STARTS
from core.redaction.ruleset import RULES

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

Entry = tuple[tuple[int, ...], tuple[tuple[int, int], ...], int]
"""What one pattern id stands for: (scanned rules gated, (rule, offset) tries, match width)."""
Table = tuple[Entry, ...]

_LONG_REPEAT = r"(?<!\\)\{(\d+),(?:\d{3,}|[7-9]\d)\}"


def _literal_patterns(located: set[int]) -> list[tuple[bytes, str, Entry]]:
    """Anchored rules' start literals, where the rule has no locator (caseless)."""
    patterns: list[tuple[bytes, str, Entry]] = []
    for literal, starts in zip(LITERALS, STARTS, strict=True):
        starts = tuple((index, offset) for index, offset in starts if index not in located)
        if starts:
            patterns.append(
                (re.escape(literal).encode("ascii"), "caseless", ((), starts, len(literal)))
            )
    return patterns


def _prefilter_patterns() -> list[tuple[bytes, str, Entry]]:
    """Each scanned rule gated on its own regex, compiled in prefilter mode.

    Lookarounds and possessive quantifiers are relaxed there (Hyperscan reports a superset of
    the regex's matches), so a keyword alone (the "acca" in a hex id) no longer sends a block
    through the rule. A bounded repeat of more than 69 becomes unbounded: a superset too, and
    ~1000x faster to compile (the private-key rule's ``{32,16384}`` alone takes Hyperscan 1.7 s).
    """
    long_repeat = re.compile(_LONG_REPEAT)
    patterns: list[tuple[bytes, str, Entry]] = []
    for index, rule in enumerate(RULES):
        if not rule.anchored:
            kind = "prefilter-caseless" if rule.flags & re.IGNORECASE else "prefilter"
            source = long_repeat.sub(r"{\1,}", rule.source).encode("ascii")
            patterns.append((source, kind, ((index,), (), 0)))
    return patterns


def _locator_patterns(located: set[int]) -> list[tuple[bytes, str, Entry]]:
    """Anchored rules found by their locator instead of their many starts (case-sensitive)."""
    patterns: list[tuple[bytes, str, Entry]] = []
    for index in sorted(located):
        source, width = RULES[index].locator  # type: ignore[misc]
        patterns.append((source.encode("ascii"), "exact", ((), ((index, 0),), width)))
    return patterns


@cache
def gate() -> tuple[Any, Table] | None:
    """The compiled Hyperscan database and its pattern table; None where it is not installed."""
    try:
        import hyperscan
    except ImportError:
        return None
    flag_of = {
        "caseless": hyperscan.HS_FLAG_CASELESS,
        "prefilter": hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH,
        "prefilter-caseless": hyperscan.HS_FLAG_PREFILTER
        | hyperscan.HS_FLAG_SINGLEMATCH
        | hyperscan.HS_FLAG_CASELESS,
        "exact": 0,
        # where a PEM BEGIN marker may start (the machine looks for one only then)
        "marker": hyperscan.HS_FLAG_SINGLEMATCH,
    }
    located = {index for index, rule in enumerate(RULES) if rule.locator is not None}
    patterns = [
        *_literal_patterns(located),
        *_prefilter_patterns(),
        *_locator_patterns(located),
        (b"-----BEGIN", "marker", ((), (), 0)),  # last: the table's final id is the marker
    ]
    expressions = [expression for expression, _, _ in patterns]
    flags = [flag_of[kind] for _, kind, _ in patterns]
    table = tuple(entry for _, _, entry in patterns)
    return hyperscan_database("redact", expressions, flags), table


def hyperscan_available() -> bool:
    """Whether the Hyperscan gate can be used here (the package is installed and compiles)."""
    return gate() is not None


def new_scratch() -> Any:
    """Scratch space for scanning with the gate (one per thread at a time)."""
    import hyperscan

    compiled = gate()
    assert compiled is not None
    return hyperscan.Scratch(compiled[0])


def collect(pattern: int, _start: int, end: int, _flags: int, hits: list[tuple[int, int]]) -> None:
    """Hyperscan's match callback: gather (pattern id, match end)."""
    hits.append((pattern, end))


# --- the compiled databases, cached in the store ------------------------------------------

_hyperscan_cache: list[Path] = []


def use_hyperscan_cache(directory: Path) -> None:
    """Keep compiled Hyperscan databases in ``directory`` (created 0700 when first written).

    Loading a serialized database takes well under a millisecond and ~1 MiB; compiling one takes
    ~60 ms and ~12 MiB at its peak, once per process. The files hold only the rule set compiled
    (no output), are keyed by a hash of the patterns, flags and Hyperscan version, and are
    recompiled whenever they do not load.
    """
    _hyperscan_cache[:] = [directory]


def hyperscan_database(name: str, expressions: list[bytes], flags: list[int]) -> Any:
    """A block-mode Hyperscan database of ``expressions`` (ids are their indexes), loaded from
    the cache when it holds this exact one, else compiled (and cached)."""
    import hashlib
    import platform
    import sys

    import hyperscan

    identity = repr(
        (
            getattr(hyperscan, "__version__", ""),
            sys.platform,
            platform.machine(),
            expressions,
            flags,
        )
    ).encode()
    digest = hashlib.sha256(identity).hexdigest()[:32]
    path = _hyperscan_cache[0] / f"hyperscan-{name}-{digest}.db" if _hyperscan_cache else None
    if path is not None:
        try:
            return hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
        except (OSError, hyperscan.error):
            pass  # absent, unreadable or built for another CPU: compile it
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=expressions,
        ids=list(range(len(expressions))),
        elements=len(expressions),
        flags=flags,
    )
    if path is not None:
        _write_private(path, hyperscan.dumpb(database))
    return database


def _write_private(path: Path, data: bytes) -> None:
    """Write ``path`` whole (0600, via a temporary file and a rename); give up quietly."""
    import contextlib
    import os
    import threading

    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
