"""The store holds every object it needs on its own; damage to it is detected, never hidden."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from corekit import (
    blob_at,
    delete_loose_object,
    git,
    git_bytes,
    ls_tree,
    make_objects_loose,
    only_store_repo,
    tree_state,
    write,
)

from core.engine import CheckpointRequest, Engine
from core.errors import DamagedCheckpointError
from core.models import Checkpoint, CheckpointState


def _checkpoint(engine: Engine, repo: Path, task_id: str = "t1") -> Checkpoint:
    engine.start_task(repo=repo, objective="integrity", task_id=task_id)
    result = engine.checkpoint(task_id)
    assert result.checkpoint is not None
    return result.checkpoint


def test_store_survives_deleting_the_users_objects(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    write(repo / "staged_only.txt", "STAGED-ONLY-BLOB\n")
    git(repo, "add", "staged_only.txt")
    write(repo / "src/app.py", "print('unstaged')\n")
    write(repo / "notes/untracked.md", "untracked\n")
    expected = tree_state(repo)
    cp = _checkpoint(engine, repo)

    store = only_store_repo(store_root)
    assert not (store / "objects/info/alternates").exists()
    shutil.rmtree(repo / ".git/objects")

    assert engine.verify(cp) == []
    engine.checkout(cp.ref, tmp_path / "restored")
    assert tree_state(tmp_path / "restored") == expected
    assert blob_at(store, cp.index_tree or "", "staged_only.txt") == b"STAGED-ONLY-BLOB\n"
    assert "staged_only.txt" in engine.diff(cp.ref)
    # the base commit and its tree were copied too
    git_bytes(store, "cat-file", "-e", f"{cp.base_commit}^{{tree}}")


def test_staged_blob_pruned_by_users_gc_is_still_in_the_store(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    write(repo / "draft.txt", "DRAFT-STAGED-VERSION\n")
    git(repo, "add", "draft.txt")
    staged_oid = git(repo, "rev-parse", ":draft.txt").strip()
    write(repo / "draft.txt", "draft worktree version\n")
    cp = _checkpoint(engine, repo)

    # The user unstages and collects garbage: the staged blob is gone from their repository.
    git(repo, "reset", "-q")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    probe = subprocess_ok(repo, "cat-file", "-e", staged_oid)
    assert not probe, "the staged blob should have been pruned from the user's repository"

    assert engine.verify(cp) == []
    store = only_store_repo(store_root)
    assert blob_at(store, cp.index_tree or "", "draft.txt") == b"DRAFT-STAGED-VERSION\n"
    engine.checkout(cp.ref, tmp_path / "restored")
    assert (tmp_path / "restored/draft.txt").read_text() == "draft worktree version\n"


def subprocess_ok(repo: Path, *args: str) -> bool:
    import subprocess

    return subprocess.run(["git", *args], cwd=repo, capture_output=True).returncode == 0


def test_second_checkpoint_after_user_gc_still_self_sufficient(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    write(repo / "a.txt", "first\n")
    git(repo, "add", "a.txt")
    _checkpoint(engine, repo)
    write(repo / "a.txt", "second\n")
    git(repo, "add", "a.txt")
    second = engine.checkpoint("t1").checkpoint
    assert second is not None
    git(repo, "reset", "-q", "--hard")
    git(repo, "gc", "-q", "--prune=now")
    shutil.rmtree(repo / ".git/objects")
    for cp in engine.list_checkpoints("t1"):
        assert engine.verify(cp) == []
        engine.checkout(cp.ref, tmp_path / f"restored-{cp.seq}")
    assert (tmp_path / "restored-1/a.txt").read_text() == "first\n"
    assert (tmp_path / "restored-2/a.txt").read_text() == "second\n"


def _damage_setup(engine: Engine, repo: Path, store_root: Path) -> tuple[Checkpoint, Path]:
    write(repo / "unique/deep/file.txt", "UNIQUE-CONTENT-FOR-DAMAGE\n")
    write(repo / "src/app.py", "print('modified for damage')\n")
    cp = _checkpoint(engine, repo)
    assert engine.verify(cp) == []
    store = only_store_repo(store_root)
    make_objects_loose(store)
    assert engine.verify(cp) == []  # unpacking alone changes nothing
    return cp, store


@pytest.mark.parametrize("victim", ["blob", "subtree", "index-only blob", "root tree"])
def test_missing_snapshot_object_is_reported_and_refused(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path, victim: str
) -> None:
    if victim == "index-only blob":
        write(repo / "staged.txt", "STAGED-ONLY\n")
        git(repo, "add", "staged.txt")
        write(repo / "staged.txt", "worktree differs\n")
    cp, store = _damage_setup(engine, repo, store_root)
    worktree = ls_tree(store, cp.worktree_tree or "")
    if victim == "blob":
        oid = worktree["unique/deep/file.txt"][2]
    elif victim == "subtree":
        oid = git_bytes(store, "rev-parse", f"{cp.worktree_tree}:unique/deep").decode().strip()
    elif victim == "index-only blob":
        oid = ls_tree(store, cp.index_tree or "")["staged.txt"][2]
        assert oid not in {entry[2] for entry in worktree.values()}
    else:
        oid = cp.worktree_tree or ""
    delete_loose_object(store, oid)

    problems = engine.verify(cp)
    assert problems, "a checkpoint with a missing object must not verify"
    with pytest.raises(DamagedCheckpointError):
        engine.checkout(cp.ref, tmp_path / "restored")
    assert not (tmp_path / "restored").exists()
    with pytest.raises(DamagedCheckpointError):
        engine.diff(cp.ref)
    with pytest.raises(DamagedCheckpointError):
        engine.changed_files(cp.ref)


def test_missing_checkpoint_commit_and_manifest_are_reported(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    cp, store = _damage_setup(engine, repo, store_root)
    manifest_oid = git_bytes(store, "rev-parse", f"{cp.commit}:manifest.enc").decode().strip()
    delete_loose_object(store, manifest_oid)
    assert any("manifest" in problem for problem in engine.verify(cp))
    delete_loose_object(store, cp.commit or "")
    assert any("commit" in problem for problem in engine.verify(cp))
    with pytest.raises(DamagedCheckpointError):
        engine.checkout(cp.ref, tmp_path / "restored")


def test_missing_store_repository_is_reported(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    cp = _checkpoint(engine, repo)
    shutil.rmtree(only_store_repo(store_root))
    assert engine.verify(cp)
    with pytest.raises(DamagedCheckpointError):
        engine.checkout(cp.ref, tmp_path / "restored")


def test_a_new_checkpoint_after_damage_starts_a_sound_chain(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    cp, store = _damage_setup(engine, repo, store_root)
    blob = ls_tree(store, cp.worktree_tree or "")["unique/deep/file.txt"][2]
    delete_loose_object(store, blob)
    assert engine.verify(cp)

    fresh = engine.checkpoint("t1", CheckpointRequest(force=True)).checkpoint
    assert fresh is not None and fresh.state is CheckpointState.COMPLETE
    assert engine.verify(fresh) == []
    engine.checkout(fresh.ref, tmp_path / "restored")
    expected = (repo / "unique/deep/file.txt").read_bytes()
    assert (tmp_path / "restored/unique/deep/file.txt").read_bytes() == expected


def test_tampered_manifest_row_is_reported(engine: Engine, repo: Path, store_root: Path) -> None:
    cp = _checkpoint(engine, repo)
    from core.store.db import write_txn

    with write_txn(engine.db):
        engine.db.execute(
            "UPDATE checkpoints SET manifest_sha256 = ? WHERE task_id = ? AND seq = ?",
            ["0" * 64, "t1", cp.seq],
        )
    problems = engine.verify(engine.get_checkpoint(cp.ref))
    assert any("sha256" in problem for problem in problems)
