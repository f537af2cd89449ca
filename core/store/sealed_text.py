"""Free text sealed at rest: the key protocol, the item each text is bound to, and the rows
the migrations that sealed old text (0011, 0017) find in clear.

DESIGN §6.6: audit reasons, approval actions and reasons, side-effect kinds, targets, checks and
notes, resume verdict reasons, task objectives, harness and model names and versions, and
evidence labels are stored as AES-GCM envelopes under the task's data key, through a `TextKeys`,
as BLOBs in the columns that held them in clear. Each is bound to an item name known before its
row is written: `event/<id>/reason` (the id is taken under the write lock),
`approval/<seq>/action|reason`, `effect/<key>/kind|target|check|note` (by the idempotency key),
`resume/<id>/accept_reason`, `task/<column>`, `evidence/<id>/label`. What lists sort and filter
on in SQL (ids, states, times, counts, operator names) stays plain; what they sort by text is
opened first. A `str` found in a sealed column was written before the migration that seals it,
on a machine without the key, and reads as it is. The item names and the sealed columns live
here, in one place, so the table modules and the migrations cannot disagree on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from core.errors import MasterKeyError
from core.store.db import Database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any, Protocol
else:
    Protocol = object  # `TextKeys` is a plain class at run time: nothing checks against it

# What a sealed text shows when the key to open it is not available (lists never fail on it).
UNREADABLE = "[encrypted: the key to read it is not available]"


class TextKeys(Protocol):
    """Seals and opens a task's free text (`core.security.keys.TaskKeys`); keys load lazily."""

    def seal_text(self, task_id: str, item: str, text: str) -> bytes: ...

    def open_text(self, task_id: str, item: str, sealed: bytes) -> str: ...

    def prefetch(self, task_ids: Iterable[str]) -> None: ...


def prefetched(keys: TextKeys | None, rows: Sequence[Mapping[str, Any]], column: str) -> None:
    """Let `keys` read the keys of every task of a listing's rows in one query, not a few
    queries per task as each row's text is opened (issue 22: one query per listing)."""
    if keys is not None and rows:
        keys.prefetch(row[column] for row in rows)


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


# The task columns sealed in place (`0017_sealed_fields`); each is its own item of the task.
TASK_SEALED = ("objective", "harness", "harness_version", "model", "model_version")


def task_item(column: str) -> str:
    """The sealed item name of a task's objective, or its harness's or model's name or version."""
    return f"task/{column}"


def label_item(evidence_id: int) -> str:
    """The sealed item name of an evidence item's label (beside its `command` and `tail`)."""
    return f"evidence/{evidence_id}/label"


# Where free text lies: table, column, how a row's item is named, and the column naming its task.
SealedColumn = tuple[str, str, str, str]
# What `0011_sealed_text` sealed: the free text people and agents typed.
TEXT_COLUMNS: tuple[SealedColumn, ...] = (
    ("events", "reason", "'event/' || id || '/reason'", "task_id"),
    ("approvals", "action", "'approval/' || seq || '/action'", "task_id"),
    ("approvals", "reason", "'approval/' || seq || '/reason'", "task_id"),
    ("effects", "target", "'effect/' || key || '/target'", "task_id"),
    ("effects", "check_command", "'effect/' || key || '/check'", "task_id"),
    ("effects", "note", "'effect/' || key || '/note'", "task_id"),
    ("resumes", "accept_reason", "'resume/' || id || '/accept_reason'", "task_id"),
)
# What `0017_sealed_fields` sealed: the fields lists used to show in clear.
FIELD_COLUMNS: tuple[SealedColumn, ...] = (
    *(("tasks", column, f"'task/{column}'", "id") for column in TASK_SEALED),
    ("evidence", "label", "'evidence/' || id || '/label'", "task_id"),
    ("effects", "kind", "'effect/' || key || '/kind'", "task_id"),
)


def clear_text_rows(
    db: Database, columns: tuple[SealedColumn, ...] = TEXT_COLUMNS
) -> list[tuple[str, str, int, str, str, str]]:
    """Free text still stored in clear: `(table, column, rowid, task_id, item, text)`.

    Tasks gc retired (expired, their key deleted) are left out: sealing their text would give
    them a fresh key.
    """
    found: list[tuple[str, str, int, str, str, str]] = []
    for table, column, item, task in columns:
        rows = db.execute(
            f"SELECT rowid, {task}, {item}, {column} FROM {table} "
            f"WHERE {task} IS NOT NULL AND typeof({column}) = 'text' AND {column} != '' "
            f"AND {task} NOT IN (SELECT id FROM tasks WHERE status = 'expired' "
            "AND id NOT IN (SELECT task_id FROM task_keys)) ORDER BY rowid"
        ).fetchall()
        found.extend((table, column, *row) for row in rows)
    return found


def replace_clear_text(db: Database, table: str, column: str, rowid: int, sealed: bytes) -> None:
    """Put the sealed form of one row's clear text in its place (the sealing migrations only)."""
    if (table, column) not in {(t, c) for t, c, _, _ in (*TEXT_COLUMNS, *FIELD_COLUMNS)}:
        raise ValueError(f"{table}.{column} is not a sealed text column")
    db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", [sealed, rowid])


def seal_clear_text(db: Database, columns: tuple[SealedColumn, ...], keys: TextKeys | None) -> int:
    """Seal in place the clear text of `columns` (a sealing migration); how many were sealed.

    Without keys (no master key), or for a task keyed by another master, the text stays
    readable as it was; what is written from now on is sealed anyway. The pages the clear text
    held are zeroed as it is replaced (`secure_delete`), not left in free space.
    """
    clear = clear_text_rows(db, columns)
    if not clear or keys is None:
        return 0
    sealed_count = 0
    unsealable: set[str] = set()
    with _secure_delete(db):
        for table, column, rowid, task_id, item, text in clear:
            if task_id in unsealable:
                continue
            try:
                sealed = keys.seal_text(task_id, item, text)
            except MasterKeyError:
                unsealable.add(task_id)
                continue
            replace_clear_text(db, table, column, rowid, sealed)
            sealed_count += 1
    return sealed_count


@contextmanager
def _secure_delete(db: Database) -> Iterator[None]:
    """`PRAGMA secure_delete` on for the block: what a row held is overwritten, not freed."""
    (before,) = db.execute("PRAGMA secure_delete").fetchone()
    db.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        db.execute(f"PRAGMA secure_delete = {int(before)}")


def record_check_findings(db: Database) -> None:
    """Copy what a precondition check found from clear event reasons to the plain `detail`."""
    for finding in ("already happened", "did not happen"):
        db.execute(
            "UPDATE events SET detail = json_object('check', ?) WHERE entity = 'effect' "
            "AND detail IS NULL AND typeof(reason) = 'text' AND reason LIKE ?",
            [finding, f"precondition check: {finding}%"],
        )
