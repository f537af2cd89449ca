"""Open the SQLite database the one safe way, and write through one transaction helper.

DESIGN §9: with sqlite-utils 4.x `with db.conn:` does not make one transaction and `db.atomic()`
issues a deferred `BEGIN` that fails with "database is locked" when several agents write at
once. So every write goes through `write_txn()`: `BEGIN IMMEDIATE` takes the write lock up front,
waiting up to `busy_timeout` for other writers, and sqlite-utils calls inside it (migrations)
become savepoints.
The connection runs in autocommit mode (`isolation_level=None`) so Python never opens a
transaction behind our back. One connection per thread; never share one across threads.

`Database` is a thin adapter over `sqlite3` with the few sqlite-utils calls the store makes
(`execute`, `query`, `table(...).insert/update`, `table_names`): importing sqlite-utils costs
about seven bare Python starts, and a harness hook runs on every tool call. sqlite-utils itself
is loaded only to apply migrations.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from core.errors import DiskFullError, NotFoundError, StoreError
from core.paths import ensure_private_file

BUSY_TIMEOUT_MS = 30_000

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    Parameters = Sequence[Any] | Mapping[str, Any]
else:
    from core.records import NamedTuple


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _sql_value(value: Any) -> Any:
    """A value as sqlite-utils stores it: containers as JSON, dates and UUIDs as text."""
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, default=repr, ensure_ascii=False)
    module = type(value).__module__
    if module == "decimal":
        return float(value)
    if module in ("datetime", "uuid"):  # date, time, datetime: ISO 8601; timedelta, UUID: str
        return value.isoformat() if hasattr(value, "isoformat") else str(value)
    return value


def _unique_keys(keys: Iterable[str]) -> list[str]:
    """Column names of a result, later duplicates renamed `name_2`, `name_3`… (as sqlite-utils)."""
    names = list(keys)
    taken = set(names)
    if len(taken) == len(names):
        return names
    seen: set[str] = set()
    unique = []
    for name in names:
        if name in seen:
            suffix = 2
            while f"{name}_{suffix}" in taken:
                suffix += 1
            name = f"{name}_{suffix}"
            taken.add(name)
        seen.add(name)
        unique.append(name)
    return unique


class Column(NamedTuple):
    """One column of a table, as `PRAGMA table_info` describes it (sqlite-utils' `Column`)."""

    cid: int
    name: str
    type: str
    notnull: int
    default_value: Any
    is_pk: int


class Table:
    """One table: insert a row, update a row by primary key, list columns."""

    def __init__(self, db: Database, name: str) -> None:
        self.db = db
        self.name = name
        self.last_rowid: int | None = None

    @property
    def columns(self) -> list[Column]:
        """The table's columns (empty when it does not exist)."""
        rows = self.db.execute(f"PRAGMA table_info({_quote(self.name)})").fetchall()
        return [Column(*row) for row in rows]

    def _primary_keys(self) -> list[str]:
        keyed = sorted((c.is_pk, c.name) for c in self.columns if c.is_pk)
        return [name for _, name in keyed] or ["rowid"]

    def insert(self, record: Mapping[str, Any]) -> Table:
        """Insert one row; `last_rowid` is its rowid."""
        names = ", ".join(_quote(name) for name in record)
        marks = ", ".join("?" for _ in record)
        cursor = self.db.execute(
            f"INSERT INTO {_quote(self.name)} ({names}) VALUES ({marks})",
            [_sql_value(value) for value in record.values()],
        )
        self.last_rowid = cursor.lastrowid
        return self

    def insert_all(self, records: Iterable[Mapping[str, Any]]) -> Table:
        """Insert rows; a key missing from some of them is NULL there (as sqlite-utils does)."""
        rows = list(records)
        names = list(dict.fromkeys(name for row in rows for name in row))
        if not names:
            return self
        columns = ", ".join(_quote(name) for name in names)
        marks = ", ".join("?" for _ in names)
        sql = f"INSERT INTO {_quote(self.name)} ({columns}) VALUES ({marks})"
        for row in rows:
            cursor = self.db.execute(sql, [_sql_value(row.get(name)) for name in names])
            self.last_rowid = cursor.lastrowid
        return self

    def update(self, pk_value: Any, updates: Mapping[str, Any]) -> Table:
        """Change columns of the row with this primary key; a missing row is an error."""
        pk_values = list(pk_value) if isinstance(pk_value, list | tuple) else [pk_value]
        keys = self._primary_keys()
        wheres = " AND ".join(f"{_quote(key)} = ?" for key in keys)
        found = self.db.execute(
            f"SELECT 1 FROM {_quote(self.name)} WHERE {wheres}", pk_values
        ).fetchone()
        if found is None:
            raise NotFoundError(f"no row {pk_values!r} in table {self.name}")
        if not updates:
            return self
        sets = ", ".join(f"{_quote(key)} = ?" for key in updates)
        cursor = self.db.execute(
            f"UPDATE {_quote(self.name)} SET {sets} WHERE {wheres}",
            [*(_sql_value(value) for value in updates.values()), *pk_values],
        )
        if cursor.rowcount != 1:
            raise StoreError(f"updating {self.name} {pk_values!r} changed {cursor.rowcount} rows")
        return self


class Database:
    """One SQLite connection and the sqlite-utils calls the store makes, on `sqlite3` alone."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.batching = False  # inside `batch_txn`: `write_txn` blocks join its transaction

    def execute(self, sql: str, parameters: Parameters | None = None) -> sqlite3.Cursor:
        """Run one statement (autocommit unless inside `write_txn`)."""
        if parameters is None:
            return self.conn.execute(sql)
        return self.conn.execute(sql, parameters)

    def query(self, sql: str, params: Parameters | None = None) -> Iterator[dict[str, Any]]:
        """Run a query; its rows as dictionaries keyed by column name."""
        cursor = self.execute(sql, params)
        if cursor.description is None:
            raise ValueError("query() can only be used with SQL that returns rows")
        keys = _unique_keys(d[0] for d in cursor.description)
        return (dict(zip(keys, row, strict=True)) for row in cursor)

    def table(self, name: str) -> Table:
        """A handle on one table."""
        return Table(self, name)

    def __getitem__(self, name: str) -> Table:
        return Table(self, name)

    def table_names(self) -> list[str]:
        """The tables this database holds."""
        rows = self.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def open_database(path: Path) -> Database:
    """Open (creating if needed) the store database with WAL, FULL sync and a long busy timeout."""
    read_only = read_only_reason(path)
    if read_only:
        raise StoreError(read_only)
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
        if is_disk_full(exc) or _no_room(path.parent):
            raise disk_full("the store cannot even be opened") from exc
        raise StoreError(
            f"cannot open the store database {path}: {exc}; "
            "if it is damaged, move it aside and run the command again"
        ) from exc
    finally:
        os.umask(old_umask)
    for suffix in ("", "-wal", "-shm"):
        ensure_private_file(Path(str(path) + suffix))
    return Database(conn)


def read_only_reason(path: Path) -> str | None:
    """Why the store holding the database `path` cannot be written, in one line; None when
    it can. SQLite itself would only say "unable to open database file"."""
    root = path.parent
    try:
        mounted_read_only = bool(os.statvfs(root).f_flag & os.ST_RDONLY)
    except OSError:
        return None  # no such directory yet: creating it says what is wrong
    if mounted_read_only:
        return (
            f"the store {root} is on a file system mounted read-only; remount it read-write, "
            "or choose another store with --store or PITSTOP_HOME"
        )
    for part in (root, path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if part.exists() and not os.access(part, os.W_OK):
            return (
                f"the store {root} is read-only: {part.name} is not writable by you; "
                f"give it back to you (`chmod -R u+w {root}`, or `chown -R` it to your user), "
                "or choose another store with --store or PITSTOP_HOME"
            )
    return None


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
def write_txn(db: Database, *, durable: bool = True) -> Iterator[Database]:
    """Run the block as one `BEGIN IMMEDIATE … COMMIT` transaction, rolled back on any error.

    Inside `batch_txn` the block is a savepoint of the batch's transaction instead: undone alone
    when it raises, committed only with the batch.

    A commit is flushed to disk (`synchronous=FULL`) unless the block is not `durable`: it
    records only what is taken again from where it came (what a fetch brought in, that a push
    happened), so a power failure may lose that commit whole — never tear it, nor anything
    committed before it — and the next fetch or push records it again. A killed process loses
    nothing either way: the commit is in the operating system's hands at once.
    """
    if not durable and not db.batching:
        with _unflushed(db), write_txn(db) as same:
            yield same
        return
    conn = db.conn
    if db.batching:
        conn.execute("SAVEPOINT pitstop_write")
        try:
            yield db
        except BaseException:
            if conn.in_transaction:  # an error may have ended the whole transaction already
                conn.execute("ROLLBACK TO pitstop_write")
                conn.execute("RELEASE pitstop_write")
            raise
        conn.execute("RELEASE pitstop_write")
        return
    if conn.in_transaction:
        raise RuntimeError("write_txn() does not nest; open it once per unit of work")
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if is_disk_full(exc):
            raise disk_full() from exc
        raise


def is_disk_full(exc: BaseException) -> bool:
    """Whether SQLite (or a write of ours) failed because the disk is full."""
    if isinstance(exc, sqlite3.OperationalError):
        return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
    return isinstance(exc, OSError) and exc.errno == errno.ENOSPC


def _no_room(directory: Path) -> bool:
    """Whether the filesystem holding `directory` has no room left for SQLite's WAL files."""
    try:
        found = os.statvfs(directory)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < 64 * 1024


def disk_full(kept: str = "nothing more was written") -> DiskFullError:
    """The one line a write that ran out of disk says: what was kept, and what to do."""
    return DiskFullError(
        f"the disk holding the store is full; {kept}: free space, then run `pitstop gc` "
        "and `pitstop doctor`"
    )


@contextmanager
def _unflushed(db: Database) -> Iterator[None]:
    """The commits of the block are not flushed (`synchronous` is per connection and cannot
    change inside a transaction, so it is set around it)."""
    db.conn.execute("PRAGMA synchronous = NORMAL")
    try:
        yield
    finally:
        db.conn.execute("PRAGMA synchronous = FULL")


@contextmanager
def batch_txn(db: Database, *, durable: bool = True) -> Iterator[Database]:
    """Run several units of work (each its own `write_txn`) as one transaction: one commit.

    Every commit is an fsync (`synchronous=FULL`); a hook that records one item in four small
    writes waits for one instead of four. All or nothing: an error rolls back the whole batch.
    Only for work on this connection alone: another connection (another thread's) waiting for
    the write lock would wait for the whole batch. `durable` as for `write_txn`.
    """
    if db.batching:
        raise RuntimeError("batch_txn() does not nest")
    with write_txn(db, durable=durable):
        db.batching = True
        try:
            yield db
        finally:
            db.batching = False


def integrity_ok(db: Database) -> bool:
    """True when `PRAGMA integrity_check` reports no problem."""
    rows = db.conn.execute("PRAGMA integrity_check").fetchall()
    return rows == [("ok",)]


def data_version(db: Database) -> int:
    """SQLite's change counter: differs when another connection committed since the last read."""
    return int(db.conn.execute("PRAGMA data_version").fetchone()[0])
