"""A listing asks the database a fixed number of queries, however many rows it lists (issue 22).

Each row's sealed text opens with its task's key; the keys and scopes of every task a listing
shows are read in one query with its rows, not two queries per task as each row is opened.
Counted with SQLite's own trace on the engine's real connection.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from core.engine import Engine
from core.store import UNREADABLE


def grow(engine: Engine, repo: Path, tasks: int) -> None:
    """Bring the store to `tasks` tasks, each waiting on one pending approval."""
    for index in range(len(engine.list_tasks()), tasks):
        engine.start_task(repo=repo, objective=f"objective {index}", task_id=f"t{index}")
        engine.request_approval(f"t{index}", f"push branch {index}")


def queries(engine: Engine, listing: Callable[[Engine], object]) -> list[str]:
    statements: list[str] = []
    with Engine() as fresh:  # nothing cached from the writes above
        fresh.db.conn.set_trace_callback(statements.append)
        listing(fresh)
        fresh.db.conn.set_trace_callback(None)
    return statements


LISTINGS: dict[str, Callable[[Engine], object]] = {
    "approval list --pending": lambda e: e.list_approvals(None, pending_only=True),
    "approval list": lambda e: e.list_approvals(None),
    "task list": lambda e: e.task_summaries(),
    "dashboard first screen": lambda e: e.first_task_summaries(50, ()),
}


@pytest.mark.parametrize("name", LISTINGS)
def test_a_listing_asks_as_many_queries_for_many_rows_as_for_few(
    engine: Engine, repo: Path, name: str
) -> None:
    listing = LISTINGS[name]
    grow(engine, repo, 2)
    few = queries(engine, listing)
    grow(engine, repo, 9)
    many = queries(engine, listing)
    assert len(many) == len(few), "\n".join(many)


def test_the_listed_text_is_opened_as_before(engine: Engine, repo: Path) -> None:
    grow(engine, repo, 4)
    with Engine() as fresh:
        assert [a.action for a in fresh.list_approvals(None, pending_only=True)] == [
            f"push branch {index}" for index in range(4)
        ]
        objectives = sorted(s.task.objective for s in fresh.task_summaries())
        assert objectives == [f"objective {index}" for index in range(4)]


def test_a_task_without_a_key_lists_the_marker(engine: Engine, repo: Path) -> None:
    grow(engine, repo, 3)
    engine.db.execute("DELETE FROM task_keys WHERE task_id = 't1'")  # as gc retires a task
    with Engine() as fresh:
        actions = {a.task_id: a.action for a in fresh.list_approvals(None)}
        assert actions == {"t0": "push branch 0", "t1": UNREADABLE, "t2": "push branch 2"}
