"""`bytes_added` is what a checkpoint really added to the store: a one-file change in a big
tree adds that file and the trees on its path, not the tree's size."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from corekit import only_store_repo, write

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
