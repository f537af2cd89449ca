"""The `task_keys` table: each task's data key, as wrapped by a master key.

Deleting a wrapped key is how gc retires a task: everything sealed with it becomes unreadable
everywhere, so the row's presence is also what tells a live task from a retired one.
"""

from __future__ import annotations

from core.store.db import Database


def get_wrapped_key(db: Database, task_id: str) -> bytes | None:
    """A task's data key as wrapped by the master key, if it has one."""
    row = db.execute("SELECT wrapped FROM task_keys WHERE task_id = ?", [task_id]).fetchone()
    return bytes(row[0]) if row else None


def insert_wrapped_key(
    db: Database, task_id: str, wrapped: bytes, master_key_id: str, at: str
) -> None:
    """Keep a task's wrapped data key."""
    db.execute(
        "INSERT INTO task_keys (task_id, wrapped, master_key_id, created_at) VALUES (?, ?, ?, ?)",
        [task_id, wrapped, master_key_id, at],
    )


def has_wrapped_key(db: Database, task_id: str) -> bool:
    """True while the task still has a data key."""
    row = db.execute("SELECT 1 FROM task_keys WHERE task_id = ?", [task_id]).fetchone()
    return row is not None


def delete_wrapped_key(db: Database, task_id: str) -> bool:
    """Forget a task's data key: everything sealed with it becomes unreadable everywhere."""
    return db.execute("DELETE FROM task_keys WHERE task_id = ?", [task_id]).rowcount == 1


def tasks_keyed_by_other_master(db: Database, master_key_id: str) -> list[str]:
    """Tasks whose data key another master key wrapped."""
    rows = db.execute(
        "SELECT task_id FROM task_keys WHERE master_key_id != ? ORDER BY task_id", [master_key_id]
    ).fetchall()
    return [row[0] for row in rows]
