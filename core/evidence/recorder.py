"""Recording evidence: a command's raw output, taken once, redacted before any of it is stored.

An `EvidenceRecorder` takes the raw output stream once, in pieces of any size, and never holds
more than a bounded window of it: it hashes and counts the raw bytes, redacts them with the
streaming redactor (so nothing unredacted is ever persisted, temporary data included), scans
complete lines for a tool summary, keeps a rolling tail, and stores the redacted stream as
independent zstd-compressed, encrypted chunks (:mod:`core.evidence.chunks`). Past the storage cap
the head and the newest tail are kept and the item is flagged truncated, with the byte count and
sha256 of the whole stream (invariant 4).
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
from collections.abc import Mapping
from pathlib import Path

from core import clock, store
from core.evidence.chunks import Chunk, ChunkWriter, Frame, compress_chunks, new_compressor
from core.evidence.items import (
    DEFAULT_LIMITS,
    Evidence,
    EvidenceLimits,
    load_evidence,
    sealed_name,
)
from core.evidence.pipeline import Stages, Stopped
from core.evidence.summaries import CandidateLines, SummaryScanner
from core.redaction.hyperscan_gate import use_hyperscan_cache
from core.redaction.redact import RULESET_VERSION, StreamRedactor, redact_text
from core.security.keys import TaskKeys
from core.store.db import Database, open_database, write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

MAX_PENDING_LINE = 8192
BATCH_BYTES = 256 * 1024
"""Raw bytes gathered before they are handed to the redaction stage (shorter streams never are)."""
RAW_QUEUE_BATCHES = 8
"""Batches waiting for the redaction stage; when full, the reads wait (memory stays bounded)."""
CHUNK_QUEUE_CHUNKS = 4
"""Redacted chunks waiting for the storage stage; when full, redaction waits."""
STORE_BATCH_CHUNKS = 8
"""Most chunks the compression stage takes at once when it has fallen behind. Every call that
lets go of the GIL waits up to the interpreter's switch interval to get it back while the
redaction thread runs Python, so the later stages make few calls, each on more data (one zstd
call per batch, one commit for every batch waiting)."""
FRAME_QUEUE_BATCHES = 2
"""Compressed batches waiting for the storage stage; when full, compression waits."""


def _failure_text(exc: BaseException) -> str:
    """What an evidence item marked incomplete says about why."""
    return str(getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")


def _database_file(db: Database) -> Path | None:
    """The file behind a connection's main database (None in memory)."""
    for _seq, name, file in db.execute("PRAGMA database_list").fetchall():
        if name == "main" and file:
            return Path(file)
    return None


class EvidenceRecorder:
    """Records one evidence item from a raw stream fed in pieces.

    The caller's thread only hashes, counts and hands the raw bytes on, so a command's live
    output is never held up by what happens to its copy. Up to four threads share the work:
    the caller's (sha256, counts), a redaction thread (redaction, summary scan, tail, chunking;
    it holds the GIL but for Hyperscan's scans), a compression thread (zstd on batches of
    chunks, GIL released) and a storage thread (AES-GCM and SQLite on its own connection),
    joined by small bounded queues (:mod:`core.evidence.pipeline`). Nothing leaves the redaction
    thread unredacted. A stream shorter than one batch is recorded on the caller's thread alone.
    """

    def __init__(
        self,
        db: Database,
        keys: TaskKeys,
        task_id: str,
        *,
        source: str,
        label: str | None,
        command: Mapping[str, Any],
        limits: EvidenceLimits = DEFAULT_LIMITS,
        started_at: str | None = None,
    ) -> None:
        self._db = db
        self._keys = keys
        self.task_id = task_id
        self.limits = limits
        # A missing or wrong key fails before any write. The key and the task's scope are read
        # here, on the caller's thread, because TaskKeys reads the database on a cache miss and
        # that connection belongs to this thread; the storage thread seals with them directly.
        data_key = keys.data_key(task_id, create=True)
        scope = keys.scope(task_id)
        self._db_file = _database_file(db)
        if self._db_file is not None:
            # A large stream loads the compiled Hyperscan gate from the store instead of
            # compiling it in every process (see core.redaction.hyperscan_gate).
            use_hyperscan_cache(self._db_file.parent / "cache")
        self.id = self._open_item(source, label, command, started_at)
        self._stages = Stages()
        # the caller's thread
        self._sha = hashlib.sha256()
        self._bytes_total = 0
        self._last_byte = b""
        self._batch: list[bytes] = []
        self._batch_len = 0
        self._raw_queue: queue.Queue[bytes | None] = queue.Queue(RAW_QUEUE_BATCHES)
        self._redact_thread: threading.Thread | None = None
        # the redaction stage
        self._redactor = StreamRedactor()
        self._line_carry = b""
        self._scanner = SummaryScanner()
        self._candidates = CandidateLines()
        self._tail = b""
        self._chunk_buffer = bytearray()
        self._chunk_queue: queue.Queue[Chunk | None] = queue.Queue(CHUNK_QUEUE_CHUNKS)
        self._compress_thread: threading.Thread | None = None
        # the compression stage
        self._compressor = new_compressor()
        self._frame_queue: queue.Queue[list[Frame] | None] = queue.Queue(FRAME_QUEUE_BATCHES)
        self._store_thread: threading.Thread | None = None
        # the storage stage
        self._writer = ChunkWriter(self.id, task_id, data_key, scope, limits.cap_bytes)

    def _open_item(
        self, source: str, label: str | None, command: Mapping[str, Any], started_at: str | None
    ) -> int:
        """Insert the item (state `writing`) with its sealed command and label; its id."""
        db = self._db
        with write_txn(db):
            store.get_task(db, self.task_id)
            evidence_id = store.insert_evidence(
                db,
                task_id=self.task_id,
                state="writing",
                source=source,
                started_at=started_at or clock.now_iso(),
                cap_bytes=self.limits.cap_bytes,
                ruleset=RULESET_VERSION,
            )
            if label:
                safe_label = redact_text(label)[0]
                store.set_evidence_label(db, self._keys, self.task_id, evidence_id, safe_label)
            store.update_evidence(
                db,
                evidence_id,
                command=self._keys.seal(
                    self.task_id,
                    sealed_name(evidence_id, "command"),
                    json.dumps(dict(command)).encode(),
                ),
            )
        return evidence_id

    def _start(self, stage: str, target: Any) -> threading.Thread:
        thread = threading.Thread(target=target, name=f"evidence-{self.id}-{stage}", daemon=True)
        thread.start()
        return thread

    # the caller's thread ----------------------------------------------------------------------

    def feed(self, raw: bytes) -> None:
        """Take the next piece of the raw stream (any size, any split)."""
        if not raw:
            return
        self._bytes_total += len(raw)
        self._last_byte = raw[-1:]
        self._batch.append(raw)
        self._batch_len += len(raw)
        if self._batch_len >= BATCH_BYTES:
            try:
                self._send_batch()
            except BaseException as exc:
                self.abort(_failure_text(exc))
                raise

    def _take_batch(self) -> bytes:
        """The raw bytes gathered since the last batch, hashed."""
        data = b"".join(self._batch)
        self._batch.clear()
        self._batch_len = 0
        self._sha.update(data)  # releases the GIL: hashes while the other stages run
        return data

    def _send_batch(self) -> None:
        data = self._take_batch()
        if self._db_file is None:  # no file to open a second connection on: all stages here
            self._redact(data)
            return
        if self._redact_thread is None:
            self._redact_thread = self._start("redact", self._redact_loop)
        self._stages.put(self._raw_queue, data)

    def _join(self) -> None:
        """Wait for every stage to finish what it was given (or to stop)."""
        # Each stage starts the next one: look for a thread only once the one before has ended.
        for stage in ("_redact_thread", "_compress_thread", "_store_thread"):
            thread: threading.Thread | None = getattr(self, stage)
            if thread is not None:
                thread.join()

    # the redaction stage ----------------------------------------------------------------------

    def _redact_loop(self) -> None:
        try:
            while (data := self._stages.get(self._raw_queue)) is not None:
                self._redact(data)
            self._end_of_stream()
            if self._compress_thread is not None:
                self._stages.put(self._chunk_queue, None)
        except Stopped:
            pass
        except BaseException as exc:  # handed to the caller's thread, which raises it
            self._stages.fail(exc)

    def _redact(self, data: bytes) -> None:
        self._consume(self._redactor.feed(data))

    def _end_of_stream(self) -> None:
        self._consume(self._redactor.flush())
        if self._line_carry:
            self._scan_lines(b"\n")
        if self._chunk_buffer:
            self._emit_chunk(bytes(self._chunk_buffer))
            self._chunk_buffer.clear()

    def _consume(self, redacted: bytes) -> None:
        if not redacted:
            return
        self._scan_lines(redacted)
        window = self.limits.tail_bytes * 2
        self._tail = (self._tail + redacted[-window:])[-window:]
        self._chunk_buffer += redacted
        size = self.limits.chunk_bytes
        if len(self._chunk_buffer) >= size:
            buffer = self._chunk_buffer
            cut = len(buffer) - len(buffer) % size
            with memoryview(buffer) as view:  # one copy per chunk, not two
                pieces = [bytes(view[start : start + size]) for start in range(0, cut, size)]
            del buffer[:cut]
            for piece in pieces:
                self._emit_chunk(piece)

    def _scan_lines(self, redacted: bytes) -> None:
        """Feed complete candidate lines to the summary scanner (carrying a partial line)."""
        cut = redacted.rfind(b"\n")
        if cut < 0:
            self._line_carry = (self._line_carry + redacted)[:MAX_PENDING_LINE]
            return
        # A leading newline puts the first line, like every other, after a "\n" (the pattern's
        # literal start, which re finds fast).
        block = b"\n" + self._line_carry + redacted[: cut + 1]
        self._line_carry = redacted[cut + 1 :][:MAX_PENDING_LINE]
        if b"\r" in block:
            block = block.replace(b"\r\n", b"\n")
        if self._redactor.accelerated and not self._candidates.accelerated:
            self._candidates.accelerate()  # a large stream: Hyperscan is compiled already
        for line in self._candidates.lines(block):
            self._scanner.feed_line(line)

    def _emit_chunk(self, piece: bytes) -> None:
        """Hand a full chunk of redacted output, and its line count, to the compression stage."""
        # Counted here: the compression stage is the slowest, and this one waits for it.
        chunk = (piece, piece.count(b"\n"))
        if self._redact_thread is None:  # a short stream, recorded on the caller's thread
            self._writer.store(self._db, compress_chunks(self._compressor, [chunk]))
            return
        if self._compress_thread is None:
            self._compress_thread = self._start("compress", self._compress_loop)
        self._stages.put(self._chunk_queue, chunk)

    # the compression and storage stages -------------------------------------------------------

    def _compress_loop(self) -> None:
        try:
            # Whatever else is waiting joins a batch: a stage that fell behind catches up in
            # fewer, larger steps.
            for chunks in self._stages.batches(self._chunk_queue, STORE_BATCH_CHUNKS):
                frames = compress_chunks(self._compressor, chunks)
                if self._store_thread is None:
                    self._store_thread = self._start("store", self._store_loop)
                self._stages.put(self._frame_queue, frames)
            if self._store_thread is not None:
                self._stages.put(self._frame_queue, None)
        except Stopped:
            pass
        except BaseException as exc:  # handed to the caller's thread, which raises it
            self._stages.fail(exc)

    def _store_loop(self) -> None:
        try:
            assert self._db_file is not None
            db = open_database(self._db_file)  # one connection per thread (DESIGN §9)
            try:
                # every batch waiting goes into the same transaction
                for waiting in self._stages.batches(self._frame_queue):
                    self._writer.store(db, [frame for frames in waiting for frame in frames])
            finally:
                db.close()
        except Stopped:
            pass
        except BaseException as exc:  # handed to the caller's thread, which raises it
            self._stages.fail(exc)

    # the end ----------------------------------------------------------------------------------

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
        try:
            self._drain()
        except BaseException as exc:
            self.abort(_failure_text(exc))
            raise
        tail, tail_lines = self._tail_text()
        summary = self._scanner.summary()
        writer = self._writer
        # Every line feed of the stream is either in a stored chunk (each counted once, where
        # it is stored) or inside a redaction, which the redactor counts.
        newlines = writer.redacted_newlines + self._redactor.dropped_newlines
        lines_total = newlines + (1 if self._last_byte not in (b"", b"\n") else 0)
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
                stored_bytes=writer.stored_bytes,
                kept_bytes=writer.kept_bytes,
                truncated=int(writer.omitted_bytes > 0),
                omitted_bytes=writer.omitted_bytes,
                chunk_count=writer.chunk_count,
                summary=summary.as_dict() if summary else None,
                tail=self._keys.seal(self.task_id, sealed_name(self.id, "tail"), tail),
                tail_lines=tail_lines,
                redactions=sum(self._redactor.counts.values()),
            )
        return load_evidence(self._db, self._keys, self.id)

    def _drain(self) -> None:
        """Run the rest of the stream through every stage and wait for them to finish."""
        if self._redact_thread is None:  # a short stream: all of it on this thread
            self._redact(self._take_batch())
            self._end_of_stream()
            return
        if self._batch:
            self._send_batch()
        self._stages.put(self._raw_queue, None)
        self._join()
        self._stages.raise_failure()

    def discard(self) -> None:
        """Remove the item entirely (the command never started: there is nothing to keep)."""
        self._halt()
        with write_txn(self._db):
            store.delete_evidence(self._db, self.id)

    def abort(self, failure: str) -> None:
        """Mark the item failed (its chunks so far stay readable)."""
        self._halt()
        with write_txn(self._db):
            store.update_evidence(self._db, self.id, state="incomplete", failure=failure)

    def _halt(self) -> None:
        """Stop every stage where it is; what was not redacted yet is dropped, unwritten."""
        self._stages.stop.set()
        self._join()
