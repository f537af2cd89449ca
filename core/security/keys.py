"""Per-task data keys: created on first use, wrapped by the master key, kept in the store.

The master key is loaded once per `TaskKeys` and only when something must be encrypted or
decrypted, so commands that touch no content never need it.
"""

from __future__ import annotations

from core import clock, store
from core.security import crypto
from core.store.db import Database, write_txn

DEMO_KEY_META = "demo_master_key"


class TaskKeys:
    """Hands out the data key of each task in one store."""

    def __init__(self, db: Database, master: crypto.MasterKey | None = None) -> None:
        self._db = db
        self._master = master
        self._cache: dict[str, bytes] = {}
        self._store_id: str | None = None
        self._scopes: dict[str, str] = {}
        self._unreadable: set[str] = set()  # tasks whose text cannot be opened here (lists)
        self._uncommitted: set[str] = set()  # keys created inside a write not yet committed

    @property
    def store_id(self) -> str:
        if self._store_id is None:
            self._store_id = store.store_id(self._db)
        return self._store_id

    @property
    def master(self) -> crypto.MasterKey:
        if self._master is None:
            demo = store.get_meta(self._db, DEMO_KEY_META)
            if demo is not None:
                self._master = crypto.MasterKey(
                    crypto.decode_key(demo, "the demo store's key"), "the demo store's own key"
                )
            else:
                self._master = crypto.load_master_key()
        return self._master

    def scope(self, task_id: str) -> str:
        """The store id a task's content is bound to: its origin store when fetched, else ours.

        A task keeps one scope for life, so checkpoints, evidence and ledger entries sealed on
        the machine that created it open unchanged on every machine it is fetched to.
        """
        if task_id not in self._scopes:
            self._scopes[task_id] = store.task_scope(self._db, task_id) or self.store_id
        return self._scopes[task_id]

    def use_demo_key(self) -> None:
        """Make this a demo store: its fake content is encrypted under a published key.

        Only `pitstop demo` does this, so that the demo runs on a machine with no keyring and
        no PITSTOP_KEY. A real store never stores its master key.
        """
        with write_txn(self._db):
            store.set_meta(self._db, DEMO_KEY_META, crypto.encode_key(crypto.DEMO_KEY))
        self._master = None
        self._cache.clear()
        self._unreadable.clear()

    def data_key(self, task_id: str, *, create: bool) -> bytes:
        """The task's data key; created (and wrapped) on first use when `create` is set."""
        if task_id in self._cache:
            return self._cache[task_id]
        in_transaction = self._db.conn.in_transaction
        if not in_transaction:
            self._uncommitted.discard(task_id)  # committed or rolled back: the row tells which
        wrapped = store.get_wrapped_key(self._db, task_id)
        if wrapped is None:
            if not create:
                raise crypto.MasterKeyError(
                    f"task {task_id} has no data key: its encrypted content was deleted by gc "
                    "or never existed"
                )
            key = crypto.generate_key()
            if in_transaction:
                # Sealing inside the caller's write transaction (an audit reason, an approval's
                # text): it already holds the write lock, and the new key commits or rolls back
                # with what it seals, so it is cached only once it is read back committed.
                self._insert_wrapped(task_id, key)
                self._uncommitted.add(task_id)
                return key
            with write_txn(self._db):
                wrapped = store.get_wrapped_key(self._db, task_id)
                if wrapped is None:
                    self._insert_wrapped(task_id, key)
            if wrapped is None:
                self._cache[task_id] = key
                return key
        key = crypto.unwrap_data_key(self.master, wrapped, self.store_id, task_id)
        if task_id not in self._uncommitted:
            self._cache[task_id] = key
        return key

    def seal_text(self, task_id: str, item: str, text: str) -> bytes:
        """Encrypt free text (a reason, a note, an action) of `item` of `task_id`."""
        self._unreadable.discard(task_id)
        return self.seal(task_id, item, text.encode())

    def open_text(self, task_id: str, item: str, sealed: bytes) -> str:
        """Decrypt free text for display; `store.UNREADABLE` when its key is not available.

        Lists show the marker instead of failing, as checkpoint notes do; a task whose key
        cannot be had is not asked again for every row of the same list.
        """
        if task_id in self._unreadable:
            return store.UNREADABLE
        try:
            plain = self.open(task_id, item, sealed, f"the text of {item} of task {task_id}")
        except crypto.MasterKeyError:
            self._unreadable.add(task_id)
            return store.UNREADABLE
        except crypto.DecryptError:
            return store.UNREADABLE
        return plain.decode("utf-8", "replace")

    def adopt(self, task_id: str, key: bytes, scope: str) -> None:
        """Hold a fetched task's data key and scope, before its row exists, to open its header."""
        self._cache[task_id] = key
        self._scopes[task_id] = scope

    def keep_adopted(self, task_id: str) -> None:
        """Store an adopted task's data key wrapped by this store's master key.

        Runs inside the caller's transaction, after the task row is inserted.
        """
        self._insert_wrapped(task_id, self._cache[task_id])

    def _insert_wrapped(self, task_id: str, key: bytes) -> None:
        """Record a task's data key wrapped by the master key (in the caller's transaction)."""
        store.insert_wrapped_key(
            self._db,
            task_id,
            crypto.wrap_data_key(self.master, key, self.store_id, task_id),
            self.master.id,
            clock.now_iso(),
        )

    def data_key_id(self, task_id: str) -> str:
        """The public id of the task's data key (recorded in checkpoint headers)."""
        return crypto.key_id(self.data_key(task_id, create=True))

    def seal(self, task_id: str, item: str, plaintext: bytes) -> bytes:
        """Encrypt content that belongs to `item` of `task_id`."""
        key = self.data_key(task_id, create=True)
        return crypto.seal(
            key, plaintext, crypto.associated_data(self.scope(task_id), task_id, item)
        )

    def open(self, task_id: str, item: str, envelope: bytes, what: str) -> bytes:
        """Decrypt content sealed for `item` of `task_id`."""
        key = self.data_key(task_id, create=False)
        return crypto.open_envelope(
            key, envelope, crypto.associated_data(self.scope(task_id), task_id, item), what
        )

    def tasks_with_other_master(self, master: crypto.MasterKey) -> list[str]:
        """Tasks whose data key was wrapped by a different master key than `master`."""
        return store.tasks_keyed_by_other_master(self._db, master.id)
