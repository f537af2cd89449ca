"""What a reader (`pitstop diff`, `validate`, `checkout`) found when it walked a checkpoint whole.

Walking every object of a checkpoint's trees costs as much as the tree is large. A reader that
walked one and found it sound records, per checkpoint, the state of exactly the files its
objects live in: each loose object file's size, inode and times (read and rehashed during the
walk), and the pack directory's files then (name, size, inode, times). The next reader of that
checkpoint stats those files alone: while every one is as recorded, no object of the checkpoint
was removed, repacked or rewritten in place (a rewrite changes a file's change time, which no one
can set back), and it is not walked again. Packs added since are not its files (each later
checkpoint adds one). The cost is what the checkpoint's own loose objects and the packs number,
not what the store holds: the store's other checkpoints, and its growth, cost nothing.

The writer's cheaper marker (`core.snapshot.verified`, fan-out directories only) is not taken
for this: it cannot see an object file rewritten in place. What this does not stand against is
someone who rewrites these records too, or adds a pack holding other bytes under a checkpoint's
ids: whoever can write the store's files can rewrite what vouches for them.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Mapping
from pathlib import Path

from core.digests import sha1_hex, sha256, sha256_hex

READS = "pitstop-verified-reads"
KEPT = 256
"""Records kept (the newest): reading an old checkpoint again walks it once more."""
_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?").fullmatch


def file_state(stat: os.stat_result) -> str:
    """What a file's record holds: anything a removal, a replacement or a write changes."""
    return f"{stat.st_size}:{stat.st_ino}:{stat.st_mtime_ns}:{stat.st_ctime_ns}"


def packs_state(store_repo: Path) -> str:
    """The pack directory's files, each with its state, and a digest of the info directory's
    (an alternate added): `INFO NAME=STATE NAME=STATE…`, "" when not readable here."""
    digest = sha256()
    packs: list[str] = []
    for directory in ("pack", "info"):
        try:
            with os.scandir(f"{store_repo}/objects/{directory}") as listing:
                entries = sorted(
                    (entry.name, entry.stat(follow_symlinks=False)) for entry in listing
                )
        except FileNotFoundError:
            continue
        except OSError:
            return ""  # not readable here: nothing can be vouched for
        for name, stat in entries:
            if directory == "pack":
                packs.append(f"{name}={file_state(stat)}")
            else:
                digest.update(f"{name} {file_state(stat)}\n".encode())
    return " ".join([digest.hexdigest(), *packs])


def packs_still_hold(recorded: str, now: str) -> bool:
    """Whether every pack file of the `recorded` state is still there as it was (and the info
    directory unchanged): a checkpoint's packed objects are where they were. Packs added since
    (every checkpoint writes one) change nothing for it: git never moves an object out of a
    pack it leaves in place. A removed, replaced or rewritten pack file (a repack, a gc, damage)
    does."""
    if not recorded or not now:
        return False
    old, new = recorded.split(" "), now.split(" ")
    return old[0] == new[0] and set(old[1:]) <= set(new[1:])


def loose_listing(store_repo: Path) -> set[str] | None:
    """The ids of the store's loose objects now (None when a directory cannot be read)."""
    objects = f"{store_repo}/objects"
    found: set[str] = set()
    try:
        names = os.listdir(objects)
    except OSError:
        return None
    for name in names:
        if len(name) != 2:
            continue
        try:
            found.update(name + rest for rest in os.listdir(f"{objects}/{name}"))
        except NotADirectoryError:
            continue
        except OSError:
            return None
    return found


def record_read(store_repo: Path, commit: str, packs: str, loose: Mapping[str, str]) -> None:
    """Remember that `commit`'s checkpoint was walked whole and sound with the packs in state
    `packs` (taken before the walk) and its loose objects' files as `loose` (id → state, taken
    as each was rehashed). Not recorded when the packs changed meanwhile."""
    if not _COMMIT(commit) or not packs_still_hold(packs, packs_state(store_repo)):
        return
    directory = store_repo / READS
    lines = [f"packs {packs}", *(f"{oid} {state}" for oid, state in sorted(loose.items()))]
    temp = directory / f".{commit}.{os.getpid()}.tmp"
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("".join(f"{line}\n" for line in lines))
        os.replace(temp, directory / commit)
        _prune(directory)
    except OSError:  # a store this process cannot write to: the next reader walks again
        temp.unlink(missing_ok=True)


def _prune(directory: Path) -> None:
    """Drop the oldest records beyond `KEPT`."""
    with os.scandir(directory) as listing:
        records = [(entry.stat().st_mtime_ns, entry.path) for entry in listing]
    for _mtime, path in sorted(records)[:-KEPT]:
        os.unlink(path)


def still_read(store_repo: Path, commit: str) -> bool:
    """Whether `commit`'s checkpoint was walked whole and sound, and every file its objects
    live in is still as it was then, or (a loose file whose state moved) still holds content
    that hashes to its id: every object is still there and unchanged."""
    if not _COMMIT(commit):
        return False
    record = store_repo / READS / commit
    try:
        lines = record.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    if not lines or not lines[0].startswith("packs "):
        return False
    packs = lines[0][6:]
    if not packs_still_hold(packs, packs_state(store_repo)):
        return False
    objects = f"{store_repo}/objects"
    loose: dict[str, str] = {}
    moved = False
    for line in lines[1:]:
        oid, _, state = line.partition(" ")
        path = f"{objects}/{oid[:2]}/{oid[2:]}"
        try:
            now = file_state(os.stat(path))
            if now != state:
                now = rehash(path, oid) or ""
                moved = True
        except OSError:
            return False
        if not now:
            return False
        loose[oid] = now
    if moved:
        record_read(store_repo, commit, packs, loose)
    return True


def rehash(path: str, oid: str) -> str | None:
    """The state of the loose object file at `path` when its content inflates and hashes to
    `oid`; None when it does not (damaged). OSError when it cannot be read."""
    with open(path, "rb") as handle:
        state = file_state(os.fstat(handle.fileno()))
        try:
            data = zlib.decompress(handle.read())
        except zlib.error:
            return None
    return state if object_id(data, len(oid)) == oid else None


def object_id(data: bytes, length: int) -> str:
    """The id git gives a loose object's inflated bytes (SHA-1, or SHA-256 for 64-digit ids),
    by `core.digests` (the interpreter's own hashes for small objects: the quick paths, `show`,
    verify without loading OpenSSL)."""
    return sha256_hex(data) if length == 64 else sha1_hex(data)
