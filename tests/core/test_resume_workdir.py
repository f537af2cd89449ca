"""After `resume --into DIR`, the task's checkpoints snapshot DIR (issue #15, bug 2).

The resumed agent works in DIR and its hooks say so (`cwd: DIR`); checkpoints of the task's
original repository would record none of that work while attaching DIR's evidence. Only the
task's own directories are ever snapshot: an event's `cwd` elsewhere changes nothing.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from core.engine import CheckpointRequest, Engine
from core.harness.claude_code import claude_code
from core.harness.context import HookContext, HookReply
from core.models import CheckpointReason
from tests.core.corekit import init_repo

SESSION = "7a1c0b2e-5f60-4718-a9b0-c1d2e3f4a5b6"


@pytest.fixture(autouse=True)
def every_turn(isolated_env: dict[str, Path]) -> None:
    """Every turn checkpoints: no minimum interval, and checkpoints that cost nothing, so the
    break-even model (core.engine.pays) always says a turn's pays; only "nothing new" skips."""
    (isolated_env["config"] / "config.toml").write_text(
        "[policy]\nmin_interval_seconds = 0\np_interrupt_per_hour = 1\nmachine_usd_per_hour = 0\n"
        "[economics]\ncreate_usd = 0\nrestore_usd = 0\nvalidation_usd = 0\n"
        "storage_usd_per_gib_month = 0\n"
    )


def hook(name: str, cwd: Path, session: str = SESSION, **env: str) -> HookReply:
    body: dict[str, Any] = {"session_id": session, "cwd": str(cwd), "hook_event_name": name}
    if name == "SessionStart":
        body["source"] = "resume"
    return claude_code(json.dumps(body).encode(), HookContext(env=env))


def changed_paths(engine: Engine, ref: str) -> set[str]:
    return {change.path for change in engine.changed_files(ref)}


def resumed_into(engine: Engine, repo: Path, into: Path) -> str:
    """A task on `repo` with one checkpoint, resumed into `into`; returns the task id."""
    task = engine.start_task(repo=repo, objective="fix the parser")
    (repo / "notes.txt").write_text("draft\n")
    first = engine.checkpoint(task.id, CheckpointRequest(reason=CheckpointReason.MANUAL))
    assert first.checkpoint is not None
    engine.resume(first.checkpoint.ref, into=into)
    assert (into / "notes.txt").read_text() == "draft\n"
    return task.id


def test_a_resumed_sessions_checkpoints_snapshot_the_directory_it_works_in(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    into = tmp_path / "resumed"
    task_id = resumed_into(engine, repo, into)
    (into / "resumed.txt").write_text("work done after the resume\n")
    (repo / "original-only.txt").write_text("not the resumed agent's\n")
    hook("SessionStart", into, PITSTOP_TASK=task_id)
    reply = hook("Stop", into, PITSTOP_TASK=task_id)
    assert reply.recorded[0].startswith("checkpoint "), reply
    latest = engine.list_checkpoints(task_id)[-1]
    paths = changed_paths(engine, latest.ref)
    assert "resumed.txt" in paths and "notes.txt" in paths
    assert "original-only.txt" not in paths
    opened = engine.get_checkpoint(latest.ref)
    assert opened.manifest is not None
    assert opened.manifest["repository"]["toplevel"] == str(into.resolve())
    [move] = [e for e in engine.events(task_id) if e.action == "workdir"]
    assert (move.from_state, move.to_state) == (
        "repository",
        f"resume {_resume_id(engine, task_id)}",
    )
    assert str(into.resolve()) in (move.reason or "")


def _resume_id(engine: Engine, task_id: str) -> int:
    [record] = engine.resume_records(task_id)
    return int(record["id"])


def test_the_move_is_audited_once(engine: Engine, repo: Path, tmp_path: Path) -> None:
    into = tmp_path / "resumed"
    task_id = resumed_into(engine, repo, into)
    for turn in range(3):
        (into / "resumed.txt").write_text(f"turn {turn}\n")
        assert hook("Stop", into, PITSTOP_TASK=task_id).recorded[0].startswith("checkpoint ")
    assert [e.action for e in engine.events(task_id)].count("workdir") == 1


def test_an_operators_checkpoint_follows_the_task_to_its_resume_directory(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    into = tmp_path / "resumed"
    task_id = resumed_into(engine, repo, into)
    (into / "resumed.txt").write_text("work\n")
    result = engine.checkpoint(task_id, CheckpointRequest(note="operator's"))
    assert result.checkpoint is not None
    assert "resumed.txt" in changed_paths(engine, result.checkpoint.ref)


def test_a_new_session_in_the_resume_directory_feeds_the_task(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    """Without PITSTOP_TASK (claude started by hand in DIR): DIR is the task's, not a new task."""
    into = tmp_path / "resumed"
    task_id = resumed_into(engine, repo, into)
    hook("SessionStart", into, session="by-hand")
    assert [t.id for t in engine.list_tasks()] == [task_id]


def test_a_cwd_outside_the_tasks_directories_is_never_snapshot(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    into = tmp_path / "resumed"
    task_id = resumed_into(engine, repo, into)
    hook("SessionStart", into, PITSTOP_TASK=task_id)
    stranger = init_repo(tmp_path / "stranger", {"secret-plan.txt": "someone else's\n"})
    (stranger / "more.txt").write_text("not the task's\n")
    (into / "resumed.txt").write_text("work\n")
    reply = hook("Stop", stranger, PITSTOP_TASK=task_id)
    assert reply.recorded[0].startswith("checkpoint "), reply
    latest = engine.list_checkpoints(task_id)[-1]
    paths = changed_paths(engine, latest.ref)
    assert "resumed.txt" in paths and "more.txt" not in paths
    opened = engine.get_checkpoint(latest.ref)
    assert opened.manifest is not None
    assert opened.manifest["repository"]["toplevel"] == str(into.resolve())


def test_a_rejected_resumes_directory_is_left_behind(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    into = tmp_path / "resumed"
    task_id = resumed_into(engine, repo, into)
    (into / "resumed.txt").write_text("work the operator threw away\n")
    engine.judge_resume(task_id, accepted=False, reason="wrong approach")
    (repo / "back-home.txt").write_text("work in the repository again\n")
    result = engine.checkpoint(task_id, CheckpointRequest(note="after the rejection"))
    assert result.checkpoint is not None
    paths = changed_paths(engine, result.checkpoint.ref)
    assert "back-home.txt" in paths and "resumed.txt" not in paths


def test_a_removed_resume_directory_falls_back_to_the_repository(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    into = tmp_path / "resumed"
    task_id = resumed_into(engine, repo, into)
    subprocess.run(["git", "worktree", "remove", "--force", str(into)], cwd=repo, check=True)
    (repo / "back-home.txt").write_text("work\n")
    result = engine.checkpoint(task_id, CheckpointRequest(note="the worktree is gone"))
    assert result.checkpoint is not None
    assert "back-home.txt" in changed_paths(engine, result.checkpoint.ref)


def test_run_inside_the_repository_the_repository_is_snapshot(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    """`pitstop checkpoint` run in the task's repository (its cwd the hint) snapshots it."""
    into = tmp_path / "resumed"
    task_id = resumed_into(engine, repo, into)
    (into / "resumed.txt").write_text("in the resume's worktree\n")
    (repo / "src" / "here.txt").write_text("in the repository\n")
    result = engine.checkpoint(task_id, CheckpointRequest(workdir_hint=str(repo / "src")))
    assert result.checkpoint is not None
    paths = changed_paths(engine, result.checkpoint.ref)
    assert "src/here.txt" in paths and "resumed.txt" not in paths
