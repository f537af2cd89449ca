"""A task's first checkpoint stores the base commit and its tree, not the repository's history:
the store stays far below the repository's `.git`, and restores, validation and resume still
work exactly when the user's objects are gone."""

from __future__ import annotations

import os
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
    parent = git(repo, "rev-parse", f"{cp.base_commit}^").strip()
    assert git_bytes(store, "cat-file", "--batch-check", input=f"{parent}\n".encode()).endswith(
        b"missing\n"
    )
    assert cp.bytes_added is not None and cp.bytes_added < history / 8


def test_a_shallow_store_restores_validates_and_resumes_without_the_users_objects(
    engine: Engine, tmp_path: Path
) -> None:
    repo = _long_history(tmp_path / "repo", commits=10)
    _dirty(repo)
    expected = tree_state(repo)
    engine.start_task(repo=repo, objective="shallow", task_id="t1")
    first = engine.checkpoint("t1").checkpoint
    assert first is not None
    write(repo / "src/app.py", "print('second')\n")
    second = engine.checkpoint("t1").checkpoint
    assert second is not None
    base = first.base_commit
    # the user rewinds and collects: the base commit and its history leave their repository
    git(repo, "reset", "-q", "--hard", "HEAD~3")
    git(repo, "clean", "-q", "-fd")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert git_bytes(
        repo / ".git", "cat-file", "--batch-check", input=f"{base}\n".encode()
    ).endswith(b"missing\n")

    assert engine.verify(first) == [] and engine.verify(second) == []
    engine.checkout(first.ref, tmp_path / "restored")
    assert tree_state(tmp_path / "restored") == expected
    findings = {f.check: f for f in engine.validate(first.ref, offline=True).findings}
    assert findings["base-commit"].status.value == "warn"
    plan = engine.resume(first.ref, into=tmp_path / "resumed", accept_stale=True, offline=True)
    assert tree_state(Path(plan.workdir)) == expected
    assert git(Path(plan.workdir), "diff", "--cached", "--name-only").split() == ["staged.txt"]
