"""What the store's repository held when a checkpoint was last verified complete.

A repeat checkpoint stores only what differs from the previous checkpoint's trees, so it needs
every object of those trees to be present. Walking them all (`rev-list --objects`) costs as
much as the tree is large; instead the writer of a complete checkpoint records a fingerprint of
the store's object directories (each fan-out directory's mtime, each pack's name, size and
mtime). While the fingerprint is unchanged no object was removed or repacked since that
checkpoint was verified, so its trees need no new walk; any change (a gc, another task's
checkpoint, a deleted object) makes the next checkpoint walk them again, as before.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.digests import sha256

MARKER = "pitstop-verified"


def objects_fingerprint(store_repo: Path) -> str:
    """A digest that changes whenever an object is added to, or removed from, the store's
    repository (loose: its fan-out directory's mtime; packed: the pack directory's files)."""
    objects = store_repo / "objects"
    digest = sha256()
    try:
        names = sorted(os.listdir(objects))
    except FileNotFoundError:
        return ""
    for name in names:
        path = objects / name
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        digest.update(f"{name} {stat.st_mtime_ns} {stat.st_ino}\n".encode())
    for directory in ("pack", "info"):
        try:
            entries = sorted(os.scandir(objects / directory), key=lambda entry: entry.name)
        except FileNotFoundError:
            continue
        for entry in entries:
            stat = entry.stat(follow_symlinks=False)
            digest.update(f"{directory}/{entry.name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return str(digest.hexdigest())


def record_verified(store_repo: Path, commit: str) -> None:
    """Remember that `commit`'s checkpoint was verified complete with the objects now held."""
    line = f"{commit} {objects_fingerprint(store_repo)}\n"
    temp = store_repo / f"{MARKER}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(line)
    os.replace(temp, store_repo / MARKER)


def still_verified(store_repo: Path, commit: str) -> bool:
    """Whether `commit` was the last checkpoint verified complete and no object has been added
    or removed since (so every object of its trees is still there, unwalked)."""
    try:
        recorded = (store_repo / MARKER).read_text().split()
    except (FileNotFoundError, UnicodeDecodeError):
        return False
    return (
        len(recorded) == 2
        and bool(commit)
        and recorded[0] == commit
        and recorded[1] == objects_fingerprint(store_repo)
    )
