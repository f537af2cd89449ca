"""Reading whole objects straight out of a store repository's packs, without a git process.

The packs Pitstop writes (`pack_writer`) hold every object whole, and so do many entries of the
packs git writes. An object stored whole is found through its pack's version-2 index and
inflated here, and checked against its id before it is believed; a delta, a pack in another
format, or anything this reader does not follow is left to `cat-file` (None). A pack that
appears while the operation runs (a fetch, a flushed batch) is found on the next miss.
"""

# String annotations cost nothing: `core.records.NamedTuple` keeps them as written (no
# `ForwardRef` compile as `typing.NamedTuple` does); `typing` is for type checkers only.
from __future__ import annotations

import mmap
import os
import struct
import zlib

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

_KINDS = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}
_IDX_MAGIC = b"\xfftOc\x00\x00\x00\x02"
_FANOUT = 8  # the fan-out table follows the magic and version
_CHUNK = 64 << 10


class Entry(NamedTuple):
    """Where a whole object is in a pack: its kind, its size, and its deflated data."""

    kind: str
    size: int
    pack: mmap.mmap
    start: int  # the first byte of the deflated data


class _Pack:
    """One pack and its index, mapped into memory."""

    def __init__(self, idx_path: str) -> None:
        self.index = _map(idx_path)
        self.data = _map(idx_path[: -len(".idx")] + ".pack")
        if self.index[:8] != _IDX_MAGIC or self.data[:4] != b"PACK":
            raise ValueError("not a version-2 pack index")
        self.count = struct.unpack_from(">I", self.index, _FANOUT + 255 * 4)[0]
        self._ids = _FANOUT + 256 * 4
        self._offsets = self._ids + 24 * self.count  # past the ids (20) and the CRCs (4)
        self._large = self._offsets + 4 * self.count

    def offset(self, raw: bytes) -> int | None:
        """The offset of the object `raw` (20 bytes) in the pack, if the index lists it."""
        low = struct.unpack_from(">I", self.index, _FANOUT + (raw[0] - 1) * 4)[0] if raw[0] else 0
        high = struct.unpack_from(">I", self.index, _FANOUT + raw[0] * 4)[0]
        while low < high:
            middle = (low + high) // 2
            at = self._ids + 20 * middle
            found = self.index[at : at + 20]
            if found == raw:
                value = struct.unpack_from(">I", self.index, self._offsets + 4 * middle)[0]
                if value & 0x80000000:
                    large = self._large + 8 * (value & 0x7FFFFFFF)
                    return int(struct.unpack_from(">Q", self.index, large)[0])
                return int(value)
            if found < raw:
                low = middle + 1
            else:
                high = middle
        return None

    def entry(self, offset: int) -> Entry | None:
        """The whole object at `offset`; None for a delta (or a header that makes no sense)."""
        if offset < 12 or offset >= len(self.data) - 20:
            return None
        byte = self.data[offset]
        kind = _KINDS.get((byte >> 4) & 7)
        size, shift, position = byte & 0x0F, 4, offset + 1
        while byte & 0x80:
            if position >= len(self.data) or shift > 63:
                return None
            byte = self.data[position]
            size |= (byte & 0x7F) << shift
            shift, position = shift + 7, position + 1
        return Entry(kind, size, self.data, position) if kind else None

    def close(self) -> None:
        self.index.close()
        self.data.close()


def _map(path: str) -> mmap.mmap:
    with open(path, "rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


class PackedObjects:
    """The packs of one store repository, opened on first need and kept for the operation."""

    def __init__(self, objects_dir: str) -> None:
        self._directory = objects_dir + "pack"
        self._packs: dict[str, _Pack | None] = {}
        self._seen: int | None = None  # the pack directory's mtime when last listed

    def find(self, oid: str) -> Entry | None:
        """Where `oid` is stored whole in a pack; None when no pack holds it whole."""
        raw = bytes.fromhex(oid)
        for attempt in range(2):
            if (attempt or self._seen is None) and not self._rescan():
                return None  # no pack directory, or no pack new since the last look
            for pack in self._packs.values():
                if pack is None:
                    continue
                offset = pack.offset(raw)
                if offset is not None:
                    return pack.entry(offset)
        return None

    def read(self, oid: str, limit: int | None = None) -> tuple[str, bytes] | None:
        """The object `oid` from a pack, checked against its id; None when it is not stored
        whole, is larger than `limit`, or does not hash to `oid`."""
        entry = self.find(oid)
        if entry is None or (limit is not None and entry.size > limit):
            return None
        body = _inflate(entry)
        header = f"{entry.kind} {entry.size}\0".encode()
        import hashlib  # loaded when a packed object is read

        if body is None or hashlib.sha1(header + body, usedforsecurity=False).hexdigest() != oid:
            return None
        return entry.kind, body

    def _rescan(self) -> bool:
        """List the packs again when the directory changed; False when it did not (or is not)."""
        try:
            stamp = os.stat(self._directory).st_mtime_ns
        except OSError:
            return False
        if stamp == self._seen:
            return False
        self._seen = stamp
        for name in os.listdir(self._directory):
            if name.endswith(".idx") and name not in self._packs:
                try:
                    self._packs[name] = _Pack(f"{self._directory}/{name}")
                except (OSError, ValueError):
                    self._packs[name] = None  # unreadable here: cat-file still reads it
        return True

    def close(self) -> None:
        for pack in self._packs.values():
            if pack is not None:
                pack.close()
        self._packs.clear()


def _inflate(entry: Entry) -> bytes | None:
    """An entry's data inflated, fed a chunk at a time: never more out than its size says,
    never more than a chunk of the pack copied at once."""
    inflate = zlib.decompressobj()
    parts: list[bytes] = []
    have, position = 0, entry.start
    try:
        while not inflate.eof:
            chunk = inflate.unconsumed_tail
            if not chunk:
                chunk = entry.pack[position : position + _CHUNK]
                position += len(chunk)
                if not chunk:
                    return None  # the pack ends inside the entry
            out = inflate.decompress(chunk, entry.size - have + 1)
            have += len(out)
            if have > entry.size:
                return None  # more data than its header said
            parts.append(out)
    except zlib.error:
        return None
    body = b"".join(parts)
    return body if len(body) == entry.size else None
