"""The `effects` table: side effects by idempotency key, moved only by compare-and-set.

An effect's state changes only from the state its caller saw (`move_effect`), so two processes
can never both run it; its kind, target, check and note are sealed under the item names of its
key (a kind is whatever word its proposer chose: `deploy`, `pr`, `migration`…).
"""

from __future__ import annotations

from collections.abc import Mapping

from core.errors import ConflictError, NotFoundError
from core.models import EffectState, SideEffect
from core.store.db import Database
from core.store.filters import where_clause
from core.store.sealed_text import TextKeys, effect_item, opened_value, sealed_value
from core.store.values import stored_enum

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    import sqlite_utils

# Model field -> column, where they differ.
_EFFECT_COLUMN = {"check": "check_command"}


# Sealed effect columns -> the item name they are bound to.
_EFFECT_SEALED = {"kind": "kind", "target": "target", "check_command": "check", "note": "note"}


def _effect_from_row(row: Mapping[str, Any], keys: TextKeys | None) -> SideEffect:
    def opened(column: str) -> Any:
        item = effect_item(row["key"], _EFFECT_SEALED[column])
        return opened_value(keys, row["task_id"], item, row[column])

    return SideEffect(
        task_id=row["task_id"],
        key=row["key"],
        kind=opened("kind"),
        state=stored_enum(
            EffectState, row["state"], "effect state", f"effect {row['key']!r} of {row['task_id']}"
        ),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        target=opened("target"),
        check=opened("check_command"),
        needs_approval=bool(row["needs_approval"]),
        attempts=row["attempts"],
        note=opened("note"),
        exit_code=row["exit_code"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        runner_pid=row["runner_pid"],
        runner_host=row["runner_host"],
        check_foreign=bool(row["check_foreign"]),
    )


def insert_effect(db: Database, effect: SideEffect, keys: TextKeys) -> None:
    """Record a newly proposed side effect (kind, target, check and note sealed); a new key only."""
    if db.execute(
        "SELECT 1 FROM effects WHERE task_id = ? AND key = ?", [effect.task_id, effect.key]
    ).fetchone():
        raise ConflictError(f"task {effect.task_id} already has a side effect {effect.key!r}")
    db.execute(
        "INSERT INTO effects (task_id, key, kind, target, check_command, needs_approval, state, "
        "attempts, note, created_at, updated_at, check_foreign) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            effect.task_id,
            effect.key,
            sealed_value(keys, effect.task_id, effect_item(effect.key, "kind"), effect.kind),
            sealed_value(keys, effect.task_id, effect_item(effect.key, "target"), effect.target),
            sealed_value(keys, effect.task_id, effect_item(effect.key, "check"), effect.check),
            int(effect.needs_approval),
            effect.state.value,
            effect.attempts,
            sealed_value(keys, effect.task_id, effect_item(effect.key, "note"), effect.note),
            effect.created_at,
            effect.updated_at,
            int(effect.check_foreign),
        ],
    )


def find_effect(db: Database, task_id: str, key: str, keys: TextKeys | None) -> SideEffect | None:
    """The task's side effect with this key, if there is one (text opened with `keys`)."""
    rows = list(db.query("SELECT * FROM effects WHERE task_id = ? AND key = ?", [task_id, key]))
    return _effect_from_row(rows[0], keys) if rows else None


def get_effect(db: Database, task_id: str, key: str, keys: TextKeys | None) -> SideEffect:
    """The task's side effect with this key, or a NotFoundError naming it."""
    found = find_effect(db, task_id, key, keys)
    if found is None:
        raise NotFoundError(
            f"task {task_id} has no side effect {key!r}; "
            f"`pitstop effect list --task {task_id}` lists them"
        )
    return found


def list_effects(
    db: Database,
    task_id: str | None = None,
    states: tuple[EffectState, ...] = (),
    keys: TextKeys | None = None,
) -> list[SideEffect]:
    """Side effects in the order they were proposed, optionally of one task or some states.

    Their text is opened with `keys`; without (a caller after states only) it shows the marker.
    """
    where, params = where_clause({"task_id": task_id}, states)
    rows = db.query(f"SELECT * FROM effects{where} ORDER BY id", params)
    return [_effect_from_row(row, keys) for row in rows]


def move_effect(
    db: Database,
    task_id: str,
    key: str,
    from_state: EffectState,
    to_state: EffectState,
    *,
    keys: TextKeys,
    **changes: Any,
) -> bool:
    """Compare-and-set an effect's state (plus other fields by model name); False if it moved."""
    columns: dict[str, Any] = {"state": to_state.value}
    for name, value in changes.items():
        column = _EFFECT_COLUMN.get(name, name)
        sealed = _EFFECT_SEALED.get(column)
        columns[column] = (
            sealed_value(keys, task_id, effect_item(key, sealed), value) if sealed else value
        )
    assignments = ", ".join(f"{column} = ?" for column in columns)
    cursor = db.execute(
        f"UPDATE effects SET {assignments} WHERE task_id = ? AND key = ? AND state = ?",
        [*columns.values(), task_id, key, from_state.value],
    )
    return cursor.rowcount == 1


def create_foreign_checks(db: sqlite_utils.Database) -> None:
    """Migration 0016_foreign_checks: mark checks another store wrote (a sync), so they run
    only once shown; old rows: any effect a sync ever touched."""
    db.execute("ALTER TABLE effects ADD COLUMN check_foreign INTEGER NOT NULL DEFAULT 0")
    db.execute(
        "UPDATE effects SET check_foreign = 1 WHERE key IN (SELECT entity_id FROM events WHERE "
        "task_id = effects.task_id AND entity = 'effect' AND interface = 'sync')"
    )
