"""Objects written as one pack: what a push builds lands in two files, not one per object.

A push writes a dozen small objects (its checkpoint's commit and files, the ledger's commit and
trees). As loose objects each is a file, a rename and often a new fan-out directory, which on a
journalling file system costs more than building it. Inside `batched()`, `objects.write_object`
keeps them here instead; they are read from here meanwhile (`pending_object`), and written as
one pack with its version-2 index — the files `git index-pack` would leave — when the block
ends, or as soon as a git process is about to start on the repository (`flush`), so git never
misses one. The pack is moved into place before its index: git finds a pack by its index.
"""

from __future__ import annotations

import contextvars
import os
import struct
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from core.digests import sha1_hex

_TYPE_CODES = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}
_LARGE_OFFSET = 0x80000000


class Batch(dict[str, tuple[str, bytes]]):
    """The objects gathering for one repository (id → kind, body), and what the packs written
    for them so far hold: `written`, the bytes of their files; `packed`, the objects' ids."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0
        self.packed: set[str] = set()


_PENDING: contextvars.ContextVar[dict[str, Batch] | None] = contextvars.ContextVar(
    "pitstop_pending_objects", default=None
)


@contextmanager
def batched(store_repo: Path) -> Iterator[Batch]:
    """Within the block, objects written to `store_repo` gather into one pack, written when
    the block ends well (an error leaves nothing: the objects were for what failed). What it
    yields counts the bytes written (an inner block shares the outer one's batch)."""
    key = str(store_repo)
    outer = _PENDING.get()
    if outer is not None and key in outer:
        yield outer[key]
        return
    pending = Batch()
    token = _PENDING.set({**(outer or {}), key: pending})
    try:
        yield pending
        flush(store_repo)
    finally:
        _PENDING.reset(token)


def pending_objects(store_repo: Path | str) -> Batch | None:
    """The objects gathering for `store_repo` (id → kind, body), or None outside `batched()`."""
    pending = _PENDING.get()
    return pending.get(str(store_repo)) if pending else None


def pending_object(store_repo: Path | str, oid: str) -> tuple[str, bytes] | None:
    """An object written in the open batch and not yet in a pack, if it is one."""
    pending = pending_objects(store_repo)
    return pending.get(oid) if pending else None


def flush(store_repo: Path | str) -> None:
    """Write what has gathered for `store_repo` as one pack now (a git process is about to
    read the repository); the batch goes on gathering from empty."""
    pending = pending_objects(store_repo)
    if pending:
        pending.written += write_pack(Path(store_repo), pending)[1]
        pending.packed.update(pending)
        pending.clear()


def write_pack(store_repo: Path, objects: Mapping[str, tuple[str, bytes]]) -> tuple[str, int]:
    """Write `objects` (id → kind, body) as `objects/pack/pack-<sum>.pack` and its `.idx`,
    whole or not at all; return the pack's checksum and the bytes of both files."""
    entries: list[tuple[bytes, int, int]] = []  # (raw id, offset, crc32 of the entry)
    chunks = [b"PACK", struct.pack(">II", 2, len(objects))]
    offset = 12
    for oid, (kind, body) in objects.items():
        entry = _entry_header(_TYPE_CODES[kind], len(body)) + zlib.compress(body, 1)
        entries.append((bytes.fromhex(oid), offset, zlib.crc32(entry)))
        chunks.append(entry)
        offset += len(entry)
    pack = b"".join(chunks)
    checksum = bytes.fromhex(sha1_hex(pack))
    pack += checksum
    index = _index(entries, checksum)
    directory = store_repo / "objects" / "pack"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = f"pack-{checksum.hex()}"
    if (directory / f"{name}.idx").exists():  # these very objects, in place already: not ours
        return checksum.hex(), 0
    _place(directory, f"{name}.pack", pack)
    try:
        _place(directory, f"{name}.idx", index)
    except BaseException:
        (directory / f"{name}.pack").unlink(missing_ok=True)  # a pack git cannot find: no use
        raise
    WRITTEN.append(directory / f"{name}.idx")
    return checksum.hex(), len(pack) + len(index)


WRITTEN: list[Path] = []
"""The index of every pack this process wrote, in order: what a failed checkpoint wrote is
what was added after it began (`core.engine.writers.failed_writes_discarded`)."""


def remove_pack(idx: Path) -> None:
    """Remove a pack this process wrote, index first (git finds a pack by its index)."""
    idx.unlink(missing_ok=True)
    idx.with_suffix(".pack").unlink(missing_ok=True)


def _entry_header(type_code: int, size: int) -> bytes:
    """An entry's type and size: 3 bits of type and 4 of size, then 7 bits a byte."""
    out = bytearray()
    byte = (type_code << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _index(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """The version-2 index of a pack: fan-out, sorted ids, CRCs, offsets, both checksums."""
    entries = sorted(entries)
    fanout = [0] * 256
    for raw, _offset, _crc in entries:
        fanout[raw[0]] += 1
    running = 0
    for position in range(256):
        running += fanout[position]
        fanout[position] = running
    small: list[int] = []
    large: list[int] = []
    for _raw, offset, _crc in entries:
        if offset < _LARGE_OFFSET:
            small.append(offset)
        else:
            small.append(_LARGE_OFFSET | len(large))
            large.append(offset)
    body = b"".join(
        [
            b"\xfftOc",
            struct.pack(">I", 2),
            struct.pack(">256I", *fanout),
            b"".join(raw for raw, _offset, _crc in entries),
            struct.pack(f">{len(entries)}I", *(crc for _raw, _offset, crc in entries)),
            struct.pack(f">{len(small)}I", *small),
            struct.pack(f">{len(large)}Q", *large),
            pack_checksum,
        ]
    )
    return body + bytes.fromhex(sha1_hex(body))


def _place(directory: Path, name: str, data: bytes) -> None:
    """Write a file whole under a temporary name, then move it into place (read-only)."""
    temp = directory / f"tmp_{name}_{os.getpid()}_{os.urandom(4).hex()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, directory / name)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
