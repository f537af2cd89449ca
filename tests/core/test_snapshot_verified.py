"""A repeat checkpoint trusts the previous one's verification only while no object can have
left the store since: any removal, repack or damage makes it walk the previous trees again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from corekit import (
    delete_loose_object,
    git_bytes,
    ls_tree,
    make_objects_loose,
    only_store_repo,
    spy_git_starts,
    write,
)

from core.engine import CheckpointRequest, Engine
from core.models import Checkpoint, CheckpointState
from core.snapshot.verified import objects_fingerprint, still_verified


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """Every `git rev-list` this process starts, with its arguments."""
    yield spy_git_starts(monkeypatch, lambda argv: argv if argv[1:2] == ["rev-list"] else None)


def _forced(engine: Engine) -> Checkpoint:
    result = engine.checkpoint("t1", CheckpointRequest(force=True))
    assert result.checkpoint is not None and result.checkpoint.state is CheckpointState.COMPLETE
    return result.checkpoint


def test_repeat_checkpoints_walk_nothing_while_the_store_only_grew(
    engine: Engine, repo: Path, walks: list[list[str]]
) -> None:
    engine.start_task(repo=repo, objective="verified", task_id="t1")
    write(repo / "kept/unchanged.txt", "KEPT\n")
    first = _forced(engine)
    store = only_store_repo(engine.paths.root)
    assert still_verified(store, first.commit or "")
    walks.clear()
    for round_number in range(3):
        write(repo / "notes.txt", f"round {round_number}\n")
        latest = _forced(engine)
    assert walks == []
    assert engine.verify(latest) == []


def test_an_object_deleted_after_verification_is_walked_for_and_the_chain_restarts(
    engine: Engine, repo: Path, tmp_path: Path, walks: list[list[str]]
) -> None:
    engine.start_task(repo=repo, objective="verified", task_id="t1")
    write(repo / "kept/unchanged.txt", "KEPT-FOR-DAMAGE\n")
    _forced(engine)
    write(repo / "notes.txt", "second\n")
    second = _forced(engine)
    store = only_store_repo(engine.paths.root)
    make_objects_loose(store)
    blob = ls_tree(store, second.worktree_tree or "")["kept/unchanged.txt"][2]
    delete_loose_object(store, blob)
    assert not still_verified(store, second.commit or "")

    walks.clear()
    write(repo / "notes.txt", "third\n")
    third = _forced(engine)
    assert any("--objects" in call for call in walks)  # the previous trees were walked again
    assert engine.verify(third) == []
    engine.checkout(third.ref, tmp_path / "restored")
    assert (tmp_path / "restored/kept/unchanged.txt").read_text() == "KEPT-FOR-DAMAGE\n"


def test_a_repack_or_a_new_pack_changes_the_fingerprint(engine: Engine, repo: Path) -> None:
    engine.start_task(repo=repo, objective="verified", task_id="t1")
    checkpoint = _forced(engine)
    store = only_store_repo(engine.paths.root)
    before = objects_fingerprint(store)
    assert still_verified(store, checkpoint.commit or "")
    git_bytes(store, "repack", "-a", "-d", "-q")
    assert objects_fingerprint(store) != before
    assert not still_verified(store, checkpoint.commit or "")
    assert not still_verified(store, "")
