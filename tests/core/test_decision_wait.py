"""Waiting for a decision never misses one: a permission hook holds Claude Code's prompt open
until someone decides, and a decision made while the wait arms must answer it at once.

The race CI hit: the hook read the approval (pending), the approver decided, and only then did
the watcher open its connection, whose first `data_version` already included the decision; no
later commit came, so the hook slept out its whole wait with the answer in the store.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from core.engine import Engine
from core.engine import approvals as engine_approvals
from core.models import ApprovalState
from core.store import watch

WAIT_SECONDS = 30.0


def test_a_decision_made_as_the_wait_arms_answers_at_once(
    engine: Engine, repo: Path, store_root: Path, monkeypatch
) -> None:
    task = engine.start_task(repo=repo, objective="decide while the hook arms", task_id="arm")
    asked = engine.request_approval(task.id, "deploy to production", expires_in="10m")
    opened = watch.open_database

    def decided_first(database: Path):  # the approver commits just before the watcher opens
        with Engine(store_root, actor="approver") as approver:
            approver.decide_approval(asked.id, False, "not today")
        return opened(database)

    monkeypatch.setattr(watch, "open_database", decided_first)
    started = time.monotonic()
    answer = engine.wait_for_decision(asked.id, WAIT_SECONDS)
    assert answer.state is ApprovalState.REJECTED and answer.reason == "not today"
    assert time.monotonic() - started < WAIT_SECONDS / 3  # answered, not timed out


def test_a_decision_after_the_first_read_answers_at_once(
    engine: Engine, repo: Path, store_root: Path, monkeypatch
) -> None:
    """The other side of the same window: decided right after the hook's first read."""
    task = engine.start_task(repo=repo, objective="decide after the read", task_id="read")
    asked = engine.request_approval(task.id, "merge the PR", expires_in="10m")
    real_get = engine_approvals.get_approval
    reads = []

    def read_then_decide(session, approval_id):
        current = real_get(session, approval_id)
        if not reads:
            with Engine(store_root, actor="approver") as approver:
                approver.decide_approval(asked.id, True, "go")
        reads.append(current.state)
        return current

    monkeypatch.setattr(engine_approvals, "get_approval", read_then_decide)
    started = time.monotonic()
    answer = engine.wait_for_decision(asked.id, WAIT_SECONDS)
    assert reads[0] is ApprovalState.PENDING  # the hook did read it pending first
    assert answer.state is ApprovalState.APPROVED
    assert time.monotonic() - started < WAIT_SECONDS / 3


def test_the_armed_watch_yields_once_then_only_for_other_commits(tmp_path: Path) -> None:
    with Engine(tmp_path / "store") as engine:
        database = engine.paths.database
    stop = threading.Event()
    commits = watch.store_commits(database, stop, armed=True)
    first = next(commits)  # at once, with no commit anywhere
    assert isinstance(first, int)
    stop.set()
    assert list(commits) == []
