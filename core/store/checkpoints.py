"""The `checkpoints` table: a checkpoint from `writing` to `complete`, `incomplete` or `expired`.

A checkpoint row is written before any of its parts and flipped to `complete` only once they are
verified (compare-and-set on the state), so a crash leaves a visible `writing` row, never a
half-complete one. Notes and manifests stay sealed here: the engine opens them.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.errors import ConflictError, NotFoundError
from core.models import Checkpoint, CheckpointReason, CheckpointState
from core.store.db import Database
from core.store.values import stored_enum

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

MANIFEST_SCHEMA = "pitstop.manifest/1"


_CHECKPOINT_COLUMNS = (
    "task_id, seq, state, reason, note, commit_sha, worktree_tree, index_tree, base_commit, "
    "branch, created_at, completed_at, creation_ms, bytes_added, changed_count, left_out_count, "
    "failure, manifest_sha256"
)


def _blob(value: Any) -> bytes | None:
    if value is None:
        return None
    return bytes(value) if not isinstance(value, str) else value.encode()


def _where(row: Mapping[str, Any]) -> str:
    return f"checkpoint {row['task_id']}@{row['seq']}"


def _checkpoint_from_row(row: Mapping[str, Any], *, with_manifest: bool) -> Checkpoint:
    """A checkpoint with its note and manifest still sealed (the engine opens them)."""
    return Checkpoint(
        task_id=row["task_id"],
        seq=row["seq"],
        state=stored_enum(CheckpointState, row["state"], "checkpoint state", _where(row)),
        reason=stored_enum(CheckpointReason, row["reason"], "checkpoint reason", _where(row)),
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


def insert_fetched_checkpoint(db: Database, **columns: Any) -> None:
    """Record a checkpoint fetched from a remote (already complete and verified)."""
    db.table("checkpoints").insert(columns)
