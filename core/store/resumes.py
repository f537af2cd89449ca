"""The `resumes` table: a resume's lease, its launch, and its acceptance or rejection.

A resume row taken here while `active` is a lease on the task; one brought in by ledger sync is
another store's history. The accept/reject reason is sealed under the resume's id.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.store.db import Database
from core.store.meta import table_columns
from core.store.sealed_text import TextKeys, opened_value, resume_item

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def insert_resume(db: Database, **columns: Any) -> int:
    """Record a resume as it takes its lease."""
    table = db.table("resumes")
    table.insert(columns)
    return int(table.last_rowid or 0)


def update_resume(
    db: Database, resume_id: int, *, keys: TextKeys | None = None, **columns: Any
) -> None:
    """Change a resume's record (state, restore latency, launch outcome, acceptance).

    An `accept_reason` is sealed with `keys`, which it then needs.
    """
    if columns.get("accept_reason"):
        if keys is None:
            raise ValueError("a resume's accept_reason is sealed: pass keys")
        (task_id,) = db.execute("SELECT task_id FROM resumes WHERE id = ?", [resume_id]).fetchone()
        columns["accept_reason"] = keys.seal_text(
            task_id, resume_item(resume_id), columns["accept_reason"]
        )
    db.table("resumes").update(resume_id, columns)


def _resume_from_row(row: Mapping[str, Any], keys: TextKeys | None) -> dict[str, Any]:
    record = dict(row)
    record["accept_reason"] = opened_value(
        keys, record["task_id"], resume_item(record["id"]), record["accept_reason"]
    )
    return record


def active_resumes(db: Database, task_id: str) -> list[dict[str, Any]]:
    """Resumes of a task taken here whose lease was not released (live or not); no text opened.

    A resume brought in by ledger sync is another store's history, never a lease here.
    """
    return [
        _resume_from_row(row, None)
        for row in db.query(
            "SELECT * FROM resumes WHERE task_id = ? AND state = 'active' "
            "AND synced_from IS NULL ORDER BY id",
            [task_id],
        )
    ]


def latest_resume(
    db: Database, task_id: str, keys: TextKeys | None = None
) -> dict[str, Any] | None:
    """The task's newest resume, whatever its state (its reason opened with `keys`)."""
    rows = list(
        db.query("SELECT * FROM resumes WHERE task_id = ? ORDER BY id DESC LIMIT 1", [task_id])
    )
    return _resume_from_row(rows[0], keys) if rows else None


def list_resumes(db: Database, task_id: str, keys: TextKeys) -> list[dict[str, Any]]:
    """Every resume of a task, oldest first, its accept/reject reason opened with `keys`."""
    rows = db.query("SELECT * FROM resumes WHERE task_id = ? ORDER BY id", [task_id])
    return [_resume_from_row(row, keys) for row in rows]


def resume_outcomes(db: Database, task_id: str | None = None) -> list[dict[str, Any]] | None:
    """Per resume: task, verdict it was resumed under, acceptance; None without a resumes table."""
    columns = table_columns(db, "resumes")
    if "task_id" not in columns:
        return None
    wanted = [name for name in ("verdict", "accepted", "restore_ms", "state") if name in columns]
    sql = f"SELECT {', '.join(['task_id', *wanted])} FROM resumes"
    params: list[Any] = []
    if task_id is not None:
        sql += " WHERE task_id = ?"
        params.append(task_id)
    return [dict(row) for row in db.query(sql + " ORDER BY id", params)]


def resume_workdirs(db: Database, task_id: str) -> list[tuple[int, str]]:
    """(id, workdir) of the task's resumes taken here into a directory, newest first.

    A rejected resume's directory is not where the task goes on; one brought in by ledger sync
    names a directory on another machine.
    """
    rows = db.execute(
        "SELECT id, workdir FROM resumes WHERE task_id = ? AND workdir IS NOT NULL "
        "AND synced_from IS NULL AND (accepted IS NULL OR accepted != 0) ORDER BY id DESC",
        [task_id],
    )
    return [(int(row[0]), str(row[1])) for row in rows]


def latest_workdir_move(db: Database, task_id: str) -> str | None:
    """Where the task's checkpoints were last audited as moving to (`repository`, `resume N`)."""
    row = db.execute(
        "SELECT to_state FROM events WHERE task_id = ? AND entity = 'task' AND action = 'workdir' "
        "ORDER BY id DESC LIMIT 1",
        [task_id],
    ).fetchone()
    return str(row[0]) if row and row[0] else None
