"""Invariant 7 in the engine: bad input raises a clear one-line PitstopError and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from corekit import git, write

from core.engine import CheckpointRequest, Engine, parse_checkpoint_ref
from core.errors import (
    EXIT_USAGE,
    ConflictError,
    NotAGitRepoError,
    NotFoundError,
    PitstopError,
    UsageError,
)
from core.models import Budget, TaskStatus


def _one_line(error: PitstopError) -> None:
    assert error.message and "\n" not in error.message
    assert "Traceback" not in error.message


def _task_count(engine: Engine) -> int:
    return engine.db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]


def test_start_task_on_a_plain_directory(engine: Engine, tmp_path: Path) -> None:
    plain = tmp_path / "not-a-repo"
    plain.mkdir()
    with pytest.raises(NotAGitRepoError) as raised:
        engine.start_task(repo=plain, objective="x")
    _one_line(raised.value)
    assert raised.value.exit_code == EXIT_USAGE
    assert _task_count(engine) == 0


def test_start_task_on_a_missing_path(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(NotAGitRepoError) as raised:
        engine.start_task(repo=tmp_path / "nowhere", objective="x")
    _one_line(raised.value)
    assert "does not exist" in raised.value.message
    assert _task_count(engine) == 0


def test_start_task_on_a_bare_repository(engine: Engine, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    bare.mkdir()
    git(bare, "init", "-q", "--bare")
    with pytest.raises(NotAGitRepoError):
        engine.start_task(repo=bare, objective="x")
    assert _task_count(engine) == 0


def test_start_task_resolves_the_top_level(engine: Engine, repo: Path) -> None:
    task = engine.start_task(repo=repo / "src", objective="from a subdirectory")
    assert Path(task.repo_root) == repo.resolve()
    from_file = engine.start_task(repo=repo / "src/app.py", objective="from a file")
    assert from_file.store_repo == task.store_repo


@pytest.mark.parametrize(
    "bad_id", ["Upper", "has space", "-leading", "a/b", "x" * 41, "a..b", "end.", "x.lock", ""]
)
def test_bad_task_ids_are_refused(engine: Engine, repo: Path, bad_id: str) -> None:
    if bad_id == "":
        task = engine.start_task(repo=repo, objective="Fix the login page", task_id=bad_id)
        assert task.id.startswith("fix-the-login-")  # empty means "generate one"
        return
    with pytest.raises(UsageError) as raised:
        engine.start_task(repo=repo, objective="x", task_id=bad_id)
    _one_line(raised.value)
    assert _task_count(engine) == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"objective": "   "},
        {"objective": "x", "credentials": ("NOT-A-NAME",)},
        {"objective": "x", "budget": Budget(tokens=-1)},
        {"objective": "x", "budget": Budget(usd=-0.01)},
    ],
    ids=["empty-objective", "bad-credential", "negative-tokens", "negative-usd"],
)
def test_bad_task_fields_are_refused(engine: Engine, repo: Path, kwargs: dict) -> None:
    with pytest.raises(UsageError) as raised:
        engine.start_task(repo=repo, **kwargs)
    _one_line(raised.value)
    assert _task_count(engine) == 0


def test_duplicate_task_id_is_a_conflict(engine: Engine, repo: Path) -> None:
    engine.start_task(repo=repo, objective="first", task_id="same")
    with pytest.raises(ConflictError) as raised:
        engine.start_task(repo=repo, objective="second", task_id="same")
    _one_line(raised.value)
    assert engine.get_task("same").objective == "first"
    assert _task_count(engine) == 1
    assert len([e for e in engine.events() if e.action == "start"]) == 1


def test_unknown_task_is_not_found_everywhere(engine: Engine, tmp_path: Path) -> None:
    calls: list[Callable[[], object]] = [
        lambda: engine.get_task("ghost"),
        lambda: engine.checkpoint("ghost"),
        lambda: engine.list_checkpoints("ghost"),
        lambda: engine.get_checkpoint("ghost@1"),
        lambda: engine.get_checkpoint("ghost"),
        lambda: engine.finish_task("ghost", TaskStatus.DONE),
        lambda: engine.events("ghost"),
        lambda: engine.diff("ghost@1"),
        lambda: engine.checkout("ghost@1", tmp_path / "out"),
    ]
    for call in calls:
        with pytest.raises(NotFoundError) as raised:
            call()
        _one_line(raised.value)
        assert raised.value.exit_code == EXIT_USAGE
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("final", [TaskStatus.DONE, TaskStatus.CANCELLED])
def test_checkpoint_of_a_finished_task_is_a_conflict(
    engine: Engine, repo: Path, final: TaskStatus
) -> None:
    engine.start_task(repo=repo, objective="finish", task_id="t1")
    engine.finish_task("t1", final)
    with pytest.raises(ConflictError) as raised:
        engine.checkpoint("t1", CheckpointRequest(force=True))
    _one_line(raised.value)
    assert engine.list_checkpoints("t1") == []


def test_unknown_checkpoint_sequence(engine: Engine, repo: Path) -> None:
    engine.start_task(repo=repo, objective="x", task_id="x")
    with pytest.raises(NotFoundError):
        engine.get_checkpoint("x")  # no checkpoints yet
    engine.checkpoint("x")
    with pytest.raises(NotFoundError) as raised:
        engine.get_checkpoint("x@99")
    _one_line(raised.value)


@pytest.mark.parametrize("ref", ["a@b@c", "a@", "@1", "a@-1", "a@1.5", "a b@1", "", "a@b"])
def test_malformed_checkpoint_refs(engine: Engine, ref: str) -> None:
    with pytest.raises(UsageError) as raised:
        engine.get_checkpoint(ref)
    _one_line(raised.value)
    with pytest.raises(UsageError):
        parse_checkpoint_ref(ref)


def test_checkpoint_refs_parse() -> None:
    assert parse_checkpoint_ref("fix-login-3f2a@2") == ("fix-login-3f2a", 2)
    assert parse_checkpoint_ref("t1") == ("t1", None)
    assert parse_checkpoint_ref("t1@latest") == ("t1", None)


def test_unresolved_merge_conflict_is_refused(engine: Engine, repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    write(repo / "README.md", "other side\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "main")
    write(repo / "README.md", "main side\n")
    git(repo, "commit", "-q", "-am", "main")
    merge = __import__("subprocess").run(
        ["git", "merge", "-q", "other"], cwd=repo, capture_output=True
    )
    assert merge.returncode != 0
    engine.start_task(repo=repo, objective="conflict", task_id="t1")
    with pytest.raises(UsageError) as raised:
        engine.checkpoint("t1")
    _one_line(raised.value)
    assert "README.md" in raised.value.message
    assert engine.list_checkpoints("t1") == []


def test_deleted_repository_is_a_clear_error(engine: Engine, repo: Path) -> None:
    import shutil

    engine.start_task(repo=repo, objective="gone", task_id="t1")
    shutil.rmtree(repo)
    with pytest.raises(NotAGitRepoError) as raised:
        engine.checkpoint("t1")
    _one_line(raised.value)
    assert engine.list_checkpoints("t1") == []
