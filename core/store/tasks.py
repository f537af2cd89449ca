"""The `tasks` table and its recipients: a task row to a `Task` and back.

A task is what every other table hangs off; its row is read here, and by the dashboard's rollup
(`task_from_row`), so the mapping of its columns to the model is written once. Its objective and
its harness's and model's names and versions are sealed under the task's key
(`core.store.sealed_text.TASK_SEALED`): a caller after ids, states and times alone reads without
keys, and those fields then hold the marker.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from core.errors import ConflictError, NotFoundError
from core.models import Budget, NamedVersion, Task, TaskStatus
from core.store.db import Database
from core.store.sealed_text import (
    TASK_SEALED,
    UNREADABLE,
    TextKeys,
    opened_value,
    sealed_value,
    task_item,
)
from core.store.values import stored_enum

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any


def _named(name: str | None, version: str | None) -> NamedVersion | None:
    if not name:
        return None
    return NamedVersion(name, None if name == UNREADABLE else version)


def task_from_row(row: Mapping[str, Any], keys: TextKeys | None) -> Task:
    """The model of one `tasks` row, its sealed fields opened with `keys` (without: the marker)."""

    def opened(column: str) -> Any:
        return opened_value(keys, row["id"], task_item(column), row[column])

    return Task(
        id=row["id"],
        repo_root=row["repo_root"],
        store_repo=row["store_repo"],
        objective=opened("objective"),
        status=stored_enum(TaskStatus, row["status"], "task status", f"task {row['id']}"),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        harness=_named(opened("harness"), opened("harness_version")),
        model=_named(opened("model"), opened("model_version")),
        budget=Budget(
            tokens=row["budget_tokens"], usd=row["budget_usd"], minutes=row["budget_minutes"]
        ),
        tokens_used=row["tokens_used"],
        usd_used=row["usd_used"],
        credentials=tuple(json.loads(row["credentials"])),
        approvers=tuple(json.loads(row.get("approvers") or "[]")),
    )


def _field_columns(keys: TextKeys, task: Task) -> dict[str, Any]:
    """The task's sealed columns as stored: each field sealed to its own item."""
    fields = {
        "objective": task.objective,
        "harness": task.harness.name if task.harness else None,
        "harness_version": task.harness.version if task.harness else None,
        "model": task.model.name if task.model else None,
        "model_version": task.model.version if task.model else None,
    }
    return {
        column: sealed_value(keys, task.id, task_item(column), fields[column])
        for column in TASK_SEALED
    }


def insert_task(db: Database, task: Task, keys: TextKeys) -> None:
    """Add a new task (its objective, harness and model sealed); an existing id is refused.

    Runs inside the caller's write transaction: a data key made to seal the fields commits or
    rolls back with the row.
    """
    if db.execute("SELECT 1 FROM tasks WHERE id = ?", [task.id]).fetchone():
        raise ConflictError(
            f"a task with id {task.id!r} already exists; pick another --id or omit it"
        )
    db.table("tasks").insert(
        {
            "id": task.id,
            "repo_root": task.repo_root,
            "store_repo": task.store_repo,
            "objective": "",  # sealed just below: the task's key needs its row first
            "status": task.status.value,
            "budget_tokens": task.budget.tokens,
            "budget_usd": task.budget.usd,
            "budget_minutes": task.budget.minutes,
            "tokens_used": task.tokens_used,
            "usd_used": task.usd_used,
            "credentials": json.dumps(list(task.credentials)),
            "approvers": json.dumps(list(task.approvers)),
            "created_at": task.created_at,
            "updated_at": task.updated_at,
        }
    )
    db.table("tasks").update(task.id, _field_columns(keys, task))


def get_task(db: Database, task_id: str, keys: TextKeys | None = None) -> Task:
    """The task with this id, or a NotFoundError naming it.

    Its objective, harness and model are opened with `keys`; a caller after ids, states and
    times passes none (no key is loaded) and those fields hold the marker.
    """
    rows = list(db.query("SELECT * FROM tasks WHERE id = ?", [task_id]))
    if not rows:
        raise NotFoundError(f"no task {task_id!r} in this store; `pitstop task list` shows them")
    return task_from_row(rows[0], keys)


def list_tasks(
    db: Database, statuses: tuple[TaskStatus, ...] = (), keys: TextKeys | None = None
) -> list[Task]:
    """Tasks, most recently updated first, optionally only those with the given statuses
    (sealed fields opened with `keys`, as `get_task`)."""
    if statuses:
        marks = ", ".join("?" for _ in statuses)
        rows = db.query(
            f"SELECT * FROM tasks WHERE status IN ({marks}) ORDER BY updated_at DESC",
            [s.value for s in statuses],
        )
    else:
        rows = db.query("SELECT * FROM tasks ORDER BY updated_at DESC")
    return [task_from_row(row, keys) for row in rows]


def task_ids(db: Database) -> set[str]:
    """Every task id in the store (to pick a fresh generated id)."""
    return {row[0] for row in db.execute("SELECT id FROM tasks").fetchall()}


def known_task_ids(db: Database, ids: Iterable[str]) -> set[str]:
    """Those of `ids` that are tasks in this store, in one query however many there are."""
    wanted = json.dumps(sorted(ids))
    return {
        row[0]
        for row in db.execute(
            "SELECT value FROM json_each(?) WHERE value IN (SELECT id FROM tasks)", (wanted,)
        ).fetchall()
    }


def update_task(db: Database, task_id: str, **changes: Any) -> None:
    """Change task columns by model field name (status, tokens_used, usd_used, updated_at)."""
    sealed = set(changes) & set(TASK_SEALED)
    if sealed:
        raise ValueError(f"{', '.join(sorted(sealed))} is sealed: use set_task_harness")
    columns = {
        key: (value.value if isinstance(value, TaskStatus) else value)
        for key, value in changes.items()
    }
    db.table("tasks").update(task_id, columns)


def set_task_harness(db: Database, task_id: str, harness: NamedVersion, keys: TextKeys) -> None:
    """Record the harness (name and version) a task runs under, sealed."""
    sealed = {
        column: sealed_value(keys, task_id, task_item(column), value)
        for column, value in (("harness", harness.name), ("harness_version", harness.version))
    }
    db.table("tasks").update(task_id, sealed)


def task_status_counts(db: Database) -> dict[TaskStatus, int]:
    """How many tasks have each status (statuses with none are left out); one row fetched."""
    (counts,) = db.execute(
        "SELECT json_group_object(status, n) FROM "
        "(SELECT status, COUNT(*) AS n FROM tasks GROUP BY status)"
    ).fetchone()
    return {
        stored_enum(TaskStatus, status, "task status", "tasks"): count
        for status, count in json.loads(counts or "{}").items()
    }


def finished_task_ids(db: Database) -> set[str]:
    """Ids of the tasks that are done, cancelled or expired: nothing of theirs waits for anyone."""
    finished = [status.value for status in TaskStatus if status.is_final]
    marks = ", ".join("?" for _ in finished)
    rows = db.execute(f"SELECT id FROM tasks WHERE status IN ({marks})", finished).fetchall()
    return {row[0] for row in rows}


def task_scope(db: Database, task_id: str) -> str | None:
    """The store a task's encrypted content is bound to, when it was created elsewhere."""
    row = db.execute("SELECT origin_store FROM tasks WHERE id = ?", [task_id]).fetchone()
    return str(row[0]) if row and row[0] else None


def set_task_origin(db: Database, task_id: str, origin_store: str) -> None:
    """Mark a task as fetched: its content stays bound to the store that created it."""
    db.execute("UPDATE tasks SET origin_store = ? WHERE id = ?", [origin_store, task_id])


def list_task_recipients(db: Database, task_id: str) -> list[str]:
    """A task's recipients (public keys), in the order they were added."""
    rows = db.execute(
        "SELECT recipient FROM task_recipients WHERE task_id = ? ORDER BY added_at, rowid",
        [task_id],
    ).fetchall()
    return [row[0] for row in rows]


def add_task_recipient(
    db: Database, task_id: str, recipient: str, added_at: str, added_by: str
) -> bool:
    """Add one recipient to a task; False when it was already there (nothing changes)."""
    cursor = db.execute(
        "INSERT OR IGNORE INTO task_recipients (task_id, recipient, added_at, added_by) "
        "VALUES (?, ?, ?, ?)",
        [task_id, recipient, added_at, added_by],
    )
    return bool(cursor.rowcount)


def set_task_approvers(db: Database, task_id: str, approvers: list[str]) -> None:
    """Replace the approver names a task shows (the roster holds who may decide)."""
    db.execute("UPDATE tasks SET approvers = ? WHERE id = ?", [json.dumps(approvers), task_id])


def remove_task_recipient(db: Database, task_id: str, recipient: str) -> bool:
    """Remove one recipient from a task; False when it was not there."""
    cursor = db.execute(
        "DELETE FROM task_recipients WHERE task_id = ? AND recipient = ?", [task_id, recipient]
    )
    return bool(cursor.rowcount)
