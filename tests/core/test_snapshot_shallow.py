"""A task's first checkpoint stores the base commit and its tree, not the repository's history
(issue 21): the store stays far below the repository's `.git`, still pushes to any remote, and
restores, validates, diffs against base, resumes and pushes exactly when the user's objects are
gone."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from corekit import git, git_bytes, init_repo, only_store_repo, tree_state, write

from core.engine import Engine
from core.git.objects import objects_bytes


def _long_history(path: Path, commits: int = 30) -> Path:
    """A repository whose history (incompressible rewrites of one big file) dwarfs its tree."""
    repo = init_repo(path, {"README.md": "# long history\n", "src/app.py": "print('v0')\n"})
    for number in range(commits):
        write(repo / "data.bin", os.urandom(32 * 1024))
        write(repo / "src/app.py", f"print('v{number + 1}')\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"revision {number}")
    return repo


def _dirty(repo: Path) -> None:
    write(repo / "src/app.py", "print('work in progress')\n")
    write(repo / "staged.txt", "STAGED\n")
    git(repo, "add", "staged.txt")
    write(repo / "notes/untracked.md", "untracked\n")


def _missing(git_dir: Path, oid: str) -> bool:
    return git_bytes(git_dir, "cat-file", "--batch-check", input=f"{oid}\n".encode()).endswith(
        b"missing\n"
    )


def test_first_checkpoint_stores_one_tree_not_the_history(engine: Engine, tmp_path: Path) -> None:
    repo = _long_history(tmp_path / "repo")
    git(repo, "gc", "-q")  # the user's history as one pack, as a real clone holds it
    _dirty(repo)
    engine.start_task(repo=repo, objective="shallow", task_id="t1")
    cp = engine.checkpoint("t1").checkpoint
    assert cp is not None and cp.base_commit
    store = only_store_repo(engine.paths.root)

    history = objects_bytes(repo / ".git")
    assert history > 30 * 32 * 1024
    # one 32 KiB data file and a few small ones, not thirty revisions of it
    assert objects_bytes(store) < history / 8, (objects_bytes(store), history)
    assert git_bytes(store, "cat-file", "-t", cp.base_commit).strip() == b"commit"
    assert (store / "shallow").read_text().split() == [cp.base_commit]
    assert _missing(store, git(repo, "rev-parse", f"{cp.base_commit}^").strip())
    assert cp.bytes_added is not None and cp.bytes_added < history / 8
    git_bytes(store, "fsck", "--strict", "--no-dangling")  # a shallow store git finds whole


def test_a_first_checkpoint_pushes_to_a_plain_bare_remote(engine: Engine, tmp_path: Path) -> None:
    """A shallow store pushes: the remote commit does not take the base commit as a parent (a
    history reaching the store's shallow base was refused, `shallow update not allowed`), and
    only the base commit's tree travels, never its history."""
    repo = _long_history(tmp_path / "repo", commits=3)
    _dirty(repo)
    engine.start_task(repo=repo, objective="push it", task_id="t1")
    cp = engine.checkpoint("t1").checkpoint
    assert cp is not None and cp.base_commit
    assert (only_store_repo(engine.paths.root) / "shallow").exists()
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    engine.push(["t1"], str(remote))
    tip = git_bytes(remote, "rev-parse", "refs/pitstop/checkpoints/t1").decode().strip()
    assert git_bytes(remote, "rev-parse", f"{tip}^@").strip() == b""  # no parent
    base_tree = git(repo, "rev-parse", f"{cp.base_commit}^{{tree}}").strip()
    assert git_bytes(remote, "rev-parse", f"{tip}:base").decode().strip() == base_tree
    assert _missing(remote, git(repo, "rev-parse", f"{cp.base_commit}^").strip())
    git_bytes(remote, "fsck", "--strict", "--no-dangling")


def test_the_store_restores_validates_diffs_and_pushes_without_the_users_objects(
    engine: Engine, tmp_path: Path
) -> None:
    repo = _long_history(tmp_path / "repo", commits=10)
    _dirty(repo)
    expected = tree_state(repo)
    engine.start_task(repo=repo, objective="shallow", task_id="t1")
    first = engine.checkpoint("t1").checkpoint
    assert first is not None
    diff_before = engine.diff(first.ref, "base")
    assert "print('work in progress')" in diff_before and "STAGED" in diff_before
    write(repo / "src/app.py", "print('second')\n")
    second = engine.checkpoint("t1").checkpoint
    assert second is not None
    base = first.base_commit
    assert base is not None
    # the user rewinds and collects: the base commit and its history leave their repository
    git(repo, "reset", "-q", "--hard", "HEAD~3")
    git(repo, "clean", "-q", "-fd")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert _missing(repo / ".git", base)

    assert engine.verify(first) == [] and engine.verify(second) == []
    engine.checkout(first.ref, tmp_path / "restored")
    assert tree_state(tmp_path / "restored") == expected
    assert engine.diff(first.ref, "base") == diff_before
    assert "print('second')" in engine.diff(second.ref, "base")
    findings = {f.check: f for f in engine.validate(first.ref, offline=True).findings}
    assert findings["base-commit"].status.value == "warn"
    assert findings["tree-paths"].status.value == "pass"
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    assert engine.push(["t1"], str(remote)).tasks["t1"]["checkpoints_sent"] == 2
    git_bytes(remote, "fsck", "--strict", "--no-dangling")
    plan = engine.resume(first.ref, into=tmp_path / "resumed", accept_stale=True, offline=True)
    assert tree_state(Path(plan.workdir)) == expected
    assert git(Path(plan.workdir), "diff", "--cached", "--name-only").split() == ["staged.txt"]
    # the user's repository is whole after it: the base commit came back as a shallow commit
    # (its history is gone from there), not one whose parent is missing
    assert (repo / ".git/shallow").read_text().split() == [base]
    git(repo, "fsck", "--strict", "--no-dangling")
    git(repo, "log", "--oneline", "--all")


def test_a_resume_from_a_shallow_store_leaves_a_whole_repository_as_it_was(
    engine: Engine, tmp_path: Path
) -> None:
    repo = _long_history(tmp_path / "repo", commits=3)
    _dirty(repo)
    engine.start_task(repo=repo, objective="resume", task_id="t1")
    cp = engine.checkpoint("t1").checkpoint
    assert cp is not None
    assert (only_store_repo(engine.paths.root) / "shallow").exists()
    commits = git(repo, "rev-list", "--count", "HEAD").strip()
    plan = engine.resume(cp.ref, into=tmp_path / "resumed", offline=True)
    assert (Path(plan.workdir) / "src/app.py").read_text() == "print('work in progress')\n"
    assert not (repo / ".git/shallow").exists()  # the user's history untouched, still whole
    assert git(repo, "rev-list", "--count", "pitstop/t1").strip() == commits
    git(repo, "fsck", "--strict", "--no-dangling")


def test_a_shallow_lock_a_killed_fetch_left_does_not_stop_the_next_first_checkpoint(
    engine: Engine, tmp_path: Path
) -> None:
    """git refuses a depth-1 fetch while `shallow.lock` exists; Pitstop fetches one at a time
    per store repository, so an old one it finds while holding its own lock is a killed
    fetch's (a fresh one is git's own, waited for)."""
    repo = _long_history(tmp_path / "repo", commits=2)
    engine.start_task(repo=repo, objective="one", task_id="t1")
    first = engine.checkpoint("t1").checkpoint
    assert first is not None
    store = only_store_repo(engine.paths.root)
    lock = write(store / "shallow.lock", "")  # a fetch killed while recording its commit
    os.utime(lock, (lock.stat().st_atime - 60, lock.stat().st_mtime - 60))
    write(repo / "src/app.py", "print('next base')\n")
    git(repo, "commit", "-q", "-am", "next base")
    engine.start_task(repo=repo, objective="two", task_id="t2")
    second = engine.checkpoint("t2").checkpoint
    assert second is not None and second.base_commit != first.base_commit
    assert sorted((store / "shallow").read_text().split()) == sorted(
        [first.base_commit, second.base_commit]
    )
    assert not (store / "shallow.lock").exists()
    assert engine.verify(second) == []


def test_a_shallow_lock_git_holds_is_waited_for_not_removed(engine: Engine, tmp_path: Path) -> None:
    """A fresh `shallow.lock` is git's own (a `git prune` rewriting the file): the first
    checkpoint waits for its holder to let go rather than take the file from under it."""
    repo = _long_history(tmp_path / "repo", commits=2)
    engine.start_task(repo=repo, objective="one", task_id="t1")
    assert engine.checkpoint("t1").checkpoint is not None
    store = only_store_repo(engine.paths.root)
    write(repo / "src/app.py", "print('next base')\n")
    git(repo, "commit", "-q", "-am", "next base")
    lock = write(store / "shallow.lock", "")
    released: list[bool] = []

    def holder() -> None:
        time.sleep(1.0)
        try:
            lock.unlink()  # the holder lets go: its lock must still be there
            released.append(True)
        except FileNotFoundError:
            released.append(False)

    thread = threading.Thread(target=holder)
    thread.start()
    engine.start_task(repo=repo, objective="two", task_id="t2")
    second = engine.checkpoint("t2").checkpoint
    thread.join()
    assert released == [True]
    assert second is not None and second.base_commit in (store / "shallow").read_text().split()
