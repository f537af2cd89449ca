"""The guard: perform a side effect's action at most once (DESIGN invariant 3).

A side effect (deploy a preview, open a PR, a paid call) never runs twice because of a resume.
The guard marks an effect `in_progress` durably *before* it runs the action. A guard that dies
mid-action therefore leaves `in_progress` behind, and the next guard does not run the action
blind: it asks the effect's precondition check whether the action already happened, and without
a check it refuses until an operator settles the effect. One guard at a time per key (see
`core.ledger.locks`).
"""

from __future__ import annotations

import os
import shutil

from core import clock, numbers, store
from core.errors import NeedsSettlingError, NotFoundError, UsageError
from core.ledger.action import EXIT_CANNOT_EXECUTE, ActionResult, classify, run_action
from core.ledger.checks import (
    CHECK_TIMEOUT_S,
    CheckResult,
    effect_env,
    run_check,
    trusted_check,
)
from core.ledger.locks import Notice, quiet
from core.ledger.moves import LedgerMoves
from core.ledger.states import (
    ACTION,
    MAX_KIND_CHARS,
    MAX_TEXT_CHARS,
    UNSETTLED_WHY,
    check_text,
    validate_key,
)
from core.models import EffectState, SideEffect
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

DEFAULT_LOCK_WAIT_S = 300.0


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
    yes_run_check: bool = False  # the operator has seen the stored check another store wrote


class GuardOutcome(NamedTuple):
    """What a guard did, and the exit code it should end with."""

    effect: SideEffect
    ran: bool
    exit_code: int
    message: str
    action_exit: int | None = None
    duration_s: float | None = None
    check: CheckResult | None = None


def guard(ledger: LedgerMoves, request: GuardRequest, notice: Notice | None = None) -> GuardOutcome:
    """Run `request.argv` as the effect's action at most once; see the module docstring."""
    notice = notice or quiet
    _validate_request(request)
    task = store.get_task(ledger.db, request.task_id)
    effect = store.find_effect(ledger.db, request.task_id, request.key, ledger.keys)
    if effect is not None and effect.state is EffectState.CONFIRMED:
        return _already_confirmed(effect)
    if effect is None and request.kind is None:
        raise NotFoundError(
            f"task {request.task_id} has no side effect {request.key!r}; pass --kind to "
            "propose it here, or propose it first with `pitstop effect propose`"
        )
    ledger.refuse_final(task, "runs no side effects")
    if shutil.which(request.argv[0]) is None:
        raise UsageError(f"cannot run {request.argv[0]!r}: no such command")
    if effect is not None:
        _preflight(ledger, effect, request)
    with ledger.locks.hold(request.task_id, request.key, request.wait, notice) as lock_fd:
        return _guard_locked(ledger, request, lock_fd, notice)


def _validate_request(request: GuardRequest) -> None:
    """Refuse a request that could never run, before reading anything."""
    if not request.argv:
        raise UsageError("nothing to run: give the action after --, e.g. -- gh pr create")
    if request.timeout is not None:
        numbers.seconds(request.timeout, "--timeout", positive=True)
    numbers.seconds(request.wait, "--wait")
    validate_key(request.key)
    if request.kind is not None:
        check_text(request.kind, "--kind", MAX_KIND_CHARS)
    if request.check is not None:
        check_text(request.check, "--check", MAX_TEXT_CHARS, single_line=False)


_RERUN = "rerun the same `pitstop effect guard` with --yes-run-check"


def _preflight(ledger: LedgerMoves, effect: SideEffect, request: GuardRequest) -> None:
    """Refuse, before taking the key's lock, what no waiting could change: leave no trace."""
    if effect.state in (EffectState.PROPOSED, EffectState.FAILED):
        ledger.approval_gate(effect)
    unsettled = effect.state is EffectState.UNCERTAIN or (
        effect.state is EffectState.IN_PROGRESS
        and not ledger.locks.held(effect.task_id, effect.key)
    )
    if unsettled and not (request.check or effect.check):
        raise _no_check(effect)
    if unsettled:
        trusted_check(effect, request.check, request.yes_run_check, _RERUN)


def _no_check(effect: SideEffect) -> NeedsSettlingError:
    return NeedsSettlingError(
        f"side effect {effect.key!r} of task {effect.task_id} is {effect.state.value} "
        f"({UNSETTLED_WHY[effect.state]}) and has no precondition check, so running "
        "it again could do it twice; pass --check CMD, or settle it with `pitstop "
        f"effect confirm|fail --task {effect.task_id} --key {effect.key} --reason TEXT`"
    )


def _guard_locked(
    ledger: LedgerMoves, request: GuardRequest, lock_fd: int, notice: Notice
) -> GuardOutcome:
    if store.find_effect(ledger.db, request.task_id, request.key, ledger.keys) is None:
        assert request.kind is not None
        ledger.propose(
            request.task_id,
            request.key,
            request.kind,
            target=request.target,
            check=request.check,
        )
    else:
        proposed = store.get_effect(ledger.db, request.task_id, request.key, ledger.keys)
        kind = request.kind or proposed.kind
        for warning in ledger.differences(proposed, kind, request.target, None, False):
            notice(warning)
    effect = store.get_effect(ledger.db, request.task_id, request.key, ledger.keys)
    check_result: CheckResult | None = None
    if effect.state is EffectState.CONFIRMED:
        return _already_confirmed(effect)
    if effect.state in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN):
        if not (request.check or effect.check):
            raise _no_check(effect)
        command = trusted_check(effect, request.check, request.yes_run_check, _RERUN)
        notice(
            f"side effect {effect.key!r} is {effect.state.value}; asking its precondition "
            "check whether it already happened"
        )
        timeout = request.timeout or CHECK_TIMEOUT_S
        check_result = run_check(command, effect_env(effect), timeout)
        effect = ledger.settle_by_check(effect, check_result)
        if effect.state is EffectState.CONFIRMED:
            return GuardOutcome(
                effect,
                ran=False,
                exit_code=0,
                message=f"side effect {effect.key!r} already happened (its check says so); "
                "recorded as confirmed and not run again",
                check=check_result,
            )
    ledger.approval_gate(effect)
    return _run(ledger, effect, request, lock_fd, check_result)


def _already_confirmed(effect: SideEffect) -> GuardOutcome:
    return GuardOutcome(
        effect,
        ran=False,
        exit_code=0,
        message=f"side effect {effect.key!r} is already confirmed "
        f"(at {effect.finished_at or effect.updated_at}); not run again",
    )


def _run(
    ledger: LedgerMoves,
    effect: SideEffect,
    request: GuardRequest,
    lock_fd: int,
    check_result: CheckResult | None,
) -> GuardOutcome:
    attempt = effect.attempts + 1
    started = clock.now_iso()
    # Durably in_progress before the action can start: a crash from here on leaves a trace.
    with write_txn(ledger.db):
        ledger.cas(
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
        ledger.audit(
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
        result = run_action(
            request.argv,
            effect_env(running),
            request.timeout,
            lock_fd,
            request.stdout_to_stderr,
        )
    except OSError as exc:
        return _finish(
            ledger,
            running,
            EffectState.FAILED,
            EXIT_CANNOT_EXECUTE,
            f"could not start the action: {exc.strerror or exc}",
            None,
            check_result,
        )
    to_state, exit_code, note = classify(result, request.timeout)
    return _finish(ledger, running, to_state, exit_code, note, result, check_result)


def _finish(
    ledger: LedgerMoves,
    running: SideEffect,
    to_state: EffectState,
    exit_code: int,
    note: str,
    result: ActionResult | None,
    check_result: CheckResult | None,
) -> GuardOutcome:
    finished = clock.now_iso()
    action_exit = result.returncode if result else None
    with write_txn(ledger.db):
        ledger.cas(
            running,
            to_state,
            {
                "updated_at": finished,
                "finished_at": finished,
                "exit_code": action_exit,
                "note": note,
            },
        )
        ledger.audit(
            running.task_id,
            "effect",
            running.key,
            ACTION[to_state],
            EffectState.IN_PROGRESS.value,
            to_state.value,
            f"guard: {note}",
            finished,
        )
    effect = store.get_effect(ledger.db, running.task_id, running.key, ledger.keys)
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
