"""Which task a new harness session feeds (issue #15, bug 7).

Someone registers a task (`pitstop task start`), then starts Claude Code in the repository: the
session must feed that task, not start a second one. A new session attaches only when that is
unambiguous: exactly one open task on the repository with no live session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from core.engine import Engine
from core.harness.claude_code import claude_code
from core.harness.context import HookContext, HookReply
from core.models import TaskStatus

ROOT = Path(__file__).resolve().parents[2]


def event(name: str, cwd: Path, session: str, **fields: Any) -> bytes:
    body = {
        "session_id": session,
        "transcript_path": str(cwd / f"{session}.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": name,
        **fields,
    }
    return json.dumps(body).encode()


def run(raw: bytes) -> HookReply:
    return claude_code(raw, HookContext())


def pitstop(*args: str, cwd: Path, data: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.launch", *args],
        input=data.decode() if data is not None else None,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def test_a_session_feeds_the_task_registered_on_its_repository(repo: Path) -> None:
    started = pitstop(
        "task", "start", "--repo", ".", "--objective", "fix the parser", "--json", cwd=repo
    )
    assert started.returncode == 0, started.stderr
    task_id = json.loads(started.stdout)["id"]
    (repo / "src").mkdir(exist_ok=True)
    hooked = pitstop(
        "hook",
        "claude-code",
        cwd=repo,
        data=event("SessionStart", repo / "src", "s-one", source="startup"),
    )
    assert hooked.returncode == 0, hooked.stderr
    ran = pitstop(
        "hook",
        "claude-code",
        cwd=repo,
        data=event(
            "PostToolUse",
            repo,
            "s-one",
            tool_name="Bash",
            tool_input={"command": "pytest -q"},
            tool_response={"stdout": "3 passed in 0.1s\n", "stderr": ""},
        ),
    )
    assert ran.returncode == 0, ran.stderr
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.id == task_id and task.status is TaskStatus.RUNNING
        assert engine.harness_session(task_id)["session_id"] == "s-one"  # type: ignore[index]
        assert len(engine.list_evidence(task_id)) == 1


def test_a_session_whose_predecessor_ended_continues_its_task(repo: Path) -> None:
    run(event("SessionStart", repo, "s-one"))
    run(event("SessionEnd", repo, "s-one", reason="exit"))
    run(event("SessionStart", repo, "s-two"))
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert engine.harness_session(task.id)["session_id"] == "s-two"  # type: ignore[index]


def test_a_second_live_session_gets_a_task_of_its_own(repo: Path) -> None:
    """Two agents in one repository at once: the second must not feed the first's task."""
    run(event("SessionStart", repo, "s-one"))
    run(event("SessionStart", repo, "s-two"))
    with Engine() as engine:
        tasks = engine.list_tasks()
        assert len(tasks) == 2
        assert {engine.harness_session(t.id)["session_id"] for t in tasks} == {  # type: ignore[index]
            "s-one",
            "s-two",
        }


def test_two_free_tasks_are_ambiguous(repo: Path) -> None:
    with Engine() as engine:
        first = engine.start_task(repo=repo, objective="one")
        second = engine.start_task(repo=repo, objective="two")
    run(event("SessionStart", repo, "s-one"))
    with Engine() as engine:
        tasks = engine.list_tasks()
        assert len(tasks) == 3
        [new] = [t for t in tasks if t.id not in (first.id, second.id)]
        assert engine.harness_session(new.id)["session_id"] == "s-one"  # type: ignore[index]


def test_a_finished_task_or_another_repositorys_is_not_taken(repo: Path, make_repo: Any) -> None:
    other = make_repo("other", {"a.txt": "a\n"})
    with Engine() as engine:
        done = engine.start_task(repo=repo, objective="shipped")
        engine.finish_task(done.id, TaskStatus.DONE)
        elsewhere = engine.start_task(repo=other, objective="elsewhere")
    run(event("SessionStart", repo, "s-one"))
    with Engine() as engine:
        assert engine.get_task(done.id).status.is_final
        assert engine.harness_session(done.id) is None
        assert engine.harness_session(elsewhere.id) is None
        assert len(engine.list_tasks()) == 3
