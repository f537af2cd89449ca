"""The `drills` table: each restore drill of a checkpoint, its verdict and what it measured.

What a list sorts and counts on (ids, verdicts, times, latencies, the avoided cost) stays plain;
what a drill said in words — the command it replayed, the differences, why nothing was run —
is content, sealed under the task's data key as one JSON document (`drill/<id>/detail`).
"""

from __future__ import annotations

import json

from core.store.db import Database
from core.store.sealed_text import TextKeys, opened_value

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    import sqlite_utils

_COLUMNS = (
    "id, task_id, seq, verdict, at, actor, interface, restore_ms, validation_ms, "
    "validation_verdict, replay_ms, recorded_evidence_id, replay_evidence_id, "
    "avoided_usd, avoided_minutes, detail"
)


def create_drill_table(db: sqlite_utils.Database) -> None:
    """Migration 0019_drills: one row per drill, newest found by time."""
    db.execute(
        """
        CREATE TABLE drills (
            id TEXT PRIMARY KEY,
            task_id TEXT NOT NULL REFERENCES tasks(id),
            seq INTEGER NOT NULL,
            verdict TEXT NOT NULL,
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            interface TEXT NOT NULL,
            restore_ms INTEGER,
            validation_ms INTEGER,
            validation_verdict TEXT,
            replay_ms INTEGER,
            recorded_evidence_id INTEGER,
            replay_evidence_id INTEGER,
            avoided_usd TEXT,
            avoided_minutes TEXT,
            detail BLOB
        )
        """
    )
    db.execute("CREATE INDEX drills_by_time ON drills (task_id, at, verdict)")


def drill_item(drill_id: str) -> str:
    """The sealed item name of a drill's detail document."""
    return f"drill/{drill_id}/detail"


def insert_drill(db: Database, keys: TextKeys, detail: dict[str, Any], **columns: Any) -> None:
    """Keep one drill, its detail sealed under the task's key."""
    text = json.dumps(detail, sort_keys=True)
    sealed = keys.seal_text(columns["task_id"], drill_item(columns["id"]), text)
    db.table("drills").insert({**columns, "detail": sealed})


def _row(row: dict[str, Any], keys: TextKeys | None) -> dict[str, Any]:
    opened = opened_value(keys, row["task_id"], drill_item(row["id"]), row["detail"])
    try:
        detail = json.loads(opened) if isinstance(opened, str) and opened else {}
    except ValueError:
        detail = {}
    return {**row, "detail": detail if isinstance(detail, dict) else {}}


def list_drills(
    db: Database,
    keys: TextKeys | None,
    task_id: str | None = None,
    since: str | None = None,
) -> list[dict[str, Any]]:
    """Drills, oldest first: of one task or all, since a time; details opened with `keys`."""
    sql = f"SELECT {_COLUMNS} FROM drills WHERE 1 = 1"
    params: list[Any] = []
    if task_id is not None:
        sql += " AND task_id = ?"
        params.append(task_id)
    if since is not None:
        sql += " AND at >= ?"
        params.append(since)
    return [_row(dict(row), keys) for row in db.query(sql + " ORDER BY at, id", params)]


def drill_totals(db: Database, task_id: str | None = None) -> dict[str, int] | None:
    """Drills by verdict, plus `stale` (validation said stale), for the measures of resume
    quality; None when the store has no drills table yet."""
    if not db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'drills'"
    ).fetchone():
        return None
    where, params = ("WHERE task_id = ?", [task_id]) if task_id else ("", [])
    totals = {
        str(row["verdict"]): int(row["n"])
        for row in db.query(
            f"SELECT verdict, COUNT(*) AS n FROM drills {where} GROUP BY verdict", params
        )
    }
    stale = db.execute(
        f"SELECT COUNT(*) FROM drills {where} {'AND' if where else 'WHERE'} "
        "validation_verdict = 'stale'",
        params,
    ).fetchone()
    return {**totals, "stale": int(stale[0])}
