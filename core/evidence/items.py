"""Evidence items: what one item records about a command's output, and reading one back.

An item is a row of listable facts (counts, hash, outcome, summary) plus three sealed fields, the
label, the command line and the tail, which only the task's key opens. Its output lives in chunks
(:mod:`core.evidence.chunks`); it is written by :class:`core.evidence.recorder.EvidenceRecorder`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from core import numbers, store
from core.errors import UsageError
from core.redaction.free_text import persistable
from core.redaction.redact import redact_argv
from core.security.keys import TaskKeys
from core.store.db import Database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

DEFAULT_TAIL_LINES = 200
DEFAULT_TAIL_BYTES = 64 * 1024
DEFAULT_CAP_BYTES = 32 * 1024 * 1024
DEFAULT_CHUNK_BYTES = 1024 * 1024


class EvidenceLimits(NamedTuple):
    """How much of a stream is kept; stated in `evidence show`."""

    tail_lines: int = DEFAULT_TAIL_LINES
    tail_bytes: int = DEFAULT_TAIL_BYTES
    cap_bytes: int = DEFAULT_CAP_BYTES
    chunk_bytes: int = DEFAULT_CHUNK_BYTES


DEFAULT_LIMITS = EvidenceLimits()
MIN_CAP_MIB = 0.0625


def limits_from(cap_mib: float | None = None, tail_lines: int | None = None) -> EvidenceLimits:
    """The limits `--cap-mib` and `--tail-lines` ask for (the defaults where absent), checked."""
    cap_bytes = DEFAULT_CAP_BYTES
    if cap_mib is not None:
        numbers.finite(cap_mib, "--cap-mib")
        if cap_mib < MIN_CAP_MIB:
            raise UsageError(f"--cap-mib must be at least {MIN_CAP_MIB}")
        cap_bytes = numbers.storable_integer(int(cap_mib * 1024 * 1024), "--cap-mib")
    return checked_limits(
        EvidenceLimits(tail_lines=tail_lines or DEFAULT_TAIL_LINES, cap_bytes=cap_bytes)
    )


def checked_limits(limits: EvidenceLimits) -> EvidenceLimits:
    """`limits` when every one is a positive number SQLite can store; else one clear refusal."""
    for name, value in limits._asdict().items():
        numbers.storable_integer(value, f"the evidence limit {name}")
        if value <= 0:
            raise UsageError(f"the evidence limit {name} must be positive")
    return limits


class Evidence(NamedTuple):
    """One evidence item's listable facts, plus its decrypted command and tail when loaded."""

    id: int
    task_id: str
    checkpoint_seq: int | None
    state: str
    source: str
    label: str | None
    started_at: str
    duration_ms: int | None
    exit_code: int | None
    signal: int | None
    timed_out: bool
    bytes_total: int
    lines_total: int
    sha256: str | None
    stored_bytes: int
    kept_bytes: int
    truncated: bool
    omitted_bytes: int
    chunk_count: int
    summary: dict[str, Any] | None
    tail_lines: int
    redactions: int
    ruleset: str | None
    cap_bytes: int
    failure: str | None
    command: dict[str, Any] | None = None
    tail: str | None = None

    @property
    def outcome(self) -> str:
        """`exit 0`, `signal 9`, `timed out`, `exit unknown` or `running`."""
        if self.timed_out:
            return "timed out"
        if self.signal:
            return f"signal {self.signal}"
        if self.exit_code is not None:
            return f"exit {self.exit_code}"
        if self.state == "complete" and self.source == "hook":  # the harness said no status
            return "exit unknown"
        return self.state

    @property
    def summary_text(self) -> str:
        """The recognised tool summary as one line (empty when there is none)."""
        return str(self.summary["text"]) if self.summary else ""


def sealed_name(evidence_id: int, part: str) -> str:
    """What a sealed part of an item (``command``, ``tail``, ``chunk/N``) is bound to."""
    return f"evidence/{evidence_id}/{part}"


def command_record(
    argv: Sequence[str],
    cwd: str | None,
    file: str | None = None,
    *,
    agent: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The command line as stored (encrypted): every argument redacted first; the subagent
    that ran it (`{"id", "type"}`, as the harness named them) when it was not the main agent."""
    # Whole-argv redaction also catches `curl -u user:pw` and `--password pw` pairs.
    record: dict[str, Any] = {"argv": redact_argv(argv), "cwd": cwd}
    if file is not None:
        record["file"] = file
    if agent:
        record["agent"] = {name: persistable(value) for name, value in agent.items()}
    return record


def evidence_from_row(row: Mapping[str, Any], **decrypted: Any) -> Evidence:
    """Build the model from a store row plus any decrypted fields."""
    return Evidence(**dict(row), **decrypted)


def load_evidence(
    db: Database, keys: TaskKeys, evidence_id: int, *, decrypt: bool = True
) -> Evidence:
    """An evidence item with its label, command and tail decrypted (when `decrypt`; else the
    label holds the marker and no key is loaded)."""
    row = store.get_evidence(db, evidence_id, keys if decrypt else None)
    if not decrypt:
        return evidence_from_row(row)
    command_blob, tail_blob = store.get_evidence_secrets(db, evidence_id)
    task_id = row["task_id"]
    command = (
        json.loads(
            keys.open(
                task_id,
                sealed_name(evidence_id, "command"),
                command_blob,
                f"evidence {evidence_id}'s command",
            )
        )
        if command_blob
        else None
    )
    tail = (
        keys.open(
            task_id, sealed_name(evidence_id, "tail"), tail_blob, f"evidence {evidence_id}'s tail"
        ).decode("utf-8", errors="replace")
        if tail_blob
        else None
    )
    return evidence_from_row(row, command=command, tail=tail)
