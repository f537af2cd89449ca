"""Numbered, additive schema migrations, and the refusal of databases from a newer Pitstop.

Migrations are named `NNNN_what` and applied in order inside one `BEGIN IMMEDIATE` transaction so
that two processes opening a fresh store at once never half-migrate it. A database that records a
migration this build does not know was written by a newer Pitstop: it is refused before anything
is read or written (invariant 5).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from core.errors import SchemaTooNewError, StoreError
from core.store.db import Database, write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22)
if TYPE_CHECKING:  # migrations run on sqlite-utils, loaded only when one is pending
    import sqlite_utils

    from core.store.sealed_text import TextKeys

TextKeysFactory = Callable[[Database], "TextKeys"]
Migration = Callable[["sqlite_utils.Database"], None]

MIGRATION_SET = "pitstop"
MIGRATIONS_TABLE = "_sqlite_migrations"  # where sqlite-utils' Migrations records what it applied


class MigrationSet:
    """Numbered migrations, registered at import without loading sqlite-utils.

    Checking a database is up to date is one plain query (every command and hook opens the
    store); sqlite-utils' `Migrations`, built only to apply pending ones, keeps the record.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._migrations: list[tuple[str, Callable[[sqlite_utils.Database], None]]] = []

    def __call__(self, *, name: str) -> Callable[[Migration], Migration]:
        """Register the decorated function as the migration `name` (after those before it)."""

        def register(function: Migration) -> Migration:
            if any(known == name for known, _ in self._migrations):
                raise ValueError(f"migration {name!r} is already registered in {self.name!r}")
            self._migrations.append((name, function))
            return function

        return register

    def beside(self, name: str, module: str, function: str) -> None:
        """Register `core.store.<module>.<function>` as `name`, imported only when it runs."""
        where = f"core.store.{module}"
        self(name=name)(lambda db: getattr(importlib.import_module(where), function)(db))

    def names(self) -> list[str]:
        """Every registered migration's name, in order."""
        return [name for name, _ in self._migrations]

    def applied(self, db: Database) -> list[str]:
        """Names of the migrations of this set applied to the database, in the order applied."""
        exists = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [MIGRATIONS_TABLE]
        ).fetchone()
        if exists is None:
            return []
        rows = db.execute(
            f"SELECT name FROM {MIGRATIONS_TABLE} WHERE migration_set = ? ORDER BY rowid",
            [self.name],
        ).fetchall()
        return [row[0] for row in rows]

    def pending(self, db: Database) -> list[str]:
        """Names of the migrations not applied yet; a gap before an applied one is refused."""
        done, names = set(self.applied(db)), self.names()
        pending = [name for name in names if name not in done]
        if pending and done.intersection(names[names.index(pending[0]) :]):
            raise StoreError(
                f"the database records later migrations but not {pending[0]}: it was edited by "
                "hand or damaged; run `pitstop doctor`, or restore the store from a backup"
            )
        return pending

    def apply(self, db: Database, *, stop_before: str | None = None) -> None:
        """Apply the pending migrations with sqlite-utils (each one recorded as it applies)."""
        from sqlite_utils import Database as UtilsDatabase
        from sqlite_utils.migrations import Migrations

        runner = Migrations(self.name)
        for name, function in self._migrations:
            runner(name=name)(function)
        runner.apply(UtilsDatabase(db.conn, execute_plugins=False), stop_before=stop_before)


migrations = MigrationSet(MIGRATION_SET)

_TEXT_KEYS: list[TextKeysFactory] = []  # what seals clear text a migration finds, in one migrate


@migrations(name="0001_initial")
def _initial(db: sqlite_utils.Database) -> None:
    db.execute(
        """
        CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            repo_root TEXT NOT NULL,
            store_repo TEXT NOT NULL,
            objective TEXT NOT NULL,
            status TEXT NOT NULL,
            harness TEXT,
            harness_version TEXT,
            model TEXT,
            model_version TEXT,
            budget_tokens INTEGER,
            budget_usd REAL,
            budget_minutes REAL,
            tokens_used INTEGER NOT NULL DEFAULT 0,
            usd_used REAL NOT NULL DEFAULT 0,
            credentials TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE checkpoints (
            id INTEGER PRIMARY KEY,
            task_id TEXT NOT NULL REFERENCES tasks(id),
            seq INTEGER NOT NULL,
            state TEXT NOT NULL,
            reason TEXT NOT NULL,
            note TEXT,
            commit_sha TEXT,
            worktree_tree TEXT,
            index_tree TEXT,
            base_commit TEXT,
            branch TEXT,
            manifest TEXT,
            manifest_sha256 TEXT,
            created_at TEXT NOT NULL,
            completed_at TEXT,
            creation_ms INTEGER,
            bytes_added INTEGER,
            changed_count INTEGER NOT NULL DEFAULT 0,
            left_out_count INTEGER NOT NULL DEFAULT 0,
            writer_pid INTEGER,
            writer_host TEXT,
            failure TEXT,
            UNIQUE (task_id, seq)
        )
        """
    )
    db.execute("CREATE INDEX checkpoints_by_state ON checkpoints (state, task_id)")
    db.execute(
        """
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            interface TEXT NOT NULL,
            task_id TEXT,
            entity TEXT NOT NULL,
            entity_id TEXT NOT NULL,
            action TEXT NOT NULL,
            from_state TEXT,
            to_state TEXT,
            reason TEXT,
            detail TEXT
        )
        """
    )
    db.execute("CREATE INDEX events_by_task ON events (task_id, id)")
    # The audit log is append-only: normal operation never rewrites history.
    db.execute(
        "CREATE TRIGGER events_no_update BEFORE UPDATE ON events "
        "BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END"
    )


@migrations(name="0002_effects_approvals")
def _effects_approvals(db: sqlite_utils.Database) -> None:
    # The side-effect ledger: one row per idempotency key of a task; its state only moves along
    # the transitions `core.ledger.effects` allows, each together with its audit event.
    db.execute(
        """
        CREATE TABLE effects (
            id INTEGER PRIMARY KEY,
            task_id TEXT NOT NULL REFERENCES tasks(id),
            key TEXT NOT NULL,
            kind TEXT NOT NULL,
            target TEXT,
            check_command TEXT,
            needs_approval INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            note TEXT,
            exit_code INTEGER,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT,
            runner_pid INTEGER,
            runner_host TEXT,
            UNIQUE (task_id, key)
        )
        """
    )
    db.execute("CREATE INDEX effects_by_state ON effects (state, task_id)")
    db.execute(
        """
        CREATE TABLE approvals (
            id TEXT PRIMARY KEY,
            task_id TEXT NOT NULL REFERENCES tasks(id),
            seq INTEGER NOT NULL,
            action TEXT NOT NULL,
            effect_key TEXT,
            risk TEXT NOT NULL,
            state TEXT NOT NULL,
            requested_by TEXT NOT NULL,
            requested_at TEXT NOT NULL,
            expires_at TEXT,
            decided_by TEXT,
            decided_at TEXT,
            reason TEXT,
            checkpoint_seq INTEGER,
            UNIQUE (task_id, seq)
        )
        """
    )
    db.execute("CREATE INDEX approvals_by_state ON approvals (state, requested_at)")
    # Who may decide for a task: a JSON list of operator names; empty means any operator.
    db.execute("ALTER TABLE tasks ADD COLUMN approvers TEXT NOT NULL DEFAULT '[]'")
    # The audit log is append-only in both directions: no update (0001) and no delete.
    db.execute(
        "CREATE TRIGGER events_no_delete BEFORE DELETE ON events "
        "BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END"
    )


@migrations(name="0003_evidence_and_keys")
def _evidence_and_keys(db: sqlite_utils.Database) -> None:
    # One row of facts about this store; `store_id` binds encrypted blobs to it.
    db.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(
        "INSERT INTO store_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))))"
    )
    db.execute(
        """
        CREATE TABLE task_keys (
            task_id TEXT PRIMARY KEY REFERENCES tasks(id),
            wrapped BLOB NOT NULL,
            master_key_id TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE evidence (
            id INTEGER PRIMARY KEY,
            task_id TEXT NOT NULL REFERENCES tasks(id),
            checkpoint_seq INTEGER,
            state TEXT NOT NULL,
            source TEXT NOT NULL,
            label TEXT,
            command BLOB,
            started_at TEXT NOT NULL,
            duration_ms INTEGER,
            exit_code INTEGER,
            signal INTEGER,
            timed_out INTEGER NOT NULL DEFAULT 0,
            bytes_total INTEGER NOT NULL DEFAULT 0,
            lines_total INTEGER NOT NULL DEFAULT 0,
            sha256 TEXT,
            stored_bytes INTEGER NOT NULL DEFAULT 0,
            kept_bytes INTEGER NOT NULL DEFAULT 0,
            truncated INTEGER NOT NULL DEFAULT 0,
            omitted_bytes INTEGER NOT NULL DEFAULT 0,
            chunk_count INTEGER NOT NULL DEFAULT 0,
            summary TEXT,
            tail BLOB,
            tail_lines INTEGER NOT NULL DEFAULT 0,
            redactions INTEGER NOT NULL DEFAULT 0,
            ruleset TEXT,
            cap_bytes INTEGER NOT NULL,
            failure TEXT
        )
        """
    )
    db.execute("CREATE INDEX evidence_by_task ON evidence (task_id, checkpoint_seq, id)")
    db.execute(
        """
        CREATE TABLE evidence_chunks (
            evidence_id INTEGER NOT NULL REFERENCES evidence(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            part TEXT NOT NULL,
            offset INTEGER NOT NULL,
            raw_len INTEGER NOT NULL,
            first_line INTEGER NOT NULL,
            line_count INTEGER NOT NULL,
            stored_len INTEGER NOT NULL,
            blob BLOB NOT NULL,
            PRIMARY KEY (evidence_id, seq)
        )
        """
    )


@migrations(name="0005_validations_resumes")
def _validations_resumes(db: sqlite_utils.Database) -> None:
    db.execute(
        """
        CREATE TABLE validations (
            id INTEGER PRIMARY KEY,
            task_id TEXT NOT NULL REFERENCES tasks(id),
            seq INTEGER,
            verdict TEXT NOT NULL,
            findings TEXT NOT NULL,
            duration_ms INTEGER NOT NULL,
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            interface TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX validations_by_task ON validations (task_id, seq, id)")
    db.execute(
        """
        CREATE TABLE resumes (
            id INTEGER PRIMARY KEY,
            task_id TEXT NOT NULL REFERENCES tasks(id),
            seq INTEGER NOT NULL,
            state TEXT NOT NULL,
            verdict TEXT NOT NULL,
            workdir TEXT,
            branch TEXT,
            brief_path TEXT,
            holder_pid INTEGER NOT NULL,
            holder_host TEXT NOT NULL,
            launched INTEGER NOT NULL DEFAULT 0,
            lease_until TEXT NOT NULL,
            restore_ms INTEGER,
            exit_code INTEGER,
            accepted INTEGER,
            accept_reason TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            actor TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX resumes_by_task ON resumes (task_id, state)")


def known_migration_names() -> list[str]:
    """Names of every migration this build knows, in order."""
    return migrations.names()


def _unknown_applied(db: Database) -> list[str]:
    known = set(known_migration_names())
    return [name for name in migrations.applied(db) if name not in known]


def _refuse_newer(db: Database) -> None:
    unknown = _unknown_applied(db)
    if unknown:
        raise SchemaTooNewError(
            f"this store was written by a newer Pitstop (schema {unknown[-1]} is unknown here); "
            "upgrade pitstop, or use another store with --store or PITSTOP_HOME"
        )


def migrate(db: Database, text_keys: TextKeysFactory | None = None) -> None:
    """Bring the database to this build's schema, or refuse one from a newer Pitstop.

    `text_keys` opens the task keys that seal free text an older store kept in clear (0011's
    reasons and notes, 0017's objectives, labels and kinds; the security layer sits above the
    store, so the store is handed it rather than importing it); without it that text stays
    readable, as it does for a task whose master key is absent.
    """
    _refuse_newer(db)
    if not migrations.pending(db):
        return
    with write_txn(db):
        _refuse_newer(db)  # another process may have migrated while we waited for the lock
        _TEXT_KEYS[:] = [text_keys] if text_keys is not None else []
        try:
            migrations.apply(db)
        finally:
            _TEXT_KEYS.clear()


def schema_version(db: Database) -> str | None:
    """The name of the newest migration applied, or None for an empty database."""
    applied = migrations.applied(db)
    return applied[-1] if applied else None


@migrations(name="0006_dashboard_indexes")
def _dashboard_indexes(db: sqlite_utils.Database) -> None:
    # Covering indexes for the dashboard's rollup (`store.task_rollups`): each per-task aggregate
    # reads one index, never the table, so 10,000 tasks and 100,000 checkpoints stay one scan.
    db.execute("CREATE INDEX checkpoints_rollup ON checkpoints (state, task_id, created_at)")
    db.execute("CREATE INDEX approvals_rollup ON approvals (state, task_id, expires_at)")
    db.execute("CREATE INDEX validations_rollup ON validations (task_id, id, verdict)")
    # The first screenful reads one status at a time (`store.first_task_rollups`).
    db.execute("CREATE INDEX tasks_by_status ON tasks (status, updated_at)")


@migrations(name="0007_harness_sessions")
def _harness_sessions(db: sqlite_utils.Database) -> None:
    # The harness conversations that fed a task (Claude Code, Codex): a resume continues the
    # newest one, and validation checks that its transcript still exists. One row per session.
    db.execute(
        """
        CREATE TABLE harness_sessions (
            harness TEXT NOT NULL,
            session_id TEXT NOT NULL,
            task_id TEXT NOT NULL REFERENCES tasks(id),
            transcript_path TEXT,
            cwd TEXT,
            started_at TEXT NOT NULL,
            seen_at TEXT NOT NULL,
            PRIMARY KEY (harness, session_id)
        )
        """
    )
    db.execute("CREATE INDEX harness_sessions_by_task ON harness_sessions (task_id, seen_at)")


@migrations(name="0008_task_origin")
def _task_origin(db: sqlite_utils.Database) -> None:
    # A task fetched from a remote keeps the id of the store that created it: its encrypted
    # blobs are bound to that store (their associated data names it), so every store that holds
    # the task reads and writes its content under that one scope. NULL: created here.
    db.execute("ALTER TABLE tasks ADD COLUMN origin_store TEXT")


@migrations(name="0009_task_recipients")
def _task_recipients(db: sqlite_utils.Database) -> None:
    # Who may read a task's content once it leaves the store: the public keys (age1… or
    # ssh-ed25519, normalised) its remote copies are encrypted to. Only ever added to.
    db.execute(
        """
        CREATE TABLE task_recipients (
            task_id TEXT NOT NULL REFERENCES tasks(id),
            recipient TEXT NOT NULL,
            added_at TEXT NOT NULL,
            added_by TEXT NOT NULL,
            PRIMARY KEY (task_id, recipient)
        )
        """
    )


@migrations(name="0010_ledger_sync")
def _ledger_sync(db: sqlite_utils.Database) -> None:
    # Ledger sync (core.ledger.facts): an audit event keeps the identity it was born with, so an
    # event fetched from another store is never imported twice; NULL means `<store_id>:<id>`
    # (born here).
    db.execute("ALTER TABLE events ADD COLUMN uid TEXT")
    db.execute("CREATE UNIQUE INDEX events_by_uid ON events (uid)")
    # A resume recorded by another store: shown in the history, never a live lease here.
    db.execute("ALTER TABLE resumes ADD COLUMN synced_from TEXT")
    # Every ledger fact this store exported or applied, byte for byte: a fact re-exported keeps
    # its bytes (repeated pushes add nothing) and an applied one is never applied twice.
    db.execute(
        """
        CREATE TABLE ledger_facts (
            uid TEXT PRIMARY KEY,
            task_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            body BLOB NOT NULL,
            source TEXT NOT NULL,
            recorded_at TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX ledger_facts_by_task ON ledger_facts (task_id, kind)")
    # Decisions that lost a merge (decided differently in two places): kept and shown, never lost.
    db.execute(
        """
        CREATE TABLE ledger_conflicts (
            task_id TEXT NOT NULL,
            entity TEXT NOT NULL,
            entity_id TEXT NOT NULL,
            kept TEXT NOT NULL,
            lost TEXT NOT NULL,
            lost_uid TEXT NOT NULL,
            why TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            PRIMARY KEY (task_id, lost_uid)
        )
        """
    )


@migrations(name="0011_sealed_text")
def _sealed_text(db: sqlite_utils.Database) -> None:
    # Free text (audit reasons, approval actions and reasons, effect targets, checks and notes,
    # resume verdict reasons) is sealed under its task's data key from now on: the columns keep
    # their names and hold envelopes (BLOBs); `core.store.sealed_text` names them and their
    # items. What a precondition check found moves to the plain `detail`, which the metrics count.
    from core.store.sealed_text import TEXT_COLUMNS, record_check_findings, seal_clear_text

    plain = Database(db.conn)
    # The audit log is append-only; this one rewrite puts its text into sealed form.
    db.execute("DROP TRIGGER events_no_update")
    record_check_findings(plain)
    # Text already stored is sealed when the master key is available. Without it (or for a
    # task keyed by another master) it stays readable as it was; new text is sealed anyway.
    seal_clear_text(plain, TEXT_COLUMNS, _TEXT_KEYS[0](plain) if _TEXT_KEYS else None)
    db.execute(
        "CREATE TRIGGER events_no_update BEFORE UPDATE ON events "
        "BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END"
    )


@migrations(name="0012_remotes")
def _remotes(db: sqlite_utils.Database) -> None:
    # Named remotes (`pitstop remote add`): a URL and the local repository it serves.
    db.execute(
        """
        CREATE TABLE remotes (
            name TEXT PRIMARY KEY,
            url TEXT NOT NULL,
            repo_root TEXT NOT NULL,
            added_at TEXT NOT NULL
        )
        """
    )
    # The commit that carries each checkpoint to remotes (built once, so pushing twice sends
    # nothing new); for a fetched checkpoint it is the fetched commit itself.
    db.execute(
        """
        CREATE TABLE remote_exports (
            task_id TEXT NOT NULL REFERENCES tasks(id),
            seq INTEGER NOT NULL,
            commit_sha TEXT NOT NULL,
            PRIMARY KEY (task_id, seq)
        )
        """
    )
    # Which tasks travel through which remote, and when they last did.
    db.execute(
        """
        CREATE TABLE remote_links (
            task_id TEXT NOT NULL REFERENCES tasks(id),
            url TEXT NOT NULL,
            pushed_at TEXT,
            fetched_at TEXT,
            PRIMARY KEY (task_id, url)
        )
        """
    )
    # The last listing of each remote (plain headers only), so the dashboard shows remote tasks
    # without touching the network.
    db.execute(
        """
        CREATE TABLE remote_listing (
            url TEXT NOT NULL,
            task_id TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            checkpoints INTEGER NOT NULL,
            latest_seq INTEGER,
            latest_at TEXT,
            readable INTEGER NOT NULL,
            header TEXT NOT NULL,
            seen_at TEXT NOT NULL,
            PRIMARY KEY (url, task_id)
        )
        """
    )


@migrations(name="0013_validations_by_time")
def _validations_by_time(db: sqlite_utils.Database) -> None:  # newest by time: sync brings others'
    db.execute("CREATE INDEX validations_by_time ON validations (task_id, at, id, verdict)")


migrations.beside("0014_trust", "trust", "create_trust_tables")
migrations.beside("0015_task_key_history", "task_keys", "create_key_history")
migrations.beside("0016_foreign_checks", "effects", "create_foreign_checks")


@migrations(name="0017_sealed_fields")
def _sealed_fields(db: sqlite_utils.Database) -> None:  # objectives, labels… sealed in place
    from core.store.sealed_text import FIELD_COLUMNS, seal_clear_text

    plain = Database(db.conn)
    seal_clear_text(plain, FIELD_COLUMNS, _TEXT_KEYS[0](plain) if _TEXT_KEYS else None)


migrations.beside("0018_web_devices", "devices", "create_device_tables")
migrations.beside("0019_drills", "drills", "create_drill_table")
