"""An item's output as chunks: each zstd-compressed, sealed and stored alone; read back in order.

Chunks are independent frames so that the last lines of a huge log are read without reading the
rest. Past the item's storage cap the head is kept and the tail slides: the oldest tail chunk is
dropped as a new one comes, and readers show a marker where the middle went (invariant 4).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import zstandard

from core import store
from core.evidence.items import Evidence, sealed_name
from core.security import crypto
from core.security.keys import TaskKeys
from core.store.db import Database, write_txn

ZSTD_LEVEL = 1
COMPRESS_THREADS = 2
"""Threads zstd compresses a batch of chunks on (each chunk stays its own frame)."""
_MULTI_COMPRESS = hasattr(zstandard.ZstdCompressor, "multi_compress_to_buffer")
"""python-zstandard's C backend compresses many inputs in one call; its cffi backend does not."""

Chunk = tuple[bytes, int]
"""A chunk of redacted output on its way to compression, with its line count."""
Frame = tuple[int, int, bytes]
"""A compressed chunk on its way to storage: raw length, line count, zstd frame."""


def new_compressor() -> zstandard.ZstdCompressor:
    """The compressor every chunk of an item is compressed with."""
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL)


def compress_chunks(compressor: zstandard.ZstdCompressor, chunks: list[Chunk]) -> list[Frame]:
    """Each chunk as its own zstd frame (several at once on up to two threads, GIL
    released), with its length and line count."""
    pieces = [piece for piece, _ in chunks]
    if len(pieces) > 1 and _MULTI_COMPRESS:
        inputs: list[bytes | bytearray | memoryview] = list(pieces)
        frames = compressor.multi_compress_to_buffer(
            inputs, threads=min(len(pieces), COMPRESS_THREADS)
        )
        compressed = [frames[i].tobytes() for i in range(len(pieces))]
    else:
        compressed = [compressor.compress(piece) for piece in pieces]
    return [
        (len(piece), line_count, frame)
        for (piece, line_count), frame in zip(chunks, compressed, strict=True)
    ]


class ChunkWriter:
    """Seals and stores an item's compressed chunks in order, keeping the head and a sliding
    tail within the cap, and counts what it kept."""

    def __init__(
        self, evidence_id: int, task_id: str, data_key: bytes, scope: str, cap_bytes: int
    ) -> None:
        # The key and the task's scope are read by the caller, on its own thread: TaskKeys
        # reads the database on a cache miss, and this writer may run on another thread.
        self._evidence_id = evidence_id
        self._task_id = task_id
        self._data_key = data_key
        self._scope = scope
        self._head_budget = cap_bytes // 2
        self._tail_budget = cap_bytes - cap_bytes // 2
        self._head_full = False
        self._head_bytes = 0
        self._tail_chunks: list[tuple[int, int, int]] = []  # seq, stored bytes, raw bytes
        self._tail_bytes = 0
        self.next_seq = 0
        self.redacted_offset = 0
        """Bytes of redacted output stored so far, dropped ones included."""
        self.redacted_newlines = 0
        """Line feeds of the redacted output stored so far, dropped ones included."""
        self.dropped_chunks = 0
        self.stored_bytes = 0
        self.kept_bytes = 0
        self.omitted_bytes = 0

    @property
    def chunk_count(self) -> int:
        """Chunks the item has now."""
        return self.next_seq - self.dropped_chunks

    def store(self, db: Database, frames: list[Frame]) -> None:
        """Seal and store consecutive compressed chunks in one transaction."""
        with write_txn(db):
            for raw_len, line_count, frame in frames:
                seq = self.next_seq
                self.next_seq += 1
                # The envelope TaskKeys.seal makes, from the key and scope read by the caller.
                sealed = crypto.seal(
                    self._data_key,
                    frame,
                    crypto.associated_data(
                        self._scope, self._task_id, sealed_name(self._evidence_id, f"chunk/{seq}")
                    ),
                )
                self._insert(db, seq, raw_len, line_count, sealed)
                self.stored_bytes += len(sealed)
                self.kept_bytes += raw_len
                self.redacted_offset += raw_len
                self.redacted_newlines += line_count

    def _insert(self, db: Database, seq: int, raw_len: int, line_count: int, sealed: bytes) -> None:
        """Store one sealed chunk in the head while it has room, else in the tail."""
        part = "head"
        if self._head_full or self._head_bytes + len(sealed) > self._head_budget:
            self._head_full = True
            part = "tail"
        store.insert_chunk(
            db,
            self._evidence_id,
            seq=seq,
            part=part,
            offset=self.redacted_offset,
            raw_len=raw_len,
            first_line=self.redacted_newlines,
            line_count=line_count,
            stored_len=len(sealed),
            blob=sealed,
        )
        if part == "head":
            self._head_bytes += len(sealed)
        else:
            self._tail_chunks.append((seq, len(sealed), raw_len))
            self._tail_bytes += len(sealed)
            self._slide_tail(db)

    def _slide_tail(self, db: Database) -> None:
        """Drop the oldest tail chunks while the tail is over its budget (the newest stays)."""
        while self._tail_bytes > self._tail_budget and len(self._tail_chunks) > 1:
            old_seq, old_stored, old_raw = self._tail_chunks.pop(0)
            store.delete_chunk(db, self._evidence_id, old_seq)
            self._tail_bytes -= old_stored
            self.omitted_bytes += old_raw
            self.dropped_chunks += 1
            self.kept_bytes -= old_raw
            self.stored_bytes -= old_stored


# --- reading ------------------------------------------------------------------------------


def read_chunks(
    db: Database, keys: TaskKeys, evidence: Evidence, seqs: Sequence[int]
) -> Iterator[bytes]:
    """Decrypt and decompress the given chunks of an evidence item, in the order given."""
    decompressor = zstandard.ZstdDecompressor()
    for seq in seqs:
        blob = store.chunk_blob(db, evidence.id, seq)
        compressed = keys.open(
            evidence.task_id,
            sealed_name(evidence.id, f"chunk/{seq}"),
            blob,
            f"evidence {evidence.id} chunk {seq}",
        )
        yield decompressor.decompress(compressed)


def _omitted(gap: int) -> str:
    return f"[… {gap} bytes of output omitted here: over the storage cap …]\n"


def iter_output(db: Database, keys: TaskKeys, evidence: Evidence) -> Iterator[bytes]:
    """The whole kept output in order; a marker stands where a truncated middle was dropped."""
    chunks = store.list_chunks(db, evidence.id)
    if not chunks and evidence.stored_bytes:
        keys.data_key(evidence.task_id, create=False)  # gc took the output with the key: say so
    expected_offset = 0
    for chunk in chunks:
        if chunk["offset"] > expected_offset:
            yield ("\n" + _omitted(chunk["offset"] - expected_offset)).encode()
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
            collected = _omitted(gap).encode() + collected
            break
        collected = next(read_chunks(db, keys, evidence, [chunk["seq"]])) + collected
        next_offset = chunk["offset"]
        if collected.count(b"\n") > count:
            break
    lines = [line.rstrip(b"\r") for line in collected.split(b"\n")]
    if lines and lines[-1] == b"":
        lines.pop()
    return lines[-count:] if count else []
