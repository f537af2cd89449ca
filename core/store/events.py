"""The `events` table: the append-only audit log (invariant 6), and what metrics count in it.

Events are never updated or deleted (a trigger refuses it), which is what lets a sealed reason be
bound to the id its row gets under the write lock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from core.models import AuditEvent, Interface
from core.store.db import Database
from core.store.sealed_text import TextKeys, event_item, opened_value
from core.store.values import stored_enum

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def add_event(
    db: Database,
    *,
    keys: TextKeys | None,
    at: str,
    actor: str,
    interface: Interface,
    task_id: str | None,
    entity: str,
    entity_id: str,
    action: str,
    from_state: str | None = None,
    to_state: str | None = None,
    reason: str | None = None,
    detail: Mapping[str, Any] | None = None,
    uid: str | None = None,
) -> None:
    """Append one audit event (invariant 6); events are never updated.

    `uid` is given only to an event born in another store (ledger sync): NULL means born here.

    A task's reason is sealed with `keys`; an event of no task, or written with `keys=None`
    (gc's own wording, after it deleted the task's key), keeps Pitstop's own plain text.
    Must run inside `write_txn()`: the sealed reason is bound to the id the row gets.
    """
    columns: dict[str, Any] = {
        "uid": uid,
        "at": at,
        "actor": actor,
        "interface": interface.value,
        "task_id": task_id,
        "entity": entity,
        "entity_id": entity_id,
        "action": action,
        "from_state": from_state,
        "to_state": to_state,
        "reason": reason,
        "detail": json.dumps(dict(detail), sort_keys=True) if detail else None,
    }
    if reason and task_id is not None and keys is not None:
        # Events are never deleted, so under the write lock MAX(id) + 1 is the row's own id.
        (event_id,) = db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM events").fetchone()
        columns["id"] = event_id
        columns["reason"] = keys.seal_text(task_id, event_item(event_id), reason)
    db.table("events").insert(columns)


def list_events(
    db: Database, task_id: str | None = None, keys: TextKeys | None = None
) -> list[AuditEvent]:
    """Audit events in the order they happened, for one task or the whole store.

    Sealed reasons are opened with `keys` (without: the marker).
    """
    sql = "SELECT * FROM events"
    params: list[Any] = []
    if task_id is not None:
        sql += " WHERE task_id = ?"
        params.append(task_id)
    rows = db.query(sql + " ORDER BY id", params)
    return [
        AuditEvent(
            id=row["id"],
            at=row["at"],
            actor=row["actor"],
            interface=stored_enum(
                Interface, row["interface"], "audit interface", f"event {row['id']}"
            ),
            task_id=row["task_id"],
            entity=row["entity"],
            entity_id=row["entity_id"],
            action=row["action"],
            from_state=row["from_state"],
            to_state=row["to_state"],
            reason=opened_value(keys, row["task_id"], event_item(row["id"]), row["reason"]),
        )
        for row in rows
    ]


def event_uids(db: Database, task_id: str) -> dict[int, str | None]:
    """Every audit event of a task: id → the uid it was born with elsewhere (None: born here)."""
    rows = db.execute("SELECT id, uid FROM events WHERE task_id = ? ORDER BY id", [task_id])
    return {int(row[0]): row[1] for row in rows.fetchall()}


def effect_duplicate_hits(db: Database, task_id: str | None = None) -> int:
    """Audited moments a side effect was found already done instead of being run again."""
    # What a check found is kept in the plain `detail`: the reason is sealed.
    sql = (
        "SELECT COUNT(*) FROM events WHERE entity = 'effect' AND ("
        "json_extract(detail, '$.check') = 'already happened' "
        "OR action IN ('refused', 'already-done', 'duplicate'))"
    )
    params: list[Any] = []
    if task_id is not None:
        sql += " AND task_id = ?"
        params.append(task_id)
    return int(db.execute(sql, params).fetchone()[0])


def task_decision_events(db: Database, task_id: str | None = None) -> dict[str, str]:
    """The latest `accept` / `reject` audit action per task."""
    sql = (
        "SELECT task_id, action FROM events "
        "WHERE entity = 'task' AND action IN ('accept', 'reject')"
    )
    params: list[Any] = []
    if task_id is not None:
        sql += " AND task_id = ?"
        params.append(task_id)
    return {row[0]: row[1] for row in db.execute(sql + " ORDER BY id", params).fetchall()}


def background_marks(db: Database, task_id: str) -> dict[str, tuple[str, str | None]]:
    """Per harness background id: the effect it runs and the tool call that started it.

    Written as the audit event `effect … background` when a guarded command went on in the
    background; read when the harness reports how it ended. Only marks born here count: the
    background ids are this machine's harness's.
    """
    marks: dict[str, tuple[str, str | None]] = {}
    rows = db.execute(
        "SELECT entity_id, detail FROM events WHERE task_id = ? AND entity = 'effect' "
        "AND action = 'background' AND detail IS NOT NULL AND uid IS NULL ORDER BY id",
        [task_id],
    )
    for key, detail in rows:
        try:
            said = json.loads(detail)
        except ValueError:
            continue
        background = said.get("background") if isinstance(said, dict) else None
        if isinstance(background, str):
            tool_use = said.get("tool_use")
            marks[background] = (str(key), tool_use if isinstance(tool_use, str) else None)
    return marks


def approvals_requested_via(db: Database, interface: Interface) -> set[tuple[str, str]]:
    """(task, approval id) of every approval requested through `interface` (a harness hook
    holding a permission prompt open asks through `hook`)."""
    rows = db.execute(
        "SELECT task_id, entity_id FROM events WHERE entity = 'approval' AND action = 'request' "
        "AND interface = ?",
        [interface.value],
    ).fetchall()
    return {(str(row[0]), str(row[1])) for row in rows}


def event_details(db: Database, task_id: str | None, entity: str, action: str) -> dict[int, Any]:
    """The recorded details of events of one kind (one task's, or every task's with None):
    event id → its detail (a dict)."""
    sql = "SELECT id, detail FROM events WHERE entity = ? AND action = ?"
    params: list[Any] = [entity, action]
    if task_id is not None:
        sql += " AND task_id = ?"
        params.append(task_id)
    rows = db.query(sql + " ORDER BY id", params)
    return {int(row["id"]): json.loads(row["detail"]) if row["detail"] else {} for row in rows}


def first_detail_since(
    db: Database, task_id: str, entity: str, action: str, since_entity: str, since_action: str
) -> dict[str, Any] | None:
    """The detail of the task's first `entity`/`action` event after its newest
    `since_entity`/`since_action` one (after its first event when there is none); None when
    there is no such event. By event id, never by time: a frozen or coarse clock can stamp
    two events alike."""
    row = db.execute(
        "SELECT detail FROM events WHERE task_id = ? AND entity = ? AND action = ? AND id > "
        "(SELECT COALESCE(MAX(id), 0) FROM events WHERE task_id = ? AND entity = ? "
        "AND action = ?) ORDER BY id LIMIT 1",
        [task_id, entity, action, task_id, since_entity, since_action],
    ).fetchone()
    if row is None:
        return None
    return dict(json.loads(row[0])) if row[0] else {}
