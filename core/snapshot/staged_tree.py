"""The staged tree of an index the last checkpoint already wrote, without `git write-tree`.

Agents edit files; they seldom stage them. So from one checkpoint to the next the user's index
is usually the same bytes, and `git write-tree` (a process, ~3 ms of a ~90 ms hook checkpoint,
issue 21) would write the very tree it wrote last time. git ends every index with a checksum
of all that comes before it (SHA-1, or SHA-256 in such repositories); the store remembers, in
one small file beside its objects, which staged tree the index with that checksum gave. The
next snapshot takes that tree instead of asking git again only when both hold:

- the index's checksum and size are the ones remembered (same bytes: same entries, so the
  same tree; an index git wrote without a checksum, `index.skipHash`, is never remembered);
- the remembered tree is the staged tree of the task's previous complete checkpoint, whose
  every object the caller verified the store holds (a line another task or an older
  checkpoint left, or a forged one, names some other tree and is not used).

Anything else, a missing or unreadable file included, runs `git write-tree` as before.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

REMEMBERED = "pitstop-staged-tree"
_TRAILER = 32  # a SHA-256 checksum's length; a SHA-1 one is the last 20 of these bytes
_UNHASHED = bytes(20)  # what git writes in place of the checksum under `index.skipHash`


def index_key(index: Path) -> str | None:
    """What identifies the index's bytes: its size and its closing checksum (None without
    one, or when it cannot be read)."""
    try:
        with open(index, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < 12 + _TRAILER:  # a header and nothing worth remembering
                return None
            handle.seek(size - _TRAILER)
            trailer = handle.read(_TRAILER)
    except OSError:
        return None
    if len(trailer) != _TRAILER or trailer.endswith(_UNHASHED):
        return None
    return f"{size}-{trailer.hex()}"


def remembered_tree(store_repo: Path, key: str | None, previous_tree: str | None) -> str | None:
    """`previous_tree`, when the store remembers it as the staged tree of the index `key`
    names; else None (write the tree)."""
    if key is None or not previous_tree:
        return None
    try:
        fields = (store_repo / REMEMBERED).read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return None
    if fields == [key, previous_tree]:
        return previous_tree
    return None


def remember(store_repo: Path, key: str | None, tree: str) -> None:
    """Remember `tree` as the staged tree of the index `key` names (replacing the file at once,
    so a reader sees the old line or the new one). Best effort: a failure only costs the next
    snapshot a `git write-tree`."""
    if key is None:
        return
    temp = store_repo / f"{REMEMBERED}.{os.getpid()}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(f"{key} {tree}\n")
        os.replace(temp, store_repo / REMEMBERED)
    except OSError:
        with suppress(OSError):
            os.unlink(temp)
