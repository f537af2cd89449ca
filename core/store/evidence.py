"""The `evidence` and `evidence_chunks` tables: recorded command output, its facts and its chunks.

An item's plain facts (exit code, sizes, summary) are listable without a key; its label is
sealed text opened here with the keys a caller passes (without: the marker); its command line,
tail and chunks stay sealed blobs here, opened by `core.evidence`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from core.errors import NotFoundError
from core.store.db import Database
from core.store.sealed_text import TextKeys, label_item, opened_value, sealed_value

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

_EVIDENCE_FIELDS = (
    "id, task_id, checkpoint_seq, state, source, label, started_at, duration_ms, exit_code, "
    "signal, timed_out, bytes_total, lines_total, sha256, stored_bytes, kept_bytes, truncated, "
    "omitted_bytes, chunk_count, summary, tail_lines, redactions, ruleset, cap_bytes, failure"
)


def _evidence_from_row(row: Mapping[str, Any], keys: TextKeys | None) -> dict[str, Any]:
    data = dict(row)
    data["label"] = opened_value(keys, data["task_id"], label_item(data["id"]), data["label"])
    data["timed_out"] = bool(data["timed_out"])
    data["truncated"] = bool(data["truncated"])
    data["summary"] = json.loads(data["summary"]) if data["summary"] else None
    return data


def insert_evidence(db: Database, **columns: Any) -> int:
    """Record a new evidence item (state `writing`); returns its id. Its label, sealed to the
    id the row gets, is set after (`set_evidence_label`)."""
    if columns.get("label") is not None:
        raise ValueError("an evidence label is sealed to its item's id: use set_evidence_label")
    table = db.table("evidence")
    table.insert(columns)
    return int(table.last_rowid or 0)


def set_evidence_label(
    db: Database, keys: TextKeys, task_id: str, evidence_id: int, label: str | None
) -> None:
    """Store an item's (already redacted) label sealed; none or empty stays as it is."""
    if label:
        sealed = sealed_value(keys, task_id, label_item(evidence_id), label)
        db.execute("UPDATE evidence SET label = ? WHERE id = ?", [sealed, evidence_id])


def opened_label(keys: TextKeys | None, row: Mapping[str, Any]) -> Any:
    """The label of an exported row (every column, as `evidence_rows_for_export` gives)."""
    return opened_value(keys, row["task_id"], label_item(int(row["id"])), row["label"])


def update_evidence(db: Database, evidence_id: int, **columns: Any) -> None:
    """Change evidence columns (`summary` may be a dict)."""
    if isinstance(columns.get("summary"), dict):
        columns["summary"] = json.dumps(columns["summary"], sort_keys=True)
    db.table("evidence").update(evidence_id, columns)


def insert_chunk(db: Database, evidence_id: int, **columns: Any) -> None:
    """Store one compressed, encrypted chunk of an evidence item's output."""
    db.table("evidence_chunks").insert({"evidence_id": evidence_id, **columns})


def delete_chunk(db: Database, evidence_id: int, seq: int) -> None:
    """Drop a chunk that fell out of the kept tail window."""
    db.execute("DELETE FROM evidence_chunks WHERE evidence_id = ? AND seq = ?", [evidence_id, seq])


def get_evidence(db: Database, evidence_id: int, keys: TextKeys | None = None) -> dict[str, Any]:
    """An evidence item's listable columns (its label opened with `keys`), or a NotFoundError."""
    rows = list(db.query(f"SELECT {_EVIDENCE_FIELDS} FROM evidence WHERE id = ?", [evidence_id]))
    if not rows:
        raise NotFoundError(
            f"no evidence {evidence_id} in this store; `pitstop evidence list TASK` lists them"
        )
    return _evidence_from_row(rows[0], keys)


def get_evidence_secrets(db: Database, evidence_id: int) -> tuple[bytes | None, bytes | None]:
    """The encrypted command line and tail of an evidence item."""
    row = db.execute("SELECT command, tail FROM evidence WHERE id = ?", [evidence_id]).fetchone()
    return (bytes(row[0]) if row[0] else None, bytes(row[1]) if row[1] else None)


def list_evidence(
    db: Database,
    task_id: str,
    checkpoint_seq: int | None = None,
    pending: bool = False,
    keys: TextKeys | None = None,
) -> list[dict[str, Any]]:
    """A task's evidence, oldest first: all, one checkpoint's, or not yet in any checkpoint
    (labels opened with `keys`; without, the marker)."""
    sql = f"SELECT {_EVIDENCE_FIELDS} FROM evidence WHERE task_id = ?"
    params: list[Any] = [task_id]
    if pending:
        # a drill's replay is the drill's evidence, not the task's: no checkpoint takes it
        sql += " AND checkpoint_seq IS NULL AND state = 'complete' AND source != 'drill'"
    elif checkpoint_seq is not None:
        sql += " AND checkpoint_seq = ?"
        params.append(checkpoint_seq)
    return [_evidence_from_row(row, keys) for row in db.query(sql + " ORDER BY id", params)]


def attach_evidence(
    db: Database, task_id: str, evidence_ids: list[int], checkpoint_seq: int
) -> None:
    """Make pending evidence items part of a checkpoint."""
    for evidence_id in evidence_ids:
        db.execute(
            "UPDATE evidence SET checkpoint_seq = ? WHERE id = ? AND task_id = ? "
            "AND checkpoint_seq IS NULL",
            [checkpoint_seq, evidence_id, task_id],
        )


def list_chunks(db: Database, evidence_id: int) -> list[dict[str, Any]]:
    """Chunk positions of an evidence item (no blobs), in stream order."""
    rows = db.query(
        "SELECT seq, part, offset, raw_len, first_line, line_count, stored_len "
        "FROM evidence_chunks WHERE evidence_id = ? ORDER BY seq",
        [evidence_id],
    )
    return [dict(row) for row in rows]


def chunk_blob(db: Database, evidence_id: int, seq: int) -> bytes:
    """One chunk's encrypted blob."""
    row = db.execute(
        "SELECT blob FROM evidence_chunks WHERE evidence_id = ? AND seq = ?", [evidence_id, seq]
    ).fetchone()
    if row is None:
        raise NotFoundError(f"evidence {evidence_id} has no chunk {seq}")
    return bytes(row[0])


def evidence_chunk_totals(db: Database, task_id: str) -> tuple[int, int]:
    """How many stored output chunks a task's evidence has, and their stored bytes."""
    row = db.execute(
        "SELECT COUNT(*), COALESCE(SUM(c.stored_len), 0) FROM evidence_chunks c "
        "JOIN evidence e ON e.id = c.evidence_id WHERE e.task_id = ?",
        [task_id],
    ).fetchone()
    return int(row[0]), int(row[1])


def delete_evidence_chunks(db: Database, task_id: str) -> int:
    """Drop the stored output of every evidence item of a task (rows and facts stay)."""
    cursor = db.execute(
        "DELETE FROM evidence_chunks WHERE evidence_id IN (SELECT id FROM evidence "
        "WHERE task_id = ?)",
        [task_id],
    )
    return int(cursor.rowcount)


def delete_evidence(db: Database, evidence_id: int) -> None:
    """Remove an evidence item and its chunks (only for a command that never started)."""
    db.execute("DELETE FROM evidence_chunks WHERE evidence_id = ?", [evidence_id])
    db.execute("DELETE FROM evidence WHERE id = ?", [evidence_id])


def evidence_rows_for_export(
    db: Database, task_id: str, checkpoint_seq: int
) -> list[dict[str, Any]]:
    """A checkpoint's evidence rows, every column, blobs still sealed."""
    rows = db.query(
        "SELECT * FROM evidence WHERE task_id = ? AND checkpoint_seq = ? AND state = 'complete' "
        "ORDER BY id",
        [task_id, checkpoint_seq],
    )
    return [dict(row) for row in rows]


def chunk_rows_for_export(db: Database, evidence_id: int) -> list[dict[str, Any]]:
    """An evidence item's chunks, every column, blobs still sealed."""
    rows = db.query(
        "SELECT * FROM evidence_chunks WHERE evidence_id = ? ORDER BY seq", [evidence_id]
    )
    return [dict(row) for row in rows]
