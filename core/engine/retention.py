"""Retention: what `pitstop gc` expires by policy, never what still waits on a person.

The rules, in the order they are applied to each task (settings from `[retention]`):

- **finished**: a `done` or `cancelled` task keeps only its newest complete checkpoint, and that
  one for `finished_keep_days` (default 1) after the task finished — time to look back or reopen
  the work elsewhere; then it goes too.
- **ttl**: a checkpoint older than `ttl_days` (default 14) goes.
- **keep_last**: only a task's newest `keep_last` (default 10) complete checkpoints stay.
- **max_task_bytes** / **max_store_bytes** (off unless set): the oldest checkpoints go until what
  the task (the store) keeps fits under the cap.

Protection always wins over the rules, and is reported:

- A task with a pending approval or an `in_progress` / `uncertain` side effect is **held**: none
  of its checkpoints expire. Effects are recorded per task, not per checkpoint, and whoever
  settles one may need any earlier state, so the whole chain stays until it is settled.
- The newest complete checkpoint of a live task (not done, cancelled or expired) never expires.
- A checkpoint under a live resume lease never expires while the lease lasts.

A protected set that alone exceeds a byte cap is reported as a warning, never silently kept.
Once every checkpoint of a finished, unheld task expires, the task **retires** (its ref, data
key and evidence output go). This module only decides: `plan_gc` changes nothing, and
`core.engine.gc` carries a plan out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from core import clock, store
from core.config import RetentionSettings
from core.ledger.approvals import effective
from core.models import ApprovalState, CheckpointState, EffectState, Task, TaskStatus
from core.store.db import Database

_UNSETTLED = (EffectState.IN_PROGRESS, EffectState.UNCERTAIN)


@dataclass(frozen=True)
class Expiry:
    """One checkpoint that expires, and the rule that expires it."""

    task_id: str
    seq: int
    state: CheckpointState
    rule: str
    reason: str
    bytes: int

    @property
    def ref(self) -> str:
        return f"{self.task_id}@{self.seq}"


@dataclass(frozen=True)
class Protected:
    """A checkpoint a rule would expire that stays, and why."""

    task_id: str
    seq: int
    rule: str
    why: str

    @property
    def ref(self) -> str:
        return f"{self.task_id}@{self.seq}"


@dataclass(frozen=True)
class Retirement:
    """A finished task whose whole chain has expired: its ref, key and evidence output go."""

    task_id: str
    status: TaskStatus
    checkpoint_bytes: int
    evidence_chunks: int
    evidence_bytes: int
    has_key: bool


@dataclass(frozen=True)
class GcPlan:
    """What gc expires, keeps and retires, decided at one moment."""

    at: str
    expiries: tuple[Expiry, ...]
    protected: tuple[Protected, ...]
    retirements: tuple[Retirement, ...]
    warnings: tuple[str, ...]
    kept_checkpoints: int
    kept_bytes: int

    @property
    def expiring_bytes(self) -> int:
        """Bytes the expiring checkpoints added when they were written."""
        return sum(expiry.bytes for expiry in self.expiries)

    @property
    def reclaimable_bytes(self) -> int:
        """An estimate of what comes back: retired chains plus their evidence output.

        Objects shared with chains that stay (a common base history) remain; the real figure is
        measured after pruning.
        """
        return sum(r.checkpoint_bytes + r.evidence_bytes for r in self.retirements)


@dataclass
class _Candidate:
    task_id: str
    seq: int
    state: CheckpointState
    created_at: datetime
    bytes: int
    rule: str | None = None
    reason: str | None = None
    protected_by: str | None = None


def _days(value: float) -> str:
    return f"{value:g} day" + ("" if value == 1 else "s")


def _hold_reason(db: Database, task: Task, now: datetime) -> str | None:
    """Why a task's checkpoints must all stay: a pending approval or an unsettled effect."""
    pending = [
        approval
        for approval in (
            effective(a, now) for a in store.list_approvals(db, task.id, (ApprovalState.PENDING,))
        )
        if approval.state is ApprovalState.PENDING
    ]
    if pending:
        return f"approval {pending[0].id} is pending"
    unsettled = store.list_effects(db, task.id, _UNSETTLED)
    if unsettled:
        return f"side effect {unsettled[0].key!r} is {unsettled[0].state.value}"
    return None


def plan_gc(db: Database, settings: RetentionSettings, now: datetime | None = None) -> GcPlan:
    """Decide what expires, what is protected and which tasks retire; changes nothing."""
    now = now or clock.now()
    tasks = {task.id: task for task in store.list_tasks(db)}
    by_task: dict[str, list[_Candidate]] = {task_id: [] for task_id in tasks}
    for row in store.checkpoint_facts(db):
        state = CheckpointState(row["state"])
        if state in (CheckpointState.EXPIRED, CheckpointState.WRITING):
            continue  # already gone; or a writer may still be at work on it
        by_task.setdefault(row["task_id"], []).append(
            _Candidate(
                task_id=row["task_id"],
                seq=row["seq"],
                state=state,
                created_at=clock.parse(row["created_at"]),
                bytes=int(row["bytes_added"] or 0),
            )
        )
    warnings: list[str] = []
    holds: dict[str, str] = {}
    for task_id, task in tasks.items():
        hold = _hold_reason(db, task, now)
        if hold:
            holds[task_id] = hold
        leased = _leased_seqs(db, task_id, now)
        _apply_task_rules(task, by_task[task_id], settings, now, hold, warnings, leased)
    _apply_store_cap(by_task, settings, warnings)
    expiries: list[Expiry] = []
    protected: list[Protected] = []
    kept_count = kept_bytes = 0
    for candidates in by_task.values():
        for c in candidates:
            if c.rule and c.protected_by:
                protected.append(Protected(c.task_id, c.seq, c.rule, c.protected_by))
            if c.rule and not c.protected_by:
                expiries.append(
                    Expiry(c.task_id, c.seq, c.state, c.rule, c.reason or c.rule, c.bytes)
                )
            else:
                kept_count += 1
                kept_bytes += c.bytes
    retirements = _retirements(db, tasks, by_task, holds, settings, now)
    return GcPlan(
        at=clock.to_iso(now),
        expiries=tuple(expiries),
        protected=tuple(protected),
        retirements=tuple(retirements),
        warnings=tuple(warnings),
        kept_checkpoints=kept_count,
        kept_bytes=kept_bytes,
    )


def _mark(candidate: _Candidate, rule: str, reason: str) -> None:
    if candidate.rule is None:
        candidate.rule, candidate.reason = rule, reason


def _leased_seqs(db: Database, task_id: str, now: datetime) -> dict[int, str]:
    """Checkpoints a resume is restoring right now (a lease not yet past its end)."""
    if "resumes" not in store.table_names(db):
        return {}
    leased: dict[int, str] = {}
    for row in store.active_resumes(db, task_id):
        try:
            until = clock.parse(str(row["lease_until"]))
        except (KeyError, ValueError):
            continue
        if until > now:
            leased[int(row["seq"])] = f"being resumed (lease until {clock.to_iso(until)[:19]}Z)"
    return leased


def _apply_task_rules(
    task: Task,
    candidates: list[_Candidate],
    settings: RetentionSettings,
    now: datetime,
    hold: str | None,
    warnings: list[str],
    leased: Mapping[int, str],
) -> None:
    """Protect, then mark by each task rule in turn; the first rule to mark one names it."""
    complete = [c for c in candidates if c.state is CheckpointState.COMPLETE]
    newest = complete[-1] if complete else None
    _protect(task, candidates, newest, hold, leased)
    if task.status.is_final:
        _mark_finished(task, candidates, newest, settings, now)
    ttl = timedelta(days=settings.ttl_days)
    for candidate in candidates:
        if now - candidate.created_at > ttl:
            _mark(
                candidate,
                "ttl",
                f"older than {_days(settings.ttl_days)} (retention.ttl_days)",
            )
    if settings.keep_last >= 0:
        beyond = complete[: max(len(complete) - settings.keep_last, 0)]
        for candidate in beyond:
            _mark(
                candidate,
                "keep_last",
                f"beyond the newest {settings.keep_last} of its task (retention.keep_last)",
            )
    if settings.max_task_bytes is not None:
        _apply_task_cap(task, candidates, settings.max_task_bytes, warnings)


def _protect(
    task: Task,
    candidates: list[_Candidate],
    newest: _Candidate | None,
    hold: str | None,
    leased: Mapping[int, str],
) -> None:
    """A held task keeps everything; a leased checkpoint and a live task's newest stay."""
    for candidate in candidates:
        if hold:
            candidate.protected_by = f"task held: {hold}"
        elif candidate.seq in leased:
            candidate.protected_by = leased[candidate.seq]
        elif candidate is newest and not task.status.is_final:
            candidate.protected_by = f"newest complete checkpoint of {task.status.value} task"


def _mark_finished(
    task: Task,
    candidates: list[_Candidate],
    newest: _Candidate | None,
    settings: RetentionSettings,
    now: datetime,
) -> None:
    """A finished task keeps only its newest checkpoint, and that one for a grace period."""
    finished_age = now - clock.parse(task.updated_at)
    for candidate in candidates:
        if candidate is not newest:
            _mark(
                candidate,
                "finished",
                f"task is {task.status.value}: only its newest checkpoint is kept",
            )
        elif finished_age >= timedelta(days=settings.finished_keep_days):
            _mark(
                candidate,
                "finished",
                f"task {task.status.value} more than "
                f"{_days(settings.finished_keep_days)} ago (retention.finished_keep_days)",
            )


def _apply_task_cap(
    task: Task, candidates: list[_Candidate], cap: int, warnings: list[str]
) -> None:
    """The oldest unprotected checkpoints go until what the task keeps fits under its cap."""
    kept = [c for c in candidates if not (c.rule and not c.protected_by)]
    total = sum(c.bytes for c in kept)
    for candidate in kept:  # oldest first
        if total <= cap:
            break
        if candidate.protected_by:
            continue
        _mark(
            candidate,
            "max_task_bytes",
            f"task keeps {total} bytes, over retention.max_task_bytes = {cap}",
        )
        total -= candidate.bytes
    if total > cap:
        warnings.append(
            f"task {task.id} keeps {total} bytes, over retention.max_task_bytes = {cap}: "
            "what remains is protected"
        )


def _apply_store_cap(
    by_task: Mapping[str, list[_Candidate]], settings: RetentionSettings, warnings: list[str]
) -> None:
    cap = settings.max_store_bytes
    if cap is None:
        return
    kept = sorted(
        (c for cs in by_task.values() for c in cs if not (c.rule and not c.protected_by)),
        key=lambda c: (c.created_at, c.task_id, c.seq),
    )
    total = sum(c.bytes for c in kept)
    for candidate in kept:
        if total <= cap:
            break
        if candidate.protected_by:
            continue
        _mark(
            candidate,
            "max_store_bytes",
            f"store keeps {total} bytes, over retention.max_store_bytes = {cap}",
        )
        total -= candidate.bytes
    if total > cap:
        warnings.append(
            f"the store keeps {total} checkpoint bytes, over retention.max_store_bytes = {cap}: "
            "what remains is protected"
        )


def _retirements(
    db: Database,
    tasks: Mapping[str, Task],
    by_task: Mapping[str, list[_Candidate]],
    holds: Mapping[str, str],
    settings: RetentionSettings,
    now: datetime,
) -> list[Retirement]:
    found: list[Retirement] = []
    for task_id, task in tasks.items():
        if not task.status.is_final or task_id in holds:
            continue
        if any(not c.rule or c.protected_by for c in by_task[task_id]):
            continue  # something of it stays
        finished_age = now - clock.parse(task.updated_at)
        if not by_task[task_id] and finished_age < timedelta(days=settings.finished_keep_days):
            continue  # nothing checkpointed, but its evidence keeps the same grace period
        chunks, chunk_bytes = store.evidence_chunk_totals(db, task_id)
        has_key = store.has_wrapped_key(db, task_id)
        if task.status is TaskStatus.EXPIRED and not chunks and not has_key:
            continue  # retired before
        checkpoint_bytes = sum(
            int(row["bytes_added"] or 0) for row in store.checkpoint_facts(db, task_id)
        )
        found.append(
            Retirement(task_id, task.status, checkpoint_bytes, chunks, chunk_bytes, has_key)
        )
    return found
