"""A task's first checkpoint stores the base commit with its history, so the store can push it
anywhere, and restores, validation and resume work exactly when the user's objects are gone."""

from __future__ import annotations

import os
from pathlib import Path

from corekit import git, git_bytes, init_repo, only_store_repo, tree_state, write

from core.engine import Engine


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


def test_a_first_checkpoint_pushes_to_a_plain_bare_remote(engine: Engine, tmp_path: Path) -> None:
    """A store that took a first checkpoint can push it: a shallow store (the fetch at depth 1
    this issue tried) was refused by any remote with `shallow update not allowed`."""
    repo = _long_history(tmp_path / "repo", commits=3)
    _dirty(repo)
    engine.start_task(repo=repo, objective="push it", task_id="t1")
    assert engine.checkpoint("t1").checkpoint is not None
    assert not (only_store_repo(engine.paths.root) / "shallow").exists()
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    engine.push(["t1"], str(remote))
    assert git_bytes(remote, "rev-parse", "refs/pitstop/checkpoints/t1").strip()


def test_the_store_restores_validates_and_resumes_without_the_users_objects(
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
