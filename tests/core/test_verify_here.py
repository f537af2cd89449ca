"""Verifying a checkpoint from the repository's own files: the same verdict as `rev-list`.

`pitstop show` verifies a small checkpoint by reading its trees from the store repository's
files (loose objects, whole objects in packs) with no git process (issue 22); whatever it is not
sure of — a delta, a missing object, a tree past its limit — goes to `git rev-list`, so every
missing object is still reported, however the store holds the rest.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from corekit import delete_loose_object, git, git_bytes, make_objects_loose, only_store_repo, write

from core.engine import CheckpointRequest, Engine
from core.models import Checkpoint
from core.snapshot import verify

MISSING = "snapshot object(s) are missing from the store repository"


def checkpoint(engine: Engine, repo: Path, files: int = 3) -> Checkpoint:
    for index in range(files):
        write(repo / "deep" / f"d{index % 7}" / f"f{index}.txt", f"file {index}\n")
    engine.start_task(repo=repo, objective="verify here", task_id="v1")
    made = engine.checkpoint("v1", CheckpointRequest(force=True)).checkpoint
    assert made is not None
    return made


def oid_of(store: Path, tree: str, path: str) -> str:
    return git(store, "--git-dir", str(store), "rev-parse", f"{tree}:{path}").strip()


@pytest.mark.parametrize("files", [3, verify._HERE_LIMIT + 40])
@pytest.mark.parametrize("packed", [False, True])
def test_a_sound_checkpoint_is_sound(
    engine: Engine, repo: Path, store_root: Path, files: int, packed: bool
) -> None:
    made = checkpoint(engine, repo, files)
    store = only_store_repo(store_root)
    if packed:
        git_bytes(store, "repack", "-adfq")
    else:
        make_objects_loose(store)
    assert engine.verify(made) == []


@pytest.mark.parametrize("files", [3, verify._HERE_LIMIT + 40])
@pytest.mark.parametrize("what", ["deep/d1/f1.txt", "deep/d2", "README.md"])
def test_a_missing_object_is_reported(
    engine: Engine, repo: Path, store_root: Path, files: int, what: str
) -> None:
    made = checkpoint(engine, repo, files)
    store = only_store_repo(store_root)
    make_objects_loose(store)
    assert made.worktree_tree is not None
    delete_loose_object(store, oid_of(store, made.worktree_tree, what))
    problems = engine.verify(made)
    assert len(problems) == 1 and MISSING in problems[0], problems


def test_an_object_missing_beside_packed_ones_is_reported(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    made = checkpoint(engine, repo)
    store = only_store_repo(store_root)
    assert made.worktree_tree is not None
    blob = oid_of(store, made.worktree_tree, "deep/d0/f0.txt")
    make_objects_loose(store)
    delete_loose_object(store, blob)
    held = git_bytes(store, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    git_bytes(store, "pack-objects", "-q", str(store / "objects/pack/pack"), input=held)
    git_bytes(store, "prune-packed")  # the rest packed (deltas among them); the blob stays gone
    assert not list((store / "objects").glob("??/*"))
    problems = engine.verify(made)
    assert len(problems) == 1 and MISSING in problems[0], problems


def test_reading_here_sees_only_what_the_files_hold(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    made = checkpoint(engine, repo)
    store = only_store_repo(store_root)
    make_objects_loose(store)
    assert made.worktree_tree is not None
    assert verify._held_here(store, [made.worktree_tree])
    delete_loose_object(store, oid_of(store, made.worktree_tree, "deep/d1/f1.txt"))
    assert not verify._held_here(store, [made.worktree_tree])
