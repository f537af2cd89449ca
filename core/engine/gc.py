"""Carrying out `pitstop gc`: expire what the retention plan says, retire finished chains, prune.

Expiring marks a checkpoint `expired` (with an audit event); git history is never rewritten. The
store repo's `refs/pitstop/checkpoints/<task>` points at a task's newest checkpoint and its first
parents reach the older ones, so the bytes of expired checkpoints come back only when a task's
whole chain has expired and its ref is deleted. That happens to finished tasks: once every
checkpoint of a finished, unheld task has expired, gc **retires** it — deletes its ref, its data
key (whatever was sealed with it, in this store or in copies elsewhere, becomes unreadable) and
its evidence output chunks, and marks the task `expired`. Then it prunes the store repositories'
unreachable objects and vacuums the database. `--dry-run` computes the same plan and changes
nothing. The rules themselves are in `core.engine.retention`.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from core import store
from core.config import RetentionSettings
from core.engine.retention import GcPlan, plan_gc
from core.engine.writers import lock_path
from core.errors import GitError
from core.git.run import run_git
from core.git.upkeep import repack_env
from core.models import CheckpointState, Interface, TaskStatus
from core.paths import StorePaths
from core.security.keys import TaskKeys
from core.session import Session
from core.store.db import Database, write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

CHECKPOINT_REF_PREFIX = "refs/pitstop/checkpoints/"


def gc(session: Session, *, dry_run: bool = False) -> GcReport:
    """Expire checkpoints by the retention policy (see `core.engine.retention`); audited."""
    report = collect_garbage(
        session.db,
        session.paths,
        session.config.retention,
        actor=session.actor,
        interface=session.interface,
        dry_run=dry_run,
    )
    if report.plan.retirements and not dry_run:
        session.keys = TaskKeys(session.db)  # forget cached data keys gc just deleted
    return report


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
            with repo_writers_locked(db, paths, repo.name):
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
                # prune first: on a full disk it frees what failed writes left, and repack
                # (which needs room for its new pack) can then run
                _git(repo, "prune", "--expire=now")
                try:
                    run_git(["repack", "-a", "-d", "-q"], git_dir=repo, env=repack_env())
                except GitError:
                    _git(repo, "prune", "--expire=now")  # a failed repack leaves its tmp_pack
                    raise
            repos_pruned.append(repo.name)
        except GitError as exc:
            problems.append(f"{repo.name}: {exc.message}")
    return refs_deleted, repos_pruned, problems


@contextmanager
def repo_writers_locked(db: Database, paths: StorePaths, repo_name: str) -> Iterator[None]:
    """Hold the checkpoint lock (as `Engine.checkpoint` takes it) of every task using a repo.

    While they are held no checkpoint is between writing its objects and pointing its ref at
    them, so pruning unreachable objects cannot take a checkpoint's parts. Tasks started while
    we wait are locked too. Writers hold one lock at a time, so taking many cannot deadlock.
    """
    (paths.tmp / "locks").mkdir(parents=True, exist_ok=True, mode=0o700)
    held: set[str] = set()
    with ExitStack() as stack:
        while True:
            users = {task.id for task in store.list_tasks(db) if task.store_repo == repo_name}
            missing = sorted(users - held)
            if not missing:
                break
            for task_id in missing:
                fd = os.open(lock_path(paths, task_id), os.O_RDWR | os.O_CREAT, 0o600)
                stack.callback(os.close, fd)
                fcntl.flock(fd, fcntl.LOCK_EX)
                held.add(task_id)
        yield


def _checkpoint_refs(repo: Path) -> list[str]:
    out = _git(repo, "for-each-ref", "--format=%(refname)", CHECKPOINT_REF_PREFIX)
    return [line.removeprefix(CHECKPOINT_REF_PREFIX) for line in out.splitlines() if line.strip()]


def _git(repo: Path, *args: str) -> str:
    """Run git against one of the store's bare repositories (as every git call: `core.git.run`)."""
    return run_git(list(args), git_dir=repo).decode(errors="replace")


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
