"""Evidence: what a command showed, kept compact, redacted before storage and encrypted at rest.

An `EvidenceRecorder` takes the raw output stream once, in pieces of any size, and never holds
more than a bounded window of it: it hashes and counts the raw bytes, redacts them with the
streaming redactor (so nothing unredacted is ever persisted, temporary data included), scans
complete lines for a tool summary, keeps a rolling tail, and stores the redacted stream as
independent zstd-compressed, encrypted chunks so that the last lines of a huge log are read
without reading the rest. Past the storage cap the head and the newest tail are kept and the
item is flagged truncated, with the byte count and sha256 of the whole stream (invariant 4).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import zstandard

from core import clock, store
from core.db import Database, write_txn
from core.keys import TaskKeys
from core.redact import RULESET_VERSION, StreamRedactor, redact_argv, redact_text
from core.summaries import SummaryScanner

DEFAULT_TAIL_LINES = 200
DEFAULT_TAIL_BYTES = 64 * 1024
DEFAULT_CAP_BYTES = 32 * 1024 * 1024
DEFAULT_CHUNK_BYTES = 1024 * 1024
ZSTD_LEVEL = 3
MAX_PENDING_LINE = 8192
REDACTION_MARK = b"[REDACTED:"

# Lines worth showing the summary scanner; everything else is skipped at C speed.
_SUMMARY_CANDIDATE = re.compile(
    rb"^(?:\x1b\[[0-9;]*m)*[ \t]*(?:=+ |\d+ (?:passed|failed)|Ran \d|OK\b|FAILED|Tests[: ]|ok\s|"
    rb"FAIL|--- |test result:|up to date|"
    rb"Found \d|All checks|Success:|Successfully installed|ERROR: |npm |added |removed |"
    rb"changed |found \d)[^\n]*",
    re.M,
)


@dataclass(frozen=True)
class EvidenceLimits:
    """How much of a stream is kept; stated in `evidence show`."""

    tail_lines: int = DEFAULT_TAIL_LINES
    tail_bytes: int = DEFAULT_TAIL_BYTES
    cap_bytes: int = DEFAULT_CAP_BYTES
    chunk_bytes: int = DEFAULT_CHUNK_BYTES


@dataclass(frozen=True)
class Evidence:
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
        """`exit 0`, `signal 9`, `timed out` or `running`."""
        if self.timed_out:
            return "timed out"
        if self.signal:
            return f"signal {self.signal}"
        if self.exit_code is not None:
            return f"exit {self.exit_code}"
        return self.state

    @property
    def summary_text(self) -> str:
        return str(self.summary["text"]) if self.summary else ""


def command_record(argv: Sequence[str], cwd: str | None, file: str | None = None) -> dict[str, Any]:
    """The command line as stored (encrypted): every argument redacted first."""
    # Whole-argv redaction also catches `curl -u user:pw` and `--password pw` pairs.
    record: dict[str, Any] = {"argv": redact_argv(argv), "cwd": cwd}
    if file is not None:
        record["file"] = file
    return record


def evidence_from_row(row: Mapping[str, Any], **decrypted: Any) -> Evidence:
    """Build the model from a store row plus any decrypted fields."""
    return Evidence(**dict(row), **decrypted)


@dataclass
class _ChunkWindow:
    """Where stored chunks stand against the cap: a fixed head, then a sliding tail."""

    head_budget: int
    tail_budget: int
    head_full: bool = False
    head_bytes: int = 0
    tail_chunks: list[tuple[int, int, int]] = field(default_factory=list)  # seq, stored, raw
    tail_bytes: int = 0


class EvidenceRecorder:
    """Records one evidence item from a raw stream fed in pieces."""

    def __init__(
        self,
        db: Database,
        keys: TaskKeys,
        task_id: str,
        *,
        source: str,
        label: str | None,
        command: Mapping[str, Any],
        limits: EvidenceLimits = EvidenceLimits(),
        started_at: str | None = None,
    ) -> None:
        self._db = db
        self._keys = keys
        self.task_id = task_id
        self.limits = limits
        keys.data_key(task_id, create=True)  # a missing or wrong key fails before any write
        with write_txn(db):
            store.get_task(db, task_id)
            self.id = store.insert_evidence(
                db,
                task_id=task_id,
                state="writing",
                source=source,
                label=redact_text(label)[0] if label else None,
                started_at=started_at or clock.now_iso(),
                cap_bytes=limits.cap_bytes,
                ruleset=RULESET_VERSION,
            )
            store.update_evidence(
                db,
                self.id,
                command=keys.seal(
                    task_id, self._item("command"), json.dumps(dict(command)).encode()
                ),
            )
        self._redactor = StreamRedactor()
        self._sha = hashlib.sha256()
        self._bytes_total = 0
        self._newlines = 0
        self._last_byte = b""
        self._redacted_offset = 0
        self._redacted_newlines = 0
        self._redactions = 0
        self._line_carry = b""
        self._scanner = SummaryScanner()
        self._tail = b""
        self._chunk_buffer = bytearray()
        self._chunk_seq = 0
        self._dropped_chunks = 0
        self._stored_bytes = 0
        self._kept_bytes = 0
        self._omitted_bytes = 0
        self._window = _ChunkWindow(limits.cap_bytes // 2, limits.cap_bytes - limits.cap_bytes // 2)
        self._compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)

    def _item(self, name: str) -> str:
        return f"evidence/{self.id}/{name}"

    def feed(self, raw: bytes) -> None:
        """Take the next piece of the raw stream (any size, any split)."""
        if not raw:
            return
        self._sha.update(raw)
        self._bytes_total += len(raw)
        self._newlines += raw.count(b"\n")
        self._last_byte = raw[-1:]
        self._consume(self._redactor.feed(raw))

    def _consume(self, redacted: bytes) -> None:
        if not redacted:
            return
        self._redactions += redacted.count(REDACTION_MARK)
        self._scan_lines(redacted)
        window = self.limits.tail_bytes * 2
        self._tail = (self._tail + redacted)[-window:]
        self._chunk_buffer += redacted
        while len(self._chunk_buffer) >= self.limits.chunk_bytes:
            piece = bytes(self._chunk_buffer[: self.limits.chunk_bytes])
            del self._chunk_buffer[: self.limits.chunk_bytes]
            self._store_chunk(piece)

    def _scan_lines(self, redacted: bytes) -> None:
        """Feed complete candidate lines to the summary scanner (carrying a partial line)."""
        cut = redacted.rfind(b"\n")
        if cut < 0:
            self._line_carry = (self._line_carry + redacted)[:MAX_PENDING_LINE]
            return
        block = self._line_carry + redacted[: cut + 1]
        self._line_carry = redacted[cut + 1 :][:MAX_PENDING_LINE]
        if b"\r" in block:
            block = block.replace(b"\r\n", b"\n")
        for match in _SUMMARY_CANDIDATE.finditer(block):
            self._scanner.feed_line(match.group(0))

    def _store_chunk(self, piece: bytes) -> None:
        seq = self._chunk_seq
        self._chunk_seq += 1
        line_count = piece.count(b"\n")
        sealed = self._keys.seal(
            self.task_id, self._item(f"chunk/{seq}"), self._compressor.compress(piece)
        )
        window = self._window
        part = "head"
        if window.head_full or window.head_bytes + len(sealed) > window.head_budget:
            window.head_full = True
            part = "tail"
        with write_txn(self._db):
            store.insert_chunk(
                self._db,
                self.id,
                seq=seq,
                part=part,
                offset=self._redacted_offset,
                raw_len=len(piece),
                first_line=self._redacted_newlines,
                line_count=line_count,
                stored_len=len(sealed),
                blob=sealed,
            )
            if part == "head":
                window.head_bytes += len(sealed)
            else:
                window.tail_chunks.append((seq, len(sealed), len(piece)))
                window.tail_bytes += len(sealed)
                while window.tail_bytes > window.tail_budget and len(window.tail_chunks) > 1:
                    old_seq, old_stored, old_raw = window.tail_chunks.pop(0)
                    store.delete_chunk(self._db, self.id, old_seq)
                    window.tail_bytes -= old_stored
                    self._omitted_bytes += old_raw
                    self._dropped_chunks += 1
                    self._kept_bytes -= old_raw
                    self._stored_bytes -= old_stored
        self._stored_bytes += len(sealed)
        self._kept_bytes += len(piece)
        self._redacted_offset += len(piece)
        self._redacted_newlines += line_count

    def _tail_text(self) -> tuple[bytes, int]:
        """The last lines (at most the limits), with progress-bar `\\r` rewrites collapsed."""
        lines = self._tail.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if len(self._tail) >= self.limits.tail_bytes * 2 and len(lines) > 1:
            lines = lines[1:]  # the first line of the window may be cut
        # A terminal shows what follows the last carriage return of each line.
        lines = [line.rstrip(b"\r").rsplit(b"\r", 1)[-1] for line in lines]
        kept: list[bytes] = []
        size = 0
        for line in reversed(lines[-self.limits.tail_lines :]):
            if size + len(line) + 1 > self.limits.tail_bytes:
                if not kept:
                    kept.append(line[-self.limits.tail_bytes :])
                break
            kept.append(line)
            size += len(line) + 1
        kept.reverse()
        return b"\n".join(kept), len(kept)

    def finish(
        self,
        *,
        exit_code: int | None,
        signal: int | None = None,
        timed_out: bool = False,
        duration_ms: int | None = None,
    ) -> Evidence:
        """Flush what is buffered, store the tail and summary, and mark the item complete."""
        self._consume(self._redactor.flush())
        if self._line_carry:
            self._scan_lines(b"\n")
        if self._chunk_buffer:
            self._store_chunk(bytes(self._chunk_buffer))
            self._chunk_buffer.clear()
        tail, tail_lines = self._tail_text()
        summary = self._scanner.summary()
        lines_total = self._newlines + (1 if self._last_byte not in (b"", b"\n") else 0)
        with write_txn(self._db):
            store.update_evidence(
                self._db,
                self.id,
                state="complete",
                exit_code=exit_code,
                signal=signal,
                timed_out=int(timed_out),
                duration_ms=duration_ms,
                bytes_total=self._bytes_total,
                lines_total=lines_total,
                sha256=self._sha.hexdigest(),
                stored_bytes=self._stored_bytes,
                kept_bytes=self._kept_bytes,
                truncated=int(self._omitted_bytes > 0),
                omitted_bytes=self._omitted_bytes,
                chunk_count=self._chunk_seq - self._dropped_chunks,
                summary=summary.as_dict() if summary else None,
                tail=self._keys.seal(self.task_id, self._item("tail"), tail),
                tail_lines=tail_lines,
                redactions=self._redactions,
            )
        return load_evidence(self._db, self._keys, self.id)

    def discard(self) -> None:
        """Remove the item entirely (the command never started: there is nothing to keep)."""
        with write_txn(self._db):
            store.delete_evidence(self._db, self.id)

    def abort(self, failure: str) -> None:
        """Mark the item failed (its chunks so far stay readable)."""
        with write_txn(self._db):
            store.update_evidence(self._db, self.id, state="incomplete", failure=failure)


def load_evidence(
    db: Database, keys: TaskKeys, evidence_id: int, *, decrypt: bool = True
) -> Evidence:
    """An evidence item with its command and tail decrypted (when `decrypt`)."""
    row = store.get_evidence(db, evidence_id)
    if not decrypt:
        return evidence_from_row(row)
    command_blob, tail_blob = store.get_evidence_secrets(db, evidence_id)
    task_id = row["task_id"]
    command = (
        json.loads(
            keys.open(
                task_id,
                f"evidence/{evidence_id}/command",
                command_blob,
                f"evidence {evidence_id}'s command",
            )
        )
        if command_blob
        else None
    )
    tail = (
        keys.open(
            task_id, f"evidence/{evidence_id}/tail", tail_blob, f"evidence {evidence_id}'s tail"
        ).decode("utf-8", errors="replace")
        if tail_blob
        else None
    )
    return evidence_from_row(row, command=command, tail=tail)


def read_chunks(
    db: Database, keys: TaskKeys, evidence: Evidence, seqs: Sequence[int]
) -> Iterator[bytes]:
    """Decrypt and decompress the given chunks of an evidence item, in the order given."""
    decompressor = zstandard.ZstdDecompressor()
    for seq in seqs:
        blob = store.chunk_blob(db, evidence.id, seq)
        compressed = keys.open(
            evidence.task_id,
            f"evidence/{evidence.id}/chunk/{seq}",
            blob,
            f"evidence {evidence.id} chunk {seq}",
        )
        yield decompressor.decompress(compressed)


def iter_output(db: Database, keys: TaskKeys, evidence: Evidence) -> Iterator[bytes]:
    """The whole kept output in order; a marker stands where a truncated middle was dropped."""
    chunks = store.list_chunks(db, evidence.id)
    if not chunks and evidence.stored_bytes:
        keys.data_key(evidence.task_id, create=False)  # gc took the output with the key: say so
    expected_offset = 0
    for chunk in chunks:
        if chunk["offset"] > expected_offset:
            gap = chunk["offset"] - expected_offset
            yield f"\n[… {gap} bytes of output omitted here: over the storage cap …]\n".encode()
        yield from read_chunks(db, keys, evidence, [chunk["seq"]])
        expected_offset = chunk["offset"] + chunk["raw_len"]


def last_lines(db: Database, keys: TaskKeys, evidence: Evidence, count: int) -> list[bytes]:
    """The last `count` lines of the kept output, reading chunks from the end only."""
    chunks = store.list_chunks(db, evidence.id)
    if not chunks and evidence.stored_bytes:
        keys.data_key(evidence.task_id, create=False)  # gc took the output with the key: say so
    collected = b""
    next_offset: int | None = None
    for chunk in reversed(chunks):
        if next_offset is not None and chunk["offset"] + chunk["raw_len"] < next_offset:
            # The middle was dropped over the cap: never join head and tail silently.
            gap = next_offset - chunk["offset"] - chunk["raw_len"]
            marker = f"[… {gap} bytes of output omitted here: over the storage cap …]\n"
            collected = marker.encode() + collected
            break
        collected = next(read_chunks(db, keys, evidence, [chunk["seq"]])) + collected
        next_offset = chunk["offset"]
        if collected.count(b"\n") > count:
            break
    lines = [line.rstrip(b"\r") for line in collected.split(b"\n")]
    if lines and lines[-1] == b"":
        lines.pop()
    return lines[-count:] if count else []
