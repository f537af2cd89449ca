"""Checkpoint bookkeeping: no-op skips, carried steps, consumption, task status, audit trail."""

from __future__ import annotations

from pathlib import Path

import pytest
from corekit import git, write

from core.engine import CheckpointRequest, Engine
from core.models import CheckpointReason, CheckpointState, TaskStatus


def _rows(engine: Engine, task_id: str = "t1") -> int:
    return engine.db.execute(
        "SELECT COUNT(*) FROM checkpoints WHERE task_id = ?", [task_id]
    ).fetchone()[0]


@pytest.fixture
def task(engine: Engine, repo: Path) -> str:
    engine.start_task(repo=repo, objective="flow", task_id="t1")
    first = engine.checkpoint("t1")
    assert first.checkpoint is not None and first.skipped is None
    return "t1"


def test_unchanged_checkpoint_is_skipped_without_a_row(engine: Engine, task: str) -> None:
    events_before = len(engine.events(task))
    result = engine.checkpoint(task)
    assert result.checkpoint is None
    assert result.skipped and "t1@1" in result.skipped and "--force" in result.skipped
    assert _rows(engine) == 1
    assert len(engine.events(task)) == events_before
    assert [c.seq for c in engine.list_checkpoints(task)] == [1]


def test_forced_checkpoint_is_recorded(engine: Engine, task: str) -> None:
    result = engine.checkpoint(task, CheckpointRequest(force=True))
    assert result.skipped is None and result.checkpoint is not None
    assert result.checkpoint.seq == 2
    assert result.checkpoint.worktree_tree == engine.get_checkpoint("t1@1").worktree_tree
    assert _rows(engine) == 2


@pytest.mark.parametrize(
    "request_",
    [
        CheckpointRequest(note="reached a milestone"),
        CheckpointRequest(done=("write tests",)),
        CheckpointRequest(todo=("ship it",)),
        CheckpointRequest(tokens_used=1234),
        CheckpointRequest(usd_used=0.5),
    ],
    ids=["note", "done", "todo", "tokens", "usd"],
)
def test_something_said_is_not_a_noop(
    engine: Engine, task: str, request_: CheckpointRequest
) -> None:
    result = engine.checkpoint(task, request_)
    assert result.checkpoint is not None, result.skipped
    assert _rows(engine) == 2


def test_same_consumption_again_is_a_noop(engine: Engine, task: str) -> None:
    assert engine.checkpoint(task, CheckpointRequest(tokens_used=10)).checkpoint is not None
    assert engine.checkpoint(task, CheckpointRequest(tokens_used=10)).checkpoint is None


@pytest.mark.parametrize("change", ["edit", "stage", "untracked", "chmod", "commit"])
def test_any_work_tree_change_is_not_a_noop(
    engine: Engine, task: str, repo: Path, change: str
) -> None:
    if change == "edit":
        write(repo / "README.md", "# edited\n")
    elif change == "stage":
        write(repo / "README.md", "# edited\n")
        engine.checkpoint(task)
        git(repo, "add", "README.md")  # same work tree, new staged state
    elif change == "untracked":
        write(repo / "new.txt", "n\n")
    elif change == "chmod":
        (repo / "README.md").chmod(0o755)
    else:
        git(repo, "commit", "-q", "--allow-empty", "-m", "moved base")
    result = engine.checkpoint(task)
    assert result.checkpoint is not None, result.skipped


def test_ignored_file_changes_stay_a_noop(engine: Engine, repo: Path) -> None:
    write(repo / ".gitignore", "*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore logs")
    engine.start_task(repo=repo, objective="ignored", task_id="t2")
    assert engine.checkpoint("t2").checkpoint is not None
    write(repo / "noise.log", "changes all the time\n")
    assert engine.checkpoint("t2").checkpoint is None


def test_steps_carry_forward(engine: Engine, task: str, repo: Path) -> None:
    cp = engine.checkpoint(task, CheckpointRequest(todo=("a", "b", "c"))).checkpoint
    assert cp and cp.manifest["steps"] == {"done": [], "todo": ["a", "b", "c"]}

    cp = engine.checkpoint(task, CheckpointRequest(done=("a",))).checkpoint
    assert cp and cp.manifest["steps"] == {"done": ["a"], "todo": ["b", "c"]}

    cp = engine.checkpoint(task, CheckpointRequest(done=("b", "a"), todo=("x", "b"))).checkpoint
    assert cp and cp.manifest["steps"] == {"done": ["a", "b"], "todo": ["x"]}

    cp = engine.checkpoint(task, CheckpointRequest(note="only a note")).checkpoint
    assert cp and cp.manifest["steps"] == {"done": ["a", "b"], "todo": ["x"]}

    write(repo / "README.md", "# changed\n")
    cp = engine.checkpoint(task).checkpoint
    assert cp and cp.manifest["steps"] == {"done": ["a", "b"], "todo": ["x"]}
    assert engine.get_checkpoint(cp.ref).manifest["steps"]["done"] == ["a", "b"]


def test_consumption_and_budget_in_manifest(engine: Engine, repo: Path) -> None:
    from core.models import Budget

    engine.start_task(
        repo=repo, objective="budget", task_id="b1", budget=Budget(tokens=1000, usd=2.5, minutes=30)
    )
    cp = engine.checkpoint("b1", CheckpointRequest(tokens_used=300, usd_used=0.75)).checkpoint
    assert cp is not None
    budget = cp.manifest["budget"]
    assert budget["tokens"] == {"limit": 1000, "used": 300}
    assert budget["usd"] == {"limit": 2.5, "used": 0.75}
    assert budget["minutes"]["limit"] == 30
    assert engine.get_task("b1").tokens_used == 300
    cp = engine.checkpoint("b1", CheckpointRequest(note="later")).checkpoint
    assert cp and cp.manifest["budget"]["tokens"]["used"] == 300  # carried


@pytest.mark.parametrize("field", ["tokens_used", "usd_used"])
def test_negative_consumption_is_refused(engine: Engine, task: str, field: str) -> None:
    from core.errors import UsageError

    with pytest.raises(UsageError):
        engine.checkpoint(task, CheckpointRequest(**{field: -1}))  # type: ignore[arg-type]
    assert _rows(engine) == 1


def test_reason_moves_task_status_and_is_audited(engine: Engine, task: str) -> None:
    engine.checkpoint(task, CheckpointRequest(reason=CheckpointReason.BEFORE_WAIT, force=True))
    assert engine.get_task(task).status is TaskStatus.WAITING
    engine.checkpoint(task, CheckpointRequest(reason=CheckpointReason.MILESTONE, force=True))
    assert engine.get_task(task).status is TaskStatus.RUNNING
    engine.checkpoint(task, CheckpointRequest(reason=CheckpointReason.INTERRUPT, force=True))
    assert engine.get_task(task).status is TaskStatus.PAUSED

    events = engine.events(task)
    completes = [e for e in events if e.entity == "checkpoint" and e.action == "complete"]
    assert [e.entity_id for e in completes] == ["t1@1", "t1@2", "t1@3", "t1@4"]
    assert all(e.from_state == "writing" and e.to_state == "complete" for e in completes)
    statuses = [(e.from_state, e.to_state) for e in events if e.action == "status"]
    assert statuses == [("running", "waiting"), ("waiting", "running"), ("running", "paused")]
    with pytest.raises(Exception, match="append-only"):
        engine.db.execute("UPDATE events SET actor = 'mallory'")


def test_list_and_get_checkpoints(engine: Engine, task: str) -> None:
    engine.checkpoint(task, CheckpointRequest(force=True, note="second"))
    listed = engine.list_checkpoints(task)
    assert [c.seq for c in listed] == [1, 2]
    assert all(c.state is CheckpointState.COMPLETE for c in listed)
    assert all(c.manifest is None for c in listed)  # the list stays light
    assert engine.get_checkpoint("t1").seq == 2
    assert engine.get_checkpoint("t1@latest").seq == 2
    assert engine.get_checkpoint("t1@1").note is None
    assert engine.get_checkpoint("t1@2").note == "second"
    summary = {s.task.id: s for s in engine.task_summaries()}["t1"]
    assert summary.checkpoint_count == 2


def test_finished_task_keeps_its_status(engine: Engine, task: str) -> None:
    from core.errors import ConflictError, UsageError

    done = engine.finish_task(task, TaskStatus.DONE, reason="merged")
    assert done.status is TaskStatus.DONE
    with pytest.raises(ConflictError):
        engine.finish_task(task, TaskStatus.CANCELLED)
    with pytest.raises(UsageError):
        engine.finish_task(task, TaskStatus.PAUSED)
    assert engine.get_task(task).status is TaskStatus.DONE
