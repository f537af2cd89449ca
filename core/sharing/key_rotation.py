"""Rotating a task's data key when someone stops being one of its recipients.

A removed recipient keeps every key they were given, so what was sealed before stays readable
to them: nothing can take that back. What the rotation guarantees is that everything sealed
after it — new checkpoints' manifests, evidence, facts' sealed parts, the sealed task header —
uses a fresh key that only the remaining recipients receive (the next push wraps the key file,
every key in it, for them alone).
"""

from __future__ import annotations

from core import clock, store
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

if TYPE_CHECKING:
    from core.session import Session


def rotate_for_removal(session: Session, task_id: str, reason: str | None = None) -> str:
    """Give a task a fresh current data key, audited as `rotate-key`; return its id.

    The caller removes the recipient (a signed roster change); this makes sure what is
    written after cannot be opened with any key they hold.
    """
    store.get_task(session.db, task_id)
    now = clock.now_iso()
    with write_txn(session.db):
        previous = session.keys.data_key_id(task_id)
        current = session.keys.rotate(task_id)
        session.record_event(task_id, "task", task_id, "rotate-key", previous, current, reason, now)
    return current
