"""Moving objects between local repositories as packs: into the store, and out of it.

A checkpoint copies what only the user's repository holds into the store (so a `git gc` there
can never break a checkpoint) and a push or fetch moves a task's objects as one pack. Each is
one or two git processes, whatever the number of objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from core.git.objects import objects_bytes
from core.git.run import run_git

# Above this many objects a pack is indexed as one pack file rather than exploded into loose
# objects: many small files cost more to write and to read back than one index.
_LOOSE_OBJECTS_LIMIT = 100


def pack_objects(store_repo: Path, tips: Sequence[str], exclude: Sequence[str] = ()) -> bytes:
    """A self-contained pack of every object reachable from `tips` (trees or commits) and not
    from `exclude` (commits the receiver already has)."""
    lines = [*tips, *(f"^{oid}" for oid in exclude if oid)]
    return run_git(
        ["pack-objects", "--stdout", "--revs", "--quiet"],
        git_dir=store_repo,
        input=("\n".join(lines) + "\n").encode(),
    )


def index_pack(store_repo: Path, pack: bytes) -> None:
    """Store a pack's objects in the store repository (checked by git as it indexes them)."""
    run_git(["index-pack", "--stdin", "--fix-thin"], git_dir=store_repo, input=pack)


def copy_objects(work_tree: Path, store_repo: Path, oids: Sequence[str]) -> None:
    """Copy the objects `oids` (exactly these, nothing they reach) from the repository of
    `work_tree` into the store's repository."""
    pack = run_git(
        ["pack-objects", "--stdout", "-q"],
        cwd=work_tree,
        input=("\n".join(oids) + "\n").encode(),
    )
    run_git(
        ["index-pack", "--stdin", "-q"]
        if len(oids) > _LOOSE_OBJECTS_LIMIT
        else ["unpack-objects", "-q"],
        git_dir=store_repo,
        input=pack,
    )


def fetch_shallow(store_repo: Path, work_tree: Path, commit: str) -> int:
    """Fetch `commit` and its tree from the repository of `work_tree` into the store, not its
    history (depth 1: git records the commit in the store's `shallow` file); return the bytes
    the store's objects grew by.

    A shallow store pushes its checkpoints because no remote commit reaches the base commit
    (`core.sharing.checkpoint_export`): a remote refuses history that crosses a shallow one.
    """
    before = objects_bytes(store_repo)
    run_git(
        [
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--depth=1",
            str(work_tree),
            commit,
        ],
        git_dir=store_repo,
    )
    return max(objects_bytes(store_repo) - before, 0)
