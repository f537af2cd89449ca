"""The side-effect ledger and the guard that performs an external action at most once.

DESIGN invariant 3: a side effect (deploy a preview, open a PR, a paid call) never runs twice
because of a resume. Each is recorded under an idempotency key unique in its task, and its state
moves only along `TRANSITIONS`, each move a compare-and-set inside one `BEGIN IMMEDIATE`
transaction together with its audit event.

The guard marks an effect `in_progress` durably *before* it runs the action. A guard that dies
mid-action therefore leaves `in_progress` behind, and the next guard does not run the action
blind: it asks the effect's precondition check whether the action already happened, and without
a check it refuses until an operator settles the effect.

One guard at a time per key: a guard holds an exclusive `flock` on the key's lock file while it
decides and runs, and hands the locked descriptor to the action, so the lock outlives a guard
killed mid-action for as long as the action itself still runs. A second guard waits for that
lock, then finds the effect settled. The database compare-and-set makes the same guarantee
without the lock (only one guard can move an effect to `in_progress`); the lock adds the waiting.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple

from core import clock, store
from core.errors import (
    EXIT_BUSY,
    EXIT_NEEDS_APPROVAL,
    EXIT_NEEDS_SETTLING,
    ApprovalRequiredError,
    ConflictError,
    EffectBusyError,
    NeedsSettlingError,
    NotFoundError,
    PitstopError,
    UsageError,
)
from core.ledger import approvals
from core.ledger.approvals import Audit
from core.models import ApprovalState, EffectState, SideEffect, Task
from core.paths import ensure_private_dir
from core.redaction import free_text
from core.store.db import Database, write_txn

if TYPE_CHECKING:
    import subprocess

__all__ = [
    "EXIT_BUSY",
    "EXIT_NEEDS_APPROVAL",
    "EXIT_NEEDS_SETTLING",
    "EXIT_SIGNAL_BASE",
    "EXIT_TIMEOUT",
    "TRANSITIONS",
    "CheckResult",
    "CheckVerdict",
    "GuardOutcome",
    "GuardRequest",
    "Ledger",
    "ProposeResult",
    "allowed",
]

# Every move the ledger accepts; anything else is refused. `failed -> in_progress` is a retry
# under the same key; `confirmed` is final.
TRANSITIONS: Mapping[EffectState, frozenset[EffectState]] = {
    EffectState.PROPOSED: frozenset({EffectState.IN_PROGRESS}),
    EffectState.IN_PROGRESS: frozenset(
        {EffectState.CONFIRMED, EffectState.FAILED, EffectState.UNCERTAIN}
    ),
    EffectState.UNCERTAIN: frozenset({EffectState.CONFIRMED, EffectState.FAILED}),
    EffectState.FAILED: frozenset({EffectState.IN_PROGRESS}),
    EffectState.CONFIRMED: frozenset(),
}

# The audit action recorded for a move into each state.
_ACTION = {
    EffectState.IN_PROGRESS: "start",
    EffectState.CONFIRMED: "confirm",
    EffectState.FAILED: "fail",
    EffectState.UNCERTAIN: "uncertain",
}

# Why an effect in each unsettled state may or may not have happened, for refusals.
_UNSETTLED_WHY = {
    EffectState.IN_PROGRESS: "it was started and never finished: a guard or agent stopped",
    EffectState.UNCERTAIN: "its outcome is unknown",
}

EXIT_TIMEOUT = 124  # as timeout(1): the action ran out of time; its outcome is unknown
EXIT_SIGNAL_BASE = 128  # as shells: 128 + the signal that ended the action
EXIT_CANNOT_EXECUTE = 126
CHECK_TIMEOUT_S = 60.0
DEFAULT_LOCK_WAIT_S = 300.0
_KILL_GRACE_S = 5.0
_POLL_S = 0.05

MAX_KEY_CHARS = 200
MAX_KIND_CHARS = 60
MAX_TEXT_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def allowed(from_state: EffectState, to_state: EffectState) -> bool:
    """True when the ledger accepts moving an effect from one state to the other."""
    return to_state in TRANSITIONS[from_state]


def _check_text(value: str, what: str, limit: int, *, single_line: bool = True) -> str:
    """Refuse empty, overlong or (for one-line values) control-character text."""
    if not value.strip():
        raise UsageError(f"the {what} is empty")
    if len(value) > limit:
        raise UsageError(f"the {what} is longer than {limit} characters")
    if _CONTROL.search(value) if single_line else "\x00" in value:
        raise UsageError(f"the {what} {value[:40]!r} contains control characters")
    return value


def _persistable_or_none(text: str | None) -> str | None:
    return free_text.persistable(text) if text else None


def validate_key(key: str) -> str:
    """An idempotency key: 1-200 printable characters, taken exactly as given, no secrets."""
    return free_text.refuse_secrets(_check_text(key, "--key", MAX_KEY_CHARS), "--key")


class CheckVerdict(StrEnum):
    """What a precondition check said about whether the action already happened."""

    HAPPENED = "happened"  # exit 0
    NOT_HAPPENED = "not_happened"  # exit 1
    UNKNOWN = "unknown"  # anything else: another exit code, a timeout, a check that cannot run


class CheckResult(NamedTuple):
    """One run of a precondition check."""

    verdict: CheckVerdict
    exit_code: int | None
    detail: str


class ProposeResult(NamedTuple):
    """What proposing did: the effect under that key, whether it is new, and any warnings."""

    effect: SideEffect
    created: bool
    warnings: tuple[str, ...] = ()


class CheckOutcome(NamedTuple):
    """What `effect check` found and did."""

    effect: SideEffect
    result: CheckResult


class GuardRequest(NamedTuple):
    """Everything `effect guard` is asked: which effect, how to check it, what to run."""

    task_id: str
    key: str
    argv: tuple[str, ...]
    kind: str | None = None
    target: str | None = None
    check: str | None = None
    timeout: float | None = None
    wait: float = DEFAULT_LOCK_WAIT_S
    stdout_to_stderr: bool = False


class GuardOutcome(NamedTuple):
    """What a guard did, and the exit code it should end with."""

    effect: SideEffect
    ran: bool
    exit_code: int
    message: str
    action_exit: int | None = None
    duration_s: float | None = None
    check: CheckResult | None = None


class _ActionResult(NamedTuple):
    returncode: int
    duration_s: float
    timed_out: bool
    interrupted_by: int | None


Notice = Callable[[str], None]


def _quiet(_: str) -> None:
    """The default notice sink: say nothing."""


class Ledger:
    """The side effects of every task in one store, on one connection."""

    def __init__(
        self, db: Database, audit: Audit, actor: str, lock_dir: Path, keys: store.TextKeys
    ) -> None:
        self.db = db
        self.audit = audit
        self.actor = actor
        self.lock_dir = lock_dir
        self.keys = keys  # seals and opens targets, checks and notes
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
        return effect._replace(runner_alive=self._lock_held(effect.task_id, effect.key))

    # --- proposing and moving ---------------------------------------------------------------

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
        _check_text(kind, "--kind", MAX_KIND_CHARS)
        if target is not None:
            _check_text(target, "--target", MAX_TEXT_CHARS)
        if check is not None:
            _check_text(check, "--check", MAX_TEXT_CHARS, single_line=False)
            free_text.refuse_secrets(check, "--check")
        with write_txn(self.db):
            task = store.get_task(self.db, task_id)
            existing = store.find_effect(self.db, task_id, key, self.keys)
            if existing is not None:
                return ProposeResult(
                    self._with_runner(existing),
                    created=False,
                    warnings=self._differences(existing, kind, target, check, needs_approval),
                )
            self._refuse_final(task, "proposes no side effects")
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
    def _differences(
        existing: SideEffect,
        kind: str,
        target: str | None,
        check: str | None,
        needs_approval: bool,
    ) -> tuple[str, ...]:
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
    def _refuse_final(task: Task, what: str) -> None:
        if task.status.is_final:
            raise ConflictError(f"task {task.id} is {task.status.value}; a finished task {what}")

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
            _check_text(note, "--note", MAX_TEXT_CHARS, single_line=False)
        if to_state is EffectState.PROPOSED:
            raise UsageError("an effect becomes proposed only by `pitstop effect propose`")
        # Refuse what can be refused by reading alone, so a refusal leaves no trace at all.
        self._validate_move(store.get_task(self.db, task_id), key, to_state, reason)
        with self._lock(task_id, key, wait=0.0), write_txn(self.db):
            task = store.get_task(self.db, task_id)
            effect = self._validate_move(task, key, to_state, reason)
            settling = effect.state is EffectState.UNCERTAIN
            now = clock.now_iso()
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
            self._cas(effect, to_state, changes)
            action = "settle" if settling else _ACTION[to_state]
            self.audit(
                task_id,
                "effect",
                key,
                action,
                effect.state.value,
                to_state.value,
                _persistable_or_none(reason or note),
                now,
            )
        return self.get(task_id, key)

    def _validate_move(
        self, task: Task, key: str, to_state: EffectState, reason: str | None
    ) -> SideEffect:
        effect = store.get_effect(self.db, task.id, key, self.keys)
        if not allowed(effect.state, to_state):
            raise ConflictError(self._illegal(effect, to_state))
        if effect.state is EffectState.UNCERTAIN:
            if not reason or not reason.strip():
                raise UsageError(
                    f"side effect {key!r} is uncertain: settling it as {to_state.value} is an "
                    "operator's decision and needs --reason (kept in the audit log)"
                )
            approvals.require_decider(task, self.actor, "settle uncertain side effects")
        if to_state is EffectState.IN_PROGRESS:
            self._refuse_final(task, "starts no side effects")
            self._approval_gate(effect)
        return effect

    @staticmethod
    def _illegal(effect: SideEffect, to_state: EffectState) -> str:
        nexts = sorted(state.value for state in TRANSITIONS[effect.state])
        options = f"it can only become {' or '.join(nexts)}" if nexts else "that is final"
        return (
            f"side effect {effect.key!r} of task {effect.task_id} is {effect.state.value}; "
            f"it cannot become {to_state.value} ({options})"
        )

    def _cas(
        self, effect: SideEffect, to_state: EffectState, changes: Mapping[str, object]
    ) -> None:
        """Move `effect` from the state it was read in, or refuse if someone moved it first."""
        if not allowed(effect.state, to_state):
            raise ConflictError(self._illegal(effect, to_state))
        if not store.move_effect(
            self.db, effect.task_id, effect.key, effect.state, to_state, keys=self.keys, **changes
        ):
            raise ConflictError(
                f"side effect {effect.key!r} of task {effect.task_id} changed while this command "
                "ran; look at it with `pitstop effect show` and try again"
            )

    def _approval_gate(self, effect: SideEffect) -> None:
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

    # --- precondition checks ----------------------------------------------------------------

    def check(
        self, task_id: str, key: str, command: str | None = None, timeout: float | None = None
    ) -> CheckOutcome:
        """Run the precondition check of an unsettled effect and settle it by its answer."""
        validate_key(key)
        store.get_task(self.db, task_id)
        effect = store.get_effect(self.db, task_id, key, self.keys)
        self._require_checkable(effect, command)
        with self._lock(task_id, key, wait=0.0):
            effect = store.get_effect(self.db, task_id, key, self.keys)
            command = self._require_checkable(effect, command)
            result = run_check(command, _effect_env(effect), timeout or CHECK_TIMEOUT_S)
            return CheckOutcome(self._settle_by_check(effect, result), result)

    @staticmethod
    def _require_checkable(effect: SideEffect, command: str | None) -> str:
        if effect.state not in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN):
            raise ConflictError(
                f"side effect {effect.key!r} of task {effect.task_id} is {effect.state.value}; "
                "only an in_progress or uncertain effect is settled by a check"
            )
        chosen = command or effect.check
        if not chosen:
            raise UsageError(
                f"side effect {effect.key!r} has no precondition check; pass --check CMD"
            )
        return _readable_check(effect, chosen)

    def _settle_by_check(self, effect: SideEffect, result: CheckResult) -> SideEffect:
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
            self._cas(effect, to_state, {"updated_at": now, "finished_at": now})
            self.audit(
                effect.task_id,
                "effect",
                effect.key,
                _ACTION[to_state],
                effect.state.value,
                to_state.value,
                f"precondition check: {said} ({result.detail})",
                now,
                detail={"check": said},  # plain: the metrics count duplicates found by checks
            )
        return store.get_effect(self.db, effect.task_id, effect.key, self.keys)

    # --- the guard --------------------------------------------------------------------------

    def guard(self, request: GuardRequest, notice: Notice | None = None) -> GuardOutcome:
        """Run `request.argv` as the effect's action at most once; see the module docstring."""
        notice = notice or _quiet
        if not request.argv:
            raise UsageError("nothing to run: give the action after --, e.g. -- gh pr create")
        if request.timeout is not None and request.timeout <= 0:
            raise UsageError("--timeout must be longer than zero")
        if request.wait < 0:
            raise UsageError("--wait must not be negative")
        validate_key(request.key)
        if request.kind is not None:
            _check_text(request.kind, "--kind", MAX_KIND_CHARS)
        if request.check is not None:
            _check_text(request.check, "--check", MAX_TEXT_CHARS, single_line=False)
        task = store.get_task(self.db, request.task_id)
        effect = store.find_effect(self.db, request.task_id, request.key, self.keys)
        if effect is not None and effect.state is EffectState.CONFIRMED:
            return self._already_confirmed(effect)
        if effect is None and request.kind is None:
            raise NotFoundError(
                f"task {request.task_id} has no side effect {request.key!r}; pass --kind to "
                "propose it here, or propose it first with `pitstop effect propose`"
            )
        self._refuse_final(task, "runs no side effects")
        if shutil.which(request.argv[0]) is None:
            raise UsageError(f"cannot run {request.argv[0]!r}: no such command")
        if effect is not None:
            self._preflight(effect, request.check)
        with self._lock(request.task_id, request.key, request.wait, notice) as lock_fd:
            return self._guard_locked(request, lock_fd, notice)

    def _preflight(self, effect: SideEffect, check: str | None) -> None:
        """Refuse, before taking the key's lock, what no waiting could change: leave no trace."""
        if effect.state in (EffectState.PROPOSED, EffectState.FAILED):
            self._approval_gate(effect)
        unsettled = effect.state is EffectState.UNCERTAIN or (
            effect.state is EffectState.IN_PROGRESS
            and not self._lock_held(effect.task_id, effect.key)
        )
        if unsettled and not (check or effect.check):
            raise self._no_check(effect)

    @staticmethod
    def _no_check(effect: SideEffect) -> NeedsSettlingError:
        return NeedsSettlingError(
            f"side effect {effect.key!r} of task {effect.task_id} is {effect.state.value} "
            f"({_UNSETTLED_WHY[effect.state]}) and has no precondition check, so running "
            "it again could do it twice; pass --check CMD, or settle it with `pitstop "
            f"effect confirm|fail --task {effect.task_id} --key {effect.key} --reason TEXT`"
        )

    def _guard_locked(self, request: GuardRequest, lock_fd: int, notice: Notice) -> GuardOutcome:
        if store.find_effect(self.db, request.task_id, request.key, self.keys) is None:
            assert request.kind is not None
            self.propose(
                request.task_id,
                request.key,
                request.kind,
                target=request.target,
                check=request.check,
            )
        else:
            proposed = store.get_effect(self.db, request.task_id, request.key, self.keys)
            kind = request.kind or proposed.kind
            for warning in self._differences(proposed, kind, request.target, None, False):
                notice(warning)
        effect = store.get_effect(self.db, request.task_id, request.key, self.keys)
        check_result: CheckResult | None = None
        if effect.state is EffectState.CONFIRMED:
            return self._already_confirmed(effect)
        if effect.state in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN):
            command = request.check or effect.check
            if not command:
                raise self._no_check(effect)
            command = _readable_check(effect, command)
            notice(
                f"side effect {effect.key!r} is {effect.state.value}; asking its precondition "
                "check whether it already happened"
            )
            timeout = request.timeout or CHECK_TIMEOUT_S
            check_result = run_check(command, _effect_env(effect), timeout)
            effect = self._settle_by_check(effect, check_result)
            if effect.state is EffectState.CONFIRMED:
                return GuardOutcome(
                    effect,
                    ran=False,
                    exit_code=0,
                    message=f"side effect {effect.key!r} already happened (its check says so); "
                    "recorded as confirmed and not run again",
                    check=check_result,
                )
        self._approval_gate(effect)
        return self._run(effect, request, lock_fd, notice, check_result)

    @staticmethod
    def _already_confirmed(effect: SideEffect) -> GuardOutcome:
        return GuardOutcome(
            effect,
            ran=False,
            exit_code=0,
            message=f"side effect {effect.key!r} is already confirmed "
            f"(at {effect.finished_at or effect.updated_at}); not run again",
        )

    def _run(
        self,
        effect: SideEffect,
        request: GuardRequest,
        lock_fd: int,
        notice: Notice,
        check_result: CheckResult | None,
    ) -> GuardOutcome:
        attempt = effect.attempts + 1
        started = clock.now_iso()
        # Durably in_progress before the action can start: a crash from here on leaves a trace.
        with write_txn(self.db):
            self._cas(
                effect,
                EffectState.IN_PROGRESS,
                {
                    "updated_at": started,
                    "attempts": attempt,
                    "started_at": started,
                    "finished_at": None,
                    "exit_code": None,
                    "note": None,
                    "runner_pid": os.getpid(),
                    "runner_host": os.uname().nodename,
                },
            )
            self.audit(
                effect.task_id,
                "effect",
                effect.key,
                "start",
                effect.state.value,
                EffectState.IN_PROGRESS.value,
                f"guard, attempt {attempt}",
                started,
            )
        running = effect._replace(state=EffectState.IN_PROGRESS, attempts=attempt)
        try:
            result = _run_action(
                request.argv,
                _effect_env(running),
                request.timeout,
                lock_fd,
                request.stdout_to_stderr,
            )
        except OSError as exc:
            return self._finish(
                running,
                EffectState.FAILED,
                EXIT_CANNOT_EXECUTE,
                f"could not start the action: {exc.strerror or exc}",
                None,
                check_result,
            )
        to_state, exit_code, note = _classify(result, request.timeout)
        return self._finish(running, to_state, exit_code, note, result, check_result)

    def _finish(
        self,
        running: SideEffect,
        to_state: EffectState,
        exit_code: int,
        note: str,
        result: _ActionResult | None,
        check_result: CheckResult | None,
    ) -> GuardOutcome:
        finished = clock.now_iso()
        action_exit = result.returncode if result else None
        with write_txn(self.db):
            self._cas(
                running,
                to_state,
                {
                    "updated_at": finished,
                    "finished_at": finished,
                    "exit_code": action_exit,
                    "note": note,
                },
            )
            self.audit(
                running.task_id,
                "effect",
                running.key,
                _ACTION[to_state],
                EffectState.IN_PROGRESS.value,
                to_state.value,
                f"guard: {note}",
                finished,
            )
        effect = store.get_effect(self.db, running.task_id, running.key, self.keys)
        key = repr(running.key)
        messages = {
            EffectState.CONFIRMED: f"side effect {key} ran and is confirmed ({note})",
            EffectState.FAILED: f"side effect {key} failed ({note}); recorded as failed, "
            "and `pitstop effect guard` again retries it",
            EffectState.UNCERTAIN: f"side effect {key} is uncertain ({note}); it will not run "
            "again until a check or an operator settles it",
        }
        return GuardOutcome(
            effect,
            ran=result is not None,
            exit_code=exit_code,
            message=messages[to_state],
            action_exit=action_exit,
            duration_s=result.duration_s if result else None,
            check=check_result,
        )

    # --- the per-key lock -------------------------------------------------------------------

    def _lock_path(self, task_id: str, key: str) -> Path:
        digest = hashlib.sha256(f"{task_id}\0{key}".encode()).hexdigest()[:32]
        return self.lock_dir / f"{digest}.lock"

    def _lock_held(self, task_id: str, key: str) -> bool:
        """True while a guard (or the action it started) holds the key's lock."""
        path = self._lock_path(task_id, key)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    @contextmanager
    def _lock(self, task_id: str, key: str, wait: float, notice: Notice = _quiet) -> Iterator[int]:
        """Hold the key's lock, waiting up to `wait` seconds for a guard already running it."""
        ensure_private_dir(self.lock_dir)
        fd = os.open(self._lock_path(task_id, key), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            deadline = time.monotonic() + wait
            told = False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    holder = self._holder(task_id, key)
                    if time.monotonic() >= deadline:
                        raise EffectBusyError(
                            f"side effect {key!r} of task {task_id} is being run right now by "
                            f"{holder}; wait for it to finish, then look at `pitstop effect show "
                            f"--task {task_id} --key {key}`"
                        ) from None
                    if not told:
                        notice(f"waiting for {holder}, which is running side effect {key!r}")
                        told = True
                    time.sleep(_POLL_S)
            yield fd
        finally:
            # Unlocking releases the lock for every process sharing the descriptor, so an
            # action's leftover background children cannot keep the key locked after we finish.
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def _holder(self, task_id: str, key: str) -> str:
        effect = store.find_effect(self.db, task_id, key, self.keys)
        if effect and effect.runner_pid:
            return f"the guard started as pid {effect.runner_pid} on {effect.runner_host}"
        return "another pitstop process"


def _effect_env(effect: SideEffect) -> dict[str, str]:
    """The environment an action or check runs in: ours, plus which effect it is."""
    env = dict(os.environ)
    env.update(
        PITSTOP_TASK=effect.task_id,
        PITSTOP_EFFECT_KEY=effect.key,
        PITSTOP_EFFECT_KIND=effect.kind,
        PITSTOP_EFFECT_ATTEMPT=str(effect.attempts),
    )
    if effect.target and effect.target != store.UNREADABLE:
        env["PITSTOP_EFFECT_TARGET"] = effect.target
    return env


def _readable_check(effect: SideEffect, command: str) -> str:
    """The check to run; a stored one sealed under a key that is not available is refused."""
    if command == store.UNREADABLE:
        raise PitstopError(
            f"the precondition check of side effect {effect.key!r} is encrypted and the key to "
            "read it is not available; set PITSTOP_KEY to the store's key, or pass --check CMD"
        )
    return command


def run_check(command: str, env: Mapping[str, str], timeout: float) -> CheckResult:
    """Run a precondition check with /bin/sh; its output goes to our stderr, never to disk."""
    import subprocess

    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=2,  # keep stdout for the action's own output
            env=dict(env),
            process_group=0,
        )
    except OSError as exc:
        return CheckResult(CheckVerdict.UNKNOWN, None, f"the check could not start: {exc}")
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return CheckResult(CheckVerdict.UNKNOWN, None, f"the check timed out after {timeout:g} s")
    if code == 0:
        return CheckResult(CheckVerdict.HAPPENED, 0, "check exit 0")
    if code == 1:
        return CheckResult(CheckVerdict.NOT_HAPPENED, 1, "check exit 1")
    if code < 0:
        return CheckResult(CheckVerdict.UNKNOWN, code, f"the check was killed by signal {-code}")
    return CheckResult(CheckVerdict.UNKNOWN, code, f"the check exited {code}")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process group: SIGTERM, then SIGKILL after a grace period."""
    import subprocess

    for sig, grace in ((signal.SIGTERM, _KILL_GRACE_S), (signal.SIGKILL, None)):
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _run_action(
    argv: Sequence[str],
    env: Mapping[str, str],
    timeout: float | None,
    lock_fd: int,
    stdout_to_stderr: bool,
) -> _ActionResult:
    """Run the action in its own process group, holding the key's lock, passing output through.

    The action inherits the locked descriptor: if this process is killed, the key stays locked
    until the action (and whatever it started) is gone. Signals that would end a guard are passed
    on to the action, whose outcome is then unknown.
    """
    import subprocess

    started = time.monotonic()
    received: list[int] = []
    running: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        for proc in running:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)

    # The handlers go in before the action starts: a signal that came between its start and
    # their installation ended the guard and left the action running, unrecorded.
    previous: dict[int, Any] = {}  # whatever signal.signal() hands back
    if threading.current_thread() is threading.main_thread():
        for sig in _FORWARDED:
            previous[sig] = signal.signal(sig, forward)
    timed_out = False
    try:
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            pass_fds=(lock_fd,),
            process_group=0,
            stdout=2 if stdout_to_stderr else None,
        )
        running.append(proc)
        # Signals that came while the action was starting are passed on now (one that comes
        # between these two lines is passed twice, never lost).
        for signum in list(received):
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            returncode = proc.wait()
    finally:
        for forwarded, handler in previous.items():
            # A handler installed outside Python reads back as None: restore the default then.
            signal.signal(forwarded, signal.SIG_DFL if handler is None else handler)
    return _ActionResult(
        returncode=returncode,
        duration_s=time.monotonic() - started,
        timed_out=timed_out,
        interrupted_by=received[0] if received else None,
    )


def _classify(result: _ActionResult, timeout: float | None) -> tuple[EffectState, int, str]:
    """The effect's new state, the guard's exit code and a note, from how the action ended."""
    took = f"after {result.duration_s:.1f} s"
    if result.timed_out:
        return EffectState.UNCERTAIN, EXIT_TIMEOUT, f"timed out after {timeout:g} s"
    if result.returncode == 0:
        return EffectState.CONFIRMED, 0, f"exit 0 {took}"
    if result.interrupted_by is not None:
        name = _signal_name(result.interrupted_by)
        return (
            EffectState.UNCERTAIN,
            EXIT_SIGNAL_BASE + result.interrupted_by,
            f"the guard was interrupted by {name} {took}",
        )
    if result.returncode < 0:
        name = _signal_name(-result.returncode)
        return (
            EffectState.UNCERTAIN,
            EXIT_SIGNAL_BASE - result.returncode,
            f"the action was killed by {name} {took}",
        )
    return EffectState.FAILED, result.returncode, f"exit {result.returncode} {took}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
