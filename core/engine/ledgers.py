"""The session's side-effect ledger and approval book, built afresh for each call.

Effects, approvals, checkpoints (a manifest lists both) and validation all read them; building
them in one place gives every use-case the same audit hook, operator and lock directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.session import Session

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
