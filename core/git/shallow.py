"""The store's `shallow` file: the commits whose parents the store does not hold, by design.

A depth-1 fetch records its commit there itself; a base commit that arrived as bytes beside a
fetched checkpoint (not as its history) is recorded here the same way, so that git's walks
(`fsck`, `repack`, `pack-objects --revs`, `push`) stop at it instead of failing on a missing
parent. The file is git's format: one id a line, replaced whole under `shallow.lock`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def raw_object_id(kind: str, body: bytes) -> str:
    """The id git gives an object of `kind` with content `body`."""
    import hashlib  # loaded when a base commit is adopted: nothing else here needs it

    return hashlib.sha1(f"{kind} {len(body)}\0".encode() + body, usedforsecurity=False).hexdigest()


def shallow_commits(store_repo: Path) -> set[str]:
    """The commits the store's `shallow` file names (none when it has no file)."""
    try:
        text = (store_repo / "shallow").read_text()
    except FileNotFoundError:
        return set()
    return {line.strip() for line in text.splitlines() if line.strip()}


def add_shallow(store_repo: Path, commits: Iterable[str]) -> None:
    """Record `commits` in the store's `shallow` file (the caller holds the store's shallow
    lock, so a `shallow.lock` here is git's own, or a killed writer's, removed already)."""
    wanted = shallow_commits(store_repo) | set(commits)
    lock = store_repo / "shallow.lock"
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write("".join(f"{oid}\n" for oid in sorted(wanted)))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(lock, store_repo / "shallow")
    except BaseException:
        lock.unlink(missing_ok=True)
        raise
