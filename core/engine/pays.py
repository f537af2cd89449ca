"""Checkpoint when it pays (issue 23): a hook asks whether a checkpoint now is worth its cost.

The facts come from the store: the evidence recorded since the last checkpoint (its installs,
builds and test runs count as machine time, `classify_run`), the wall-clock work since then (a
person's re-orientation is that long, at most `economics.reorientation_minutes`), the money
spent since then (the task's cumulative budgets less what they were when the newest checkpoint
kept them: `record_usage` reports them between checkpoints, audited), and what this task's
checkpoints measured (mean creation latency at the machine rate on top of the configured
creation cost, mean bytes at the storage rate). P(interruption) is `[policy]`'s rate per hour
× the hours the task has worked so far (its remaining work is guessed to be as long). Every
automatic decision, taken or skipped, is an audited `checkpoint`/`decide` event with its
numbers (`pitstop log`, the task's timeline, `pitstop cost TASK --why`).
"""

from __future__ import annotations

import json
from decimal import Decimal

from core import clock, store
from core.economics.amounts import BYTES_PER_GIB, DAYS_PER_MONTH, MINUTES_PER_HOUR, ZERO
from core.economics.amounts import to_decimal as dec
from core.economics.decide import Exposure, Price, Verdict, decide, p_over
from core.errors import PitstopError
from core.models import CheckpointState, Task
from core.session import Session
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.engine.checkpoint import CheckpointRequest, CheckpointResult

DECIDE = "decide"  # the audited action of every automatic decision
USAGE = "usage"  # the audited action of budgets reported between checkpoints


# How far ahead the overview looks for the minute a checkpoint starts to pay (a working day).
PAYS_HORIZON_MINUTES = 480
_PAYS_STEPS = (0, 1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 360, 480)


def minutes_until_it_pays(session: Session, task_id: str) -> int | None:
    """After about how many more minutes of work (at no new machine time) a checkpoint of the
    task would pay: 0 when it pays now, None when not within `PAYS_HORIZON_MINUTES`.

    The exposure only grows with the minutes (re-orientation, then P), so the first step of
    `_PAYS_STEPS` at which the verdict turns is the answer, to that step's precision."""
    for minutes in _PAYS_STEPS:
        if checkpoint_verdict(session, task_id, ahead_minutes=minutes).take:
            return minutes
    return None


def checkpoint_verdict(session: Session, task_id: str, ahead_minutes: int = 0) -> Verdict:
    """Whether a checkpoint of the task now (or after `ahead_minutes` more of work) pays,
    with the numbers behind the answer."""
    from datetime import timedelta

    task = store.get_task(session.db, task_id)
    policy, economics = _task_policy(session, task_id), session.config.economics
    now = clock.now() + timedelta(minutes=ahead_minutes)
    last = store.latest_checkpoint_created_at(session.db, task_id)
    since = clock.parse(last) if last else clock.parse(task.created_at)
    pending = store.list_evidence(session.db, task_id, pending=True)  # since the last checkpoint
    machine_ms, counted = _machine_ms(session, task_id, pending)
    pending_ms = sum(max(int(r["duration_ms"] or 0), 0) for r in pending)
    work_minutes = max(_minutes(now, since), Decimal(pending_ms) / 60_000)
    task_minutes = max(_minutes(now, clock.parse(task.created_at)), work_minutes)
    rate = dec(policy.p_interrupt_per_hour, "policy.p_interrupt_per_hour")
    exposure = Exposure(
        spent_usd=_spent_since_checkpoint(session, task) if last else _spent(task, session),
        machine_minutes=Decimal(machine_ms) / 60_000,
        machine_usd_per_hour=dec(policy.machine_usd_per_hour, "policy.machine_usd_per_hour"),
        reorientation_minutes=min(work_minutes, dec(economics.reorientation_minutes)),
        human_usd_per_hour=dec(policy.human_usd_per_hour, "policy.human_usd_per_hour"),
        evidence=tuple(counted),
    )
    return decide(p_over(rate, task_minutes / MINUTES_PER_HOUR), exposure, _price(session, task_id))


def decide_checkpoint(
    session: Session,
    task_id: str,
    request: CheckpointRequest,
    *,
    why: str,
    always: bool = False,
    trivial_usd: float = 0.0,
) -> tuple[Verdict, CheckpointResult | None]:
    """Ask the model; take the checkpoint when it pays (or `always`, unless the exposure is
    under `trivial_usd`: trivially restartable); audit the decision either way. Budgets the
    request carries are recorded first (`record_usage`): the decision counts them, and a
    skipped checkpoint does not lose them."""
    if request.tokens_used is not None or request.usd_used is not None:
        record_usage(session, task_id, tokens_used=request.tokens_used, usd_used=request.usd_used)
    verdict = checkpoint_verdict(session, task_id)
    trivial = bool(trivial_usd) and verdict.exposure.total_usd < dec(trivial_usd)
    result = None
    if (verdict.take or always) and not trivial:
        from core.engine.checkpoint import checkpoint  # only when one is taken

        result = checkpoint(session, task_id, request)
    if result is None:
        outcome = "skipped: trivially restartable" if trivial else "skipped"
    elif result.checkpoint is None:
        outcome = f"skipped: {result.skipped}"
    else:
        outcome = f"taken: {result.checkpoint.ref}"
    record_decision(session, task_id, verdict, request.reason.value, why, outcome)
    return verdict, result


def milestone_if_it_pays(
    session: Session,
    task_id: str,
    argv: list[str],
    evidence_id: int,
    workdir_hint: str | None = None,
) -> str | None:
    """A green install, build, migration or test run (a hook's or `pitstop run`'s) asks the
    model: when a checkpoint now pays, a `milestone`, its note naming the evidence. What
    happened, in one line; None when the command is no such step."""
    from core.economics.work_kinds import COUNTED_KINDS, classify_run
    from core.engine.checkpoint import CheckpointRequest
    from core.models import CheckpointReason

    kind = classify_run(argv)
    if kind not in COUNTED_KINDS:
        return None
    request = CheckpointRequest(
        reason=CheckpointReason.MILESTONE,
        note=f"after a green {kind.value} (evidence {evidence_id})",
        note_is_news=False,
        note_is_ours=True,
        workdir_hint=workdir_hint,
    )
    why = f"a green {kind.value}, evidence {evidence_id}"
    _, result = decide_checkpoint(session, task_id, request, why=why)
    if result is None:
        return "milestone skipped: restart is cheaper"
    if result.checkpoint is None:
        return f"milestone skipped: {result.skipped}"
    return f"milestone {result.checkpoint.ref}"


def record_decision(
    session: Session, task_id: str, verdict: Verdict, reason: str, why: str, outcome: str
) -> None:
    """One audited event: what asked, what the model said and what happened."""
    detail = {
        "checkpoint_reason": reason,
        "asked_by": why,
        "outcome": outcome,
        "numbers": json.dumps(verdict.numbers(), sort_keys=True),
    }
    with write_txn(session.db):
        session.record_event(
            task_id,
            "checkpoint",
            reason,
            DECIDE,
            None,
            "taken" if outcome.startswith("taken") else "skipped",
            f"{reason} checkpoint {outcome.split(':')[0]} ({why}): {verdict.reason}",
            clock.now_iso(),
            detail=detail,
            own_words=True,
        )


def decisions(session: Session, task_id: str) -> list[dict[str, Any]]:
    """The task's automatic checkpoint decisions, oldest first, each with its numbers."""
    store.get_task(session.db, task_id)
    details = store.event_details(session.db, task_id, "checkpoint", DECIDE)
    found = []
    for event in store.list_events(session.db, task_id, session.keys):
        if event.id not in details:
            continue
        detail = dict(details[event.id])
        numbers = json.loads(detail.pop("numbers", "{}"))
        found.append({"at": event.at, "reason": event.reason, **detail, "numbers": numbers})
    return found


def set_task_policy(
    session: Session,
    task_id: str,
    *,
    p_interrupt_per_hour: float | None = None,
    human_usd_per_hour: float | None = None,
) -> None:
    """This task's own P(interruption) per hour and human rate (`task start --p-interrupt
    --rate`), over `[policy]`'s; an audited event, the newest one wins."""
    from core.errors import UsageError

    store.get_task(session.db, task_id)
    given = {
        key: value
        for key, value in (
            ("p_interrupt_per_hour", p_interrupt_per_hour),
            ("human_usd_per_hour", human_usd_per_hour),
        )
        if value is not None
    }
    for key, value in given.items():
        if not value >= 0 or (key == "p_interrupt_per_hour" and value > 1):
            raise UsageError(f"invalid {key.replace('_', ' ')} {value}; nothing was changed")
    if not given:
        return
    said = ", ".join(f"{key} = {value:g}" for key, value in given.items())
    with write_txn(session.db):
        session.record_event(
            task_id,
            "task",
            task_id,
            "policy",
            None,
            None,
            f"the task's checkpoint policy: {said}",
            clock.now_iso(),
            detail={key: str(value) for key, value in given.items()},
            own_words=True,
        )


def _task_policy(session: Session, task_id: str) -> Any:
    """`[policy]` with the task's own overrides (the newest `policy` event's) applied."""
    policy = session.config.policy
    overrides = store.event_details(session.db, task_id, "task", "policy")
    if not overrides:
        return policy
    newest = overrides[max(overrides)]
    return policy._replace(**{key: float(value) for key, value in newest.items()})


def _machine_ms(
    session: Session, task_id: str, pending: list[dict[str, Any]]
) -> tuple[int, list[int]]:
    """The recorded milliseconds of installs, builds and test runs among `pending`, and which."""
    total, counted = 0, list[int]()
    if not pending:  # a turn with nothing recorded since: no classifier (nor shlex) to load
        return total, counted
    from core.economics.work_kinds import COUNTED_KINDS, classify_run

    for row in pending:
        argv: list[str] = []
        blob, _ = store.get_evidence_secrets(session.db, int(row["id"]))
        if blob:
            sealed = f"evidence/{int(row['id'])}/command"  # core.evidence.items.sealed_name
            try:
                opened = session.keys.open(task_id, sealed, blob, "an evidence command")
            except PitstopError:  # unreadable here: classified by its summary alone
                opened = b"{}"
            argv = [str(arg) for arg in json.loads(opened).get("argv", [])]
        kind = classify_run(argv, (row["summary"] or {}).get("tool"))
        if kind in COUNTED_KINDS:
            total += max(int(row["duration_ms"] or 0), 0)
            counted.append(int(row["id"]))
    return total, counted


def record_usage(
    session: Session, task_id: str, *, tokens_used: int | None = None, usd_used: float | None = None
) -> None:
    """The task's budgets spent so far (cumulative, as `checkpoint --tokens-used --usd-used`),
    reported between checkpoints: kept on the task and audited with what they were before, so
    a decision counts what was spent since the newest checkpoint (`_spent_since_checkpoint`)."""
    from core import numbers

    if tokens_used is not None:
        numbers.non_negative(tokens_used, "--tokens-used")
    if usd_used is not None:
        numbers.non_negative(usd_used, "--usd-used")
    task = store.get_task(session.db, task_id)
    tokens = task.tokens_used if tokens_used is None else int(tokens_used)
    usd = task.usd_used if usd_used is None else float(usd_used)
    if (tokens, usd) == (task.tokens_used, task.usd_used):
        return
    now = clock.now_iso()
    with write_txn(session.db):
        store.update_task(session.db, task_id, tokens_used=tokens, usd_used=usd, updated_at=now)
        session.record_event(
            task_id,
            "task",
            task_id,
            USAGE,
            None,
            None,
            f"budgets used so far: ${usd:g}, {tokens} tokens",
            now,
            detail={
                "tokens_used_before": str(task.tokens_used),
                "usd_used_before": repr(task.usd_used),
                "tokens_used": str(tokens),
                "usd_used": repr(usd),
            },
            own_words=True,
        )


def _spent(task: Task, session: Session) -> Decimal:
    """Money spent, or tokens at the configured rate when no money was recorded."""
    if task.usd_used:
        return dec(task.usd_used)
    rate = dec(session.config.economics.usd_per_million_tokens)
    return Decimal(task.tokens_used) * rate / Decimal(1_000_000)


def _spent_since_checkpoint(session: Session, task: Task) -> Decimal:
    """What the task spent since its newest checkpoint kept its budgets: its budgets now less
    what they were before the first `usage` report after that checkpoint (none: nothing).
    Money when either side recorded money, else tokens at the configured rate."""
    first = store.first_detail_since(session.db, task.id, "task", USAGE, "checkpoint", "complete")
    if first is None:
        return ZERO
    usd_before = dec(float(first["usd_used_before"]))
    if task.usd_used or usd_before:
        return max(ZERO, dec(task.usd_used) - usd_before)
    tokens = task.tokens_used - int(first["tokens_used_before"])
    rate = dec(session.config.economics.usd_per_million_tokens)
    return max(ZERO, Decimal(tokens) * rate / Decimal(1_000_000))


def _price(session: Session, task_id: str) -> Price:
    """The configured costs, plus what this task's checkpoints measured."""
    settings, policy = session.config.economics, session.config.policy
    kept = [
        row
        for row in store.checkpoint_facts(session.db, task_id)
        if row["state"] == CheckpointState.COMPLETE.value
    ]
    creation = [int(r["creation_ms"]) for r in kept if r["creation_ms"] is not None]
    mean_ms = Decimal(sum(creation)) / len(creation) if creation else ZERO
    mean_bytes = Decimal(sum(int(r["bytes_added"] or 0) for r in kept)) / (len(kept) or 1)
    latency_usd = mean_ms / 3_600_000 * dec(policy.machine_usd_per_hour)
    storage = mean_bytes / BYTES_PER_GIB * dec(settings.storage_usd_per_gib_month)
    return Price(
        create_usd=dec(settings.create_usd) + latency_usd,
        storage_usd=storage * dec(session.config.retention.ttl_days) / DAYS_PER_MONTH,
        restore_usd=dec(settings.restore_usd),
        validation_usd=dec(settings.validation_usd),
    )


def _minutes(now: Any, since: Any) -> Decimal:
    return max(ZERO, Decimal(str((now - since).total_seconds())) / 60)
