"""Rows to models and back: the only module that knows table and column names.

Every function takes an open `Database`; functions that change state expect to run
inside `core.store.db.write_txn()` so that a state change and its audit event commit together.

Free text is sealed at rest (DESIGN §6): audit reasons, approval actions and reasons, side-effect
targets, checks and notes, and resume verdict reasons are stored as AES-GCM envelopes under the
task's data key, through a `TextKeys`, as BLOBs in the columns that held them in clear. Each is
bound to an item name known before its row is written: `event/<id>/reason` (the id is taken under
the write lock), `approval/<seq>/action|reason`, `effect/<key>/target|check|note` (by the
idempotency key), `resume/<id>/accept_reason`. What lists sort and filter on (ids, states, times,
counts, operator names) stays plain. A `str` found in a sealed column was written before
`0011_sealed_text` on a machine without the key, and reads as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from core.errors import ConflictError, NotFoundError
from core.models import (
    Approval,
    ApprovalState,
    AuditEvent,
    Budget,
    Checkpoint,
    CheckpointReason,
    CheckpointState,
    EffectState,
    Interface,
    NamedVersion,
    Risk,
    SideEffect,
    Task,
    TaskStatus,
)
from core.store.db import Database

MANIFEST_SCHEMA = "pitstop.manifest/1"

# What a sealed text shows when the key to open it is not available (lists never fail on it).
UNREADABLE = "[encrypted: the key to read it is not available]"


class TextKeys(Protocol):
    """Seals and opens a task's free text (`core.security.keys.TaskKeys`); keys load lazily."""

    def seal_text(self, task_id: str, item: str, text: str) -> bytes: ...

    def open_text(self, task_id: str, item: str, sealed: bytes) -> str: ...


def _sealed(keys: TextKeys, task_id: str, item: str, text: str | None) -> bytes | str | None:
    """Text as a sealed column stores it: empty or absent text costs no key and no crypto."""
    return keys.seal_text(task_id, item, text) if text else text


def _opened(keys: TextKeys | None, task_id: str, item: str, stored: Any) -> Any:
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


_CHECKPOINT_COLUMNS = (
    "task_id, seq, state, reason, note, commit_sha, worktree_tree, index_tree, base_commit, "
    "branch, created_at, completed_at, creation_ms, bytes_added, changed_count, left_out_count, "
    "failure, manifest_sha256"
)


def _named(name: str | None, version: str | None) -> NamedVersion | None:
    return NamedVersion(name, version) if name else None


def _task_from_row(row: Mapping[str, Any]) -> Task:
    return Task(
        id=row["id"],
        repo_root=row["repo_root"],
        store_repo=row["store_repo"],
        objective=row["objective"],
        status=TaskStatus(row["status"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        harness=_named(row["harness"], row["harness_version"]),
        model=_named(row["model"], row["model_version"]),
        budget=Budget(
            tokens=row["budget_tokens"], usd=row["budget_usd"], minutes=row["budget_minutes"]
        ),
        tokens_used=row["tokens_used"],
        usd_used=row["usd_used"],
        credentials=tuple(json.loads(row["credentials"])),
        approvers=tuple(json.loads(row.get("approvers") or "[]")),
    )


def insert_task(db: Database, task: Task) -> None:
    """Add a new task; an existing id is refused."""
    if db.execute("SELECT 1 FROM tasks WHERE id = ?", [task.id]).fetchone():
        raise ConflictError(
            f"a task with id {task.id!r} already exists; pick another --id or omit it"
        )
    db.table("tasks").insert(
        {
            "id": task.id,
            "repo_root": task.repo_root,
            "store_repo": task.store_repo,
            "objective": task.objective,
            "status": task.status.value,
            "harness": task.harness.name if task.harness else None,
            "harness_version": task.harness.version if task.harness else None,
            "model": task.model.name if task.model else None,
            "model_version": task.model.version if task.model else None,
            "budget_tokens": task.budget.tokens,
            "budget_usd": task.budget.usd,
            "budget_minutes": task.budget.minutes,
            "tokens_used": task.tokens_used,
            "usd_used": task.usd_used,
            "credentials": json.dumps(list(task.credentials)),
            "approvers": json.dumps(list(task.approvers)),
            "created_at": task.created_at,
            "updated_at": task.updated_at,
        }
    )


def get_task(db: Database, task_id: str) -> Task:
    """The task with this id, or a NotFoundError naming it."""
    rows = list(db.query("SELECT * FROM tasks WHERE id = ?", [task_id]))
    if not rows:
        raise NotFoundError(f"no task {task_id!r} in this store; `pitstop task list` shows them")
    return _task_from_row(rows[0])


def list_tasks(db: Database, statuses: tuple[TaskStatus, ...] = ()) -> list[Task]:
    """Tasks, most recently updated first, optionally only those with the given statuses."""
    if statuses:
        marks = ", ".join("?" for _ in statuses)
        rows = db.query(
            f"SELECT * FROM tasks WHERE status IN ({marks}) ORDER BY updated_at DESC",
            [s.value for s in statuses],
        )
    else:
        rows = db.query("SELECT * FROM tasks ORDER BY updated_at DESC")
    return [_task_from_row(row) for row in rows]


def task_ids(db: Database) -> set[str]:
    """Every task id in the store (to pick a fresh generated id)."""
    return {row[0] for row in db.execute("SELECT id FROM tasks").fetchall()}


def update_task(db: Database, task_id: str, **changes: Any) -> None:
    """Change task columns by model field name (status, tokens_used, usd_used, updated_at)."""
    columns = {
        key: (value.value if isinstance(value, TaskStatus) else value)
        for key, value in changes.items()
    }
    db.table("tasks").update(task_id, columns)


def _blob(value: Any) -> bytes | None:
    if value is None:
        return None
    return bytes(value) if not isinstance(value, str) else value.encode()


def _checkpoint_from_row(row: Mapping[str, Any], *, with_manifest: bool) -> Checkpoint:
    """A checkpoint with its note and manifest still sealed (the engine opens them)."""
    return Checkpoint(
        task_id=row["task_id"],
        seq=row["seq"],
        state=CheckpointState(row["state"]),
        reason=CheckpointReason(row["reason"]),
        created_at=row["created_at"],
        sealed_note=_blob(row["note"]),
        commit=row["commit_sha"],
        worktree_tree=row["worktree_tree"],
        index_tree=row["index_tree"],
        base_commit=row["base_commit"],
        branch=row["branch"],
        completed_at=row["completed_at"],
        creation_ms=row["creation_ms"],
        bytes_added=row["bytes_added"],
        changed_count=row["changed_count"],
        left_out_count=row["left_out_count"],
        failure=row["failure"],
        manifest_sha256=row["manifest_sha256"],
        sealed_manifest=_blob(row.get("manifest")) if with_manifest else None,
    )


def next_checkpoint_seq(db: Database, task_id: str) -> int:
    """The sequence number the task's next checkpoint gets (gaps from failures stay visible)."""
    row = db.execute("SELECT MAX(seq) FROM checkpoints WHERE task_id = ?", [task_id]).fetchone()
    return int(row[0] or 0) + 1


def insert_writing_checkpoint(
    db: Database,
    *,
    task_id: str,
    seq: int,
    reason: CheckpointReason,
    note: bytes | None,
    created_at: str,
    writer_pid: int,
    writer_host: str,
) -> None:
    """Record a checkpoint as `writing` before any of its parts are stored."""
    db.table("checkpoints").insert(
        {
            "task_id": task_id,
            "seq": seq,
            "state": CheckpointState.WRITING.value,
            "reason": reason.value,
            "note": note,
            "created_at": created_at,
            "writer_pid": writer_pid,
            "writer_host": writer_host,
        }
    )


def complete_checkpoint(db: Database, task_id: str, seq: int, **columns: Any) -> None:
    """Flip a `writing` checkpoint to `complete` with its verified parts; anything else refuses."""
    columns["state"] = CheckpointState.COMPLETE.value
    if "commit" in columns:
        columns["commit_sha"] = columns.pop("commit")
    assignments = ", ".join(f"{name} = ?" for name in columns)
    cursor = db.execute(
        f"UPDATE checkpoints SET {assignments} WHERE task_id = ? AND seq = ? AND state = ?",
        [*columns.values(), task_id, seq, CheckpointState.WRITING.value],
    )
    if cursor.rowcount != 1:
        raise ConflictError(f"checkpoint {task_id}@{seq} is no longer being written")


def mark_incomplete(db: Database, task_id: str, seq: int, failure: str) -> bool:
    """Mark a `writing` checkpoint `incomplete` with why; False when it was not writing."""
    cursor = db.execute(
        "UPDATE checkpoints SET state = ?, failure = ? WHERE task_id = ? AND seq = ? AND state = ?",
        [CheckpointState.INCOMPLETE.value, failure, task_id, seq, CheckpointState.WRITING.value],
    )
    return cursor.rowcount == 1


def writing_seqs(db: Database, task_id: str) -> list[int]:
    """Sequence numbers of the task's checkpoints still recorded as `writing`."""
    rows = db.execute(
        "SELECT seq FROM checkpoints WHERE task_id = ? AND state = ? ORDER BY seq",
        [task_id, CheckpointState.WRITING.value],
    ).fetchall()
    return [row[0] for row in rows]


def list_checkpoints(db: Database, task_id: str) -> list[Checkpoint]:
    """The task's checkpoints, oldest first, without manifests."""
    rows = db.query(
        f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE task_id = ? ORDER BY seq", [task_id]
    )
    return [_checkpoint_from_row(row, with_manifest=False) for row in rows]


def get_checkpoint(db: Database, task_id: str, seq: int) -> Checkpoint:
    """One checkpoint with its manifest, or a NotFoundError naming it."""
    rows = list(
        db.query(
            f"SELECT {_CHECKPOINT_COLUMNS}, manifest FROM checkpoints "
            "WHERE task_id = ? AND seq = ?",
            [task_id, seq],
        )
    )
    if not rows:
        raise NotFoundError(
            f"task {task_id!r} has no checkpoint {seq}; `pitstop checkpoints {task_id}` lists them"
        )
    return _checkpoint_from_row(rows[0], with_manifest=True)


def latest_complete(db: Database, task_id: str) -> Checkpoint | None:
    """The task's newest complete checkpoint, with its manifest."""
    row = db.execute(
        "SELECT seq FROM checkpoints WHERE task_id = ? AND state = ? ORDER BY seq DESC LIMIT 1",
        [task_id, CheckpointState.COMPLETE.value],
    ).fetchone()
    return get_checkpoint(db, task_id, row[0]) if row else None


def latest_seq(db: Database, task_id: str) -> int | None:
    """The newest checkpoint sequence of a task, whatever its state."""
    row = db.execute("SELECT MAX(seq) FROM checkpoints WHERE task_id = ?", [task_id]).fetchone()
    return int(row[0]) if row[0] is not None else None


def checkpoint_counts(db: Database) -> dict[str, tuple[int, str | None]]:
    """Per task: how many complete checkpoints it has and when the newest was made."""
    rows = db.execute(
        "SELECT task_id, COUNT(*), MAX(created_at) FROM checkpoints WHERE state = ? "
        "GROUP BY task_id",
        [CheckpointState.COMPLETE.value],
    ).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


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
            interface=Interface(row["interface"]),
            task_id=row["task_id"],
            entity=row["entity"],
            entity_id=row["entity_id"],
            action=row["action"],
            from_state=row["from_state"],
            to_state=row["to_state"],
            reason=_opened(keys, row["task_id"], event_item(row["id"]), row["reason"]),
        )
        for row in rows
    ]


# --- store identity, task keys and evidence ---------------------------------------------------


def store_id(db: Database) -> str:
    """The random id that binds this store's encrypted blobs to it."""
    row = db.execute("SELECT value FROM store_meta WHERE key = 'store_id'").fetchone()
    return str(row[0])


def task_scope(db: Database, task_id: str) -> str | None:
    """The store a task's encrypted content is bound to, when it was created elsewhere."""
    row = db.execute("SELECT origin_store FROM tasks WHERE id = ?", [task_id]).fetchone()
    return str(row[0]) if row and row[0] else None


def get_wrapped_key(db: Database, task_id: str) -> bytes | None:
    """A task's data key as wrapped by the master key, if it has one."""
    row = db.execute("SELECT wrapped FROM task_keys WHERE task_id = ?", [task_id]).fetchone()
    return bytes(row[0]) if row else None


def insert_wrapped_key(
    db: Database, task_id: str, wrapped: bytes, master_key_id: str, at: str
) -> None:
    """Keep a task's wrapped data key."""
    db.execute(
        "INSERT INTO task_keys (task_id, wrapped, master_key_id, created_at) VALUES (?, ?, ?, ?)",
        [task_id, wrapped, master_key_id, at],
    )


_EVIDENCE_FIELDS = (
    "id, task_id, checkpoint_seq, state, source, label, started_at, duration_ms, exit_code, "
    "signal, timed_out, bytes_total, lines_total, sha256, stored_bytes, kept_bytes, truncated, "
    "omitted_bytes, chunk_count, summary, tail_lines, redactions, ruleset, cap_bytes, failure"
)


def _evidence_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
    data = dict(row)
    data["timed_out"] = bool(data["timed_out"])
    data["truncated"] = bool(data["truncated"])
    data["summary"] = json.loads(data["summary"]) if data["summary"] else None
    return data


def insert_evidence(db: Database, **columns: Any) -> int:
    """Record a new evidence item (state `writing`); returns its id."""
    table = db.table("evidence")
    table.insert(columns)
    return int(table.last_rowid or 0)


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


def get_evidence(db: Database, evidence_id: int) -> dict[str, Any]:
    """An evidence item's plain columns, or a NotFoundError."""
    rows = list(db.query(f"SELECT {_EVIDENCE_FIELDS} FROM evidence WHERE id = ?", [evidence_id]))
    if not rows:
        raise NotFoundError(
            f"no evidence {evidence_id} in this store; `pitstop evidence list TASK` lists them"
        )
    return _evidence_from_row(rows[0])


def get_evidence_secrets(db: Database, evidence_id: int) -> tuple[bytes | None, bytes | None]:
    """The encrypted command line and tail of an evidence item."""
    row = db.execute("SELECT command, tail FROM evidence WHERE id = ?", [evidence_id]).fetchone()
    return (bytes(row[0]) if row[0] else None, bytes(row[1]) if row[1] else None)


def list_evidence(
    db: Database,
    task_id: str,
    checkpoint_seq: int | None = None,
    pending: bool = False,
) -> list[dict[str, Any]]:
    """A task's evidence, oldest first: all, one checkpoint's, or not yet in any checkpoint."""
    sql = f"SELECT {_EVIDENCE_FIELDS} FROM evidence WHERE task_id = ?"
    params: list[Any] = [task_id]
    if pending:
        sql += " AND checkpoint_seq IS NULL AND state = 'complete'"
    elif checkpoint_seq is not None:
        sql += " AND checkpoint_seq = ?"
        params.append(checkpoint_seq)
    return [_evidence_from_row(row) for row in db.query(sql + " ORDER BY id", params)]


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


# --- side effects and approvals -------------------------------------------------------------

# Model field -> column, where they differ.
_EFFECT_COLUMN = {"check": "check_command"}
# Sealed effect columns -> the item name they are bound to.
_EFFECT_SEALED = {"target": "target", "check_command": "check", "note": "note"}


def _effect_from_row(row: Mapping[str, Any], keys: TextKeys | None) -> SideEffect:
    def opened(column: str) -> Any:
        item = effect_item(row["key"], _EFFECT_SEALED[column])
        return _opened(keys, row["task_id"], item, row[column])

    return SideEffect(
        task_id=row["task_id"],
        key=row["key"],
        kind=row["kind"],
        state=EffectState(row["state"]),
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
    )


def insert_effect(db: Database, effect: SideEffect, keys: TextKeys) -> None:
    """Record a newly proposed side effect (its target, check and note sealed); a new key only."""
    if db.execute(
        "SELECT 1 FROM effects WHERE task_id = ? AND key = ?", [effect.task_id, effect.key]
    ).fetchone():
        raise ConflictError(f"task {effect.task_id} already has a side effect {effect.key!r}")
    db.execute(
        "INSERT INTO effects (task_id, key, kind, target, check_command, needs_approval, state, "
        "attempts, note, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            effect.task_id,
            effect.key,
            effect.kind,
            _sealed(keys, effect.task_id, effect_item(effect.key, "target"), effect.target),
            _sealed(keys, effect.task_id, effect_item(effect.key, "check"), effect.check),
            int(effect.needs_approval),
            effect.state.value,
            effect.attempts,
            _sealed(keys, effect.task_id, effect_item(effect.key, "note"), effect.note),
            effect.created_at,
            effect.updated_at,
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


def _where(
    equal: Mapping[str, Any], states: Sequence[EffectState] | Sequence[ApprovalState] = ()
) -> tuple[str, list[Any]]:
    """A WHERE clause for the columns given a value (None: no filter) and a set of states."""
    clauses = [f"{column} = ?" for column, value in equal.items() if value is not None]
    params: list[Any] = [value for value in equal.values() if value is not None]
    if states:
        clauses.append(f"state IN ({', '.join('?' for _ in states)})")
        params.extend(state.value for state in states)
    return (f" WHERE {' AND '.join(clauses)}" if clauses else "", params)


def list_effects(
    db: Database,
    task_id: str | None = None,
    states: tuple[EffectState, ...] = (),
    keys: TextKeys | None = None,
) -> list[SideEffect]:
    """Side effects in the order they were proposed, optionally of one task or some states.

    Their text is opened with `keys`; without (a caller after states only) it shows the marker.
    """
    where, params = _where({"task_id": task_id}, states)
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
            _sealed(keys, task_id, effect_item(key, sealed), value) if sealed else value
        )
    assignments = ", ".join(f"{column} = ?" for column in columns)
    cursor = db.execute(
        f"UPDATE effects SET {assignments} WHERE task_id = ? AND key = ? AND state = ?",
        [*columns.values(), task_id, key, from_state.value],
    )
    return cursor.rowcount == 1


def _approval_from_row(row: Mapping[str, Any], keys: TextKeys | None) -> Approval:
    task_id, seq = row["task_id"], row["seq"]
    return Approval(
        id=row["id"],
        task_id=task_id,
        seq=seq,
        action=_opened(keys, task_id, approval_item(seq, "action"), row["action"]),
        risk=Risk(row["risk"]),
        state=ApprovalState(row["state"]),
        requested_by=row["requested_by"],
        requested_at=row["requested_at"],
        effect_key=row["effect_key"],
        expires_at=row["expires_at"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        reason=_opened(keys, task_id, approval_item(seq, "reason"), row["reason"]),
        checkpoint_seq=row["checkpoint_seq"],
    )


def next_approval_seq(db: Database, task_id: str) -> int:
    """The per-task number the task's next approval request gets."""
    row = db.execute("SELECT MAX(seq) FROM approvals WHERE task_id = ?", [task_id]).fetchone()
    return int(row[0] or 0) + 1


def insert_approval(db: Database, approval: Approval, keys: TextKeys) -> None:
    """Record a new approval request (its action sealed)."""
    db.execute(
        "INSERT INTO approvals (id, task_id, seq, action, effect_key, risk, state, requested_by, "
        "requested_at, expires_at, checkpoint_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [approval.id, approval.task_id, approval.seq, *_request_columns(approval, keys)],
    )


def _request_columns(approval: Approval, keys: TextKeys) -> list[Any]:
    """An approval request's columns from `action` to `checkpoint_seq` (the action sealed)."""
    return [
        _sealed(keys, approval.task_id, approval_item(approval.seq, "action"), approval.action),
        approval.effect_key,
        approval.risk.value,
        approval.state.value,
        approval.requested_by,
        approval.requested_at,
        approval.expires_at,
        approval.checkpoint_seq,
    ]


def find_approval(db: Database, approval_id: str, keys: TextKeys | None) -> Approval | None:
    """The approval with this id, if there is one (text opened with `keys`)."""
    rows = list(db.query("SELECT * FROM approvals WHERE id = ?", [approval_id]))
    return _approval_from_row(rows[0], keys) if rows else None


def list_approvals(
    db: Database,
    task_id: str | None = None,
    states: tuple[ApprovalState, ...] = (),
    effect_key: str | None = None,
    keys: TextKeys | None = None,
) -> list[Approval]:
    """Approval requests as stored, oldest first, optionally filtered.

    Their text is opened with `keys`; without (a caller after states only) it shows the marker.
    """
    where, params = _where({"task_id": task_id, "effect_key": effect_key}, states)
    rows = db.query(f"SELECT * FROM approvals{where} ORDER BY requested_at, task_id, seq", params)
    return [_approval_from_row(row, keys) for row in rows]


def decide_approval(
    db: Database,
    approval_id: str,
    to_state: ApprovalState,
    *,
    decided_by: str | None,
    decided_at: str,
    reason: str | None,
    keys: TextKeys,
) -> bool:
    """Move a `pending` approval to its decision (reason sealed); False when not pending."""
    return _write_decision(
        db, approval_id, to_state, decided_by, decided_at, reason, keys, only_pending=True
    )


def _write_decision(
    db: Database,
    approval_id: str,
    to_state: ApprovalState,
    decided_by: str | None,
    decided_at: str,
    reason: str | None,
    keys: TextKeys,
    *,
    only_pending: bool,
) -> bool:
    """Store an approval's decision, its reason sealed; False when no row was changed."""
    found = db.execute("SELECT task_id, seq FROM approvals WHERE id = ?", [approval_id]).fetchone()
    if found is None:
        return False
    sql = "UPDATE approvals SET state = ?, decided_by = ?, decided_at = ?, reason = ? WHERE id = ?"
    params = [
        to_state.value,
        decided_by,
        decided_at,
        _sealed(keys, found[0], approval_item(found[1], "reason"), reason),
        approval_id,
    ]
    if only_pending:
        sql += " AND state = ?"
        params.append(ApprovalState.PENDING.value)
    return db.execute(sql, params).rowcount == 1


def tasks_keyed_by_other_master(db: Database, master_key_id: str) -> list[str]:
    """Tasks whose data key another master key wrapped."""
    rows = db.execute(
        "SELECT task_id FROM task_keys WHERE master_key_id != ? ORDER BY task_id", [master_key_id]
    ).fetchall()
    return [row[0] for row in rows]


# --- validations and resumes ---------------------------------------------------------------


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


def insert_resume(db: Database, **columns: Any) -> int:
    """Record a resume as it takes its lease."""
    table = db.table("resumes")
    table.insert(columns)
    return int(table.last_rowid or 0)


def update_resume(
    db: Database, resume_id: int, *, keys: TextKeys | None = None, **columns: Any
) -> None:
    """Change a resume's record (state, restore latency, launch outcome, acceptance).

    An `accept_reason` is sealed with `keys`, which it then needs.
    """
    if columns.get("accept_reason"):
        if keys is None:
            raise ValueError("a resume's accept_reason is sealed: pass keys")
        (task_id,) = db.execute("SELECT task_id FROM resumes WHERE id = ?", [resume_id]).fetchone()
        columns["accept_reason"] = keys.seal_text(
            task_id, resume_item(resume_id), columns["accept_reason"]
        )
    db.table("resumes").update(resume_id, columns)


def _resume_from_row(row: Mapping[str, Any], keys: TextKeys | None) -> dict[str, Any]:
    record = dict(row)
    record["accept_reason"] = _opened(
        keys, record["task_id"], resume_item(record["id"]), record["accept_reason"]
    )
    return record


def active_resumes(db: Database, task_id: str) -> list[dict[str, Any]]:
    """Resumes of a task taken here whose lease was not released (live or not); no text opened.

    A resume brought in by ledger sync is another store's history, never a lease here.
    """
    return [
        _resume_from_row(row, None)
        for row in db.query(
            "SELECT * FROM resumes WHERE task_id = ? AND state = 'active' "
            "AND synced_from IS NULL ORDER BY id",
            [task_id],
        )
    ]


def latest_resume(
    db: Database, task_id: str, keys: TextKeys | None = None
) -> dict[str, Any] | None:
    """The task's newest resume, whatever its state (its reason opened with `keys`)."""
    rows = list(
        db.query("SELECT * FROM resumes WHERE task_id = ? ORDER BY id DESC LIMIT 1", [task_id])
    )
    return _resume_from_row(rows[0], keys) if rows else None


def list_resumes(db: Database, task_id: str, keys: TextKeys) -> list[dict[str, Any]]:
    """Every resume of a task, oldest first, its accept/reject reason opened with `keys`."""
    rows = db.query("SELECT * FROM resumes WHERE task_id = ? ORDER BY id", [task_id])
    return [_resume_from_row(row, keys) for row in rows]


# --- retention and metrics ------------------------------------------------------------------


def table_names(db: Database) -> set[str]:
    """Tables this database holds (tables of newer migrations may be absent)."""
    return set(db.table_names())


def table_columns(db: Database, table: str) -> set[str]:
    """Columns of a table, or the empty set when the table does not exist."""
    if table not in table_names(db):
        return set()
    return {column.name for column in db.table(table).columns}


def latest_checkpoint_created_at(db: Database, task_id: str) -> str | None:
    """When the task's newest complete checkpoint was taken, if it has one."""
    row = db.execute(
        "SELECT MAX(created_at) FROM checkpoints WHERE task_id = ? AND state = ?",
        [task_id, CheckpointState.COMPLETE.value],
    ).fetchone()
    return str(row[0]) if row and row[0] else None


def checkpoint_facts(db: Database, task_id: str | None = None) -> list[dict[str, Any]]:
    """Listable facts of checkpoints (no manifests), by task then sequence."""
    sql = (
        "SELECT task_id, seq, state, reason, created_at, completed_at, creation_ms, bytes_added, "
        "commit_sha FROM checkpoints"
    )
    params: list[Any] = []
    if task_id is not None:
        sql += " WHERE task_id = ?"
        params.append(task_id)
    return [dict(row) for row in db.query(sql + " ORDER BY task_id, seq", params)]


def expire_checkpoint(db: Database, task_id: str, seq: int, from_state: CheckpointState) -> bool:
    """Mark a checkpoint `expired` if it is still in `from_state`; False when it moved."""
    cursor = db.execute(
        "UPDATE checkpoints SET state = ? WHERE task_id = ? AND seq = ? AND state = ?",
        [CheckpointState.EXPIRED.value, task_id, seq, from_state.value],
    )
    return cursor.rowcount == 1


def has_wrapped_key(db: Database, task_id: str) -> bool:
    """True while the task still has a data key."""
    row = db.execute("SELECT 1 FROM task_keys WHERE task_id = ?", [task_id]).fetchone()
    return row is not None


def delete_wrapped_key(db: Database, task_id: str) -> bool:
    """Forget a task's data key: everything sealed with it becomes unreadable everywhere."""
    return db.execute("DELETE FROM task_keys WHERE task_id = ?", [task_id]).rowcount == 1


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


def vacuum(db: Database) -> None:
    """Rebuild the database file without free pages, and fold the WAL back into it."""
    db.execute("VACUUM")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def recorded_values(
    db: Database, table: str, column: str, task_id: str | None = None
) -> list[int] | None:
    """Non-null integers of `table.column` (of one task), or None when the table lacks it."""
    columns = table_columns(db, table)
    if column not in columns or (task_id is not None and "task_id" not in columns):
        return None
    sql = f"SELECT {column} FROM {table} WHERE {column} IS NOT NULL"
    params: list[Any] = []
    if task_id is not None:
        sql += " AND task_id = ?"
        params.append(task_id)
    return [int(row[0]) for row in db.execute(sql, params).fetchall()]


def resume_outcomes(db: Database, task_id: str | None = None) -> list[dict[str, Any]] | None:
    """Per resume: task, verdict it was resumed under, acceptance; None without a resumes table."""
    columns = table_columns(db, "resumes")
    if "task_id" not in columns:
        return None
    wanted = [name for name in ("verdict", "accepted", "restore_ms", "state") if name in columns]
    sql = f"SELECT {', '.join(['task_id', *wanted])} FROM resumes"
    params: list[Any] = []
    if task_id is not None:
        sql += " WHERE task_id = ?"
        params.append(task_id)
    return [dict(row) for row in db.query(sql + " ORDER BY id", params)]


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


def delete_evidence(db: Database, evidence_id: int) -> None:
    """Remove an evidence item and its chunks (only for a command that never started)."""
    db.execute("DELETE FROM evidence_chunks WHERE evidence_id = ?", [evidence_id])
    db.execute("DELETE FROM evidence WHERE id = ?", [evidence_id])


def get_meta(db: Database, key: str) -> str | None:
    """One fact about this store (`store_meta`), if recorded."""
    row = db.execute("SELECT value FROM store_meta WHERE key = ?", [key]).fetchone()
    return str(row[0]) if row else None


def set_meta(db: Database, key: str, value: str) -> None:
    """Record a fact about this store."""
    db.execute(
        "INSERT INTO store_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [key, value],
    )


# --- the dashboard's rollup ----------------------------------------------------------------------

# One statement for the whole task list: each per-task figure is a GROUP BY over its table (never
# one query per task), joined to the tasks. The covering indexes of 0006_dashboard_indexes let
# each aggregate read an index alone, so 100,000 checkpoints cost one index scan.
_TASK_ROLLUP_SQL = """
SELECT t.*,
       COALESCE(c.n, 0) AS rollup_checkpoints,
       c.last AS rollup_last_checkpoint_at,
       COALESCE(a.n, 0) AS rollup_pending_approvals,
       COALESCE(e.n, 0) AS rollup_uncertain_effects,
       v.verdict AS rollup_last_verdict
FROM tasks AS t
LEFT JOIN (
    SELECT task_id, COUNT(*) AS n, MAX(created_at) AS last
    FROM checkpoints WHERE state = :complete GROUP BY task_id
) AS c ON c.task_id = t.id
LEFT JOIN (
    SELECT task_id, COUNT(*) AS n FROM approvals
    WHERE state = :pending AND (expires_at IS NULL OR expires_at > :now) GROUP BY task_id
) AS a ON a.task_id = t.id
LEFT JOIN (
    SELECT task_id, COUNT(*) AS n FROM effects WHERE state = :uncertain GROUP BY task_id
) AS e ON e.task_id = t.id
LEFT JOIN (
    -- SQLite takes a bare column from the row that holds the MAX: the newest validation's verdict
    -- (by time: a validation fetched by sync may be older than one run here).
    SELECT task_id, verdict, MAX(at || printf('|%012d', id)) AS newest
    FROM validations GROUP BY task_id
) AS v ON v.task_id = t.id
ORDER BY t.updated_at DESC
"""


def task_rollups(
    db: Database, now_iso: str
) -> list[tuple[Task, int, str | None, int, int, str | None]]:
    """Every task, most recently updated first, with what the dashboard lists beside it.

    Each entry is `(task, complete checkpoints, newest checkpoint's time, pending approvals not
    yet expired at `now_iso`, uncertain effects, verdict of the newest validation or None)`.
    """
    rows = db.query(
        _TASK_ROLLUP_SQL,
        {
            "complete": CheckpointState.COMPLETE.value,
            "pending": ApprovalState.PENDING.value,
            "uncertain": EffectState.UNCERTAIN.value,
            "now": now_iso,
        },
    )
    return [
        (
            _task_from_row(row),
            row["rollup_checkpoints"],
            row["rollup_last_checkpoint_at"],
            row["rollup_pending_approvals"],
            row["rollup_uncertain_effects"],
            row["rollup_last_verdict"],
        )
        for row in rows
    ]


def upsert_harness_session(
    db: Database,
    *,
    harness: str,
    session_id: str,
    task_id: str,
    transcript_path: str | None,
    cwd: str | None,
    at: str,
) -> None:
    """Record that a harness session feeds a task (a known session is re-pointed and touched)."""
    db.execute(
        "INSERT INTO harness_sessions "
        "(harness, session_id, task_id, transcript_path, cwd, started_at, seen_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (harness, session_id) DO UPDATE SET task_id = excluded.task_id, "
        "transcript_path = coalesce(excluded.transcript_path, transcript_path), "
        "cwd = coalesce(excluded.cwd, cwd), seen_at = excluded.seen_at",
        [harness, session_id, task_id, transcript_path, cwd, at, at],
    )


def session_task_id(db: Database, harness: str, session_id: str) -> str | None:
    """The task a harness session feeds, if it was seen before."""
    row = db.execute(
        "SELECT task_id FROM harness_sessions WHERE harness = ? AND session_id = ?",
        [harness, session_id],
    ).fetchone()
    return str(row[0]) if row else None


def latest_harness_session(db: Database, task_id: str) -> dict[str, Any] | None:
    """The task's most recently seen harness session (harness, session_id, transcript_path)."""
    row = db.execute(
        "SELECT harness, session_id, transcript_path, cwd, started_at, seen_at "
        "FROM harness_sessions WHERE task_id = ? ORDER BY seen_at DESC, rowid DESC LIMIT 1",
        [task_id],
    ).fetchone()
    if row is None:
        return None
    keys = ("harness", "session_id", "transcript_path", "cwd", "started_at", "seen_at")
    return dict(zip(keys, row, strict=True))


# The first screenful, before the whole list: the `limit` tasks that come first in the order the
# dashboard triages (statuses in `order`, then the most recent activity), each figure a correlated
# index lookup for those tasks only, so its cost does not grow with the store's checkpoints.
# The page comes back as ONE row holding a JSON array: every row fetched from SQLite retakes the
# GIL, and while the UI thread is busy painting each retake can wait a whole switch interval.
_TASK_JSON_FIELDS = (
    "id", "repo_root", "store_repo", "objective", "status", "harness", "harness_version", "model",
    "model_version", "budget_tokens", "budget_usd", "budget_minutes", "tokens_used", "usd_used",
    "credentials", "approvers", "created_at", "updated_at",
)  # fmt: skip
_FIRST_ROLLUP_SQL = f"""
WITH page AS (
    SELECT t.id AS id,
           (SELECT MAX(created_at) FROM checkpoints
            WHERE state = :complete AND task_id = t.id) AS last
    FROM tasks AS t
    WHERE t.status = :status
    ORDER BY COALESCE(last, t.updated_at) DESC
    LIMIT :limit
)
SELECT json_group_array(json_object(
    {", ".join(f"'{name}', t.{name}" for name in _TASK_JSON_FIELDS)},
    'rollup_checkpoints', (SELECT COUNT(*) FROM checkpoints
                           WHERE state = :complete AND task_id = t.id),
    'rollup_last_checkpoint_at', page.last,
    'rollup_pending_approvals', (SELECT COUNT(*) FROM approvals
                                 WHERE state = :pending AND task_id = t.id
                                   AND (expires_at IS NULL OR expires_at > :now)),
    'rollup_uncertain_effects', (SELECT COUNT(*) FROM effects
                                 WHERE state = :uncertain AND task_id = t.id),
    'rollup_last_verdict', (SELECT verdict FROM validations
                            WHERE task_id = t.id ORDER BY at DESC, id DESC LIMIT 1)
))
FROM page JOIN tasks AS t ON t.id = page.id
"""


def first_task_rollups(
    db: Database, now_iso: str, limit: int, order: tuple[TaskStatus, ...]
) -> list[tuple[Task, int, str | None, int, int, str | None]]:
    """The first `limit` entries of `task_rollups` in triage order: statuses as listed in
    `order` (any others last), then the newest checkpoint (or update) first."""
    # One status at a time, in triage order, until the page is full: the lookups run for the
    # tasks that can make the page (those needing a person come first), not for every task.
    statuses = [*order, *(status for status in TaskStatus if status not in order)]
    rows: list[dict[str, Any]] = []
    for status in statuses:
        if len(rows) >= limit:
            break
        (page,) = db.execute(
            _FIRST_ROLLUP_SQL,
            {
                "complete": CheckpointState.COMPLETE.value,
                "pending": ApprovalState.PENDING.value,
                "uncertain": EffectState.UNCERTAIN.value,
                "now": now_iso,
                "limit": limit - len(rows),
                "status": status.value,
            },
        ).fetchone()
        # The aggregate does not promise the page's order: sort it again, as the SQL did.
        found = json.loads(page or "[]")
        found.sort(
            key=lambda row: row["rollup_last_checkpoint_at"] or row["updated_at"], reverse=True
        )
        rows.extend(found)
    return [
        (
            _task_from_row(row),
            row["rollup_checkpoints"],
            row["rollup_last_checkpoint_at"],
            row["rollup_pending_approvals"],
            row["rollup_uncertain_effects"],
            row["rollup_last_verdict"],
        )
        for row in rows
    ]


def task_status_counts(db: Database) -> dict[TaskStatus, int]:
    """How many tasks have each status (statuses with none are left out); one row fetched."""
    (counts,) = db.execute(
        "SELECT json_group_object(status, n) FROM "
        "(SELECT status, COUNT(*) AS n FROM tasks GROUP BY status)"
    ).fetchone()
    return {TaskStatus(status): count for status, count in json.loads(counts or "{}").items()}


def list_task_recipients(db: Database, task_id: str) -> list[str]:
    """A task's recipients (public keys), in the order they were added."""
    rows = db.execute(
        "SELECT recipient FROM task_recipients WHERE task_id = ? ORDER BY added_at, rowid",
        [task_id],
    ).fetchall()
    return [row[0] for row in rows]


def add_task_recipient(
    db: Database, task_id: str, recipient: str, added_at: str, added_by: str
) -> bool:
    """Add one recipient to a task; False when it was already there (nothing changes)."""
    cursor = db.execute(
        "INSERT OR IGNORE INTO task_recipients (task_id, recipient, added_at, added_by) "
        "VALUES (?, ?, ?, ?)",
        [task_id, recipient, added_at, added_by],
    )
    return bool(cursor.rowcount)


# --- remotes --------------------------------------------------------------------------------


def add_remote(db: Database, name: str, url: str, repo_root: str, at: str) -> None:
    """Name a remote; an existing name is refused."""
    if db.execute("SELECT 1 FROM remotes WHERE name = ?", [name]).fetchone():
        raise ConflictError(
            f"a remote named {name!r} exists already; `pitstop remote remove {name}` first"
        )
    db.table("remotes").insert({"name": name, "url": url, "repo_root": repo_root, "added_at": at})


def remove_remote(db: Database, name: str) -> bool:
    """Forget a named remote; False when there was none."""
    return db.execute("DELETE FROM remotes WHERE name = ?", [name]).rowcount == 1


def get_remote(db: Database, name: str) -> dict[str, Any] | None:
    """A named remote's row, if any."""
    rows = list(db.query("SELECT * FROM remotes WHERE name = ?", [name]))
    return dict(rows[0]) if rows else None


def list_remotes(db: Database) -> list[dict[str, Any]]:
    """Every named remote, by name."""
    return [dict(row) for row in db.query("SELECT * FROM remotes ORDER BY name")]


def export_commits(db: Database, task_id: str) -> dict[int, str]:
    """The commit that carries each of a task's checkpoints to remotes: seq → commit."""
    rows = db.execute(
        "SELECT seq, commit_sha FROM remote_exports WHERE task_id = ?", [task_id]
    ).fetchall()
    return {int(seq): str(sha) for seq, sha in rows}


def record_export(db: Database, task_id: str, seq: int, commit_sha: str) -> None:
    """Remember the remote commit of a checkpoint."""
    db.execute(
        "INSERT OR REPLACE INTO remote_exports (task_id, seq, commit_sha) VALUES (?, ?, ?)",
        [task_id, seq, commit_sha],
    )


def link_remote(
    db: Database,
    task_id: str,
    url: str,
    *,
    pushed_at: str | None = None,
    fetched_at: str | None = None,
) -> None:
    """Record that a task travelled through `url` (push or fetch time)."""
    db.execute(
        "INSERT INTO remote_links (task_id, url, pushed_at, fetched_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (task_id, url) DO UPDATE SET "
        "pushed_at = COALESCE(excluded.pushed_at, pushed_at), "
        "fetched_at = COALESCE(excluded.fetched_at, fetched_at)",
        [task_id, url, pushed_at, fetched_at],
    )


def remote_links(db: Database, task_id: str | None = None) -> list[dict[str, Any]]:
    """Which tasks travel through which remotes."""
    if task_id is None:
        return [dict(row) for row in db.query("SELECT * FROM remote_links ORDER BY task_id")]
    return [
        dict(row)
        for row in db.query("SELECT * FROM remote_links WHERE task_id = ? ORDER BY url", [task_id])
    ]


def replace_listing(db: Database, url: str, rows: list[dict[str, Any]]) -> None:
    """Store the newest listing of a remote, replacing the previous one."""
    db.execute("DELETE FROM remote_listing WHERE url = ?", [url])
    if rows:
        db.table("remote_listing").insert_all([{"url": url, **row} for row in rows])


def remote_listing(db: Database) -> list[dict[str, Any]]:
    """Every remote task seen in the last listing of each remote."""
    return [dict(row) for row in db.query("SELECT * FROM remote_listing ORDER BY updated_at DESC")]


def set_task_origin(db: Database, task_id: str, origin_store: str) -> None:
    """Mark a task as fetched: its content stays bound to the store that created it."""
    db.execute("UPDATE tasks SET origin_store = ? WHERE id = ?", [origin_store, task_id])


def insert_fetched_checkpoint(db: Database, **columns: Any) -> None:
    """Record a checkpoint fetched from a remote (already complete and verified)."""
    db.table("checkpoints").insert(columns)


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


# --- ledger sync (core.ledger.facts) --------------------------------------------------------


def list_validations(db: Database, task_id: str) -> list[dict[str, Any]]:
    """A task's validation runs, oldest first, findings as stored (JSON text)."""
    return [
        dict(row)
        for row in db.query("SELECT * FROM validations WHERE task_id = ? ORDER BY id", [task_id])
    ]


def event_uids(db: Database, task_id: str) -> dict[int, str | None]:
    """Every audit event of a task: id → the uid it was born with elsewhere (None: born here)."""
    rows = db.execute("SELECT id, uid FROM events WHERE task_id = ? ORDER BY id", [task_id])
    return {int(row[0]): row[1] for row in rows.fetchall()}


def ledger_fact_bodies(db: Database, task_id: str) -> dict[str, bytes]:
    """Every ledger fact this store exported or applied for a task: uid → its bytes."""
    rows = db.execute("SELECT uid, body FROM ledger_facts WHERE task_id = ?", [task_id])
    return {str(row[0]): bytes(row[1]) for row in rows.fetchall()}


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
    where, params = _where({"task_id": task_id, "entity": entity})
    rows = db.query(f"SELECT * FROM ledger_conflicts{where} ORDER BY recorded_at, rowid", params)
    found = []
    for row in rows:
        record = dict(row)
        record["kept"] = json.loads(record["kept"])
        record["lost"] = json.loads(record["lost"])
        found.append(record)
    return found


def replace_approval_request(db: Database, approval: Approval, keys: TextKeys) -> bool:
    """Put another store's request in place of this one's under the same id, undecided (ledger
    sync only: the same number was given to two different requests)."""
    cursor = db.execute(
        "UPDATE approvals SET action = ?, effect_key = ?, risk = ?, state = ?, requested_by = ?, "
        "requested_at = ?, expires_at = ?, checkpoint_seq = ?, decided_by = NULL, "
        "decided_at = NULL, reason = NULL WHERE id = ?",
        [*_request_columns(approval, keys), approval.id],
    )
    return cursor.rowcount == 1


def overrule_approval(
    db: Database,
    approval_id: str,
    to_state: ApprovalState,
    *,
    decided_by: str | None,
    decided_at: str,
    reason: str | None,
    keys: TextKeys,
) -> bool:
    """Replace an approval's decision with one made first elsewhere (ledger sync only)."""
    return _write_decision(
        db, approval_id, to_state, decided_by, decided_at, reason, keys, only_pending=False
    )
