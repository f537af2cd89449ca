"""Checkout materialises a checkpoint byte for byte: contents, exec bits, symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from corekit import dir_state, git, tree_state, write

from core.engine import CheckpointRequest, Engine
from core.errors import NotFoundError, UsageError

BINARY = bytes(range(256)) * 4


def _messy_worktree(repo: Path) -> None:
    write(repo / ".gitignore", "*.tmp\ncache/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    write(repo / "src/app.py", "print('staged')\n")
    git(repo, "add", "src/app.py")
    write(repo / "src/app.py", "print('unstaged on top')\n")
    (repo / "delete_me.txt").unlink()
    (repo / "renamed").mkdir()
    git(repo, "mv", "old_name.txt", "renamed/new_name.txt")
    write(repo / "run.sh", "#!/bin/sh\nexit 0\n", mode=0o755)
    (repo / "src/util.py").chmod(0o755)
    write(repo / "data/blob.bin", BINARY)
    write(repo / "data/empty.bin", b"")
    write(repo / "dir with space/naïve café.txt", "unicode\n")
    write(repo / "crlf.txt", b"windows\r\nline endings\r\n")
    os.symlink("src/app.py", repo / "link_file")
    os.symlink("data", repo / "link_dir")
    os.symlink("does/not/exist", repo / "link_dangling")
    write(repo / "scratch.tmp", "ignored\n")
    write(repo / "cache/big.dat", "ignored too\n")
    write(repo / ".env", "TOKEN=abc\n")
    write(repo / "huge.bin", b"H" * 5000)


def test_checkout_reproduces_the_work_tree_exactly(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    _messy_worktree(repo)
    engine.start_task(repo=repo, objective="round trip", task_id="t1")
    cp = engine.checkpoint("t1", CheckpointRequest(max_file_bytes=4096)).checkpoint
    assert cp is not None
    left_out = [item["path"] for item in cp.manifest["left_out"]]
    assert {"scratch.tmp", "cache/", ".env", "huge.bin"} <= set(left_out)

    target = tmp_path / "restored"
    count = engine.checkout(cp.ref, target)
    expected = tree_state(repo, skip=left_out)
    actual = tree_state(target)
    assert set(actual) == set(expected)
    for path, entry in expected.items():
        assert actual[path] == entry, path
    assert count == len(expected)
    assert not (target / ".git").exists()
    assert (target / "src/util.py").stat().st_mode & 0o100
    assert not (target / "README.md").stat().st_mode & 0o100
    assert os.readlink(target / "link_dangling") == "does/not/exist"


def test_checkout_of_an_earlier_checkpoint_brings_back_its_state(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    engine.start_task(repo=repo, objective="history", task_id="t1")
    write(repo / "progress.txt", "step one\n")
    first = engine.checkpoint("t1").checkpoint
    snapshot_one = tree_state(repo)
    write(repo / "progress.txt", "step two\n")
    (repo / "README.md").unlink()
    second = engine.checkpoint("t1").checkpoint
    assert first and second and first.seq == 1 and second.seq == 2

    engine.checkout("t1@1", tmp_path / "one")
    engine.checkout("t1", tmp_path / "latest")
    assert tree_state(tmp_path / "one") == snapshot_one
    assert (tmp_path / "latest/progress.txt").read_text() == "step two\n"
    assert not (tmp_path / "latest/README.md").exists()


def test_checkout_into_an_empty_existing_directory_is_allowed(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    engine.start_task(repo=repo, objective="empty dir", task_id="t1")
    cp = engine.checkpoint("t1").checkpoint
    assert cp is not None
    target = tmp_path / "empty"
    target.mkdir()
    engine.checkout(cp.ref, target)
    assert tree_state(target) == tree_state(repo)


@pytest.mark.parametrize("occupant", ["file", "hidden", "is-a-file"])
def test_checkout_into_a_non_empty_target_is_refused_and_writes_nothing(
    engine: Engine, repo: Path, tmp_path: Path, occupant: str
) -> None:
    engine.start_task(repo=repo, objective="refuse", task_id="t1")
    cp = engine.checkpoint("t1").checkpoint
    assert cp is not None
    target = tmp_path / "occupied"
    if occupant == "file":
        write(target / "keep.txt", "mine\n")
    elif occupant == "hidden":
        write(target / ".hidden", "mine\n")
    else:
        write(target, "a file where the directory would go\n")
    before = dir_state(tmp_path)

    with pytest.raises(UsageError) as raised:
        engine.checkout(cp.ref, target)
    assert "\n" not in raised.value.message
    assert dir_state(tmp_path) == before


def test_checkout_of_unknown_checkpoint_is_not_found(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    engine.start_task(repo=repo, objective="missing", task_id="t1")
    with pytest.raises(NotFoundError):
        engine.checkout("t1@1", tmp_path / "out")
    with pytest.raises(NotFoundError):
        engine.checkout("t1", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_diff_names_binary_files_and_shows_text_changes(engine: Engine, repo: Path) -> None:
    write(repo / "src/app.py", "print('changed')\n")
    write(repo / "image.bin", BINARY)
    engine.start_task(repo=repo, objective="diff", task_id="t1")
    engine.checkpoint("t1")
    write(repo / "src/util.py", "# second\n")
    engine.checkpoint("t1")

    against_base = engine.diff("t1@2")
    assert "-print('hello')" in against_base and "+print('changed')" in against_base
    assert "Binary files" in against_base and "image.bin" in against_base
    assert "src/util.py" in against_base

    against_previous = engine.diff("t1@2", against="previous")
    assert "src/util.py" in against_previous
    assert "src/app.py" not in against_previous
    assert "image.bin" not in against_previous
    with pytest.raises(UsageError):
        engine.diff("t1@2", against="yesterday")
    changed = {c.path: c for c in engine.changed_files("t1@2")}
    assert changed["image.bin"].is_binary
    assert changed["src/app.py"].added == 1 and changed["src/app.py"].deleted == 1
