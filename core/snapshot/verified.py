"""What the store's repository held when checkpoints were last verified complete.

A repeat checkpoint stores only what differs from the previous checkpoint's trees, and `pitstop
diff`, `validate` and `checkout` read a checkpoint back: each needs every object of its trees
to be present. Walking them all (`rev-list --objects`) costs as much as the tree is large;
instead whoever verified a checkpoint complete records it beside a fingerprint of the store's
objects: the name, size, inode and change time of every loose object file, and of every file of
the pack directory. While the fingerprint is unchanged no object was removed, repacked, or
rewritten in place (a rewrite changes the file's change time, which no one can set back), so
the commits recorded with it need no new walk. Any change (a gc, another checkpoint, a deleted
or edited object) makes the next reader walk again and record what it found.

Git only ever adds objects (by rename), deletes them (gc, prune) or refreshes their times (when
an object it would write is already there): each of these changes the fingerprint, which only
costs one more walk. What this does not stand against is someone who rewrites this marker too:
anyone who can rewrite the store's files can rewrite what vouches for them.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.digests import sha256

MARKER = "pitstop-verified"
MAX_COMMITS = 64
"""Commits remembered with one fingerprint (the newest): diffing old checkpoints stays cheap."""


def objects_fingerprint(store_repo: Path) -> str:
    """A digest that changes whenever an object file of the store's repository is added,
    removed, replaced or written to (loose objects and the pack directory's files)."""
    objects = f"{store_repo}/objects"
    digest = sha256()
    try:
        names = sorted(os.listdir(objects))
    except OSError:  # no objects directory (or not readable): nothing can be vouched for
        return ""
    for name in names:
        if len(name) != 2 and name not in ("pack", "info"):
            continue
        try:
            with os.scandir(f"{objects}/{name}") as listing:
                entries = sorted(listing, key=_name)
        except FileNotFoundError:
            continue
        except OSError:  # a fan-out directory not readable: nothing can be vouched for
            return ""
        for entry in entries:
            try:
                stat = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            digest.update(
                f"{name}/{entry.name} {stat.st_size} {stat.st_ino} {stat.st_mtime_ns} "
                f"{stat.st_ctime_ns}\n".encode()
            )
    return str(digest.hexdigest())


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _recorded(store_repo: Path) -> tuple[str, list[str]]:
    """The marker's fingerprint and the commits verified with it ("" and none if unreadable)."""
    try:
        lines = (store_repo / MARKER).read_text().split()
    except (OSError, UnicodeDecodeError):  # none, or not readable here: walk again
        return "", []
    if len(lines) < 2 or not lines[0].startswith("fingerprint="):
        return "", []  # none, or an older Pitstop's one-line marker: walk once more
    return lines[0].removeprefix("fingerprint="), lines[1:]


def record_verified(store_repo: Path, commit: str, fingerprint: str | None = None) -> None:
    """Remember that `commit`'s checkpoint was verified complete while the store's objects had
    `fingerprint` (taken before the walk that verified it; now when not given). Recorded only
    if the objects are still as they were then: a change during the walk leaves it unrecorded."""
    now = objects_fingerprint(store_repo)
    if not commit or not now or (fingerprint is not None and fingerprint != now):
        return
    recorded, commits = _recorded(store_repo)
    kept = [c for c in commits if c != commit][-(MAX_COMMITS - 1) :] if recorded == now else []
    text = "".join(f"{line}\n" for line in [f"fingerprint={now}", *kept, commit])
    temp = store_repo / f"{MARKER}.{os.getpid()}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(temp, store_repo / MARKER)
    except OSError:  # a store this process cannot write to: the next reader walks again
        temp.unlink(missing_ok=True)


def still_verified(store_repo: Path, commit: str) -> bool:
    """Whether `commit` was verified complete and no object file has changed since (so every
    object of its trees is still there and unchanged, unwalked)."""
    recorded, commits = _recorded(store_repo)
    return (
        bool(commit and recorded)
        and commit in commits
        and recorded == objects_fingerprint(store_repo)
    )
