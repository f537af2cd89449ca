"""The session's side-effect ledger and approval book, built afresh for each call.

Effects, approvals, checkpoints (a manifest lists both) and validation all read them; building
them in one place gives every use-case the same audit hook, operator and lock directory.
"""

from __future__ import annotations

from core import store
from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:  # the ledger modules load only when a use-case asks for them
    from core.ledger.approvals import Approvals
    from core.ledger.effects import Ledger


def effect_ledger(session: Session) -> Ledger:
    """The side-effect ledger, audited as the session's operator."""
    from core.ledger.effects import Ledger

    return Ledger(
        session.db,
        session.record_event,
        session.actor,
        session.paths.tmp / "locks" / "effects",
        session.keys,
    )


def approval_book(session: Session) -> Approvals:
    """The approvals, requested and decided as the session's operator."""
    from core.ledger.approvals import Approvals

    return Approvals(session.db, session.record_event, session.actor, session.keys)


def ledger_sections(
    session: Session, task_id: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The manifest's side-effect ledger and pending approvals, as they stand now."""
    side_effects = [
        {
            "key": e.key,
            "kind": e.kind,
            "state": e.state.value,
            "target": e.target,
            "needs_approval": e.needs_approval,
            "attempts": e.attempts,
            "exit_code": e.exit_code,
            "updated_at": e.updated_at,
        }
        for e in store.list_effects(session.db, task_id, keys=session.keys)
    ]
    pending = [
        {
            "id": a.id,
            "action": a.action,
            "risk": a.risk.value,
            "effect": a.effect_key,
            "requested_by": a.requested_by,
            "requested_at": a.requested_at,
            "expires_at": a.expires_at,
        }
        for a in approval_book(session).find(task_id, True)
    ]
    return side_effects, pending
