"""Facts about the store itself (`store_meta`, its id), its schema as found, and its upkeep.

Metrics read stores of every schema version, so whether a table or column exists is asked here
rather than assumed; vacuum is the one maintenance statement gc runs.
"""

from __future__ import annotations

from core.store.db import Database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any


def store_id(db: Database) -> str:
    """The random id that binds this store's encrypted blobs to it."""
    row = db.execute("SELECT value FROM store_meta WHERE key = 'store_id'").fetchone()
    return str(row[0])


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


def table_names(db: Database) -> set[str]:
    """Tables this database holds (tables of newer migrations may be absent)."""
    return set(db.table_names())


def table_columns(db: Database, table: str) -> set[str]:
    """Columns of a table, or the empty set when the table does not exist."""
    if table not in table_names(db):
        return set()
    return {column.name for column in db.table(table).columns}


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


def vacuum(db: Database) -> None:
    """Rebuild the database file without free pages, and fold the WAL back into it."""
    db.execute("VACUUM")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
