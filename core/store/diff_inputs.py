"""What `pitstop diff TASK@SEQ` will diff, read before the store is opened
(`core.snapshot.early_diff` starts git on it while the engine loads).

A read-only connection of its own, and one query: nothing is created, migrated or locked, and a
store that does not answer plainly (no database, another schema, a checkpoint not complete)
answers None, so the engine's own reading says what is wrong.
"""

from __future__ import annotations

import sqlite3
from urllib.parse import quote

_QUERY = (
    "SELECT t.store_repo, c.worktree_tree, c.base_commit FROM checkpoints c"
    " JOIN tasks t ON t.id = c.task_id"
    " WHERE c.task_id = ? AND c.seq = ? AND c.state = 'complete'"
)


def diff_inputs(database: str, task_id: str, seq: int) -> tuple[str, str, str | None] | None:
    """(the task's store repository's name, the checkpoint's worktree tree, its base commit)
    of a complete checkpoint; None when the store does not say so plainly."""
    try:
        connection = sqlite3.connect(f"file:{quote(database)}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = connection.execute(_QUERY, (task_id, seq)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        connection.close()
    if row is None or not isinstance(row[0], str) or not isinstance(row[1], str) or not row[1]:
        return None
    base = row[2] if isinstance(row[2], str) and row[2] else None
    return row[0], row[1], base
