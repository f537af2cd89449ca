"""The staged tree is taken from the previous checkpoint only when the index is the same bytes
(core/snapshot/staged_tree.py), and is always the tree `git write-tree` gives."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from corekit import git, only_store_repo, spy_git_starts, write

from core.engine import CheckpointRequest, Engine
from core.models import Checkpoint
from core.snapshot.staged_tree import REMEMBERED, index_key

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@pytest.fixture
def write_trees(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every `git write-tree` this process starts."""
    yield spy_git_starts(
        monkeypatch, lambda argv: "write-tree" if argv[1:2] == ["write-tree"] else None
    )


def _forced(engine: Engine) -> Checkpoint:
    result = engine.checkpoint("t1", CheckpointRequest(force=True))
    assert result.checkpoint is not None
    return result.checkpoint


def _git_staged_tree(repo: Path, tmp_path: Path) -> str:
    """What `git write-tree` makes of the user's index, written into a throwaway object store
    (the user's repository is left as it is)."""
    objects = tmp_path / "objects-for-write-tree"
    objects.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "GIT_OBJECT_DIRECTORY": str(objects),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / ".git" / "objects"),
    }
    done = subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, capture_output=True, check=True, text=True
    )
    return done.stdout.strip()


def test_an_unchanged_index_reuses_the_staged_tree(
    engine: Engine, repo: Path, tmp_path: Path, write_trees: list[str]
) -> None:
    engine.start_task(repo=repo, objective="staged", task_id="t1")
    write(repo / "notes.txt", "work\n")
    first = _forced(engine)
    assert write_trees == ["write-tree"]
    write_trees.clear()
    write(repo / "notes.txt", "more work\n")  # the work tree moves, the index does not
    second = _forced(engine)
    assert write_trees == []
    assert second.index_tree == first.index_tree == _git_staged_tree(repo, tmp_path)
    assert engine.verify(second) == []


def test_a_staged_change_writes_the_tree_again(
    engine: Engine, repo: Path, tmp_path: Path, write_trees: list[str]
) -> None:
    engine.start_task(repo=repo, objective="staged", task_id="t1")
    first = _forced(engine)
    write(repo / "src/app.py", "print('staged')\n")
    git(repo, "add", "src/app.py")
    write_trees.clear()
    second = _forced(engine)
    assert write_trees == ["write-tree"]
    assert second.index_tree == _git_staged_tree(repo, tmp_path) != first.index_tree
    git(repo, "reset", "-q", "src/app.py")  # staged back: the first tree's entries, new bytes
    write_trees.clear()
    third = _forced(engine)
    assert write_trees == ["write-tree"]
    assert third.index_tree == _git_staged_tree(repo, tmp_path) == first.index_tree
    assert engine.verify(third) == []


def test_a_remembered_line_for_another_tree_is_not_used(
    engine: Engine, repo: Path, tmp_path: Path, write_trees: list[str]
) -> None:
    engine.start_task(repo=repo, objective="staged", task_id="t1")
    write(repo / "notes.txt", "unstaged\n")
    first = _forced(engine)
    assert first.worktree_tree != first.index_tree
    store = only_store_repo(engine.paths.root)
    key = index_key(repo / ".git" / "index")
    assert key is not None
    assert (store / REMEMBERED).read_text() == f"{key} {first.index_tree}\n"
    # the current index's key, naming a tree that is not the last checkpoint's staged tree
    # (what another task's line, or a forged one, would say)
    for other in (EMPTY_TREE, first.worktree_tree, "not-a-tree"):
        (store / REMEMBERED).write_text(f"{key} {other}\n")
        write_trees.clear()
        again = _forced(engine)
        assert write_trees == ["write-tree"]
        assert again.index_tree == first.index_tree == _git_staged_tree(repo, tmp_path)


def test_damaged_or_missing_memory_falls_back_to_git(
    engine: Engine, repo: Path, write_trees: list[str]
) -> None:
    engine.start_task(repo=repo, objective="staged", task_id="t1")
    first = _forced(engine)
    store = only_store_repo(engine.paths.root)
    for damage in (b"", b"\xff\xfe garbage", b"one-field", b"a b c d"):
        (store / REMEMBERED).write_bytes(damage)
        write_trees.clear()
        assert _forced(engine).index_tree == first.index_tree
        assert write_trees == ["write-tree"]
    (store / REMEMBERED).unlink()
    write_trees.clear()
    assert _forced(engine).index_tree == first.index_tree
    assert write_trees == ["write-tree"]


def test_an_index_without_a_checksum_is_never_remembered(
    engine: Engine, repo: Path, tmp_path: Path, write_trees: list[str]
) -> None:
    # what git 2.40 and later write under `index.skipHash` (older ones read it as well: they
    # check an index's checksum only in fsck)
    index = repo / ".git" / "index"
    index.write_bytes(index.read_bytes()[:-20] + bytes(20))
    assert "src/app.py" in git(repo, "ls-files")  # git reads it, and does not rewrite it
    assert index_key(repo / ".git" / "index") is None
    engine.start_task(repo=repo, objective="staged", task_id="t1")
    first = _forced(engine)
    write_trees.clear()
    second = _forced(engine)
    assert write_trees == ["write-tree"]
    assert second.index_tree == first.index_tree == _git_staged_tree(repo, tmp_path)


def test_the_key_follows_every_byte_of_the_index(tmp_path: Path) -> None:
    index = tmp_path / "index"
    assert index_key(index) is None  # no index at all
    index.write_bytes(b"DIRC" + bytes(8))
    assert index_key(index) is None  # too short to hold entries and a checksum
    body = b"DIRC" + bytes(100)
    index.write_bytes(body + bytes(range(20)))
    first = index_key(index)
    index.write_bytes(body + bytes(range(1, 21)))
    assert first is not None and index_key(index) not in (None, first)
    index.write_bytes(body + b"\0" + bytes(range(20)))  # one more byte: another size
    assert index_key(index) not in (None, first)
