"""Approvals: an agent asks for a human decision; an allowed operator decides it once, audited.

An approval is `pending` until an operator approves or rejects it, with a reason (invariant 6),
or until its expiry passes. Expiry is a matter of time, not of anyone's action, so it is derived
whenever an approval is read: a pending approval past `expires_at` *is* expired everywhere it
shows, and can no longer be decided. The next request on the same task also records that expiry
in the store and the audit log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from core import clock, numbers, store
from core.errors import ConflictError, NotAllowedError, NotFoundError, UsageError
from core.models import (
    Approval,
    ApprovalState,
    EffectState,
    Risk,
    Task,
    TaskStatus,
    validate_task_id,
)
from core.redaction.free_text import persistable
from core.store.db import Database, write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # a structural type only mypy checks

APPROVAL_ID = re.compile(r"^(?P<task>[^:\s]+):(?P<seq>\d+)$")
MAX_ACTION_CHARS = 2000
OPERATOR_NAME = re.compile(r"^[^\s,:]{1,64}$")
_DURATION = re.compile(r"^\s*(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>s|m|h|d)?\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class Audit(Protocol):
    """The engine's audit writer: one event per state change, inside the caller's transaction.

    The reason of a task's event is sealed; `detail` is plain facts that lists and measures read.
    """

    def __call__(
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
    ) -> None: ...


def parse_duration(text: str, option: str = "--expires-in") -> timedelta:
    """`90`, `90s`, `30m`, `2h` or `1d` as a positive duration."""
    match = _DURATION.match(text)
    if not match:
        raise UsageError(f"invalid {option} {text!r}: use a number with s, m, h or d, e.g. 30m")
    seconds = float(match.group("amount")) * _UNIT_SECONDS[match.group("unit") or "s"]
    return timedelta(seconds=numbers.seconds(seconds, option, positive=True))


def validate_operator_names(names: Sequence[str]) -> tuple[str, ...]:
    """Approver names, deduplicated in order; each must be one word (an OS or config name)."""
    for name in names:
        if not OPERATOR_NAME.match(name):
            raise UsageError(
                f"invalid approver {name!r}: give one operator name per --approver, "
                "without spaces, commas or colons"
            )
    return tuple(dict.fromkeys(names))


def parse_approval_id(text: str) -> tuple[str, int]:
    """Split `TASK:N` into the task id and the task's approval number."""
    match = APPROVAL_ID.match(text.strip())
    if not match:
        raise UsageError(f"invalid approval id {text!r}: expected TASK:N, e.g. deploy-3f2a:1")
    return validate_task_id(match.group("task")), int(match.group("seq"))


def effective(approval: Approval, now: datetime) -> Approval:
    """The approval as it stands at `now`: a pending one past its expiry is expired."""
    if (
        approval.state is ApprovalState.PENDING
        and approval.expires_at is not None
        and clock.parse(approval.expires_at) <= now
    ):
        return approval._replace(state=ApprovalState.EXPIRED)
    return approval


def require_decider(task: Task, actor: str, what: str) -> None:
    """Refuse `actor` unless the task lets any operator decide or names them as an approver."""
    if task.approvers and actor not in task.approvers:
        raise NotAllowedError(
            f"{actor} may not {what} for task {task.id}: only {', '.join(task.approvers)} may "
            "(set your name in config.toml [operator] name, or ask one of them)"
        )


class Approvals:
    """Approval requests and decisions on one store connection; their text sealed by `keys`."""

    def __init__(self, db: Database, audit: Audit, actor: str, keys: store.TextKeys) -> None:
        self.db = db
        self.audit = audit
        self.actor = actor
        self.keys = keys

    # --- reading ----------------------------------------------------------------------------

    def get(self, approval_id: str) -> Approval:
        """One approval by `TASK:N`, as it stands now."""
        parse_approval_id(approval_id)
        found = store.find_approval(self.db, approval_id.strip(), self.keys)
        if found is None:
            raise NotFoundError(
                f"no approval {approval_id!r} in this store; `pitstop approval list` shows them"
            )
        return effective(found, clock.now())

    def find(self, task_id: str | None = None, pending_only: bool = False) -> list[Approval]:
        """Approvals oldest first, as they stand now; optionally only those still pending."""
        if task_id is not None:
            store.get_task(self.db, task_id)
        now = clock.now()
        states = (ApprovalState.PENDING,) if pending_only else ()
        stored = store.list_approvals(self.db, task_id, states, keys=self.keys)
        found = [effective(a, now) for a in stored]
        if pending_only:
            finished = store.finished_task_ids(self.db) if found else set()
            found = [
                a for a in found if a.state is ApprovalState.PENDING and a.task_id not in finished
            ]
        return found

    def for_effect(self, task_id: str, effect_key: str) -> list[Approval]:
        """Approvals requested for one side effect, oldest first, as they stand now."""
        now = clock.now()
        return [
            effective(a, now)
            for a in store.list_approvals(self.db, task_id, effect_key=effect_key, keys=self.keys)
        ]

    # --- requesting ------------------------------------------------------------------------

    def validate_request(self, task_id: str, action: str, effect_key: str | None) -> Task:
        """Refuse a request that could not be recorded, before anything (a checkpoint) is done."""
        if not action.strip():
            raise UsageError("the --action is empty; say what the agent wants to do")
        if len(action) > MAX_ACTION_CHARS:
            raise UsageError(f"the --action is longer than {MAX_ACTION_CHARS} characters")
        task = store.get_task(self.db, task_id)
        if task.status.is_final:
            raise ConflictError(
                f"task {task_id} is {task.status.value}; a finished task asks for no approvals"
            )
        if effect_key is not None:
            effect = store.get_effect(self.db, task_id, effect_key, None)
            if effect.state is EffectState.CONFIRMED:
                raise ConflictError(
                    f"side effect {effect_key!r} of task {task_id} is already confirmed; "
                    "there is nothing left to approve"
                )
        return task

    def request(
        self,
        task_id: str,
        action: str,
        *,
        effect_key: str | None = None,
        risk: Risk = Risk.MEDIUM,
        expires_in: timedelta | None = None,
        checkpoint_seq: int | None = None,
    ) -> Approval:
        """Record a pending approval; the task becomes `waiting` until it is decided."""
        self.validate_request(task_id, action, effect_key)
        now = clock.now()
        at = clock.to_iso(now)
        with write_txn(self.db):
            self.validate_request(task_id, action, effect_key)  # again, under the write lock
            self._record_expiries(task_id, now)
            seq = store.next_approval_seq(self.db, task_id)
            approval = Approval(
                id=f"{task_id}:{seq}",
                task_id=task_id,
                seq=seq,
                action=persistable(action),
                risk=risk,
                state=ApprovalState.PENDING,
                requested_by=self.actor,
                requested_at=at,
                effect_key=effect_key,
                expires_at=clock.to_iso(now + expires_in) if expires_in else None,
                checkpoint_seq=checkpoint_seq,
            )
            store.insert_approval(self.db, approval, self.keys)
            self.audit(
                task_id,
                "approval",
                approval.id,
                "request",
                None,
                ApprovalState.PENDING.value,
                None,
                at,
            )
            current = store.get_task(self.db, task_id).status
            if current is not TaskStatus.WAITING:
                store.update_task(self.db, task_id, status=TaskStatus.WAITING, updated_at=at)
                self.audit(
                    task_id,
                    "task",
                    task_id,
                    "status",
                    current.value,
                    TaskStatus.WAITING.value,
                    f"waiting for approval {approval.id}",
                    at,
                )
        return approval

    def _record_expiries(self, task_id: str, now: datetime) -> None:
        """Write down (with an event) the task's pending approvals whose expiry has passed."""
        at = clock.to_iso(now)
        for stored in store.list_approvals(self.db, task_id, (ApprovalState.PENDING,)):
            if effective(stored, now).state is not ApprovalState.EXPIRED:
                continue
            if store.decide_approval(
                self.db,
                stored.id,
                ApprovalState.EXPIRED,
                decided_by=None,
                decided_at=stored.expires_at or at,
                reason=None,
                keys=self.keys,
            ):
                self.audit(
                    task_id,
                    "approval",
                    stored.id,
                    "expire",
                    ApprovalState.PENDING.value,
                    ApprovalState.EXPIRED.value,
                    f"expired at {stored.expires_at}",
                    at,
                )

    # --- deciding --------------------------------------------------------------------------

    def decide(self, approval_id: str, approve: bool, reason: str) -> Approval:
        """Approve or reject a pending approval, once, as this operator, with a reason."""
        if not reason or not reason.strip():
            raise UsageError("a decision needs a --reason; it is kept in the audit log")
        approval_id = approval_id.strip()
        self.get(approval_id)  # refuses malformed and unknown ids before taking the write lock
        to_state = ApprovalState.APPROVED if approve else ApprovalState.REJECTED
        verb = "approve" if approve else "reject"
        now = clock.now()
        at = clock.to_iso(now)
        with write_txn(self.db):
            stored = store.find_approval(self.db, approval_id, None)
            assert stored is not None  # approvals are never deleted
            current = effective(stored, now)
            task = store.get_task(self.db, current.task_id)
            require_decider(task, self.actor, "decide approvals")
            if task.status.is_final and current.state is ApprovalState.PENDING:
                raise ConflictError(
                    f"task {task.id} is {task.status.value}: its pending requests expired with "
                    f"it, so approval {approval_id} can no longer be decided"
                )
            if current.state is ApprovalState.EXPIRED:
                when = (
                    f"at {current.expires_at}"
                    if current.expires_at
                    else f"when task {task.id} became {task.status.value}"
                )
                raise ConflictError(
                    f"approval {approval_id} expired {when} and can no longer be decided; "
                    "the agent must request it again"
                )
            if current.state is not ApprovalState.PENDING:
                raise ConflictError(
                    f"approval {approval_id} was already {current.state.value} by "
                    f"{current.decided_by} at {current.decided_at}; a decision is final"
                )
            if not store.decide_approval(
                self.db,
                approval_id,
                to_state,
                decided_by=self.actor,
                decided_at=at,
                reason=persistable(reason),
                keys=self.keys,
            ):
                raise ConflictError(f"approval {approval_id} was decided by someone else just now")
            self.audit(
                task.id,
                "approval",
                approval_id,
                verb,
                ApprovalState.PENDING.value,
                to_state.value,
                persistable(reason),
                at,
            )
            self._end_wait_if_done(task, at, approval_id, to_state)
        decided = store.find_approval(self.db, approval_id, self.keys)
        assert decided is not None
        return decided

    def _end_wait_if_done(
        self, task: Task, at: str, approval_id: str, decision: ApprovalState
    ) -> None:
        """A waiting task with no pending approval left is paused: ready to go on or resume."""
        if task.status is not TaskStatus.WAITING:
            return
        now = clock.parse(at)
        still_pending = [
            a
            for a in store.list_approvals(self.db, task.id, (ApprovalState.PENDING,))
            if effective(a, now).state is ApprovalState.PENDING
        ]
        if still_pending:
            return
        store.update_task(self.db, task.id, status=TaskStatus.PAUSED, updated_at=at)
        self.audit(
            task.id,
            "task",
            task.id,
            "status",
            TaskStatus.WAITING.value,
            TaskStatus.PAUSED.value,
            f"approval {approval_id} {decision.value}; no approval pending",
            at,
        )
