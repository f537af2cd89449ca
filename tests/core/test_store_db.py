"""The SQLite store: migrations, refusal of newer schemas, transactions, many writers, privacy."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from core.engine import Engine
from core.errors import NotFoundError, SchemaTooNewError
from core.store.db import batch_txn, integrity_ok, open_database, write_txn
from core.store.migrations import known_migration_names, migrate, schema_version

ROOT = Path(__file__).resolve().parents[2]


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    finally:
        conn.close()
    return {row[0] for row in rows}


def _migration_rows(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT migration_set, name, applied_at FROM _sqlite_migrations ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def test_fresh_database_migrates(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    db = open_database(path)
    assert schema_version(db) is None
    migrate(db)
    assert schema_version(db) == known_migration_names()[-1]
    assert known_migration_names()[0] == "0001_initial"
    assert all(name[:4].isdigit() and name[4] == "_" for name in known_migration_names())
    db.close()
    assert {"tasks", "checkpoints", "events", "_sqlite_migrations"} <= _tables(path)
    assert [row[1] for row in _migration_rows(path)] == known_migration_names()


def test_reopening_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "again.db"
    for _ in range(3):
        db = open_database(path)
        migrate(db)
        migrate(db)
        db.close()
    rows = _migration_rows(path)
    assert [row[1] for row in rows] == known_migration_names()


def test_engine_on_fresh_store_creates_and_migrates(store_root: Path) -> None:
    assert not store_root.exists()
    with Engine() as engine:
        assert engine.paths.root == store_root
        assert schema_version(engine.db) == known_migration_names()[-1]
        assert integrity_ok(engine.db)
    with Engine() as engine:  # a second open changes nothing
        assert len(_migration_rows(engine.paths.database)) == len(known_migration_names())


def _files_state(directory: Path) -> dict[str, tuple[int, int, str]]:
    return {
        p.name: (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


def test_database_from_a_newer_pitstop_is_refused_and_untouched(
    store_root: Path, repo: Path
) -> None:
    with Engine() as engine:
        engine.start_task(repo=repo, objective="existing", task_id="t1")
    database = store_root / "pitstop.db"
    conn = sqlite3.connect(database)
    conn.execute(
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES (?, ?, ?)",
        ["pitstop", "9999_future", "2099-01-01 00:00:00.000000+00:00"],
    )
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = _files_state(store_root)
    rows_before = _migration_rows(database)

    with pytest.raises(SchemaTooNewError) as raised:
        Engine()
    message = raised.value.message
    assert "9999_future" in message and "newer" in message and "\n" not in message
    with pytest.raises(SchemaTooNewError):
        migrate(open_database(database))

    after = _files_state(store_root)
    assert after["pitstop.db"] == before["pitstop.db"]
    assert _migration_rows(database) == rows_before
    conn = sqlite3.connect(database)
    try:
        assert conn.execute("SELECT id FROM tasks").fetchall() == [("t1",)]
    finally:
        conn.close()


def test_other_migration_sets_do_not_count_as_newer(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    db = open_database(path)
    migrate(db)
    with write_txn(db):
        db.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES (?, ?, ?)",
            ["some-plugin", "9999_theirs", "2099-01-01"],
        )
    migrate(db)  # not ours: no refusal
    db.close()


def test_write_txn_commits_and_rolls_back(tmp_path: Path) -> None:
    db = open_database(tmp_path / "txn.db")
    db.execute("CREATE TABLE items (name TEXT)")
    with write_txn(db):
        db["items"].insert({"name": "kept"})
        db.execute("INSERT INTO items VALUES ('kept too')")

    class Boom(Exception):
        pass

    with pytest.raises(Boom), write_txn(db):
        db["items"].insert({"name": "lost"})
        db.execute("INSERT INTO items VALUES ('lost too')")
        raise Boom()
    assert not db.conn.in_transaction
    names = sorted(row[0] for row in db.execute("SELECT name FROM items").fetchall())
    assert names == ["kept", "kept too"]

    other = sqlite3.connect(tmp_path / "txn.db")
    try:
        assert other.execute("SELECT COUNT(*) FROM items").fetchone() == (2,)
    finally:
        other.close()

    with write_txn(db), pytest.raises(RuntimeError), write_txn(db):
        pass
    db.close()


def test_database_adapter_stores_like_sqlite_utils(tmp_path: Path) -> None:
    """The sqlite3 adapter writes and reads rows as sqlite-utils did (the store relied on it)."""
    import sqlite_utils

    db = open_database(tmp_path / "adapter.db")
    db.execute("CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL, data TEXT)")
    db.execute("CREATE TABLE pairs (a TEXT, b TEXT, PRIMARY KEY (a, b))")
    theirs = sqlite_utils.Database(sqlite3.connect(":memory:"))
    theirs.execute("CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL, data TEXT)")
    rows = [{"name": "a", "data": {"k": [1, "é"]}}, {"name": "b", "data": ("x", None)}]
    for row in rows:
        assert db["things"].insert(row).last_rowid == theirs["things"].insert(row).last_rowid
    mine = list(db.query("SELECT * FROM things ORDER BY id"))
    assert mine == list(theirs.query("SELECT * FROM things ORDER BY id"))
    db.table("things").update(1, {"data": None})
    assert next(db.query("SELECT data FROM things WHERE id = ?", [1])) == {"data": None}
    with pytest.raises(NotFoundError):
        db.table("things").update(99, {"name": "x"})
    with pytest.raises(ValueError):
        db.query("UPDATE things SET name = 'c'")
    db.table("pairs").insert_all([{"a": "1", "b": "2"}, {"a": "3"}])
    assert list(db.query("SELECT * FROM pairs ORDER BY a")) == [
        {"a": "1", "b": "2"},
        {"a": "3", "b": None},
    ]
    db.table("pairs").update(("1", "2"), {"b": "4"})
    assert [c.name for c in db["pairs"].columns if c.is_pk] == ["a", "b"]
    assert list(db.query("SELECT 1 AS x, 2 AS x")) == [{"x": 1, "x_2": 2}]
    assert sorted(db.table_names()) == ["pairs", "things"]
    db.close()


def test_batch_txn_commits_units_of_work_once(tmp_path: Path) -> None:
    db = open_database(tmp_path / "batch.db")
    db.execute("CREATE TABLE items (name TEXT)")
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    with batch_txn(db):
        with write_txn(db):
            db["items"].insert({"name": "first"})
        with pytest.raises(NotFoundError), write_txn(db):  # undone alone, the batch goes on
            db["items"].insert({"name": "undone"})
            raise NotFoundError("gone")
        with write_txn(db):
            db["items"].insert({"name": "second"})
        with pytest.raises(RuntimeError), batch_txn(db):
            pass
    assert [s for s in statements if s in ("BEGIN IMMEDIATE", "COMMIT")] == [
        "BEGIN IMMEDIATE",
        "COMMIT",
    ]
    names = [row[0] for row in db.execute("SELECT name FROM items ORDER BY rowid").fetchall()]
    assert names == ["first", "second"]

    with pytest.raises(ValueError), batch_txn(db):  # an error reaching the batch: all undone
        with write_txn(db):
            db["items"].insert({"name": "lost"})
        raise ValueError("boom")
    assert db.execute("SELECT COUNT(*) FROM items").fetchone() == (2,)
    assert not db.conn.in_transaction and not db.batching
    with write_txn(db), pytest.raises(RuntimeError), write_txn(db):  # still no nesting outside
        pass
    db.close()


def test_database_pragmas(tmp_path: Path) -> None:
    db = open_database(tmp_path / "pragmas.db")
    conn = db.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    db.close()


def test_a_commit_that_need_not_be_flushed_is_not_and_the_next_one_is(tmp_path: Path) -> None:
    """A fetch's import is committed without a flush; every other commit keeps FULL sync,
    also after such a block fails, and a block inside a batch follows the batch."""
    db = open_database(tmp_path / "sync.db")
    db.execute("CREATE TABLE items (name TEXT)")

    def level() -> int:
        return int(db.conn.execute("PRAGMA synchronous").fetchone()[0])

    with write_txn(db, durable=False):
        assert level() == 1  # NORMAL: committed to the OS, not flushed
        db.execute("INSERT INTO items VALUES ('fetched')")
    assert level() == 2
    with pytest.raises(ValueError), batch_txn(db, durable=False):
        assert level() == 1
        db.execute("INSERT INTO items VALUES ('lost')")
        raise ValueError("the import failed")
    assert level() == 2
    with batch_txn(db), write_txn(db, durable=False):
        assert level() == 2  # the batch decides: it is durable
        db.execute("INSERT INTO items VALUES ('batched')")
    other = sqlite3.connect(tmp_path / "sync.db")
    try:
        names = sorted(row[0] for row in other.execute("SELECT name FROM items"))
        assert names == ["batched", "fetched"]
    finally:
        other.close()
    db.close()


WRITER = """
import sys
from core.engine import Engine
with Engine() as engine:
    for n in range(30):
        engine.start_task(repo=sys.argv[1], objective=f"writer {sys.argv[2]} task {n}",
                          task_id=f"w{sys.argv[2]}-{n}")
"""


def test_two_processes_writing_at_once_both_succeed(store_root: Path, repo: Path) -> None:
    Engine().close()  # migrate once, so the race is between writers, not migrations
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(repo), str(index)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(2)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "locked" not in err
    with Engine() as engine:
        ids = {task.id for task in engine.list_tasks()}
        assert len(ids) == 60
        assert len([e for e in engine.events() if e.action == "start"]) == 60
        assert integrity_ok(engine.db)


def test_two_processes_opening_a_fresh_store_at_once(store_root: Path, repo: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(repo), str(index)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(2)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert len(_migration_rows(store_root / "pitstop.db")) == len(known_migration_names())


def test_store_is_private(store_root: Path, repo: Path) -> None:
    old = os.umask(0o022)
    try:
        with Engine() as engine:
            engine.start_task(repo=repo, objective="private", task_id="t1")
            engine.checkpoint("t1")
    finally:
        os.umask(old)
    assert stat.S_IMODE(store_root.stat().st_mode) == 0o700
    assert stat.S_IMODE((store_root / "pitstop.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((store_root / "fingerprint.key").stat().st_mode) == 0o600
    for suffix in ("-wal", "-shm"):
        side = store_root / f"pitstop.db{suffix}"
        if side.exists():
            assert stat.S_IMODE(side.stat().st_mode) & 0o077 == 0


def test_loose_permissions_on_existing_store_are_fixed(store_root: Path) -> None:
    Engine().close()
    store_root.chmod(0o755)
    (store_root / "pitstop.db").chmod(0o644)
    Engine().close()
    assert stat.S_IMODE(store_root.stat().st_mode) == 0o700
    assert stat.S_IMODE((store_root / "pitstop.db").stat().st_mode) == 0o600


@pytest.mark.parametrize("xdg", [None, "", "/tmp/xdg-somewhere", "relative/xdg"])
def test_user_directories_are_the_ones_platformdirs_gives(
    xdg: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pitstop applies the XDG rule itself on Linux (a hook must not import platformdirs)."""
    import sys

    import platformdirs

    from core import paths

    if not sys.platform.startswith("linux"):
        pytest.skip("the rule is Linux's; elsewhere platformdirs is asked directly")
    for kind in ("DATA", "CONFIG", "CACHE"):
        if xdg is None:
            monkeypatch.delenv(f"XDG_{kind}_HOME", raising=False)
        else:
            monkeypatch.setenv(f"XDG_{kind}_HOME", xdg and f"{xdg}/{kind.lower()}")
    assert paths._user_dir("data") == Path(platformdirs.user_data_dir("pitstop", appauthor=False))
    assert paths._user_dir("config") == Path(
        platformdirs.user_config_dir("pitstop", appauthor=False)
    )
    assert paths._user_dir("cache") == Path(platformdirs.user_cache_dir("pitstop", appauthor=False))
