"""Evidence storage, as the engine uses it: record an item, load it, read its output back.

The parts live beside this module: :mod:`core.evidence.items` (the item and its limits),
:mod:`core.evidence.recorder` (taking a stream once: redaction, summary, tail, chunking on a few
threads), :mod:`core.evidence.pipeline` (those threads' hand-offs), and
:mod:`core.evidence.chunks` (compressed, sealed chunks, and reading them back). Callers import
from here, so the cut between them can move without touching the engine.
"""

from __future__ import annotations

from core.evidence.chunks import iter_output, last_lines, read_chunks
from core.evidence.items import (
    DEFAULT_CAP_BYTES,
    DEFAULT_CHUNK_BYTES,
    DEFAULT_LIMITS,
    DEFAULT_TAIL_BYTES,
    DEFAULT_TAIL_LINES,
    Evidence,
    EvidenceLimits,
    checked_limits,
    command_record,
    evidence_from_row,
    limits_from,
    load_evidence,
)
from core.evidence.recorder import BATCH_BYTES, EvidenceRecorder

__all__ = [
    "BATCH_BYTES",
    "DEFAULT_CAP_BYTES",
    "DEFAULT_CHUNK_BYTES",
    "DEFAULT_LIMITS",
    "DEFAULT_TAIL_BYTES",
    "DEFAULT_TAIL_LINES",
    "Evidence",
    "EvidenceLimits",
    "EvidenceRecorder",
    "checked_limits",
    "command_record",
    "evidence_from_row",
    "iter_output",
    "last_lines",
    "limits_from",
    "load_evidence",
    "read_chunks",
]
