"""Retention: `pitstop gc` expires checkpoints by policy, never those still waiting on a person.

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

Expiring marks a checkpoint `expired` (with an audit event); git history is never rewritten. The
store repo's `refs/pitstop/checkpoints/<task>` points at a task's newest checkpoint and its first
parents reach the older ones, so the bytes of expired checkpoints come back only when a task's
whole chain has expired and its ref is deleted. That happens to finished tasks: once every
checkpoint of a finished, unheld task has expired, gc **retires** it — deletes its ref, its data
key (whatever was sealed with it, in this store or in copies elsewhere, becomes unreadable) and
its evidence output chunks, and marks the task `expired`. Then it prunes the store repositories'
unreachable objects and vacuums the database. `--dry-run` computes the same plan and changes
nothing.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from core import clock, store
from core.config import RetentionSettings
from core.errors import GitError
from core.ledger.approvals import effective
from core.models import (
    ApprovalState,
    CheckpointState,
    EffectState,
    Interface,
    Task,
    TaskStatus,
)
from core.paths import StorePaths
from core.store.db import Database, write_txn

CHECKPOINT_REF_PREFIX = "refs/pitstop/checkpoints/"
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


@dataclass(frozen=True)
class GcReport:
    """What a gc run did (or, with `dry_run`, would do)."""

    plan: GcPlan
    dry_run: bool
    refs_deleted: tuple[str, ...] = ()
    repos_pruned: tuple[str, ...] = ()
    bytes_before: int | None = None
    bytes_after: int | None = None
    problems: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types."""
        plan = self.plan
        return {
            "dry_run": self.dry_run,
            "at": plan.at,
            "expire": [
                {
                    "checkpoint": e.ref,
                    "task": e.task_id,
                    "seq": e.seq,
                    "state": e.state.value,
                    "rule": e.rule,
                    "reason": e.reason,
                    "bytes": e.bytes,
                }
                for e in plan.expiries
            ],
            "protected": [
                {"checkpoint": p.ref, "task": p.task_id, "seq": p.seq, "rule": p.rule, "why": p.why}
                for p in plan.protected
            ],
            "retire": [
                {
                    "task": r.task_id,
                    "status": r.status.value,
                    "checkpoint_bytes": r.checkpoint_bytes,
                    "evidence_chunks": r.evidence_chunks,
                    "evidence_bytes": r.evidence_bytes,
                    "delete_key": r.has_key,
                }
                for r in plan.retirements
            ],
            "warnings": list(plan.warnings),
            "kept_checkpoints": plan.kept_checkpoints,
            "kept_bytes": plan.kept_bytes,
            "expiring_bytes": plan.expiring_bytes,
            "reclaimable_bytes": plan.reclaimable_bytes,
            "refs_deleted": list(self.refs_deleted),
            "repos_pruned": list(self.repos_pruned),
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "problems": list(self.problems),
        }


# --- planning -------------------------------------------------------------------------------


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
    complete = [c for c in candidates if c.state is CheckpointState.COMPLETE]
    newest = complete[-1] if complete else None
    for candidate in candidates:
        if hold:
            candidate.protected_by = f"task held: {hold}"
        elif candidate.seq in leased:
            candidate.protected_by = leased[candidate.seq]
        elif candidate is newest and not task.status.is_final:
            candidate.protected_by = f"newest complete checkpoint of {task.status.value} task"
    if task.status.is_final:
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
    cap = settings.max_task_bytes
    if cap is not None:
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


# --- applying -------------------------------------------------------------------------------


def collect_garbage(
    db: Database,
    paths: StorePaths,
    settings: RetentionSettings,
    *,
    actor: str,
    interface: Interface,
    dry_run: bool = False,
    now: datetime | None = None,
) -> GcReport:
    """Expire by policy, retire finished chains, prune the store repos and vacuum.

    The plan is made and marked inside one write transaction, so nothing that changes meanwhile
    (a new approval, a new checkpoint) can slip past the protections. Git and the vacuum run
    after it commits; a crash between them is harmless, since the next run finds the same refs
    to delete and the same objects to prune.
    """
    if dry_run:
        return GcReport(plan_gc(db, settings, now), dry_run=True)
    before = _store_bytes(paths)
    with write_txn(db):
        plan = plan_gc(db, settings, now)
        _record(db, plan, actor, interface)
    refs_deleted, repos_pruned, problems = _clean_repos(db, paths)
    try:
        store.vacuum(db)
    except sqlite3.Error as exc:  # busy or locked: the space comes back on the next run
        problems.append(f"database not vacuumed ({exc}); run `pitstop gc` again later")
    return GcReport(
        plan,
        dry_run=False,
        refs_deleted=tuple(refs_deleted),
        repos_pruned=tuple(repos_pruned),
        bytes_before=before,
        bytes_after=_store_bytes(paths),
        problems=tuple(problems),
    )


def _record(db: Database, plan: GcPlan, actor: str, interface: Interface) -> None:
    def event(task_id: str, entity: str, entity_id: str, action: str, *states: Any) -> None:
        from_state, to_state, reason = states
        # gc's reasons are its own wording (rules, counts), and a retired task's key is deleted
        # just before its event: they stay plain rather than raise a fresh key for the task.
        store.add_event(
            db,
            keys=None,
            at=plan.at,
            actor=actor,
            interface=interface,
            task_id=task_id,
            entity=entity,
            entity_id=entity_id,
            action=action,
            from_state=from_state,
            to_state=to_state,
            reason=reason,
        )

    for expiry in plan.expiries:
        if store.expire_checkpoint(db, expiry.task_id, expiry.seq, expiry.state):
            event(
                expiry.task_id,
                "checkpoint",
                expiry.ref,
                "expire",
                expiry.state.value,
                CheckpointState.EXPIRED.value,
                f"gc ({expiry.rule}): {expiry.reason}",
            )
    for retired in plan.retirements:
        chunks = store.delete_evidence_chunks(db, retired.task_id)
        deleted_key = store.delete_wrapped_key(db, retired.task_id)
        reason = (
            f"gc: every checkpoint expired; data key {'deleted' if deleted_key else 'absent'}, "
            f"{chunks} evidence output chunk(s) deleted"
        )
        if retired.status is not TaskStatus.EXPIRED:
            store.update_task(db, retired.task_id, status=TaskStatus.EXPIRED, updated_at=plan.at)
        event(
            retired.task_id,
            "task",
            retired.task_id,
            "retire",
            retired.status.value,
            TaskStatus.EXPIRED.value,
            reason,
        )


def _clean_repos(db: Database, paths: StorePaths) -> tuple[list[str], list[str], list[str]]:
    """Delete the refs of chains with nothing left, then prune every store repository."""
    refs_deleted: list[str] = []
    repos_pruned: list[str] = []
    problems: list[str] = []
    if not paths.repos.is_dir():
        return refs_deleted, repos_pruned, problems
    for repo in sorted(paths.repos.glob("*.git")):
        if not (repo / "objects").is_dir():
            continue
        try:
            with _repo_writers_locked(db, paths, repo.name):
                finished = {task.id: task for task in store.list_tasks(db) if task.status.is_final}
                live_chain = {
                    row["task_id"]
                    for row in store.checkpoint_facts(db)
                    if row["state"]
                    in (CheckpointState.COMPLETE.value, CheckpointState.WRITING.value)
                }
                for task_id in _checkpoint_refs(repo):
                    if task_id in finished and task_id not in live_chain:
                        _git(repo, "update-ref", "-d", CHECKPOINT_REF_PREFIX + task_id)
                        refs_deleted.append(task_id)
                _git(repo, "repack", "-a", "-d", "-q")
                _git(repo, "prune", "--expire=now")
            repos_pruned.append(repo.name)
        except GitError as exc:
            problems.append(f"{repo.name}: {exc.message}")
    return refs_deleted, repos_pruned, problems


@contextmanager
def _repo_writers_locked(db: Database, paths: StorePaths, repo_name: str) -> Iterator[None]:
    """Hold the checkpoint lock (as `Engine.checkpoint` takes it) of every task using a repo.

    While they are held no checkpoint is between writing its objects and pointing its ref at
    them, so pruning unreachable objects cannot take a checkpoint's parts. Tasks started while
    we wait are locked too. Writers hold one lock at a time, so taking many cannot deadlock.
    """
    lock_dir = paths.tmp / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    held: set[str] = set()
    with ExitStack() as stack:
        while True:
            users = {task.id for task in store.list_tasks(db) if task.store_repo == repo_name}
            missing = sorted(users - held)
            if not missing:
                break
            for task_id in missing:
                fd = os.open(lock_dir / f"{task_id}.lock", os.O_RDWR | os.O_CREAT, 0o600)
                stack.callback(os.close, fd)
                fcntl.flock(fd, fcntl.LOCK_EX)
                held.add(task_id)
        yield


def _checkpoint_refs(repo: Path) -> list[str]:
    out = _git(repo, "for-each-ref", "--format=%(refname)", CHECKPOINT_REF_PREFIX)
    return [line.removeprefix(CHECKPOINT_REF_PREFIX) for line in out.splitlines() if line.strip()]


def _git(repo: Path, *args: str) -> str:
    """Run git against one of the store's bare repositories."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GIT_") or key in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM")
    }
    env.update(GIT_DIR=str(repo), LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    try:
        proc = subprocess.run(["git", *args], env=env, capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH; install git 2.31 or newer") from exc
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed: {lines[-1] if lines else proc.returncode}")
    return proc.stdout.decode(errors="replace")


def _store_bytes(paths: StorePaths) -> int:
    """Bytes the store occupies on disk: database files and git repositories."""
    total = 0
    for root, _dirs, files in os.walk(paths.repos):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:
                continue
    for suffix in ("", "-wal", "-shm"):
        candidate = Path(str(paths.database) + suffix)
        if candidate.exists():
            total += candidate.stat().st_size
    return total
