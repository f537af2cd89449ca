"""Approvals: a task asks a person before a risky action, and waits for the answer.

Asking can first take a `before-wait` checkpoint, so the waiting agent's state is safe while
nobody works on it; that is why this use-case, and not the approval book in `core.ledger`,
joins the two.
"""

from __future__ import annotations

from core.engine.checkpoint import CheckpointRequest
from core.engine.checkpoint import checkpoint as take_checkpoint
from core.engine.ledgers import approval_book
from core.models import Approval, Checkpoint, CheckpointReason, Risk
from core.session import Session


def request_approval(
    session: Session,
    task_id: str,
    action: str,
    *,
    effect_key: str | None = None,
    risk: Risk = Risk.MEDIUM,
    expires_in: str | None = None,
    checkpoint: bool = False,
) -> Approval:
    """Ask for a human decision; the task waits, after a `before-wait` checkpoint if asked."""
    from core.ledger.approvals import parse_duration
    from core.redaction.free_text import persistable

    approvals = approval_book(session)
    lifetime = parse_duration(expires_in) if expires_in is not None else None
    approvals.validate_request(task_id, action, effect_key)
    checkpoint_seq: int | None = None
    if checkpoint:
        taken = _checkpoint_before_wait(
            session, task_id, f"waiting for approval: {persistable(action)[:200]}"
        )
        checkpoint_seq = taken.seq if taken else None
    return approvals.request(
        task_id,
        action,
        effect_key=effect_key,
        risk=risk,
        expires_in=lifetime,
        checkpoint_seq=checkpoint_seq,
    )


def _checkpoint_before_wait(session: Session, task_id: str, note: str) -> Checkpoint | None:
    request = CheckpointRequest(reason=CheckpointReason.BEFORE_WAIT, note=note, force=True)
    return take_checkpoint(session, task_id, request).checkpoint


def decide_approval(session: Session, approval_id: str, approve: bool, reason: str) -> Approval:
    """Approve or reject a pending approval, once, as the session's operator (by key, once the
    task has a roster)."""
    from core.ledger.approvals import Approvals, parse_approval_id
    from core.ledger.trust import decider_name

    task_id, _seq = parse_approval_id(approval_id)
    actor = decider_name(session, task_id, "decide approvals")
    book = Approvals(session.db, session.record_event, actor, session.keys)
    return book.decide(approval_id, approve, reason)


def get_approval(session: Session, approval_id: str) -> Approval:
    """One approval by `TASK:N`, with expiry applied."""
    return approval_book(session).get(approval_id)


def list_approvals(
    session: Session, task_id: str | None = None, pending_only: bool = False
) -> list[Approval]:
    """Approvals across tasks (the inbox) or of one task, oldest first."""
    return approval_book(session).find(task_id, pending_only)


def recently_decided_approvals(session: Session, hours: float = 24) -> list[Approval]:
    """Requests decided or expired in the last `hours`, the latest first: where a request that
    left the inbox is found again (who decided, when, why)."""
    from datetime import timedelta

    from core import clock, numbers, store

    numbers.seconds(hours * 3600, "the span to look back")
    now = clock.now()
    since = clock.to_iso(now - timedelta(hours=hours))
    return store.recent_decisions(session.db, since, clock.to_iso(now), session.keys)


def pending_approvals(session: Session, limit: int) -> tuple[list[Approval], int]:
    """The inbox's first `limit` pending approvals across tasks, riskiest then oldest first,
    and how many are pending in all: only the shown ones are read and opened (a web inbox with
    10,000 waiting renders its first page without decrypting the rest)."""
    from core import clock, numbers, store

    numbers.storable_integer(limit, "the number of approvals shown")
    return store.pending_approvals_first(session.db, clock.now_iso(), limit, session.keys)


def wait_for_decision(session: Session, approval_id: str, seconds: float) -> Approval:
    """The approval once someone decided it, or as it stands after `seconds` (then pending
    or expired): a harness hook holds a permission prompt open this long for a decision made
    anywhere — dashboard, CLI, another machine's sync.

    Waiting costs no CPU worth measuring: the store's write-ahead log is watched (inotify) and
    the approval read again only when another process commits (`core.store.watch`), and
    once as the watch arms: a decision committed between the first read and then would
    otherwise go unheard until the wait ran out.
    """
    import threading

    from core import numbers
    from core.models import ApprovalState
    from core.store.watch import store_commits

    # An infinite wait would overflow the timer's thread and hold the prompt forever.
    numbers.seconds(max(numbers.finite(seconds, "the wait for a decision"), 0), "the wait")
    current = get_approval(session, approval_id)
    if current.state is not ApprovalState.PENDING or seconds <= 0:
        return current
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.daemon = True
    timer.start()
    try:
        for _version in store_commits(session.paths.database, stop, armed=True):
            current = get_approval(session, approval_id)
            if current.state is not ApprovalState.PENDING:
                return current
    finally:
        timer.cancel()
        stop.set()
    return get_approval(session, approval_id)
