"""Free text sealed at rest: the key protocol, the item each text is bound to, and 0011's rows.

DESIGN §6: audit reasons, approval actions and reasons, side-effect targets, checks and notes, and
resume verdict reasons are stored as AES-GCM envelopes under the task's data key, through a
`TextKeys`, as BLOBs in the columns that held them in clear. Each is bound to an item name known
before its row is written: `event/<id>/reason` (the id is taken under the write lock),
`approval/<seq>/action|reason`, `effect/<key>/target|check|note` (by the idempotency key),
`resume/<id>/accept_reason`. What lists sort and filter on (ids, states, times, counts, operator
names) stays plain. A `str` found in a sealed column was written before `0011_sealed_text` on a
machine without the key, and reads as it is. The item names and the sealed columns live here, in
one place, so the table modules and the migration that sealed old text cannot disagree on them.
"""

from __future__ import annotations

from typing import Any, Protocol

from core.store.db import Database

# What a sealed text shows when the key to open it is not available (lists never fail on it).
UNREADABLE = "[encrypted: the key to read it is not available]"


class TextKeys(Protocol):
    """Seals and opens a task's free text (`core.security.keys.TaskKeys`); keys load lazily."""

    def seal_text(self, task_id: str, item: str, text: str) -> bytes: ...

    def open_text(self, task_id: str, item: str, sealed: bytes) -> str: ...


def sealed_value(keys: TextKeys, task_id: str, item: str, text: str | None) -> bytes | str | None:
    """Text as a sealed column stores it: empty or absent text costs no key and no crypto."""
    return keys.seal_text(task_id, item, text) if text else text


def opened_value(keys: TextKeys | None, task_id: str, item: str, stored: Any) -> Any:
    """A sealed column's value in clear (a legacy clear `str` as it is), or the marker."""
    if not isinstance(stored, bytes | memoryview):
        return stored
    return keys.open_text(task_id, item, bytes(stored)) if keys is not None else UNREADABLE


def event_item(event_id: int) -> str:
    """The sealed item name of an audit event's reason."""
    return f"event/{event_id}/reason"


def approval_item(seq: int, field: str) -> str:
    """The sealed item name of an approval's `action` or `reason` (by its per-task number)."""
    return f"approval/{seq}/{field}"


def effect_item(key: str, column: str) -> str:
    """The sealed item name of a side effect's `target`, `check` or `note` (by its key)."""
    return f"effect/{key}/{column}"


def resume_item(resume_id: int) -> str:
    """The sealed item name of a resume's accept/reject reason."""
    return f"resume/{resume_id}/accept_reason"


# Where free text lies, for `0011_sealed_text`: table, column, and how a row's item is named.
_SEALED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("events", "reason", "'event/' || id || '/reason'"),
    ("approvals", "action", "'approval/' || seq || '/action'"),
    ("approvals", "reason", "'approval/' || seq || '/reason'"),
    ("effects", "target", "'effect/' || key || '/target'"),
    ("effects", "check_command", "'effect/' || key || '/check'"),
    ("effects", "note", "'effect/' || key || '/note'"),
    ("resumes", "accept_reason", "'resume/' || id || '/accept_reason'"),
)


def clear_text_rows(db: Database) -> list[tuple[str, str, int, str, str, str]]:
    """Free text still stored in clear: `(table, column, rowid, task_id, item, text)`.

    Tasks gc retired (expired, their key deleted) are left out: sealing their text would give
    them a fresh key.
    """
    found: list[tuple[str, str, int, str, str, str]] = []
    for table, column, item in _SEALED_COLUMNS:
        rows = db.execute(
            f"SELECT rowid, task_id, {item}, {column} FROM {table} "
            f"WHERE task_id IS NOT NULL AND typeof({column}) = 'text' AND {column} != '' "
            "AND task_id NOT IN (SELECT id FROM tasks WHERE status = 'expired' "
            "AND id NOT IN (SELECT task_id FROM task_keys)) ORDER BY rowid"
        ).fetchall()
        found.extend((table, column, *row) for row in rows)
    return found


def replace_clear_text(db: Database, table: str, column: str, rowid: int, sealed: bytes) -> None:
    """Put the sealed form of one row's clear text in its place (`0011_sealed_text` only)."""
    if (table, column) not in {(t, c) for t, c, _ in _SEALED_COLUMNS}:
        raise ValueError(f"{table}.{column} is not a sealed text column")
    db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", [sealed, rowid])


def record_check_findings(db: Database) -> None:
    """Copy what a precondition check found from clear event reasons to the plain `detail`."""
    for finding in ("already happened", "did not happen"):
        db.execute(
            "UPDATE events SET detail = json_object('check', ?) WHERE entity = 'effect' "
            "AND detail IS NULL AND typeof(reason) = 'text' AND reason LIKE ?",
            [finding, f"precondition check: {finding}%"],
        )
