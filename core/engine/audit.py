"""The audit log as callers read it: every state change, oldest first, whoever made it.

Writing happens inside each use-case's transaction (`Session.record_event`); reading is one
call, so `pitstop log` and the ledger commands show the same trail.
"""

from __future__ import annotations

from core import store
from core.models import AuditEvent
from core.session import Session


def events(session: Session, task_id: str | None = None) -> list[AuditEvent]:
    """The audit log, oldest first; reasons decrypted (a marker where the key is missing)."""
    if task_id is not None:
        store.get_task(session.db, task_id)
    return store.list_events(session.db, task_id, session.keys)
