"""The `validations` table: each validation run of a checkpoint, its verdict and findings.

Findings are stored as JSON text and decoded on the way out; the newest run is picked by time,
not by row id, because a run fetched by sync may be older than one made here.
"""

from __future__ import annotations

import json

from core.store.db import Database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def insert_validation(db: Database, **columns: Any) -> int:
    """Keep one validation run (its findings as JSON)."""
    if not isinstance(columns.get("findings"), str):
        columns["findings"] = json.dumps(columns["findings"])
    table = db.table("validations")
    table.insert(columns)
    return int(table.last_rowid or 0)


def latest_validation(db: Database, task_id: str, seq: int | None = None) -> dict[str, Any] | None:
    """The newest validation of a task (or of one checkpoint), findings decoded."""
    sql = "SELECT * FROM validations WHERE task_id = ?"
    params: list[Any] = [task_id]
    if seq is not None:
        sql += " AND seq = ?"
        params.append(seq)
    # by time, not row id: a validation fetched by sync may be older than one run here
    rows = list(db.query(sql + " ORDER BY at DESC, id DESC LIMIT 1", params))
    if not rows:
        return None
    row = dict(rows[0])
    row["findings"] = json.loads(row["findings"])
    return row


def list_validations(db: Database, task_id: str) -> list[dict[str, Any]]:
    """A task's validation runs, oldest first, findings as stored (JSON text)."""
    return [
        dict(row)
        for row in db.query("SELECT * FROM validations WHERE task_id = ? ORDER BY id", [task_id])
    ]
