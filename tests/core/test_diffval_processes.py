"""The git processes of a whole `pitstop diff TASK@SEQ` and `pitstop validate TASK@SEQ
--offline`, pinned (issue 21: each within 2x of `git diff HEAD` / `git status`; a process is
a few milliseconds of that budget). A `git` first on PATH logs every call the command makes,
so one that creeps back (a walk of the trees, a `--version`, a `rev-parse` for a tree id) fails
here with the list of calls."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from corekit import write

from core.engine import Engine
from core.models import CheckpointState


@pytest.fixture
def logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` wrapper first on PATH appending each call's arguments to the returned log."""
    real = shutil.which("git")
    assert real
    bin_dir = tmp_path / "logging-bin"
    bin_dir.mkdir()
    log = tmp_path / "git-calls.log"
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def calls_of(
    log: Path, *args: str, cwd: Path
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run `pitstop ARGS` (its entry point) and return it with the git calls it made."""
    log.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "tui.launch", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    return done, log.read_text().splitlines()


def test_diff_and_offline_validate_start_few_git_processes(
    engine: Engine, repo: Path, logged: Path
) -> None:
    engine.start_task(repo=repo, objective="count", task_id="t1")
    write(repo / "src/app.py", "print('changed')\n")
    write(repo / "notes.txt", "untracked\n")
    result = engine.checkpoint("t1")
    assert result.checkpoint is not None and result.checkpoint.state is CheckpointState.COMPLETE
    ref = result.checkpoint.ref

    first, calls = calls_of(logged, "diff", ref, cwd=repo)  # walks the trees, records it
    assert first.returncode == 0 and "+print('changed')" in first.stdout, first
    assert len(calls) <= 2, calls  # at most a `rev-list` beside the diff (none on a small tree)

    diff, calls = calls_of(logged, "diff", ref, cwd=repo)
    assert (diff.returncode, diff.stdout) == (0, first.stdout), diff
    # The text itself, and nothing else: the checkpoint was read whole before and its files
    # are as they were (no walk of its trees), and git peels the base commit to its tree.
    assert [call.split()[0] for call in calls] == ["diff"], calls

    validate, calls = calls_of(logged, "validate", ref, "--offline", cwd=repo)
    assert validate.returncode == 0 and "verdict: ready" in validate.stdout, validate
    # The task's repository located, the two snapshot trees' paths against the base (one
    # diff-tree), the base commit in the repository, the branch: no walk, no `cat-file` of the
    # header, no `git --version` (cached beside the store), no second diff-tree. They are
    # started together (`core.restore.ahead`), so the log holds them in any order; a call
    # that validation made again instead of taking over the one started ahead shows twice.
    assert sorted(call.split()[0] for call in calls) == [
        "cat-file",
        "diff-tree",
        "rev-parse",
        "rev-parse",
    ], calls
    assert any(call.startswith("diff-tree --stdin") for call in calls), calls
