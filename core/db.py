"""Open the SQLite database the one safe way, and write through one transaction helper.

DESIGN §9: with sqlite-utils 4.x `with db.conn:` does not make one transaction and `db.atomic()`
issues a deferred `BEGIN` that fails with "database is locked" when several agents write at
once. So every write goes through `write_txn()`: `BEGIN IMMEDIATE` takes the write lock up front,
waiting up to `busy_timeout` for other writers, and sqlite-utils calls inside it become savepoints.
The connection runs in autocommit mode (`isolation_level=None`) so Python never opens a
transaction behind our back. One connection per thread; never share one across threads.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

from core.errors import StoreError
from core.paths import ensure_private_file

BUSY_TIMEOUT_MS = 30_000


def open_database(path: Path) -> sqlite_utils.Database:
    """Open (creating if needed) the store database with WAL, FULL sync and a long busy timeout."""
    old_umask = os.umask(0o077)
    try:
        conn = sqlite3.connect(
            str(path),
            isolation_level=None,
            timeout=BUSY_TIMEOUT_MS / 1000,
            check_same_thread=True,
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        journal_mode = _enable_wal(conn)
        if str(journal_mode).lower() != "wal":
            raise StoreError(f"the store database {path} cannot use WAL mode ({journal_mode})")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"cannot open the store database {path}: {exc}; "
            "if it is damaged, move it aside and run the command again"
        ) from exc
    finally:
        os.umask(old_umask)
    for suffix in ("", "-wal", "-shm"):
        ensure_private_file(Path(str(path) + suffix))
    return sqlite_utils.Database(conn, execute_plugins=False)


def _enable_wal(conn: sqlite3.Connection) -> str:
    """Switch to WAL once; two processes creating a store at once may briefly see it locked.

    Changing the journal mode needs an exclusive lock that SQLite's busy handler does not always
    wait for, so the switch is retried for as long as the busy timeout allows.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
            if mode.lower() == "wal":
                return mode
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


@contextmanager
def write_txn(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """Run the block as one `BEGIN IMMEDIATE … COMMIT` transaction, rolled back on any error."""
    conn = db.conn
    if conn.in_transaction:
        raise RuntimeError("write_txn() does not nest; open it once per unit of work")
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def integrity_ok(db: sqlite_utils.Database) -> bool:
    """True when `PRAGMA integrity_check` reports no problem."""
    rows = db.conn.execute("PRAGMA integrity_check").fetchall()
    return rows == [("ok",)]


def data_version(db: sqlite_utils.Database) -> int:
    """SQLite's change counter: differs when another connection committed since the last read."""
    return int(db.conn.execute("PRAGMA data_version").fetchone()[0])
