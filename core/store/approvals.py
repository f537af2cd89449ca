"""The `approvals` table: requests, their decisions, and ledger sync's replacements of both.

A decision is written only while the request is still `pending` (ledger sync alone may overrule
one made elsewhere first); the action and the reason are sealed under the request's number.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.models import Approval, ApprovalState, Risk
from core.store.db import Database
from core.store.filters import where_clause
from core.store.sealed_text import (
    TextKeys,
    approval_item,
    opened_value,
    prefetched,
    sealed_value,
)
from core.store.values import stored_enum

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def _approval_from_row(row: Mapping[str, Any], keys: TextKeys | None) -> Approval:
    task_id, seq = row["task_id"], row["seq"]
    return Approval(
        id=row["id"],
        task_id=task_id,
        seq=seq,
        action=opened_value(keys, task_id, approval_item(seq, "action"), row["action"]),
        risk=stored_enum(Risk, row["risk"], "approval risk", f"approval {row['id']}"),
        state=stored_enum(ApprovalState, row["state"], "approval state", f"approval {row['id']}"),
        requested_by=row["requested_by"],
        requested_at=row["requested_at"],
        effect_key=row["effect_key"],
        expires_at=row["expires_at"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        reason=opened_value(keys, task_id, approval_item(seq, "reason"), row["reason"]),
        checkpoint_seq=row["checkpoint_seq"],
    )


def next_approval_seq(db: Database, task_id: str) -> int:
    """The per-task number the task's next approval request gets."""
    row = db.execute("SELECT MAX(seq) FROM approvals WHERE task_id = ?", [task_id]).fetchone()
    return int(row[0] or 0) + 1


def insert_approval(db: Database, approval: Approval, keys: TextKeys) -> None:
    """Record a new approval request (its action sealed)."""
    db.execute(
        "INSERT INTO approvals (id, task_id, seq, action, effect_key, risk, state, requested_by, "
        "requested_at, expires_at, checkpoint_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [approval.id, approval.task_id, approval.seq, *_request_columns(approval, keys)],
    )


def _request_columns(approval: Approval, keys: TextKeys) -> list[Any]:
    """An approval request's columns from `action` to `checkpoint_seq` (the action sealed)."""
    return [
        sealed_value(
            keys, approval.task_id, approval_item(approval.seq, "action"), approval.action
        ),
        approval.effect_key,
        approval.risk.value,
        approval.state.value,
        approval.requested_by,
        approval.requested_at,
        approval.expires_at,
        approval.checkpoint_seq,
    ]


def find_approval(db: Database, approval_id: str, keys: TextKeys | None) -> Approval | None:
    """The approval with this id, if there is one (text opened with `keys`)."""
    rows = list(db.query("SELECT * FROM approvals WHERE id = ?", [approval_id]))
    return _approval_from_row(rows[0], keys) if rows else None


def list_approvals(
    db: Database,
    task_id: str | None = None,
    states: tuple[ApprovalState, ...] = (),
    effect_key: str | None = None,
    keys: TextKeys | None = None,
) -> list[Approval]:
    """Approval requests as stored, oldest first, optionally filtered.

    Their text is opened with `keys`; without (a caller after states only) it shows the marker.
    """
    where, params = where_clause({"task_id": task_id, "effect_key": effect_key}, states)
    rows = list(
        db.query(f"SELECT * FROM approvals{where} ORDER BY requested_at, task_id, seq", params)
    )
    prefetched(keys, rows, "task_id")
    return [_approval_from_row(row, keys) for row in rows]


_RISK_RANK = "CASE risk WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END"
# Still waiting for someone: pending, not past its expiry, and of a task that is not finished
# (an older store may hold a finished task's request still pending; nobody is left to ask for).
_STILL_PENDING = (
    "state = 'pending' AND (expires_at IS NULL OR expires_at > ?) AND task_id NOT IN "
    "(SELECT id FROM tasks WHERE status IN ('done', 'cancelled', 'expired'))"
)


def pending_approvals_first(
    db: Database, now_iso: str, limit: int, keys: TextKeys | None
) -> tuple[list[Approval], int]:
    """The first `limit` approvals still pending at `now_iso`, riskiest then oldest first, and
    how many are pending in all; only the returned ones' text is opened."""
    rows = db.query(
        f"SELECT * FROM approvals WHERE {_STILL_PENDING} "
        f"ORDER BY {_RISK_RANK}, requested_at, task_id, seq LIMIT ?",
        [now_iso, limit],
    )
    shown = [_approval_from_row(row, keys) for row in rows]
    total = db.execute(
        f"SELECT COUNT(*) FROM approvals WHERE {_STILL_PENDING}", [now_iso]
    ).fetchone()[0]
    return shown, int(total)


def decide_approval(
    db: Database,
    approval_id: str,
    to_state: ApprovalState,
    *,
    decided_by: str | None,
    decided_at: str,
    reason: str | None,
    keys: TextKeys,
) -> bool:
    """Move a `pending` approval to its decision (reason sealed); False when not pending."""
    return _write_decision(
        db, approval_id, to_state, decided_by, decided_at, reason, keys, only_pending=True
    )


def expire_pending_approvals(db: Database, task_id: str, at: str) -> list[str]:
    """Expire, as of `at`, every approval of `task_id` still pending: the ids expired, in order.

    A finished task (done or cancelled) runs nothing more, so a request of it left
    in the inbox would ask an approver to decide for nobody; the caller audits each one.
    """
    pending = [ApprovalState.PENDING.value, task_id]
    ids = [
        row[0]
        for row in db.execute(
            "SELECT id FROM approvals WHERE state = ? AND task_id = ? ORDER BY seq", pending
        ).fetchall()
    ]
    db.execute(
        "UPDATE approvals SET state = ?, decided_at = ? WHERE state = ? AND task_id = ?",
        [ApprovalState.EXPIRED.value, at, *pending],
    )
    return ids


def _write_decision(
    db: Database,
    approval_id: str,
    to_state: ApprovalState,
    decided_by: str | None,
    decided_at: str,
    reason: str | None,
    keys: TextKeys,
    *,
    only_pending: bool,
) -> bool:
    """Store an approval's decision, its reason sealed; False when no row was changed."""
    found = db.execute("SELECT task_id, seq FROM approvals WHERE id = ?", [approval_id]).fetchone()
    if found is None:
        return False
    sql = "UPDATE approvals SET state = ?, decided_by = ?, decided_at = ?, reason = ? WHERE id = ?"
    params = [
        to_state.value,
        decided_by,
        decided_at,
        sealed_value(keys, found[0], approval_item(found[1], "reason"), reason),
        approval_id,
    ]
    if only_pending:
        sql += " AND state = ?"
        params.append(ApprovalState.PENDING.value)
    return db.execute(sql, params).rowcount == 1


def replace_approval_request(db: Database, approval: Approval, keys: TextKeys) -> bool:
    """Put another store's request in place of this one's under the same id, undecided (ledger
    sync only: the same number was given to two different requests)."""
    cursor = db.execute(
        "UPDATE approvals SET action = ?, effect_key = ?, risk = ?, state = ?, requested_by = ?, "
        "requested_at = ?, expires_at = ?, checkpoint_seq = ?, decided_by = NULL, "
        "decided_at = NULL, reason = NULL WHERE id = ?",
        [*_request_columns(approval, keys), approval.id],
    )
    return cursor.rowcount == 1


def overrule_approval(
    db: Database,
    approval_id: str,
    to_state: ApprovalState,
    *,
    decided_by: str | None,
    decided_at: str,
    reason: str | None,
    keys: TextKeys,
) -> bool:
    """Replace an approval's decision with one made first elsewhere (ledger sync only)."""
    return _write_decision(
        db, approval_id, to_state, decided_by, decided_at, reason, keys, only_pending=False
    )


def recent_decisions(
    db: Database, since: str, now: str, keys: TextKeys | None, limit: int = 500
) -> list[Approval]:
    """Approvals decided (or expired) between `since` and `now`, the latest first, at most
    `limit`; one past its expiry but never written down carries its expiry as its decision
    time."""
    rows = db.query(
        "SELECT * FROM (SELECT *, COALESCE(decided_at, expires_at) AS ended FROM approvals "
        "WHERE (state != :pending AND decided_at >= :since) "
        "OR (state = :pending AND expires_at >= :since AND expires_at <= :now)) "
        "ORDER BY ended DESC, id LIMIT :limit",
        {"pending": ApprovalState.PENDING.value, "since": since, "now": now, "limit": limit},
    )
    found = []
    for row in rows:
        approval = _approval_from_row(row, keys)
        if approval.state is ApprovalState.PENDING:
            approval = approval._replace(state=ApprovalState.EXPIRED, decided_at=row["ended"])
        found.append(approval)
    return found
