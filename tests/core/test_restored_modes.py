"""Restored files keep their recorded modes under the user's umask; the store stays private.

git runs under umask 077 so that what it writes into the store is private (invariant 9); a
restore writes the user's own files, which must come back as they were: 0644 stays 0644 and
0755 stays 0755 under the usual umask 022.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from corekit import write

from core.engine import Engine

PLAIN = ("README.md", "src/app.py", "notes/new.txt")
EXECUTABLE = ("run.sh",)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most users have: files 0644, executables 0755."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _paused(engine: Engine, repo: Path) -> str:
    """A task whose checkpoint holds a changed, a new, an unchanged and an executable file."""
    (repo / "README.md").chmod(0o644)
    write(repo / "src/app.py", "print('changed')\n", mode=0o644)
    write(repo / "notes/new.txt", "untracked\n", mode=0o644)
    write(repo / "run.sh", "#!/bin/sh\nexit 0\n", mode=0o755)
    engine.start_task(repo=repo, objective="modes", task_id="t1")
    checkpoint = engine.checkpoint("t1").checkpoint
    assert checkpoint is not None
    return checkpoint.ref


def _modes(root: Path) -> dict[str, int]:
    return {path: stat.S_IMODE((root / path).stat().st_mode) for path in (*PLAIN, *EXECUTABLE)}


EXPECTED = {**dict.fromkeys(PLAIN, 0o644), **dict.fromkeys(EXECUTABLE, 0o755)}


def _store_is_private(store_root: Path) -> None:
    for path in store_root.rglob("*"):
        if path.is_symlink():
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path.relative_to(store_root)} is {oct(mode)}"


def test_checkout_keeps_modes(engine: Engine, repo: Path, store_root: Path, tmp_path: Path) -> None:
    ref = _paused(engine, repo)
    target = tmp_path / "restored"
    engine.checkout(ref, target)
    assert _modes(target) == EXPECTED
    _store_is_private(store_root)


def test_resume_into_a_new_worktree_keeps_modes(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    ref = _paused(engine, repo)
    plan = engine.resume(ref, into=tmp_path / "resumed")
    assert _modes(plan.workdir) == EXPECTED
    _store_is_private(store_root)


def test_resume_in_place_keeps_modes(engine: Engine, repo: Path, store_root: Path) -> None:
    ref = _paused(engine, repo)
    write(repo / "src/app.py", "print('hello')\n")
    for path in ("notes/new.txt", "run.sh"):
        (repo / path).unlink()
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=repo, check=True)
    plan = engine.resume(ref, in_place=True)
    assert _modes(plan.workdir) == EXPECTED
    index = stat.S_IMODE((repo / ".git/index").stat().st_mode)
    assert index == 0o644, "the user's index follows the user's umask"
    _store_is_private(store_root)
