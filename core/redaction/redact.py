"""Secret redaction: keyword-gated compiled rules, applied before any byte is persisted or shown.

DESIGN §3 invariant 2 (secrets never reach disk in clear) and §9 (gate each rule on a literal
keyword before running its regex). Every rule has a name, a tuple of lowercase literal keywords and
a compiled regex; a rule's regex runs only where one of its keywords occurs in the lowercased text,
and every match the regex can produce contains one of those keywords. A secret is replaced by
``[REDACTED:<rule>]``; where a prefix such as ``Authorization: Bearer`` or ``password=`` is only
context, just the secret part is replaced.

Guarantees:

- **Line-local rules.** No rule's regex can match across ``\\n`` or ``\\r`` (every character class
  excludes both), so a stream can be processed a block of complete lines at a time, and ``\\r``
  progress bars, binary data and non-UTF-8 bytes pass through byte-for-byte where nothing matches.
- **PEM private keys across lines.** A ``-----BEGIN … PRIVATE KEY-----`` line starts a held block
  that ends at ``-----END … PRIVATE KEY-----`` (redacted whole), at the first line that cannot be
  part of a key (redacted as a truncated key when it already held key material, else released
  untouched), or at :data:`PEM_HOLD_CAP` held characters (redacted at once; the key lines that
  follow are dropped up to the END line).
- **Streaming equals whole.** :class:`StreamRedactor` and :func:`redact_bytes` run the same machine;
  every decision it makes depends only on the data, never on where chunks were split, so any
  chunking gives exactly ``redact_bytes(whole)``. Lines longer than :data:`MAX_LINE` are processed
  in overlapping windows, which bounds memory.
- **Linear time.** Quantifiers are bounded or possessive and most token rules check a left
  boundary, so no input makes a rule backtrack more than a bounded amount per keyword occurrence;
  a run of BEGIN lines that are not keys reuses the block's scan instead of repeating it.
- **Overlaps** between rules become one redaction, named after the most specific rule (token
  formats before context rules such as ``authorization-header``, the generic rule last).

API: :func:`redact_text` (with findings in original offsets), :func:`redact_bytes`,
:class:`StreamRedactor` (``feed``/``flush``, per-rule ``counts``), :func:`redact_argv` (a command
line, each argument seen next to its neighbours: ``-u user:pw``, ``--password pw``),
:func:`rule_listing`, and :data:`RULESET_VERSION`, which callers record with everything they
redact.

Bytes are handled as latin-1 text (one character per byte), so ``redact_bytes`` round-trips every
byte exactly; the rules themselves are ASCII.

This module is the entry point every caller imports; the parts live beside it:
:mod:`~core.redaction.rules` (the rule table and the checks' word lists, as data),
:mod:`~core.redaction.ruleset` (records made runnable), :mod:`~core.redaction.checks` (value
checks), :mod:`~core.redaction.literal_gate` (Aho-Corasick, and the short-text path that needs
no automaton), :mod:`~core.redaction.hyperscan_gate` (large streams; compiled databases cached),
and the machine: :mod:`~core.redaction.buffer` (state), :mod:`~core.redaction.pem` (PEM blocks),
:mod:`~core.redaction.machine` (the scanning loop).
"""

from __future__ import annotations

from collections.abc import Sequence

from core.redaction.buffer import MAX_LINE
from core.redaction.checks import looks_like_secret, shannon_entropy
from core.redaction.machine import ACCELERATE_AFTER, Machine
from core.redaction.pem import PEM_HOLD_CAP
from core.redaction.ruleset import RULES, RULESET_VERSION, Finding, Rule, rule_names

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    from core.redaction.hyperscan_gate import (
        hyperscan_available,
        hyperscan_database,
        use_hyperscan_cache,
    )

__all__ = [
    "ACCELERATE_AFTER",
    "MAX_LINE",
    "PEM_HOLD_CAP",
    "RULES",
    "RULESET_VERSION",
    "Finding",
    "Rule",
    "RuleInfo",
    "StreamRedactor",
    "hyperscan_available",
    "hyperscan_database",
    "looks_like_secret",
    "redact_argv",
    "redact_bytes",
    "redact_text",
    "rule_listing",
    "rule_names",
    "shannon_entropy",
    "use_hyperscan_cache",
]

_FROM_HYPERSCAN_GATE = ("hyperscan_available", "hyperscan_database", "use_hyperscan_cache")


def __getattr__(name: str) -> object:
    """The Hyperscan gate's functions, its module loaded when one is first asked for: a short
    redaction (a harness hook's one line) never needs it."""
    if name in _FROM_HYPERSCAN_GATE:
        from core.redaction import hyperscan_gate

        return getattr(hyperscan_gate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- public API ----------------------------------------------------------------------------------


def redact_text(text: str) -> tuple[str, list[Finding]]:
    """Redact ``text``; findings give each secret's rule and span in the original ``text``."""
    machine = Machine(keep_findings=True, buf=text)
    machine.advance(final=True)
    return machine.take(), machine.findings


class RuleInfo(NamedTuple):
    """What ``pitstop redact --rules`` shows of a rule."""

    name: str
    family: str
    keywords: tuple[str, ...]
    """The literals every match contains (the gate the rule runs behind)."""
    description: str


def rule_listing() -> list[RuleInfo]:
    """Every rule, in priority order: its name, family, keywords and what it finds."""
    from core.redaction.rules.table import LISTING

    return [RuleInfo(*entry) for entry in LISTING]


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Redact a command line argument by argument, each seen in the context of its neighbours.

    ``["curl", "-u", "bob:pw"]`` or ``["mysql", "--password", "pw"]`` only reveal a secret
    together with the argument before it, so the arguments are redacted as one space-joined line
    and every argument keeps its own place in the list.
    """
    joined = " ".join(argv)
    _, findings = redact_text(joined)
    if not findings:
        return list(argv)
    result: list[str] = []
    offset = 0
    for arg in argv:
        start, end = offset, offset + len(arg)
        pieces: list[str] = []
        cursor = start
        for finding in findings:
            s, e = max(finding.start, start), min(finding.end, end)
            if s < e:
                pieces.append(joined[cursor:s])
                pieces.append(f"[REDACTED:{finding.rule}]")
                cursor = e
        pieces.append(joined[cursor:end])
        result.append("".join(pieces))
        offset = end + 1
    return result


def redact_bytes(data: bytes, *, accelerate: bool | None = None) -> bytes:
    """Redact ``data`` of any encoding; bytes outside every redacted span are kept exactly.

    ``accelerate``: use the Hyperscan gate (True: where installed; None: for data of at least
    :data:`ACCELERATE_AFTER` bytes; False: never). The output is the same either way.
    """
    machine = Machine(keep_findings=False, buf=data.decode("latin-1"))
    if accelerate or (accelerate is None and len(data) >= ACCELERATE_AFTER):
        machine.accelerate(data)
    machine.advance(final=True)
    return machine.take().encode("latin-1")


class StreamRedactor:
    """Redact a byte stream chunk by chunk, holding back only what could still be a secret.

    ``feed`` returns the redacted bytes that are final; ``flush`` returns the rest. Whatever the
    chunking, ``b"".join(feeds) + flush()`` equals :func:`redact_bytes` of the whole stream. What is
    held back is bounded: an incomplete line (at most about :data:`MAX_LINE` characters) plus a PEM
    block being held (at most about :data:`PEM_HOLD_CAP`) plus the last chunk fed.
    """

    def __init__(self, *, accelerate: bool | None = None) -> None:
        """``accelerate``: use the Hyperscan gate (True: from the start, where installed; None:
        once :data:`ACCELERATE_AFTER` bytes were fed; False: never). Same output either way."""
        self._machine = Machine(keep_findings=False)
        self._flushed = False
        self._accelerate = accelerate
        self._fed = 0
        if accelerate:
            self._machine.accelerate()

    @property
    def accelerated(self) -> bool:
        """Whether the Hyperscan gate is in use."""
        return self._machine.scratch is not None

    def feed(self, chunk: bytes) -> bytes:
        """Add ``chunk``; return the redacted output that no later byte can change."""
        if self._flushed:
            raise ValueError("feed() after flush()")
        if self._accelerate is None and self._fed < ACCELERATE_AFTER:
            self._fed += len(chunk)
            if self._fed >= ACCELERATE_AFTER:
                self._machine.accelerate()
        self._machine.push(chunk.decode("latin-1"), chunk)
        return self._machine.take().encode("latin-1")

    def flush(self) -> bytes:
        """End of stream: return everything still held, redacted."""
        if not self._flushed:
            self._flushed = True
            self._machine.finish()
        return self._machine.take().encode("latin-1")

    @property
    def counts(self) -> dict[str, int]:
        """How many secrets each rule has redacted so far."""
        return dict(self._machine.counts)

    @property
    def dropped_newlines(self) -> int:
        """Line feeds fed so far that are inside redactions: input lines = output lines + this."""
        return self._machine.dropped_newlines

    @property
    def held(self) -> int:
        """Characters kept between calls: held back for a decision, plus a little context."""
        m = self._machine
        return len(m.buf) - m.keep_from() + m.pending_len
