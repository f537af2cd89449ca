"""`bytes_added` is what a checkpoint really added to the store: a one-file change in a big
tree adds that file and the trees on its path, not the tree's size."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from corekit import git, only_store_repo, write

from core.engine import CheckpointRequest, Engine
from core.git.objects import objects_bytes


def test_a_one_file_change_in_a_big_tree_reports_the_bytes_it_added(
    engine: Engine, make_repo: Callable[..., Path]
) -> None:
    files = {f"wide/module_{n:05}.py": f"VALUE = {n}\n" for n in range(3000)}
    files.update({f"deep/a/b/c/file_{n}.txt": f"{n}\n" for n in range(5)})
    repo = make_repo("big", files)
    engine.start_task(repo=repo, objective="bytes", task_id="t1")
    write(repo / "wide/module_00001.py", "VALUE = 'first checkpoint'\n")
    first = engine.checkpoint("t1").checkpoint
    assert first is not None
    store = only_store_repo(engine.paths.root)

    for round_number in range(3):
        write(repo / "deep/a/b/c/file_1.txt", f"changed {round_number}\n")
        before = objects_bytes(store)
        result = engine.checkpoint("t1", CheckpointRequest(force=True))
        assert result.checkpoint is not None and result.checkpoint.bytes_added is not None
        grown = objects_bytes(store) - before
        # the blob, five small trees on its path, the root, the commit and its metadata: all
        # loose, so what the store grew by is exactly what the checkpoint says it added
        assert result.checkpoint.bytes_added == grown, (result.checkpoint.bytes_added, grown)
        assert result.checkpoint.bytes_added < 16 * 1024


def test_a_new_base_commit_counts_what_its_fetch_brought_once(
    engine: Engine, make_repo: Callable[..., Path]
) -> None:
    files = {f"data/blob_{n:04}.bin": os.urandom(2048) for n in range(300)}
    repo = make_repo("random", files)
    engine.start_task(repo=repo, objective="bytes", task_id="t1")
    write(repo / "data/blob_0001.bin", os.urandom(64))
    assert engine.checkpoint("t1").checkpoint is not None
    store = only_store_repo(engine.paths.root)

    git(repo, "commit", "-q", "-am", "the user commits the edit")  # a new base commit
    write(repo / "data/blob_0002.bin", os.urandom(64))
    before = objects_bytes(store)
    result = engine.checkpoint("t1")
    assert result.checkpoint is not None and result.checkpoint.bytes_added is not None
    grown = objects_bytes(store) - before
    # the new base's commit and tree came by a shallow fetch (a pack); the edit's blob and
    # trees were written loose: each counted once, nothing copied twice
    assert result.checkpoint.bytes_added == grown, (result.checkpoint.bytes_added, grown)
    assert grown < 64 * 1024
