"""The `ledger_facts` and `ledger_conflicts` tables: what sync exchanged, what lost a merge.

A fact is kept as first seen (a known uid keeps its bytes), so sync is idempotent; a decision that
lost a merge is kept beside the one that won, never dropped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from core.store.db import Database
from core.store.filters import where_clause

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def ledger_fact_bodies(db: Database, task_id: str, kind: str | None = None) -> dict[str, bytes]:
    """Every ledger fact this store exported or applied for a task (of one kind, when given):
    uid → its bytes."""
    if kind is None:
        rows = db.execute("SELECT uid, body FROM ledger_facts WHERE task_id = ?", [task_id])
    else:
        rows = db.execute(
            "SELECT uid, body FROM ledger_facts WHERE task_id = ? AND kind = ?", [task_id, kind]
        )
    return {str(row[0]): bytes(row[1]) for row in rows.fetchall()}


def ledger_fact_records(db: Database, task_id: str) -> dict[str, tuple[str, bytes]]:
    """Every ledger fact held for a task: uid → (kind, bytes)."""
    rows = db.execute("SELECT uid, kind, body FROM ledger_facts WHERE task_id = ?", [task_id])
    return {str(row[0]): (str(row[1]), bytes(row[2])) for row in rows.fetchall()}


def record_ledger_facts(
    db: Database, task_id: str, facts: Sequence[tuple[str, str, bytes]], source: str, at: str
) -> None:
    """Keep ledger facts (uid, kind, bytes) as first seen; a known uid keeps its bytes."""
    for uid, kind, body in facts:
        db.execute(
            "INSERT OR IGNORE INTO ledger_facts (uid, task_id, kind, body, source, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [uid, task_id, kind, body, source, at],
        )


def record_ledger_conflict(
    db: Database,
    task_id: str,
    entity: str,
    entity_id: str,
    kept: str,
    lost: str,
    lost_uid: str,
    why: str,
    at: str,
) -> bool:
    """Keep a decision that lost a ledger merge (plain JSON of both sides); False if known."""
    cursor = db.execute(
        "INSERT OR IGNORE INTO ledger_conflicts "
        "(task_id, entity, entity_id, kept, lost, lost_uid, why, recorded_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [task_id, entity, entity_id, kept, lost, lost_uid, why, at],
    )
    return cursor.rowcount == 1


def ledger_conflicts(
    db: Database, task_id: str | None = None, entity: str | None = None
) -> list[dict[str, Any]]:
    """Recorded ledger conflicts, oldest first, `kept` and `lost` decoded."""
    where, params = where_clause({"task_id": task_id, "entity": entity})
    rows = db.query(f"SELECT * FROM ledger_conflicts{where} ORDER BY recorded_at, rowid", params)
    found = []
    for row in rows:
        record = dict(row)
        record["kept"] = json.loads(record["kept"])
        record["lost"] = json.loads(record["lost"])
        found.append(record)
    return found
