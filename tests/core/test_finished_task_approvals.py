"""A finished task's pending requests expire with it: nobody is asked to decide for nothing.

`done` and `cancelled` expire what was still pending, each expiry
audited; a store written before that rule, still holding such requests, keeps them out of the
inbox and refuses a decision on them.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from core.engine import Engine
from core.errors import ConflictError
from core.models import ApprovalState, Risk, TaskStatus


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())


def two_tasks_waiting(engine: Engine, repo: Path) -> tuple[str, str]:
    """Two tasks, each with two pending requests."""
    ids = []
    for objective in ("deploy the api", "migrate the db"):
        task = engine.start_task(repo=repo, objective=objective)
        engine.request_approval(task.id, "deploy to production", risk=Risk.HIGH)
        engine.request_approval(task.id, "rotate the token", risk=Risk.LOW)
        ids.append(task.id)
    return ids[0], ids[1]


@pytest.mark.parametrize("status", [TaskStatus.DONE, TaskStatus.CANCELLED])
def test_finishing_a_task_expires_its_pending_requests_audited(
    engine: Engine, repo: Path, status: TaskStatus
) -> None:
    finished, live = two_tasks_waiting(engine, repo)
    engine.decide_approval(f"{finished}:1", True, "fine")  # decided stays decided
    engine.finish_task(finished, status)

    states = {a.id: a.state for a in engine.list_approvals(finished)}
    assert states == {
        f"{finished}:1": ApprovalState.APPROVED,
        f"{finished}:2": ApprovalState.EXPIRED,
    }
    pending = {a.id for a in engine.list_approvals(pending_only=True)}
    assert pending == {f"{live}:1", f"{live}:2"}  # the other task's requests are untouched
    expiries = [e for e in engine.events(finished) if e.action == "expire"]
    assert [(e.entity_id, e.from_state, e.to_state) for e in expiries] == [
        (f"{finished}:2", "pending", "expired")
    ]
    assert status.value in (expiries[0].reason or "")
    with pytest.raises(ConflictError, match=f"expired when task {finished} became {status.value}"):
        engine.decide_approval(f"{finished}:2", True, "too late")


def test_an_older_stores_pending_request_of_a_finished_task_stays_out_of_the_inbox(
    engine: Engine, repo: Path
) -> None:
    """Written before the rule: the task is cancelled, its request still `pending` in the row."""
    finished, live = two_tasks_waiting(engine, repo)
    engine.db.execute("UPDATE tasks SET status = 'cancelled' WHERE id = ?", [finished])

    pending = {a.id for a in engine.list_approvals(pending_only=True)}
    assert pending == {f"{live}:1", f"{live}:2"}
    first, total = engine.pending_approvals(10)  # the web inbox's page
    assert {a.id for a in first} == {f"{live}:1", f"{live}:2"} and total == 2
    with pytest.raises(ConflictError, match=f"task {finished} is cancelled"):
        engine.decide_approval(f"{finished}:1", True, "deploy it anyway")
    row = engine.db.execute(
        "SELECT state FROM approvals WHERE id = ?", [f"{finished}:1"]
    ).fetchone()
    assert row[0] == "pending"  # the refusal changed nothing
    engine.decide_approval(f"{live}:1", False, "not today")  # a live task's still decides
