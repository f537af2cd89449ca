"""The side-effect ledger's records and moves: propose, move by hand, settle by a check.

Each effect is recorded under an idempotency key unique in its task, and its state moves only
along `TRANSITIONS`, each move a compare-and-set inside one `BEGIN IMMEDIATE` transaction
together with its audit event. Running an action is the guard's (`core.ledger.guard`); this
module is every other way an effect changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from core import clock, numbers, store
from core.errors import ApprovalRequiredError, ConflictError, NeedsSettlingError, UsageError
from core.ledger import approvals
from core.ledger.approvals import Audit
from core.ledger.checks import (
    CHECK_TIMEOUT_S,
    CheckResult,
    CheckVerdict,
    effect_env,
    run_check,
    trusted_check,
)
from core.ledger.locks import KeyLocks
from core.ledger.states import (
    ACTION,
    MAX_KIND_CHARS,
    MAX_TEXT_CHARS,
    allowed,
    check_text,
    illegal_move,
    persistable_or_none,
    validate_key,
)
from core.models import ApprovalState, EffectState, SideEffect, Task
from core.redaction import free_text
from core.store.db import Database, write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple


class ProposeResult(NamedTuple):
    """What proposing did: the effect under that key, whether it is new, and any warnings."""

    effect: SideEffect
    created: bool
    warnings: tuple[str, ...] = ()


class CheckOutcome(NamedTuple):
    """What `effect check` found and did: `settled` says whether the verdict moved the effect;
    `evidence_id` names the item that keeps the check's output, where it was kept."""

    effect: SideEffect
    result: CheckResult
    settled: bool = True
    evidence_id: int | None = None


EVERY_VERDICT = frozenset(CheckVerdict)  # an unknown one refuses: an operator settles it


class LedgerMoves:
    """The side effects of every task in one store, on one connection: reading and moving."""

    def __init__(
        self, db: Database, audit: Audit, actor: str, lock_dir: Path, keys: store.TextKeys
    ) -> None:
        self.db = db
        self.audit = audit
        self.actor = actor
        self.lock_dir = lock_dir
        self.keys = keys  # seals and opens targets, checks and notes
        self.locks = KeyLocks(db, lock_dir, keys)
        self.approvals = approvals.Approvals(db, audit, actor, keys)

    # --- reading ----------------------------------------------------------------------------

    def get(self, task_id: str, key: str) -> SideEffect:
        """One effect, with whether a guard is running it right now."""
        store.get_task(self.db, task_id)
        return self._with_runner(store.get_effect(self.db, task_id, key, self.keys))

    def find(
        self, task_id: str | None = None, states: Sequence[EffectState] = ()
    ) -> list[SideEffect]:
        """Effects in the order they were proposed, optionally of one task or some states."""
        if task_id is not None:
            store.get_task(self.db, task_id)
        found = store.list_effects(self.db, task_id, tuple(states), self.keys)
        return [self._with_runner(effect) for effect in found]

    def _with_runner(self, effect: SideEffect) -> SideEffect:
        if effect.state is not EffectState.IN_PROGRESS:
            return effect
        return effect._replace(runner_alive=self.locks.held(effect.task_id, effect.key))

    # --- proposing --------------------------------------------------------------------------

    def propose(
        self,
        task_id: str,
        key: str,
        kind: str,
        *,
        target: str | None = None,
        check: str | None = None,
        needs_approval: bool = False,
    ) -> ProposeResult:
        """Record a `proposed` effect; an existing key returns the existing effect (idempotent)."""
        validate_key(key)
        check_text(kind, "--kind", MAX_KIND_CHARS)
        if target is not None:
            check_text(target, "--target", MAX_TEXT_CHARS)
        if check is not None:
            check_text(check, "--check", MAX_TEXT_CHARS, single_line=False)
            free_text.refuse_secrets(check, "--check")
        with write_txn(self.db):
            task = store.get_task(self.db, task_id)
            existing = store.find_effect(self.db, task_id, key, self.keys)
            if existing is not None:
                return ProposeResult(
                    self._with_runner(existing),
                    created=False,
                    warnings=self.differences(existing, kind, target, check, needs_approval),
                )
            self.refuse_final(task, "proposes no side effects")
            now = clock.now_iso()
            effect = SideEffect(
                task_id=task_id,
                key=key,
                kind=free_text.persistable(kind),
                state=EffectState.PROPOSED,
                created_at=now,
                updated_at=now,
                target=free_text.persistable(target) if target is not None else None,
                check=check,
                needs_approval=needs_approval,
            )
            store.insert_effect(self.db, effect, self.keys)
            self.audit(
                task_id, "effect", key, "propose", None, EffectState.PROPOSED.value, None, now
            )
        return ProposeResult(effect, created=True)

    @staticmethod
    def differences(
        existing: SideEffect,
        kind: str,
        target: str | None,
        check: str | None,
        needs_approval: bool,
    ) -> tuple[str, ...]:
        """Warnings for what a repeated proposal asks differently (the recorded effect stays)."""
        said = f"side effect {existing.key!r} already exists"
        warnings = []
        if kind != existing.kind:
            warnings.append(f"{said} with kind {existing.kind!r}, not {kind!r}; kept as it was")
        if target is not None and target != existing.target:
            warnings.append(
                f"{said} with target {existing.target!r}, not {target!r}; kept as it was"
            )
        if check is not None and check != existing.check:
            warnings.append(f"{said} with another --check; the recorded one is kept")
        if needs_approval and not existing.needs_approval:
            warnings.append(
                f"{said} without --needs-approval; request an approval for it to gate it"
            )
        return tuple(warnings)

    @staticmethod
    def refuse_final(task: Task, what: str) -> None:
        """Refuse to change the side effects of a finished task."""
        if task.status.is_final:
            raise ConflictError(f"task {task.id} is {task.status.value}; a finished task {what}")

    # --- moving by hand ---------------------------------------------------------------------

    def move(
        self,
        task_id: str,
        key: str,
        to_state: EffectState,
        *,
        note: str | None = None,
        reason: str | None = None,
    ) -> SideEffect:
        """Move an effect by hand (an agent reporting, an operator settling); audited.

        Settling an `uncertain` effect (to `confirmed` or `failed`) is an operator's decision:
        it needs a reason and, when the task names approvers, one of them.
        """
        validate_key(key)
        if note is not None:
            check_text(note, "--note", MAX_TEXT_CHARS, single_line=False)
        if to_state is EffectState.PROPOSED:
            raise UsageError("an effect becomes proposed only by `pitstop effect propose`")
        # Refuse what can be refused by reading alone, so a refusal leaves no trace at all.
        self._validate_move(store.get_task(self.db, task_id), key, to_state, reason)
        with self.locks.hold(task_id, key, wait=0.0), write_txn(self.db):
            task = store.get_task(self.db, task_id)
            effect = self._validate_move(task, key, to_state, reason)
            settling = effect.state is EffectState.UNCERTAIN
            now = clock.now_iso()
            self.cas(effect, to_state, _moved_columns(effect, to_state, note, now))
            action = "settle" if settling else ACTION[to_state]
            self.audit(
                task_id,
                "effect",
                key,
                action,
                effect.state.value,
                to_state.value,
                persistable_or_none(reason or note),
                now,
            )
        return self.get(task_id, key)

    def _validate_move(
        self, task: Task, key: str, to_state: EffectState, reason: str | None
    ) -> SideEffect:
        effect = store.get_effect(self.db, task.id, key, self.keys)
        if not allowed(effect.state, to_state):
            raise ConflictError(illegal_move(effect, to_state))
        if effect.state is EffectState.UNCERTAIN:
            if not reason or not reason.strip():
                raise UsageError(
                    f"side effect {key!r} is uncertain: settling it as {to_state.value} is an "
                    "operator's decision and needs --reason (kept in the audit log)"
                )
            approvals.require_decider(task, self.actor, "settle uncertain side effects")
        if to_state is EffectState.IN_PROGRESS:
            self.refuse_final(task, "starts no side effects")
            self.approval_gate(effect)
        return effect

    def cas(self, effect: SideEffect, to_state: EffectState, changes: Mapping[str, object]) -> None:
        """Move `effect` from the state it was read in, or refuse if someone moved it first."""
        if not allowed(effect.state, to_state):
            raise ConflictError(illegal_move(effect, to_state))
        if not store.move_effect(
            self.db, effect.task_id, effect.key, effect.state, to_state, keys=self.keys, **changes
        ):
            raise ConflictError(
                f"side effect {effect.key!r} of task {effect.task_id} changed while this command "
                "ran; look at it with `pitstop effect show` and try again"
            )

    def approval_gate(self, effect: SideEffect) -> None:
        """Refuse to start an effect that needs an approval nobody has given."""
        requested = self.approvals.for_effect(effect.task_id, effect.key)
        if not effect.needs_approval and not requested:
            return
        if any(a.state is ApprovalState.APPROVED for a in requested):
            return
        what = f"side effect {effect.key!r} of task {effect.task_id}"
        if not requested:
            raise ApprovalRequiredError(
                f"{what} needs an approval before it runs; ask for one with `pitstop approval "
                f"request --task {effect.task_id} --effect {effect.key} --action TEXT`"
            )
        latest = requested[-1]
        if latest.state is ApprovalState.PENDING:
            raise ApprovalRequiredError(
                f"{what} waits for approval {latest.id}; an approver decides it with "
                f"`pitstop approval approve {latest.id} --reason TEXT`"
            )
        if latest.state is ApprovalState.REJECTED:
            raise ApprovalRequiredError(
                f"{what} was rejected ({latest.id}, by {latest.decided_by}: {latest.reason}); "
                "it does not run unless a new request is approved"
            )
        raise ApprovalRequiredError(
            f"{what} has no valid approval: {latest.id} expired at {latest.expires_at}; "
            "request a new one"
        )

    # --- settling by a precondition check ---------------------------------------------------

    def check(
        self,
        task_id: str,
        key: str,
        command: str | None = None,
        timeout: float | None = None,
        confirmed: bool = False,
        *,
        capture: bool = False,
        settle: frozenset[CheckVerdict] = EVERY_VERDICT,
    ) -> CheckOutcome:
        """Run the precondition check of an unsettled effect and settle it by its answer.

        Only a verdict in `settle` moves the effect (an unknown one then refuses, naming how an
        operator settles it); any other comes back unsettled, with the effect as it was read
        before the check ran, for the caller to decide. A stored check from another store runs
        only `confirmed` (`core.ledger.checks`); `capture` keeps its output in the result.
        """
        validate_key(key)
        if timeout is not None:
            numbers.seconds(timeout, "--timeout", positive=True)
        store.get_task(self.db, task_id)
        effect = store.get_effect(self.db, task_id, key, self.keys)
        self._require_checkable(effect, command, confirmed)
        with self.locks.hold(task_id, key, wait=0.0):
            effect = store.get_effect(self.db, task_id, key, self.keys)
            command = self._require_checkable(effect, command, confirmed)
            timeout = timeout or CHECK_TIMEOUT_S
            result = run_check(command, effect_env(effect), timeout, capture=capture)
            if result.verdict not in settle:
                return CheckOutcome(effect, result, settled=False)
            return CheckOutcome(self.settle_by_check(effect, result), result)

    @staticmethod
    def _require_checkable(effect: SideEffect, command: str | None, confirmed: bool) -> str:
        if effect.state not in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN):
            raise ConflictError(
                f"side effect {effect.key!r} of task {effect.task_id} is {effect.state.value}; "
                "only an in_progress or uncertain effect is settled by a check"
            )
        if not (command or effect.check):
            raise UsageError(
                f"side effect {effect.key!r} has no precondition check; pass --check CMD"
            )
        return trusted_check(effect, command, confirmed)

    def settle_by_check(self, effect: SideEffect, result: CheckResult) -> SideEffect:
        """Confirm or fail an unsettled effect from a check's answer; unknown refuses."""
        if result.verdict is CheckVerdict.UNKNOWN:
            raise NeedsSettlingError(
                f"side effect {effect.key!r} of task {effect.task_id} is {effect.state.value} and "
                f"its precondition check cannot tell whether it happened ({result.detail}); "
                f"an operator settles it with `pitstop effect confirm|fail --task "
                f"{effect.task_id} --key {effect.key} --reason TEXT`"
            )
        to_state = (
            EffectState.CONFIRMED if result.verdict is CheckVerdict.HAPPENED else EffectState.FAILED
        )
        said = "already happened" if to_state is EffectState.CONFIRMED else "did not happen"
        now = clock.now_iso()
        with write_txn(self.db):
            self.cas(effect, to_state, {"updated_at": now, "finished_at": now})
            self.audit(
                effect.task_id,
                "effect",
                effect.key,
                ACTION[to_state],
                effect.state.value,
                to_state.value,
                f"precondition check: {said} ({result.detail})",
                now,
                detail={"check": said},  # plain: the metrics count duplicates found by checks
            )
        return store.get_effect(self.db, effect.task_id, effect.key, self.keys)


def _moved_columns(
    effect: SideEffect, to_state: EffectState, note: str | None, now: str
) -> dict[str, object]:
    """The columns a move by hand changes: a start opens a new attempt, anything else ends it."""
    changes: dict[str, object] = {"updated_at": now}
    if note is not None:
        changes["note"] = free_text.persistable(note)
    if to_state is EffectState.IN_PROGRESS:
        changes.update(
            attempts=effect.attempts + 1,
            started_at=now,
            finished_at=None,
            exit_code=None,
            runner_pid=None,
            runner_host=None,
        )
    else:
        changes["finished_at"] = now
    return changes
