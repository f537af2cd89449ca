"""Git calls started ahead (`core.git.run.start_ahead`, `core.restore.ahead`): a validation
that starts its checks' calls together must say exactly what one asking them one after another
says, take over every call it started, and leave no process behind when a check never asks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from corekit import git, write

from core.engine import Engine
from core.engine.validate import validation_inputs
from core.git import run as git_run
from core.git.run import AHEAD_INPUT_MAX, drop_ahead, run_git, start_ahead
from core.restore.validate import run_checks


@pytest.fixture(autouse=True)
def nothing_left() -> Iterator[None]:
    """Each test starts with no call waiting, and must leave none."""
    assert not git_run._ahead
    yield
    assert not git_run._ahead, "a call started ahead was left running"


def test_a_call_started_ahead_answers_as_the_call_itself(repo: Path) -> None:
    args = ["rev-parse", "HEAD", "HEAD^{tree}"]
    expected = run_git(args, cwd=repo)
    start_ahead(args, cwd=repo)
    assert len(git_run._ahead) == 1
    assert run_git(args, cwd=repo) == expected
    assert not git_run._ahead  # taken over, not run twice


def test_a_started_call_is_only_taken_by_the_same_call(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    start_ahead(["rev-parse", "--show-toplevel"], cwd=other)
    # Same arguments, another directory: its own answer, not the other repository's.
    assert run_git(["rev-parse", "--show-toplevel"], cwd=repo).decode().strip() == str(repo)
    assert len(git_run._ahead) == 1
    drop_ahead()


def test_a_failing_call_started_ahead_fails_as_it_would(repo: Path) -> None:
    args = ["rev-parse", "--verify", "0" * 40 + "^{commit}"]
    alone = git_run.run_git_process(args, cwd=repo)
    start_ahead(args, cwd=repo)
    done = git_run.run_git_process(args, cwd=repo)
    assert (done.returncode, done.stdout, done.stderr) == (
        alone.returncode,
        alone.stdout,
        alone.stderr,
    )
    assert done.returncode != 0 and done.stderr


def test_calls_nobody_takes_are_stopped(repo: Path) -> None:
    # `cat-file --batch` waits for input that never comes: it runs until stopped.
    start_ahead(["cat-file", "--batch"], cwd=repo)
    (process,) = git_run._ahead.values()
    drop_ahead()
    assert process.poll() is not None
    assert process.stdout is not None and process.stdout.closed


def test_an_input_larger_than_the_pipe_is_not_started_ahead(repo: Path) -> None:
    start_ahead(["hash-object", "--stdin"], cwd=repo, input=b"x" * (AHEAD_INPUT_MAX + 1))
    assert not git_run._ahead
    start_ahead(["hash-object", "--stdin"], cwd=repo, input=b"x" * AHEAD_INPUT_MAX)
    done = git_run.run_git(["hash-object", "--stdin"], cwd=repo, input=b"x" * AHEAD_INPUT_MAX)
    assert len(done.strip()) == 40


def _findings(engine: Engine, ref: str, *, ahead: bool) -> list[tuple[str, str, str]]:
    inputs = validation_inputs(engine.session, ref, None, True, ahead=ahead)
    try:
        report = run_checks(inputs)
    finally:
        drop_ahead()
    return [(f.check, f.status.value, f.message) for f in report.findings]


def test_validation_with_calls_ahead_finds_what_it_finds_without(
    engine: Engine, repo: Path
) -> None:
    engine.start_task(repo=repo, objective="count", task_id="t1")
    write(repo / "src/app.py", "print('changed')\n")
    write(repo / "notes.txt", "untracked\n")
    result = engine.checkpoint("t1")
    assert result.checkpoint is not None
    ref = result.checkpoint.ref
    ready = _findings(engine, ref, ahead=True)
    assert ready == _findings(engine, ref, ahead=False)
    assert all(status == "pass" for _check, status, _message in ready if _check == "branch")
    # The branch moves under the checkpoint, touching its changed file: the branch check's
    # answer changes, read through the call started ahead just as through its own.
    git(repo, "stash", "-q", "-u")
    write(repo / "src/app.py", "print('upstream')\n")
    git(repo, "commit", "-qam", "upstream")
    stale = _findings(engine, ref, ahead=True)
    assert stale == _findings(engine, ref, ahead=False)
    assert stale != ready
    assert ("branch", "fail") in {(check, status) for check, status, _m in stale}


def test_validation_of_a_task_whose_repository_is_gone_starts_nothing_it_leaves(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    engine.start_task(repo=repo, objective="count", task_id="t1")
    write(repo / "notes.txt", "untracked\n")
    result = engine.checkpoint("t1")
    assert result.checkpoint is not None
    os.rename(repo, tmp_path / "moved")
    report = engine.validate(result.checkpoint.ref, offline=True)
    assert report.verdict.value != "ready"
