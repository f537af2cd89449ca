"""Per-task data keys: created on first use, wrapped by the master key, kept in the store.

The master key is loaded once per `TaskKeys` and only when something must be encrypted or
decrypted, so commands that touch no content never need it.

A task's key is rotated when a recipient is removed: a fresh current key seals everything
written after, and the retired keys are kept only to open what they sealed (each envelope names
its key). The removed recipient keeps the keys they had, so content sealed before stays theirs;
what is sealed after never opens with any of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core import clock, store
from core.store.db import Database, write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:  # loaded when something is sealed or opened: `pitstop locate` never does
    from core.security import crypto

DEMO_KEY_META = "demo_master_key"
CURRENT_KEY_ITEM = "data-key"


def retired_key_item(key_id: str) -> str:
    """What a retired key's wrapping is bound to: it can never pass for the current key."""
    return f"data-key/{key_id}"


class TaskKeys:
    """Hands out the data key of each task in one store."""

    def __init__(self, db: Database, master: crypto.MasterKey | None = None) -> None:
        self._db = db
        self._master = master
        self._cache: dict[str, bytes] = {}  # the current key of each task
        self._wrapped: dict[str, bytes] = {}  # the stored row each cached current key came from
        self._old: dict[str, dict[str, bytes]] = {}  # retired keys by id, read when asked for
        self._adopted_old: dict[str, dict[str, bytes]] = {}  # fetched, kept by `keep_adopted`
        self._store_id: str | None = None
        self._scopes: dict[str, str] = {}
        self._unreadable: set[str] = set()  # tasks whose text cannot be opened here (lists)
        self._uncommitted: set[str] = set()  # keys created inside a write not yet committed
        self._prefetched: dict[str, bytes | None] = {}  # wrapped keys a listing read at once

    @property
    def store_id(self) -> str:
        if self._store_id is None:
            self._store_id = store.store_id(self._db)
        return self._store_id

    @property
    def master(self) -> crypto.MasterKey:
        from core.security import crypto

        if self._master is None:
            demo = store.get_meta(self._db, DEMO_KEY_META)
            if demo is not None:
                self._master = crypto.MasterKey(
                    crypto.decode_key(demo, "the demo store's key"), "the demo store's own key"
                )
            else:
                self._master = crypto.load_master_key()
        return self._master

    def prefetch(self, task_ids: Iterable[str]) -> None:
        """Read the scope and wrapped key of many tasks in one query, for the reads just after
        (a listing then opens each row's text with no query of its own). Inside a write every
        key is read where it is used, as always."""
        if self._db.conn.in_transaction:
            return
        known = self._cache.keys() & self._scopes.keys()
        wanted = [task_id for task_id in dict.fromkeys(task_ids) if task_id not in known]
        self._prefetched = {}
        if not wanted:
            return
        for task_id, origin, wrapped in store.keys_and_scopes(self._db, wanted):
            self._scopes.setdefault(task_id, origin or self.store_id)
            if task_id not in self._cache:
                self._prefetched[task_id] = wrapped

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
        from core.security import crypto

        with write_txn(self._db):
            store.set_meta(self._db, DEMO_KEY_META, crypto.encode_key(crypto.DEMO_KEY))
        self._master = None
        self._cache.clear()
        self._wrapped.clear()
        self._old.clear()
        self._unreadable.clear()
        self._prefetched.clear()

    def data_key(self, task_id: str, *, create: bool) -> bytes:
        """The task's current data key; created (and wrapped) on first use when `create` is set.

        With `create` (the caller is about to seal), a key another process rotated since it was
        cached is read again, so nothing new is sealed with a retired key.
        """
        from core.security import crypto

        if task_id in self._cache:
            if not (create and self._rotated_elsewhere(task_id)):
                return self._cache[task_id]
            self._forget(task_id)
        in_transaction = self._db.conn.in_transaction
        if not in_transaction:
            self._uncommitted.discard(task_id)  # committed or rolled back: the row tells which
        if not create and not in_transaction and task_id in self._prefetched:
            wrapped = self._prefetched.pop(task_id)  # read a moment ago, with the listing's rows
        else:
            self._prefetched.pop(task_id, None)
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
                    created = self._insert_wrapped(task_id, key)
            if wrapped is None:
                self._cache[task_id], self._wrapped[task_id] = key, created
                return key
        key = crypto.unwrap_data_key(self.master, wrapped, self.store_id, task_id)
        if task_id not in self._uncommitted:
            self._cache[task_id], self._wrapped[task_id] = key, wrapped
        return key

    def _rotated_elsewhere(self, task_id: str) -> bool:
        """True when the stored current key is no longer the one cached (another process)."""
        known = self._wrapped.get(task_id)
        return known is not None and store.get_wrapped_key(self._db, task_id) != known

    def _forget(self, task_id: str) -> None:
        """Drop what is cached of a task's keys: the next use reads them from the store."""
        self._cache.pop(task_id, None)
        self._wrapped.pop(task_id, None)
        self._old.pop(task_id, None)
        self._prefetched.pop(task_id, None)

    def old_keys(self, task_id: str) -> dict[str, bytes]:
        """The task's retired data keys (key id → key): they open, never seal."""
        from core.security import crypto

        if task_id not in self._old:
            found: dict[str, bytes] = {}
            for kid, wrapped in store.old_wrapped_keys(self._db, task_id).items():
                key = crypto.unwrap_data_key(
                    self.master, wrapped, self.store_id, task_id, retired_key_item(kid)
                )
                if crypto.key_id(key) != kid:
                    raise crypto.DecryptError(
                        f"task {task_id}'s retired key {kid} is not the key its id names; "
                        "the store was altered"
                    )
                found[kid] = key
            if task_id in self._uncommitted or self._db.conn.in_transaction:
                return found
            self._old[task_id] = found
        return self._old[task_id]

    def all_keys(self, task_id: str) -> dict[str, bytes]:
        """Every data key of the task, current and retired (key id → key)."""
        from core.security import crypto

        current = self.data_key(task_id, create=False)
        return {**self.old_keys(task_id), crypto.key_id(current): current}

    def rotate(self, task_id: str) -> str:
        """Give the task a fresh current key, keeping the old one to open what it sealed.

        Runs inside the caller's write transaction (the caller audits it there); returns the
        new key's id.
        """
        from core.security import crypto

        if not self._db.conn.in_transaction:
            raise RuntimeError("TaskKeys.rotate() runs inside the caller's write transaction")
        current = self.data_key(task_id, create=False)
        fresh = crypto.generate_key()
        self._retire(task_id, current)
        store.replace_wrapped_key(
            self._db,
            task_id,
            crypto.wrap_data_key(self.master, fresh, self.store_id, task_id),
            self.master.id,
            clock.now_iso(),
        )
        self._forget(task_id)
        self._uncommitted.add(task_id)  # cached once the rotation is read back committed
        return crypto.key_id(fresh)

    def _retire(self, task_id: str, key: bytes) -> bool:
        """Keep `key` as one of the task's retired keys (in the caller's transaction)."""
        from core.security import crypto

        kid = crypto.key_id(key)
        return store.insert_old_wrapped_key(
            self._db,
            task_id,
            kid,
            crypto.wrap_data_key(self.master, key, self.store_id, task_id, retired_key_item(kid)),
            self.master.id,
            clock.now_iso(),
        )

    def seal_text(self, task_id: str, item: str, text: str) -> bytes:
        """Encrypt free text (a reason, a note, an action) of `item` of `task_id`."""
        self._unreadable.discard(task_id)
        return self.seal(task_id, item, text.encode())

    def open_text(self, task_id: str, item: str, sealed: bytes) -> str:
        """Decrypt free text for display; `store.UNREADABLE` when its key is not available.

        Lists show the marker instead of failing, as checkpoint notes do; a task whose key
        cannot be had is not asked again for every row of the same list.
        """
        from core.security import crypto

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

    def adopt_keys(
        self, task_id: str, keys: Mapping[str, bytes], current_id: str, scope: str
    ) -> None:
        """Hold every data key of a fetched task (the current one seals, the rest open)."""
        _check_key_ids(task_id, keys, current_id)
        self.adopt(task_id, keys[current_id], scope)
        self._old[task_id] = {kid: key for kid, key in keys.items() if kid != current_id}
        self._adopted_old[task_id] = dict(self._old[task_id])

    def keep_adopted(self, task_id: str) -> None:
        """Store an adopted task's data keys wrapped by this store's master key.

        Runs inside the caller's transaction, after the task row is inserted.
        """
        self._insert_wrapped(task_id, self._cache[task_id])
        for key in self._adopted_old.pop(task_id, {}).values():
            self._retire(task_id, key)

    def merge_keys(self, task_id: str, keys: Mapping[str, bytes], current_id: str) -> bool:
        """Take the keys another store has for a task held here; True when anything changed.

        Keys new here are kept to open what they sealed. The other store's current key becomes
        ours only when its set holds our current key: it rotated after ours was made, so it
        is what the remaining recipients seal with. A set that shares no key with ours was not
        made by anyone who ever held this task's keys and is refused. A task gc retired (no
        key left) takes nothing. Runs inside the caller's write transaction.
        """
        from core.security import crypto

        _check_key_ids(task_id, keys, current_id)
        if store.get_wrapped_key(self._db, task_id) is None:
            return False
        ours = self.all_keys(task_id)
        if not ours.keys() & keys.keys():
            raise crypto.DecryptError(
                f"the remote key file of task {task_id} holds none of the keys this store has "
                "for it: it was replaced by someone who never had them; nothing was taken"
            )
        current = crypto.key_id(self.data_key(task_id, create=False))
        changed = False
        for kid, key in keys.items():
            if kid not in ours and kid != current_id:
                changed |= self._retire(task_id, key)
        if current_id not in ours and current in keys:
            self._retire(task_id, ours[current])
            store.replace_wrapped_key(
                self._db,
                task_id,
                crypto.wrap_data_key(self.master, keys[current_id], self.store_id, task_id),
                self.master.id,
                clock.now_iso(),
            )
            changed = True
        elif current_id not in ours:
            changed |= self._retire(task_id, keys[current_id])  # a rotation beside ours
        if changed:
            self._forget(task_id)
            self._uncommitted.add(task_id)
        return changed

    def _insert_wrapped(self, task_id: str, key: bytes) -> bytes:
        """Record a task's data key wrapped by the master key (in the caller's transaction)."""
        from core.security import crypto

        wrapped = crypto.wrap_data_key(self.master, key, self.store_id, task_id)
        store.insert_wrapped_key(self._db, task_id, wrapped, self.master.id, clock.now_iso())
        return wrapped

    def data_key_id(self, task_id: str) -> str:
        """The public id of the task's current data key (recorded in checkpoint headers)."""
        from core.security import crypto

        return crypto.key_id(self.data_key(task_id, create=True))

    def seal(self, task_id: str, item: str, plaintext: bytes) -> bytes:
        """Encrypt content that belongs to `item` of `task_id`."""
        from core.security import crypto

        key = self.data_key(task_id, create=True)
        return crypto.seal(
            key, plaintext, crypto.associated_data(self.scope(task_id), task_id, item)
        )

    def open(self, task_id: str, item: str, envelope: bytes, what: str) -> bytes:
        """Decrypt content sealed for `item` of `task_id`, with the key its envelope names."""
        from core.security import crypto

        key = self._key_for(task_id, crypto.peek_key_id(envelope))
        return crypto.open_envelope(
            key, envelope, crypto.associated_data(self.scope(task_id), task_id, item), what
        )

    def _key_for(self, task_id: str, kid: str | None) -> bytes:
        """The task's key named `kid`: the current one, a retired one, else the current one
        (whose mismatch `open_envelope` reports)."""
        from core.security import crypto

        current = self.data_key(task_id, create=False)
        if kid is None or kid == crypto.key_id(current):
            return current
        found = self.old_keys(task_id).get(kid)
        if found is None:  # another process may have rotated or fetched keys since
            self._forget(task_id)
            current = self.data_key(task_id, create=False)
            found = current if kid == crypto.key_id(current) else self.old_keys(task_id).get(kid)
        return found if found is not None else current

    def master_key_ids(self) -> list[str]:
        """Ids of the master keys this store's data depends on (normally one)."""
        return store.master_key_ids(self._db)

    def why_not_a_new_master(self) -> str | None:
        """Why making a new master key now would leave this store's data unreadable, or None.

        `eval "$(pitstop key init --print)"` in every new shell makes a new key each time; the
        second one cannot open what the first encrypted, and the reminder to keep it went to
        `eval` as a comment. So a store whose data depends on a key refuses a new one.
        """
        if store.get_meta(self._db, DEMO_KEY_META) is not None:
            return None  # the demo store carries its own key
        needed = self.master_key_ids()
        if not needed:
            return None
        from core.security import crypto  # lazily, as everywhere here (the module is typed only)

        try:
            current: crypto.MasterKey | None = crypto.load_master_key()
        except crypto.MasterKeyError:
            current = None
        shown = ", ".join(needed)
        if current is not None and current.id in needed:
            return (
                f"this store's data is encrypted under master key {current.id}, the one in use "
                f"({current.source}); a new key could not read it. Back that one up with "
                "`pitstop key export` (pass --new only for a key meant for another store)"
            )
        return (
            f"this store's data is encrypted under master key {shown}, which is not set here; a "
            "new key could not read it. Set PITSTOP_KEY to that key from your backup (`pitstop "
            "key export` prints it where it is set); pass --new only to start over"
        )

    def tasks_with_other_master(self, master: crypto.MasterKey) -> list[str]:
        """Tasks whose data key was wrapped by a different master key than `master`."""
        return store.tasks_keyed_by_other_master(self._db, master.id)


def _check_key_ids(task_id: str, keys: Mapping[str, bytes], current_id: str) -> None:
    """Refuse a key set whose ids are not its keys' ids, or that lacks its current key."""
    from core.security import crypto

    if current_id not in keys:
        raise crypto.DecryptError(f"the data keys of task {task_id} lack their current key")
    for kid, key in keys.items():
        if len(key) != crypto.KEY_BYTES or crypto.key_id(key) != kid:
            raise crypto.DecryptError(
                f"a data key of task {task_id} is not the key its id {kid[:12]!r} names; "
                "it was altered"
            )
