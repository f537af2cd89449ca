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
import queue
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import zstandard

from core import clock, store
from core.evidence.summaries import CandidateLines, SummaryScanner
from core.redaction.redact import (
    RULESET_VERSION,
    StreamRedactor,
    redact_argv,
    redact_text,
    use_hyperscan_cache,
)
from core.security import crypto
from core.security.keys import TaskKeys
from core.store.db import Database, open_database, write_txn

DEFAULT_TAIL_LINES = 200
DEFAULT_TAIL_BYTES = 64 * 1024
DEFAULT_CAP_BYTES = 32 * 1024 * 1024
DEFAULT_CHUNK_BYTES = 1024 * 1024
ZSTD_LEVEL = 1
_MULTI_COMPRESS = hasattr(zstandard.ZstdCompressor, "multi_compress_to_buffer")
"""python-zstandard's C backend compresses many inputs in one call; its cffi backend does not."""
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
COMPRESS_THREADS = 2
"""Threads zstd compresses a batch of chunks on (each chunk stays its own frame)."""
FRAME_QUEUE_BATCHES = 2
"""Compressed batches waiting for the storage stage; when full, compression waits."""

_Frame = tuple[int, int, bytes]
"""A compressed chunk on its way to storage: raw length, line count, zstd frame."""
_Item = TypeVar("_Item")


class EvidenceLimits(NamedTuple):
    """How much of a stream is kept; stated in `evidence show`."""

    tail_lines: int = DEFAULT_TAIL_LINES
    tail_bytes: int = DEFAULT_TAIL_BYTES
    cap_bytes: int = DEFAULT_CAP_BYTES
    chunk_bytes: int = DEFAULT_CHUNK_BYTES


DEFAULT_LIMITS = EvidenceLimits()


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


def _failure_text(exc: BaseException) -> str:
    """What an evidence item marked incomplete says about why."""
    return str(getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")


def _database_file(db: Database) -> Path | None:
    """The file behind a connection's main database (None in memory)."""
    for _seq, name, file in db.execute("PRAGMA database_list").fetchall():
        if name == "main" and file:
            return Path(file)
    return None


def evidence_from_row(row: Mapping[str, Any], **decrypted: Any) -> Evidence:
    """Build the model from a store row plus any decrypted fields."""
    return Evidence(**dict(row), **decrypted)


class _ChunkWindow:
    """Where stored chunks stand against the cap: a fixed head, then a sliding tail."""

    __slots__ = (
        "head_budget",
        "head_bytes",
        "head_full",
        "tail_budget",
        "tail_bytes",
        "tail_chunks",
    )

    def __init__(self, head_budget: int, tail_budget: int) -> None:
        self.head_budget = head_budget
        self.tail_budget = tail_budget
        self.head_full = False
        self.head_bytes = 0
        self.tail_chunks: list[tuple[int, int, int]] = []  # seq, stored bytes, raw bytes
        self.tail_bytes = 0


class _Stopped(Exception):
    """Raised inside a stage to leave it: the recording was aborted or another stage failed."""


class EvidenceRecorder:
    """Records one evidence item from a raw stream fed in pieces.

    The caller's thread only hashes, counts and hands the raw bytes on, so a command's live
    output is never held up by what happens to its copy. Up to four threads share the work:
    the caller's (sha256, counts), a redaction thread (redaction, summary scan, tail, chunking;
    it holds the GIL but for Hyperscan's scans), a compression thread (zstd on batches of
    chunks, GIL released) and a storage thread (AES-GCM and SQLite on its own connection),
    joined by small bounded queues, so memory stays bounded and a slow stage slows the reads
    instead of growing a buffer. Nothing leaves the redaction thread unredacted. A stream
    shorter than one batch is recorded on the caller's thread alone.
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
        self._data_key = keys.data_key(task_id, create=True)
        self._scope = keys.scope(task_id)
        self._db_file = _database_file(db)
        if self._db_file is not None:
            # A large stream loads the compiled Hyperscan gate from the store instead of
            # compiling it in every process (see core.redaction.redact.use_hyperscan_cache).
            use_hyperscan_cache(self._db_file.parent / "cache")
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
        # the caller's thread
        self._sha = hashlib.sha256()
        self._bytes_total = 0
        self._last_byte = b""
        self._batch: list[bytes] = []
        self._batch_len = 0
        self._raw_queue: queue.Queue[bytes | None] = queue.Queue(RAW_QUEUE_BATCHES)
        self._redact_thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        # the redaction stage
        self._redactor = StreamRedactor()
        self._line_carry = b""
        self._scanner = SummaryScanner()
        self._candidates = CandidateLines()
        self._tail = b""
        self._chunk_buffer = bytearray()
        self._chunk_queue: queue.Queue[tuple[bytes, int] | None] = queue.Queue(CHUNK_QUEUE_CHUNKS)
        self._compress_thread: threading.Thread | None = None
        # the compression stage
        self._frame_queue: queue.Queue[list[_Frame] | None] = queue.Queue(FRAME_QUEUE_BATCHES)
        self._store_thread: threading.Thread | None = None
        # the storage stage
        self._chunk_seq = 0
        self._redacted_offset = 0
        self._redacted_newlines = 0
        self._dropped_chunks = 0
        self._stored_bytes = 0
        self._kept_bytes = 0
        self._omitted_bytes = 0
        self._window = _ChunkWindow(limits.cap_bytes // 2, limits.cap_bytes - limits.cap_bytes // 2)
        self._compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)

    def _item(self, name: str) -> str:
        return f"evidence/{self.id}/{name}"

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

    def _send_batch(self) -> None:
        data = b"".join(self._batch)
        self._batch.clear()
        self._batch_len = 0
        self._sha.update(data)  # releases the GIL: hashes while the other stages run
        if self._db_file is None:  # no file to open a second connection on: all stages here
            self._redact(data)
            return
        if self._redact_thread is None:
            self._redact_thread = threading.Thread(
                target=self._redact_loop, name=f"evidence-{self.id}-redact", daemon=True
            )
            self._redact_thread.start()
        self._put(self._raw_queue, data)

    def _put(self, into: queue.Queue[_Item | None], item: _Item | None) -> None:
        """Wait for room in a queue, giving up if a stage failed or the recording stopped."""
        while True:
            self._raise_failure()
            if self._stop.is_set():
                raise _Stopped
            try:
                into.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def _get(self, source: queue.Queue[_Item | None]) -> _Item | None:
        while True:
            if self._stop.is_set():
                raise _Stopped
            try:
                return source.get(timeout=0.05)
            except queue.Empty:
                continue

    def _raise_failure(self) -> None:
        failure = self._failure
        if failure is not None:
            raise failure

    def _fail(self, exc: BaseException) -> None:
        """Record a stage's error for the caller's thread and stop the other stage."""
        if self._failure is None:
            self._failure = exc
        self._stop.set()

    def _join(self) -> None:
        """Wait for both stages to finish what they were given (or to stop)."""
        for name in ("_redact_thread", "_compress_thread", "_store_thread"):
            thread = getattr(self, name)
            if thread is not None:
                thread.join()

    # the redaction stage ----------------------------------------------------------------------

    def _redact_loop(self) -> None:
        try:
            while (data := self._get(self._raw_queue)) is not None:
                self._redact(data)
            self._end_of_stream()
            if self._compress_thread is not None:
                self._put(self._chunk_queue, None)
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the caller's thread, which raises it
            self._fail(exc)

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
            self._store_frames(self._db, self._compress([chunk]))
            return
        if self._compress_thread is None:
            self._compress_thread = threading.Thread(
                target=self._compress_loop, name=f"evidence-{self.id}-compress", daemon=True
            )
            self._compress_thread.start()
        self._put(self._chunk_queue, chunk)

    # the compression stage --------------------------------------------------------------------

    def _compress_loop(self) -> None:
        try:
            ended = False
            while not ended and (chunk := self._get(self._chunk_queue)) is not None:
                # Whatever else is waiting joins this batch: a stage that fell behind catches
                # up in fewer, larger steps.
                chunks = [chunk]
                while len(chunks) < STORE_BATCH_CHUNKS:
                    try:
                        more = self._chunk_queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        ended = True
                        break
                    chunks.append(more)
                frames = self._compress(chunks)
                if self._store_thread is None:
                    self._store_thread = threading.Thread(
                        target=self._store_loop, name=f"evidence-{self.id}-store", daemon=True
                    )
                    self._store_thread.start()
                self._put(self._frame_queue, frames)
            if self._store_thread is not None:
                self._put(self._frame_queue, None)
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the caller's thread, which raises it
            self._fail(exc)

    def _compress(self, chunks: list[tuple[bytes, int]]) -> list[_Frame]:
        """Each chunk as its own zstd frame (several at once on up to two threads, GIL
        released), with its length and line count."""
        pieces = [piece for piece, _ in chunks]
        if len(pieces) > 1 and _MULTI_COMPRESS:
            inputs: list[bytes | bytearray | memoryview] = list(pieces)
            frames = self._compressor.multi_compress_to_buffer(
                inputs, threads=min(len(pieces), COMPRESS_THREADS)
            )
            compressed = [frames[i].tobytes() for i in range(len(pieces))]
        else:
            compressed = [self._compressor.compress(piece) for piece in pieces]
        return [
            (len(piece), line_count, frame)
            for (piece, line_count), frame in zip(chunks, compressed, strict=True)
        ]

    # the storage stage ------------------------------------------------------------------------

    def _store_loop(self) -> None:
        try:
            assert self._db_file is not None
            db = open_database(self._db_file)  # one connection per thread (DESIGN §9)
            try:
                ended = False
                while not ended and (frames := self._get(self._frame_queue)) is not None:
                    while True:  # every batch waiting goes into the same transaction
                        try:
                            more = self._frame_queue.get_nowait()
                        except queue.Empty:
                            break
                        if more is None:
                            ended = True
                            break
                        frames = frames + more
                    self._store_frames(db, frames)
            finally:
                db.close()
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the caller's thread, which raises it
            self._fail(exc)

    def _store_frames(self, db: Database, frames: list[_Frame]) -> None:
        """Seal and store consecutive compressed chunks in one transaction."""
        window = self._window
        with write_txn(db):
            for raw_len, line_count, frame in frames:
                seq = self._chunk_seq
                self._chunk_seq += 1
                # The envelope TaskKeys.seal makes, from the key and scope read on the caller's
                # thread.
                sealed = crypto.seal(
                    self._data_key,
                    frame,
                    crypto.associated_data(self._scope, self.task_id, self._item(f"chunk/{seq}")),
                )
                part = "head"
                if window.head_full or window.head_bytes + len(sealed) > window.head_budget:
                    window.head_full = True
                    part = "tail"
                store.insert_chunk(
                    db,
                    self.id,
                    seq=seq,
                    part=part,
                    offset=self._redacted_offset,
                    raw_len=raw_len,
                    first_line=self._redacted_newlines,
                    line_count=line_count,
                    stored_len=len(sealed),
                    blob=sealed,
                )
                if part == "head":
                    window.head_bytes += len(sealed)
                else:
                    window.tail_chunks.append((seq, len(sealed), raw_len))
                    window.tail_bytes += len(sealed)
                    while window.tail_bytes > window.tail_budget and len(window.tail_chunks) > 1:
                        old_seq, old_stored, old_raw = window.tail_chunks.pop(0)
                        store.delete_chunk(db, self.id, old_seq)
                        window.tail_bytes -= old_stored
                        self._omitted_bytes += old_raw
                        self._dropped_chunks += 1
                        self._kept_bytes -= old_raw
                        self._stored_bytes -= old_stored
                self._stored_bytes += len(sealed)
                self._kept_bytes += raw_len
                self._redacted_offset += raw_len
                self._redacted_newlines += line_count

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
        # Every line feed of the stream is either in a stored chunk (each counted once, where
        # it is stored) or inside a redaction, which the redactor counts.
        newlines = self._redacted_newlines + self._redactor.dropped_newlines
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
                stored_bytes=self._stored_bytes,
                kept_bytes=self._kept_bytes,
                truncated=int(self._omitted_bytes > 0),
                omitted_bytes=self._omitted_bytes,
                chunk_count=self._chunk_seq - self._dropped_chunks,
                summary=summary.as_dict() if summary else None,
                tail=self._keys.seal(self.task_id, self._item("tail"), tail),
                tail_lines=tail_lines,
                redactions=sum(self._redactor.counts.values()),
            )
        return load_evidence(self._db, self._keys, self.id)

    def _drain(self) -> None:
        """Run the rest of the stream through every stage and wait for them to finish."""
        if self._redact_thread is None:  # a short stream: all of it on this thread
            data = b"".join(self._batch)
            self._batch.clear()
            self._batch_len = 0
            self._sha.update(data)
            self._redact(data)
            self._end_of_stream()
            return
        if self._batch:
            self._send_batch()
        self._put(self._raw_queue, None)
        self._join()
        self._raise_failure()

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
        """Stop both stages where they are; what was not redacted yet is dropped, unwritten."""
        self._stop.set()
        self._join()


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
