"""One opened store: its paths, database connection, task keys, who acts and through what.

Every use-case needs the same handful of things — the connection, the keys that seal a task's
content, the operator's name and interface for the audit log — and the capabilities below the
engine (sharing, ledger sync) need them too. They take a `Session` rather than the `Engine`
facade, so nothing below the engine points back up at it (the `Engine` is a `Session` with every
use-case bound to it, so it is passed down as itself). A session is bound to the thread that
opened it (SQLite connections are not shared between threads); `reopen()` gives another thread
its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from core.config import Config, load_config
from core.models import Interface
from core.paths import StorePaths, ensure_private_dir, resolve_store_root
from core.security.keys import TaskKeys
from core.store.db import Database, open_database
from core.store.migrations import migrate

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from core.security.signing import SigningKey


class Session:
    """A store opened for one thread, and the actor whose changes it audits."""

    def __init__(
        self,
        store_root: str | os.PathLike[str] | None = None,
        *,
        interface: Interface = Interface.API,
        actor: str | None = None,
        config: Config | None = None,
        signing_key: SigningKey | None = None,
    ) -> None:
        self.paths = StorePaths(resolve_store_root(store_root))
        self.interface = interface
        self.config = config or load_config()
        self.actor = actor or self.config.operator
        ensure_private_dir(self.paths.root)
        self.db: Database = open_database(self.paths.database)
        try:
            migrate(self.db, TaskKeys)
        except BaseException:
            self.db.close()
            raise
        for private in (self.paths.tmp, self.paths.repos):
            ensure_private_dir(private)
        self.keys = TaskKeys(self.db)
        self._signing_key: SigningKey | None = signing_key
        # Added to every audit event this session writes: the web inbox names the device here.
        self.audit_detail: dict[str, str] = {}

    def signing_key(self) -> SigningKey:
        """The operator's signing key, loaded on first use (a SigningError when there is none).

        Loaded lazily: only what crosses a machine is signed, so recording hooks never pay.
        """
        if self._signing_key is None:
            from core.security.signing import load_signing_key

            self._signing_key = load_signing_key()
        return self._signing_key

    def reopen(self) -> Session:
        """The same store, actor and interface, on a new connection for another thread."""
        return Session(
            self.paths.root,
            interface=self.interface,
            actor=self.actor,
            config=self.config,
            signing_key=self._signing_key,
        )

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    def record_event(
        self,
        task_id: str | None,
        entity: str,
        entity_id: str,
        action: str,
        from_state: str | None,
        to_state: str | None,
        reason: str | None,
        at: str,
        *,
        detail: Mapping[str, str] | None = None,
        own_words: bool = False,
    ) -> None:
        """Write one audit event; a task's reason is redacted and sealed under its key.

        `own_words`: the reason is Pitstop's own wording (built from constants and ids, never
        from what a person or an agent typed), so there is nothing to redact: sealed only. A
        hook's checkpoint then need not load the redaction rules at all.
        """
        from core.redaction.free_text import persistable  # a session that only reads loads
        from core.store import add_event  # neither (the looking-around commands)

        add_event(
            self.db,
            keys=self.keys,
            at=at,
            actor=self.actor,
            interface=self.interface,
            task_id=task_id,
            entity=entity,
            entity_id=entity_id,
            action=action,
            from_state=from_state,
            to_state=to_state,
            reason=persistable(reason) if reason and not own_words else reason,
            detail={**self.audit_detail, **detail} if detail else (self.audit_detail or None),
        )
