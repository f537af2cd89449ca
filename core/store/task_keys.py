"""The `task_keys` and `task_old_keys` tables: each task's data keys, as wrapped by a master key.

A task has one current data key (new content is sealed with it) and, once it was rotated (a
recipient was removed), older keys that still open what they sealed. Deleting a task's keys is
how gc retires it: every one goes, so everything sealed with any of them becomes unreadable
everywhere, and the current row's presence is what tells a live task from a retired one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from core.store.db import Database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:  # migrations run on sqlite-utils, loaded only when one is pending
    import sqlite_utils


def create_key_history(db: sqlite_utils.Database) -> None:
    """Migration 0015: the retired data keys of each task (kept here, beside their table)."""
    # The keys a task had before its current one: still needed to open what they sealed, never
    # used to seal again. Wrapped by the master key like the current one, bound to their id.
    db.execute(
        """
        CREATE TABLE task_old_keys (
            task_id TEXT NOT NULL REFERENCES tasks(id),
            key_id TEXT NOT NULL,
            wrapped BLOB NOT NULL,
            master_key_id TEXT NOT NULL,
            retired_at TEXT NOT NULL,
            PRIMARY KEY (task_id, key_id)
        )
        """
    )


def get_wrapped_key(db: Database, task_id: str) -> bytes | None:
    """A task's current data key as wrapped by the master key, if it has one."""
    row = db.execute("SELECT wrapped FROM task_keys WHERE task_id = ?", [task_id]).fetchone()
    return bytes(row[0]) if row else None


def keys_and_scopes(
    db: Database, task_ids: Iterable[str]
) -> list[tuple[str, str | None, bytes | None]]:
    """Each task's origin store and current wrapped data key, for many tasks in one query."""
    rows = db.execute(
        "SELECT t.id, t.origin_store, k.wrapped FROM tasks AS t"
        " LEFT JOIN task_keys AS k ON k.task_id = t.id"
        " WHERE t.id IN (SELECT value FROM json_each(?))",
        [json.dumps(list(task_ids))],
    ).fetchall()
    return [(row[0], row[1] or None, bytes(row[2]) if row[2] is not None else None) for row in rows]


def insert_wrapped_key(
    db: Database, task_id: str, wrapped: bytes, master_key_id: str, at: str
) -> None:
    """Keep a task's wrapped data key."""
    db.execute(
        "INSERT INTO task_keys (task_id, wrapped, master_key_id, created_at) VALUES (?, ?, ?, ?)",
        [task_id, wrapped, master_key_id, at],
    )


def replace_wrapped_key(
    db: Database, task_id: str, wrapped: bytes, master_key_id: str, at: str
) -> bool:
    """Make another wrapped key the task's current one; False when the task has no key."""
    cursor = db.execute(
        "UPDATE task_keys SET wrapped = ?, master_key_id = ?, created_at = ? WHERE task_id = ?",
        [wrapped, master_key_id, at, task_id],
    )
    return cursor.rowcount == 1


def old_wrapped_keys(db: Database, task_id: str) -> dict[str, bytes]:
    """A task's retired data keys, wrapped: key id → wrapped key."""
    rows = db.execute(
        "SELECT key_id, wrapped FROM task_old_keys WHERE task_id = ? ORDER BY key_id", [task_id]
    ).fetchall()
    return {row[0]: bytes(row[1]) for row in rows}


def insert_old_wrapped_key(
    db: Database, task_id: str, key_id: str, wrapped: bytes, master_key_id: str, at: str
) -> bool:
    """Keep a retired data key of a task; False when it was kept already."""
    cursor = db.execute(
        "INSERT OR IGNORE INTO task_old_keys (task_id, key_id, wrapped, master_key_id, "
        "retired_at) VALUES (?, ?, ?, ?, ?)",
        [task_id, key_id, wrapped, master_key_id, at],
    )
    return cursor.rowcount == 1


def has_wrapped_key(db: Database, task_id: str) -> bool:
    """True while the task still has a data key, current or retired."""
    row = db.execute(
        "SELECT 1 FROM task_keys WHERE task_id = ? "
        "UNION ALL SELECT 1 FROM task_old_keys WHERE task_id = ? LIMIT 1",
        [task_id, task_id],
    ).fetchone()
    return row is not None


def delete_wrapped_key(db: Database, task_id: str) -> bool:
    """Forget every data key of a task: everything sealed with any of them becomes unreadable."""
    old = db.execute("DELETE FROM task_old_keys WHERE task_id = ?", [task_id]).rowcount
    current = db.execute("DELETE FROM task_keys WHERE task_id = ?", [task_id]).rowcount
    return current + old > 0


def tasks_keyed_by_other_master(db: Database, master_key_id: str) -> list[str]:
    """Tasks with a data key (current or retired) that another master key wrapped."""
    rows = db.execute(
        "SELECT task_id FROM task_keys WHERE master_key_id != ? "
        "UNION SELECT task_id FROM task_old_keys WHERE master_key_id != ? ORDER BY task_id",
        [master_key_id, master_key_id],
    ).fetchall()
    return [row[0] for row in rows]


def master_key_ids(db: Database) -> list[str]:
    """The master keys (by id) that wrapped any task's data key here, current or retired."""
    rows = db.execute(
        "SELECT master_key_id FROM task_keys UNION SELECT master_key_id FROM task_old_keys "
        "ORDER BY master_key_id"
    ).fetchall()
    return [row[0] for row in rows]
