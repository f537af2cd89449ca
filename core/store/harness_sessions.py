"""The `harness_sessions` table: which harness session (Claude Code, Codex) feeds which task.

A hook sees only its harness's session id; this mapping is how every later hook call of the
session finds its task without asking the operator.
"""

from __future__ import annotations

from core.store.db import Database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


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
