"""A task's rows as ledger facts: the plain part each row stands for, and its sealed content.

Whatever is content (reasons, notes, approval actions, effect targets and checks, validation
findings, resume paths) lives in one `sealed` field, encrypted under the task's data key and
bound to `ledger/<uid>` in the task's scope, so a fact sealed in one store opens in every store
that fetched the task, and nothing in clear can be a secret or free text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from core import store
from core.ledger.fact_format import (
    DECISION,
    EFFECT,
    EVENT,
    REQUEST,
    RESUME,
    SCHEMA,
    VALIDATION,
    Fact,
    canonical,
    fact_uid,
)
from core.models import Approval, ApprovalState, SideEffect

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


# Where an older Pitstop put an effect's kind: in the plain part (now it is sealed content).
LEGACY_EFFECT_KIND = "effect_kind"


def plain_fact(kind: str, task_id: str, **fields: Any) -> dict[str, Any]:
    """The plain part of a fact of `kind` about one task."""
    return {"schema": SCHEMA, "kind": kind, "task": task_id, **fields}


def effect_plain(effect: SideEffect) -> dict[str, Any]:
    """The plain part of the fact that records an effect row as it stands.

    Its kind is the proposer's own word, so it travels sealed with the target (a fact from an
    older Pitstop carries it here as `effect_kind`; `LEGACY_EFFECT_KIND`).
    """
    return plain_fact(
        EFFECT,
        effect.task_id,
        key=effect.key,
        state=effect.state.value,
        attempts=effect.attempts,
        at=effect.updated_at,
        created_at=effect.created_at,
        needs_approval=effect.needs_approval,
        exit_code=effect.exit_code,
        started_at=effect.started_at,
        finished_at=effect.finished_at,
    )


def request_plain(approval: Approval) -> dict[str, Any]:
    """The plain part of the fact that records an approval request."""
    return plain_fact(
        REQUEST,
        approval.task_id,
        approval=approval.id,
        seq=approval.seq,
        risk=approval.risk.value,
        requested_by=approval.requested_by,
        requested_at=approval.requested_at,
        expires_at=approval.expires_at,
        effect_key=approval.effect_key,
        checkpoint_seq=approval.checkpoint_seq,
    )


def decision_plain(approval: Approval, state: ApprovalState) -> dict[str, Any]:
    """The plain part of the fact that records a stored decision on an approval."""
    return plain_fact(
        DECISION,
        approval.task_id,
        approval=approval.id,
        request=fact_uid(request_plain(approval)),
        state=state.value,
        decided_by=approval.decided_by,
        decided_at=approval.decided_at,
    )


# The columns of a validation and a resume that travel in clear; the rest is sealed.
VALIDATION_PLAIN = ("seq", "verdict", "duration_ms", "at", "actor", "interface")
RESUME_PLAIN = (
    "seq", "state", "verdict", "holder_pid", "holder_host", "launched", "lease_until",
    "restore_ms", "exit_code", "accepted", "started_at", "finished_at", "actor",
)  # fmt: skip
RESUME_SEALED = ("workdir", "branch", "brief_path", "accept_reason")


def row_plain(
    kind: str, task_id: str, row: Mapping[str, Any], names: Iterable[str]
) -> dict[str, Any]:
    """The plain part of the fact a row stands for: the row's `names` columns."""
    return plain_fact(kind, task_id, **{name: row.get(name) for name in names})


def local_facts(session: Session, task_id: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every fact the task's rows stand for now: (plain part, content to seal)."""
    found: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for effect in store.list_effects(session.db, task_id, (), session.keys):
        content = {
            "kind": effect.kind,
            "target": effect.target,
            "check": effect.check,
            "note": effect.note,
        }
        found.append((effect_plain(effect), content))
    for approval in store.list_approvals(session.db, task_id, keys=session.keys):
        found.append((request_plain(approval), {"action": approval.action}))
        if approval.decided_at is not None and approval.state is not ApprovalState.PENDING:
            found.append((decision_plain(approval, approval.state), {"reason": approval.reason}))
    for row in store.list_validations(session.db, task_id):
        found.append(
            (row_plain(VALIDATION, task_id, row, VALIDATION_PLAIN), {"findings": row["findings"]})
        )
    for row in store.list_resumes(session.db, task_id, session.keys):
        content = {name: row.get(name) for name in RESUME_SEALED}
        found.append((row_plain(RESUME, task_id, row, RESUME_PLAIN), content))
    uids = store.event_uids(session.db, task_id)
    own = session.keys.store_id
    for event in store.list_events(session.db, task_id, session.keys):
        plain = plain_fact(
            EVENT,
            task_id,
            event=uids.get(event.id) or f"{own}:{event.id}",
            at=event.at,
            actor=event.actor,
            interface=event.interface.value,
            entity=event.entity,
            entity_id=event.entity_id,
            action=event.action,
            from_state=event.from_state,
            to_state=event.to_state,
        )
        found.append((plain, {"reason": event.reason}))
    return found


def seal_content(
    session: Session, task_id: str, uid: str, content: Mapping[str, Any]
) -> bytes | None:
    """A fact's content sealed to `ledger/<uid>` (None when it has none)."""
    if all(value is None for value in content.values()):
        return None
    return session.keys.seal(task_id, f"ledger/{uid}", canonical(content))


def open_content(session: Session, task_id: str, fact: Fact) -> dict[str, Any]:
    """A fact's sealed content, opened with the task's key (empty when it has none)."""
    if fact.sealed is None:
        return {}
    opened = session.keys.open(
        task_id, f"ledger/{fact.uid}", fact.sealed, f"ledger fact {fact.uid[:12]} of {task_id}"
    )
    content = json.loads(opened)
    return dict(content) if isinstance(content, dict) else {}


def local_event_uids(session: Session, task_id: str) -> set[str]:
    """The ledger uid of every audit event of the task here (ours are `<store>:<id>`)."""
    own = session.keys.store_id
    stored = store.event_uids(session.db, task_id)
    return {uid or f"{own}:{event_id}" for event_id, uid in stored.items()}
