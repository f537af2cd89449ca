"""Side effects: the actions outside the store (a push, a deploy) a task proposes and settles.

The ledger itself lives in `core.ledger.effects`; these are its entries for the facade, each
bound to the session's operator and audit log. An effect whose outcome nobody knows blocks a
resume (invariant 3), so `unsettled_effects` is what validation and the dashboard ask.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.engine.ledgers import effect_ledger
from core.models import EffectState, SideEffect
from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

if TYPE_CHECKING:
    from core.ledger.checks import CheckVerdict
    from core.ledger.guard import GuardOutcome, GuardRequest
    from core.ledger.locks import Notice
    from core.ledger.moves import CheckOutcome, ProposeResult


def propose_effect(
    session: Session,
    task_id: str,
    key: str,
    kind: str,
    *,
    target: str | None = None,
    check: str | None = None,
    needs_approval: bool = False,
) -> ProposeResult:
    """Record a side effect as `proposed`; an existing key returns the existing effect."""
    return effect_ledger(session).propose(
        task_id, key, kind, target=target, check=check, needs_approval=needs_approval
    )


def move_effect(
    session: Session,
    task_id: str,
    key: str,
    to_state: EffectState,
    *,
    note: str | None = None,
    reason: str | None = None,
) -> SideEffect:
    """Start, confirm, fail or mark uncertain a side effect; settling needs a reason (and, once
    the task has a roster, an approver's signing key)."""
    ledger = effect_ledger(session)
    settling = to_state in (EffectState.CONFIRMED, EffectState.FAILED)
    if settling and ledger.get(task_id, key).state is EffectState.UNCERTAIN:
        from core.ledger.trust import decider_name

        ledger.actor = decider_name(session, task_id, "settle uncertain side effects")
    return ledger.move(task_id, key, to_state, note=note, reason=reason)


def get_effect(session: Session, task_id: str, key: str) -> SideEffect:
    """One side effect by task and idempotency key."""
    return effect_ledger(session).get(task_id, key)


def list_effects(
    session: Session, task_id: str | None = None, states: Sequence[EffectState] = ()
) -> list[SideEffect]:
    """Side effects in the order they were proposed, optionally filtered."""
    return effect_ledger(session).find(task_id, states)


def unsettled_effects(session: Session, task_id: str) -> list[SideEffect]:
    """The task's effects whose outcome nobody knows: they block a resume (invariant 3)."""
    return [effect for effect in list_effects(session, task_id) if effect.needs_settling]


def check_effect(
    session: Session,
    task_id: str,
    key: str,
    command: str | None = None,
    timeout: float | None = None,
    confirmed: bool = False,
) -> CheckOutcome:
    """Settle an unsettled side effect by running its precondition check.

    A stored check another store wrote runs only `confirmed` (the operator has seen it).
    """
    return effect_ledger(session).check(task_id, key, command, timeout, confirmed)


def run_effect_check(
    session: Session,
    task_id: str,
    key: str,
    *,
    confirmed: bool = False,
    settle: frozenset[CheckVerdict] | None = None,
) -> CheckOutcome:
    """Run an unsettled effect's precondition check, keep its output as evidence, and settle
    the effect only by a verdict in `settle` (by default "happened"; never an unknown one).

    The dashboard's way: it shows the check before it runs, settles by exit 0 alone, and leaves
    a "did not happen" (exit 1) to the operator, who confirms it once they have read the output
    (`move_effect`, with a reason). The output comes back redacted.
    """
    from core.ledger.checks import CheckVerdict
    from core.ledger.moves import CheckOutcome
    from core.redaction.redact import redact_bytes

    settle = frozenset({CheckVerdict.HAPPENED}) if settle is None else settle
    ledger = effect_ledger(session)
    outcome = ledger.check(task_id, key, confirmed=confirmed, capture=True, settle=frozenset())
    evidence_id = _keep_check_output(session, outcome)
    result = outcome.result._replace(output=redact_bytes(outcome.result.output))
    if evidence_id is not None:
        result = result._replace(detail=f"{result.detail}; its output is evidence #{evidence_id}")
    settles = result.verdict in settle and result.verdict is not CheckVerdict.UNKNOWN
    effect = ledger.settle_by_check(outcome.effect, result) if settles else outcome.effect
    return CheckOutcome(effect, result, settled=settles, evidence_id=evidence_id)


def _keep_check_output(session: Session, outcome: CheckOutcome) -> int | None:
    """Record what a check printed as evidence on its task (a finished task takes none)."""
    from core import store
    from core.engine.evidence import add_evidence_output

    effect = outcome.effect
    if store.get_task(session.db, effect.task_id).status.is_final:
        return None
    item = add_evidence_output(
        session,
        effect.task_id,
        outcome.result.output,
        argv=["/bin/sh", "-c", effect.check or ""],
        exit_code=outcome.result.exit_code,
        label=f"precondition check of {effect.key}",
        source="check",
        timed_out=outcome.result.exit_code is None and "timed out" in outcome.result.detail,
    )
    return item.id


def guard_effect(
    session: Session, request: GuardRequest, notice: Notice | None = None
) -> GuardOutcome:
    """Perform a side effect's action at most once; see `core.ledger.effects`."""
    return effect_ledger(session).guard(request, notice)


def note_background(
    session: Session, task_id: str, key: str, background_id: str, tool_use_id: str | None
) -> None:
    """Record that an in-progress effect's command went on in the harness's background.

    Its end is reported later (Claude Code's `<task-notification>`, `Stop.background_tasks`)
    by the harness's id, so the id and the tool call are kept with the audit event.
    """
    from core import clock
    from core.store.db import write_txn

    detail = {"background": background_id[:80]}
    if tool_use_id:
        detail["tool_use"] = tool_use_id[:120]
    with write_txn(session.db):
        get_effect(session, task_id, key)
        session.record_event(
            task_id,
            "effect",
            key,
            "background",
            EffectState.IN_PROGRESS.value,
            EffectState.IN_PROGRESS.value,
            None,
            clock.now_iso(),
            detail=detail,
        )


def background_effects(session: Session, task_id: str) -> dict[str, tuple[str, str | None]]:
    """Per harness background id: (effect key, tool call id) of the task's background commands."""
    from core import store

    return store.background_marks(session.db, task_id)


def has_effects_in(session: Session, task_id: str, state: EffectState) -> bool:
    """Whether any of the task's effects is in `state`: one query, no ledger loaded (a hook at
    a session's end asks it before settling anything)."""
    row = session.db.execute(
        "SELECT 1 FROM effects WHERE task_id = ? AND state = ? LIMIT 1", [task_id, state.value]
    ).fetchone()
    return row is not None
