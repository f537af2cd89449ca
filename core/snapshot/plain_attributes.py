"""Attributes files that leave the bytes git stores alone, so a repository that has them is
still *plain* (`core.snapshot.plain_tree`).

Real repositories carry a `.gitattributes` for what never touches the stored bytes: ansible's
says `.github/ export-ignore` (for `git archive`), others set `diff=`, `merge=`,
`linguist-*`. Refusing every attributes file sent each checkpoint of such a repository through
`update-index` and `write-tree`, two processes that load the whole index (~60 ms of a ~150 ms
hook checkpoint on ansible's 5,053 files).

git reads only a few attributes on the way in (`convert_to_git`): `text`, `crlf`, `eol` (line
endings), `ident`, `filter` and `working-tree-encoding`. A file that names none of them, in any
form (`x`, `-x`, `!x`, `x=value`, any case), and defines no macro (`[attr]`, which could set
them under another name; the one built-in macro, `binary`, is `-diff -merge -text`: no
conversion) leaves every file's bytes as they are. Anything else, a file that cannot be read
whole, or one larger than `MAX_BYTES`, is not plain, and the snapshot takes git's own way.

Lines are split at line feeds only, as git splits them, and words at every blank git knows
and more; every word after a line's first is read as an attribute, so a quoted pattern holding
spaces, or a finer split, can only make a file look less plain, never more.
"""

from __future__ import annotations

import os
import stat
import struct

CONVERTING = frozenset({"text", "crlf", "eol", "ident", "filter", "working-tree-encoding"})
"""The attributes git's check-in conversion reads (git's convert.c)."""
MAX_BYTES = 64 * 1024
"""An attributes file larger than this is not read: the repository is taken as not plain."""
NAME = b".gitattributes"


def leaves_bytes_alone(text: bytes) -> bool:
    """Whether an attributes file sets nothing that converts a file on its way into git."""
    for raw in text.split(b"\n"):  # git's lines; a CR inside one is a blank, as for split()
        words = raw.decode("utf-8", "surrogateescape").split()
        if not words or words[0].startswith("#"):
            continue
        if words[0].startswith("[attr]") or words[0].startswith('"[attr]'):
            return False
        for word in words[1:]:
            name = word.lstrip("-!").partition("=")[0].lower()
            if name in CONVERTING or name.startswith("[attr]"):
                return False
    return True


def file_leaves_bytes_alone(path: str | os.PathLike[str]) -> bool:
    """Whether the attributes file at `path` (a regular file, not a link) is read and
    `leaves_bytes_alone`; a missing or odd one is not."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return False
        data = os.read(fd, MAX_BYTES + 1)
    except OSError:
        return False
    finally:
        os.close(fd)
    return len(data) <= MAX_BYTES and leaves_bytes_alone(data)


def tracked_attributes(index: bytes) -> list[str] | None:
    """The paths of the attributes files among an index's entries (version 2 or 3), read
    entry by entry; None when the index is one this does not read exactly (another version, a
    sparse directory entry that may hide files, a truncated entry)."""
    if len(index) < 12 or index[:4] != b"DIRC":
        return None
    version, count = struct.unpack_from(">II", index, 4)
    if version not in (2, 3):
        return None
    read_u16 = struct.Struct(">H").unpack_from
    read_u32 = struct.Struct(">I").unpack_from
    size = len(index)
    found: list[str] = []
    offset = 12
    try:
        for _ in range(count):
            flags = read_u16(index, offset + 60)[0]
            header = 64 if flags & 0x4000 and version == 3 else 62
            start = offset + header
            length = flags & 0xFFF
            if length == 0xFFF:  # a longer name: it ends at its NUL
                length = index.index(b"\0", start + 0xFFF) - start
            end = start + length
            if end >= size or index[end] != 0:
                return None
            if read_u32(index, offset + 24)[0] & 0o170000 == 0o040000:
                return None  # a sparse index's directory entry
            if index[end - 14 : end] == NAME and (length == 14 or index[end - 15] == 0x2F):
                found.append(index[start:end].decode("utf-8", "surrogateescape"))
            offset += (header + length + 8) & ~7
    except (struct.error, ValueError):
        return None
    return found
