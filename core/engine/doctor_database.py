"""`pitstop doctor`'s database checks, on a connection opened without migrating: SQLite's own
integrity check, the migrations recorded against this build's, and states no code knows.

They run before the store is opened for use, since a deleted migration row or an unknown state
is exactly what stops every other command from opening it.
"""

from __future__ import annotations

import sqlite3

from core.engine.doctor_finding import Finding
from core.models import ApprovalState, CheckpointReason, CheckpointState, EffectState, TaskStatus
from core.store.db import Database
from core.store.migrations import MIGRATION_SET, MIGRATIONS_TABLE, known_migration_names

# Columns holding a state, and the values this build knows for each.
_STATE_COLUMNS = (
    ("tasks", "status", TaskStatus),
    ("checkpoints", "state", CheckpointState),
    ("checkpoints", "reason", CheckpointReason),
    ("effects", "state", EffectState),
    ("approvals", "state", ApprovalState),
)


def database_findings(db: Database) -> list[Finding]:
    """Integrity, migrations and unknown states; the later checks only on a sound database."""
    try:
        rows = db.conn.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:  # too damaged to even be checked
        rows = [(str(exc),)]
    if rows != [("ok",)]:
        first = str(rows[0][0]) if rows else "no answer"
        return [
            Finding(
                "database",
                f"the database fails SQLite's integrity check ({first}); restore the store "
                "from a backup, or copy what `sqlite3 pitstop.db .recover` saves into a new one",
            )
        ]
    return [*_migration_findings(db), *_state_findings(db)]


def _migration_findings(db: Database) -> list[Finding]:
    known = known_migration_names()
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if MIGRATIONS_TABLE not in tables:
        return []
    applied = [
        row[0]
        for row in db.execute(
            f"SELECT name FROM {MIGRATIONS_TABLE} WHERE migration_set = ?", [MIGRATION_SET]
        )
    ]
    unknown = [name for name in applied if name not in known]
    if unknown:
        return [
            Finding(
                "migrations",
                f"the database records migration {unknown[-1]}, which this Pitstop does not "
                "know: it was written by a newer Pitstop; upgrade pitstop",
            )
        ]
    newest = max((known.index(name) for name in applied), default=-1)
    missing = [name for name in known[:newest] if name not in applied]
    return [
        Finding(
            "migrations",
            f"migration {name} is not recorded though later ones are (its row was deleted); "
            "--fix records it as applied",
            lambda name=name: _record_migration(db, name),  # type: ignore[misc]
        )
        for name in missing
    ]


def _record_migration(db: Database, name: str) -> str:
    """Record a migration as applied: a later one was applied, so this one was too."""
    with db.conn:
        db.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} (migration_set, name, applied_at) "
            "VALUES (?, ?, datetime('now'))",
            [MIGRATION_SET, name],
        )
    return f"recorded migration {name} as applied"


def _state_findings(db: Database) -> list[Finding]:
    findings: list[Finding] = []
    for table, column, kind in _STATE_COLUMNS:
        known = [member.value for member in kind]
        marks = ", ".join("?" for _ in known)
        try:
            rows = db.execute(
                f"SELECT {column}, COUNT(*) FROM {table} WHERE {column} NOT IN ({marks}) "
                f"GROUP BY {column}",
                known,
            ).fetchall()
        except sqlite3.OperationalError:  # an older schema without the table: nothing to judge
            continue
        findings.extend(
            Finding(
                "state",
                f"{count} row(s) of {table} have {column} {value!r}, which this Pitstop does "
                f"not know (one of {', '.join(known)}); a newer Pitstop or a hand edit wrote it",
            )
            for value, count in rows
        )
    return findings
