"""The `task_trust` and `ledger_rejected` tables: whose roster a task follows here, and the facts
from elsewhere that were not taken.

The pinned genesis key is written once (when the task is created here, or first fetched) and
never replaced, so no later remote content can change whom a task trusts. A rejected fact is
kept by the sha256 of its bytes, so a remote that offers it again adds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.store.db import Database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    import sqlite_utils


def create_trust_tables(db: sqlite_utils.Database) -> None:
    """Migration 0014_trust: the pinned genesis of each task, and the facts refused."""
    # The genesis key this store trusts for each task (trust on first use, or pinned from an
    # out-of-band fingerprint): a roster founded by any other key is never taken.
    db.execute(
        """
        CREATE TABLE task_trust (
            task_id TEXT PRIMARY KEY REFERENCES tasks(id),
            genesis_key TEXT NOT NULL,
            how TEXT NOT NULL,
            pinned_at TEXT NOT NULL
        )
        """
    )
    # Facts from elsewhere that were not taken (unsigned, forged, by a key the roster does not
    # admit): kept aside with why, never applied, never sent on.
    db.execute(
        """
        CREATE TABLE ledger_rejected (
            task_id TEXT NOT NULL,
            body_sha256 TEXT NOT NULL,
            uid TEXT NOT NULL,
            kind TEXT NOT NULL,
            author TEXT,
            why TEXT NOT NULL,
            seen_at TEXT NOT NULL,
            PRIMARY KEY (task_id, body_sha256)
        )
        """
    )


def trusted_genesis(db: Database, task_id: str) -> str | None:
    """The genesis key this store pinned for a task, None when none is pinned yet."""
    row = db.execute("SELECT genesis_key FROM task_trust WHERE task_id = ?", [task_id]).fetchone()
    return str(row[0]) if row else None


def trust_pins(db: Database) -> dict[str, dict[str, str]]:
    """Every pinned task: task → {genesis_key, how, pinned_at}."""
    rows = db.execute("SELECT task_id, genesis_key, how, pinned_at FROM task_trust").fetchall()
    return {str(r[0]): {"genesis_key": r[1], "how": r[2], "pinned_at": r[3]} for r in rows}


def pin_genesis(db: Database, task_id: str, genesis_key: str, how: str, at: str) -> bool:
    """Pin a task's genesis key, never over one already pinned; False when one was."""
    cursor = db.execute(
        "INSERT OR IGNORE INTO task_trust (task_id, genesis_key, how, pinned_at) "
        "VALUES (?, ?, ?, ?)",
        [task_id, genesis_key, how, at],
    )
    return cursor.rowcount == 1


def record_rejected_facts(
    db: Database, task_id: str, rejected: Sequence[dict[str, Any]], at: str
) -> int:
    """Keep facts that were not taken (body_sha256, uid, kind, author, why); return how many
    were new."""
    added = 0
    for item in rejected:
        cursor = db.execute(
            "INSERT OR IGNORE INTO ledger_rejected "
            "(task_id, body_sha256, uid, kind, author, why, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [task_id, item["body_sha256"], item["uid"], item["kind"], item["author"], item["why"],
             at],
        )  # fmt: skip
        added += cursor.rowcount
    return added


def rejected_facts(db: Database, task_id: str) -> list[dict[str, Any]]:
    """The facts of a task that were not taken, oldest first."""
    rows = db.execute(
        "SELECT body_sha256, uid, kind, author, why, seen_at FROM ledger_rejected "
        "WHERE task_id = ? ORDER BY seen_at, uid",
        [task_id],
    ).fetchall()
    names = ("body_sha256", "uid", "kind", "author", "why", "seen_at")
    return [dict(zip(names, row, strict=True)) for row in rows]


def rejected_body_hashes(db: Database, task_id: str) -> set[str]:
    """The sha256 of every rejected fact's bytes, so the same bytes are not judged twice."""
    rows = db.execute("SELECT body_sha256 FROM ledger_rejected WHERE task_id = ?", [task_id])
    return {str(row[0]) for row in rows.fetchall()}


def rejected_counts(db: Database) -> dict[str, int]:
    """How many facts were refused, per task (for listings and the dashboard)."""
    rows = db.execute("SELECT task_id, COUNT(*) FROM ledger_rejected GROUP BY task_id").fetchall()
    return {str(r[0]): int(r[1]) for r in rows}
