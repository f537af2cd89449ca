"""Reading objects straight out of a store repository's packs, without a git process.

The packs Pitstop writes (`pack_writer`) hold every object whole, and so do many entries of the
packs git writes. An object is found through its pack's version-2 index and inflated here; one
git stored as a delta (what a fetch brings: the base commit's trees, say) is rebuilt from its
base in the same pack, to a bounded depth and size. Either way it is checked against its id
before it is believed. A pack in another format, a delta past the bounds, or anything this
reader does not follow is left to `cat-file` (None). A pack that appears while the operation
runs (a fetch, a flushed batch) is found on the next miss.
"""

# String annotations cost nothing: `core.records.NamedTuple` keeps them as written (no
# `ForwardRef` compile as `typing.NamedTuple` does); `typing` is for type checkers only.
from __future__ import annotations

import mmap
import os
import struct
import zlib

from core.digests import sha1_hex

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

_KINDS = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}
_OFS_DELTA, _REF_DELTA = 6, 7
# Deltas are rebuilt here only this deep and this large (git packs to depth 50 by default);
# anything beyond goes to `cat-file`, which streams what this would hold in memory.
_DELTA_DEPTH = 64
_DELTA_MAX = 16 << 20
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
        header = self._header(offset)
        if header is None or header[0] not in _KINDS:
            return None
        return Entry(_KINDS[header[0]], header[1], self.data, header[2])

    def _header(self, offset: int) -> tuple[int, int, int] | None:
        """The entry's type number, size and the offset just past its header."""
        if offset < 12 or offset >= len(self.data) - 20:
            return None
        byte = self.data[offset]
        kind = (byte >> 4) & 7
        size, shift, position = byte & 0x0F, 4, offset + 1
        while byte & 0x80:
            if position >= len(self.data) or shift > 63:
                return None
            byte = self.data[position]
            size |= (byte & 0x7F) << shift
            shift, position = shift + 7, position + 1
        return kind, size, position

    def rebuilt(self, offset: int, depth: int = 0) -> tuple[str, bytes] | None:
        """The object at `offset`, whole or rebuilt from its delta chain; None past the
        bounds or for anything malformed (the caller checks the result against its id)."""
        header = self._header(offset)
        if header is None or depth > _DELTA_DEPTH:
            return None
        kind, size, position = header
        if kind in _KINDS:
            if size > _DELTA_MAX and depth:
                return None
            body = _inflate(Entry(_KINDS[kind], size, self.data, position))
            return (_KINDS[kind], body) if body is not None else None
        if size > _DELTA_MAX:
            return None
        if kind == _OFS_DELTA:
            distance, position = _offset_distance(self.data, position)
            base_offset = offset - distance if distance else 0
        elif kind == _REF_DELTA:
            raw = bytes(self.data[position : position + 20])
            base_offset, position = self.offset(raw) or 0, position + 20
        else:
            return None
        if base_offset <= 0:
            return None  # no base in this pack (or a distance that makes no sense)
        base = self.rebuilt(base_offset, depth + 1)
        delta = _inflate(Entry("delta", size, self.data, position))
        if base is None or delta is None:
            return None
        body = apply_delta(base[1], delta)
        return (base[0], body) if body is not None else None

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

    def locate(self, oid: str) -> tuple[_Pack, int] | None:
        """The pack and offset of `oid`, whole or a delta; None when no pack lists it."""
        raw = bytes.fromhex(oid)
        for attempt in range(2):
            if (attempt or self._seen is None) and not self._rescan():
                return None
            for pack in self._packs.values():
                if pack is None:
                    continue
                offset = pack.offset(raw)
                if offset is not None:
                    return pack, offset
        return None

    def read(self, oid: str, limit: int | None = None) -> tuple[str, bytes] | None:
        """The object `oid` from a pack (whole, or rebuilt from its delta), checked against
        its id; None when no pack holds it readably here, it is larger than `limit`, or it
        does not hash to `oid`."""
        found = self.locate(oid)
        if found is None:
            return None
        entry = found[0].entry(found[1])
        if entry is not None:
            if limit is not None and entry.size > limit:
                return None
            body = _inflate(entry)
            kind = entry.kind
        else:
            rebuilt = found[0].rebuilt(found[1])
            if rebuilt is None or (limit is not None and len(rebuilt[1]) > limit):
                return None
            kind, body = rebuilt
        if body is None:
            return None
        header = f"{kind} {len(body)}\0".encode()
        if sha1_hex(header + body) != oid:
            return None
        return kind, body

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


def _offset_distance(data: mmap.mmap, position: int) -> tuple[int, int]:
    """An OFS_DELTA's distance back to its base (git's offset encoding), and what follows."""
    if position >= len(data):
        return 0, position
    byte = data[position]
    distance, position = byte & 0x7F, position + 1
    while byte & 0x80:
        if position >= len(data) or distance > 1 << 56:
            return 0, position
        byte = data[position]
        distance = ((distance + 1) << 7) | (byte & 0x7F)
        position += 1
    return distance, position


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """A delta header's size (7 bits a byte, least significant first), and what follows."""
    value = shift = 0
    while position < len(data) and shift <= 63:
        byte = data[position]
        value |= (byte & 0x7F) << shift
        shift, position = shift + 7, position + 1
        if not byte & 0x80:
            return value, position
    return -1, position


def apply_delta(base: bytes, delta: bytes) -> bytes | None:
    """git's delta applied to `base`; None when the delta does not fit it (or is malformed)."""
    source_size, position = _varint(delta, 0)
    target_size, position = _varint(delta, position)
    if source_size != len(base) or not 0 <= target_size <= _DELTA_MAX:
        return None
    out = bytearray()
    end = len(delta)
    while position < end:
        op = delta[position]
        position += 1
        if op & 0x80:  # copy from the base: offset and size, each byte present by a flag bit
            offset = size = 0
            for bit in range(4):
                if op & (1 << bit):
                    if position >= end:
                        return None
                    offset |= delta[position] << (8 * bit)
                    position += 1
            for bit in range(3):
                if op & (0x10 << bit):
                    if position >= end:
                        return None
                    size |= delta[position] << (8 * bit)
                    position += 1
            size = size or 0x10000
            if offset + size > len(base):
                return None
            out += base[offset : offset + size]
        elif op:  # insert the next `op` bytes
            if position + op > end:
                return None
            out += delta[position : position + op]
            position += op
        else:
            return None  # reserved
        if len(out) > target_size:
            return None
    return bytes(out) if len(out) == target_size else None
