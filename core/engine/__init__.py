"""The use-cases: the one API the CLI, the dashboard, harness hooks and Python callers share.

An `Engine` owns one SQLite connection and must stay on the thread that opened it; a worker
thread opens its own with `Engine.for_thread()`. Every state change runs inside `write_txn()`
together with its audit event, so the CLI, the TUI and hooks leave the same trail.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from core import clock, store
from core.config import Config
from core.errors import (
    CommandStartError,
    ConflictError,
    DamagedCheckpointError,
    NotFoundError,
    PitstopError,
    ResumeRefusedError,
    SchemaTooNewError,
    UsageError,
)
from core.models import (
    Approval,
    AuditEvent,
    Budget,
    ChangedFile,
    Checkpoint,
    CheckpointReason,
    CheckpointState,
    EffectState,
    Interface,
    NamedVersion,
    Risk,
    SideEffect,
    Task,
    TaskStatus,
    validate_task_id,
)
from core.security.keys import TaskKeys
from core.session import Session
from core.store.db import Database, batch_txn, write_txn

if TYPE_CHECKING:  # evidence pulls in redaction, zstd and crypto: loaded only when used
    from core import snapshot
    from core.economics import model as economics
    from core.economics.metrics import Metrics
    from core.economics.model import TaskEstimate
    from core.engine.retention import GcReport
    from core.evidence import storage as evidence
    from core.evidence.capture import RunOutcome
    from core.ledger.approvals import Approvals
    from core.ledger.effects import (
        CheckOutcome,
        GuardOutcome,
        GuardRequest,
        Ledger,
        Notice,
        ProposeResult,
    )
    from core.ledger.facts import ApplyReport
    from core.restore.resume import ResumePlan
    from core.restore.validate import Finding, ValidationInputs, ValidationReport

CHECKPOINT_REF = re.compile(r"^(?P<task>[^@\s]+)(?:@(?P<seq>\d+|latest))?$")

# What a checkpoint's reason does to its task's status.
_STATUS_AFTER = {
    CheckpointReason.BEFORE_WAIT: TaskStatus.WAITING,
    CheckpointReason.INTERRUPT: TaskStatus.PAUSED,
}


class CheckpointResult(NamedTuple):
    """What `Engine.checkpoint` did: a new checkpoint, or why it skipped one."""

    checkpoint: Checkpoint | None
    skipped: str | None = None


class CheckpointRequest(NamedTuple):
    """Everything an agent or operator says when asking for a checkpoint."""

    reason: CheckpointReason = CheckpointReason.MANUAL
    note: str | None = None
    done: tuple[str, ...] = ()
    todo: tuple[str, ...] = ()
    tokens_used: int | None = None
    usd_used: float | None = None
    force: bool = False
    max_file_bytes: int | None = None


class TaskSummary(NamedTuple):
    """A task plus what the dashboard lists beside it."""

    task: Task
    checkpoint_count: int
    last_checkpoint_at: str | None
    pending_approvals: int = 0
    uncertain_effects: int = 0
    last_verdict: str | None = None


class _Progress(NamedTuple):
    """Carry-over of steps and consumption from one checkpoint to the next."""

    done: list[str]
    todo: list[str]


def parse_checkpoint_ref(text: str) -> tuple[str, int | None]:
    """Split `TASK@SEQ` (or `TASK`, `TASK@latest`) into the task id and the sequence."""
    match = CHECKPOINT_REF.match(text.strip())
    if not match:
        raise UsageError(f"invalid checkpoint {text!r}: expected TASK@SEQ, e.g. fix-login-3f2a@2")
    seq = match.group("seq")
    return match.group("task"), int(seq) if seq and seq != "latest" else None


def _lockfiles_of(checkpoint: Checkpoint | None) -> dict[str, str] | None:
    """The lockfiles a checkpoint's manifest recorded for its worktree tree, when it has them."""
    found = (checkpoint.manifest or {}).get("lockfiles") if checkpoint else None
    if not isinstance(found, dict):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
        return None
    return dict(found)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _default_resume_dir(toplevel: Path, task_id: str) -> Path:
    """`<repo>-pitstop-<task>` beside the repository, numbered if taken."""
    candidate = toplevel.parent / f"{toplevel.name}-pitstop-{task_id}"
    number = 1
    while candidate.exists() and any(candidate.iterdir()):
        number += 1
        candidate = toplevel.parent / f"{toplevel.name}-pitstop-{task_id}-{number}"
    return candidate


def generate_task_id(objective: str, taken: set[str]) -> str:
    """A short, human id from the objective's first words plus four hex digits."""
    words = re.findall(r"[a-z0-9]+", objective.lower())
    stem = "-".join(words[:3])[:24].strip("-") or "task"
    while True:
        candidate = f"{stem}-{os.urandom(2).hex()}"
        if candidate not in taken:
            return candidate


class Engine:
    """One store, opened for one thread."""

    def __init__(
        self,
        store_root: str | os.PathLike[str] | None = None,
        *,
        interface: Interface = Interface.API,
        actor: str | None = None,
        config: Config | None = None,
    ) -> None:
        self.session = Session(store_root, interface=interface, actor=actor, config=config)
        self.paths = self.session.paths
        self.interface = self.session.interface
        self.config = self.session.config
        self.actor = self.session.actor
        self.db: Database = self.session.db
        self._event = self.session.record_event

    @property
    def keys(self) -> TaskKeys:
        """The session's task keys (renewed after gc deletes some)."""
        return self.session.keys

    def for_thread(self) -> Engine:
        """A new engine on the same store for use on another thread."""
        return Engine(
            self.paths.root, interface=self.interface, actor=self.actor, config=self.config
        )

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def watch_commits(self, stop: threading.Event) -> Iterator[int]:
        """Yield the store's new data version after each commit another connection makes.

        Blocks between commits until `stop` is set; it opens its own connection, so a thread
        worker may run it while this engine serves the thread that opened it.
        """
        from core.store.watch import store_commits

        return store_commits(self.paths.database, stop)

    # --- paths -----------------------------------------------------------------------------

    def locate(self) -> dict[str, str]:
        """Where this store keeps everything."""
        from core.paths import config_dir

        return {
            "store": str(self.paths.root),
            "database": str(self.paths.database),
            "repos": str(self.paths.repos),
            "config": str(config_dir()),
        }

    # --- tasks -----------------------------------------------------------------------------

    def start_task(
        self,
        *,
        repo: str | os.PathLike[str],
        objective: str,
        task_id: str | None = None,
        harness: NamedVersion | None = None,
        model: NamedVersion | None = None,
        budget: Budget | None = None,
        credentials: Sequence[str] = (),
        approvers: Sequence[str] = (),
        recipients: Sequence[str] = (),
    ) -> Task:
        """Register a new task on the git work tree that contains `repo`.

        `recipients` (and the operator's own recipient, when they have an identity) are the
        public keys the task's remote copies will be encrypted to.
        """
        from core import snapshot
        from core.ledger.approvals import validate_operator_names
        from core.security import identity

        if not objective.strip():
            raise UsageError("the objective is empty; say what the task should achieve")
        approver_names = validate_operator_names(approvers)
        recipient_keys = identity.with_own_recipient(identity.parse_recipients(recipients))
        for name in credentials:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise UsageError(
                    f"invalid --credential {name!r}: give an environment variable name"
                )
        budget = budget or Budget()
        for label, value in (
            ("tokens", budget.tokens),
            ("usd", budget.usd),
            ("minutes", budget.minutes),
        ):
            if value is not None and value < 0:
                raise UsageError(f"--budget-{label} must not be negative")
        source = snapshot.resolve_source_repo(repo)
        now = clock.now_iso()
        with write_txn(self.db):
            new_id = (
                validate_task_id(task_id)
                if task_id
                else generate_task_id(objective, store.task_ids(self.db))
            )
            task = Task(
                id=new_id,
                repo_root=str(source.toplevel),
                store_repo=source.store_repo_name,
                objective=objective.strip(),
                status=TaskStatus.RUNNING,
                created_at=now,
                updated_at=now,
                harness=harness,
                model=model,
                budget=budget,
                credentials=tuple(dict.fromkeys(credentials)),
                approvers=approver_names,
            )
            store.insert_task(self.db, task)
            self._event(
                task.id, "task", task.id, "start", None, TaskStatus.RUNNING.value, None, now
            )
            self._add_recipients(task.id, recipient_keys, now)
        return task

    # --- recipients ------------------------------------------------------------------------

    def _add_recipients(self, task_id: str, recipients: Sequence[str], at: str) -> None:
        """Record recipients inside the caller's transaction; each new one is audited."""
        for recipient in recipients:
            if store.add_task_recipient(self.db, task_id, recipient, at, self.actor):
                self._event(task_id, "task", task_id, "share", None, recipient, None, at)

    def task_recipients(self, task_id: str) -> list[str]:
        """The public keys a task's remote copies are encrypted to, in the order added."""
        store.get_task(self.db, task_id)
        return store.list_task_recipients(self.db, task_id)

    def share_task(self, task_id: str, recipients: Sequence[str]) -> list[str]:
        """Add recipients to a task (those it has already are left alone); return all of them."""
        from core.security import identity

        if not recipients:
            raise UsageError("give at least one --recipient to share the task with")
        parsed = identity.parse_recipients(recipients)
        now = clock.now_iso()
        with write_txn(self.db):
            store.get_task(self.db, task_id)
            self._add_recipients(task_id, parsed, now)
            return store.list_task_recipients(self.db, task_id)

    def remote_recipients(self, task_id: str) -> list[str]:
        """Whom a task's remote copy is encrypted to: its recipients and the current operator."""
        from core.sharing import remote as remotes

        return remotes.remote_recipients(self.session, task_id)

    def adopt_task(self, task: Task, *, origin_store: str, data_key: bytes) -> Task:
        """Record a task fetched from a remote: same id, its content bound to its origin store."""
        from core.sharing import remote as remotes

        return remotes.adopt_task(self.session, task, origin_store=origin_store, data_key=data_key)

    # --- remotes (core.sharing.remote; imported on use: age and the network stay off other paths)

    def push(
        self, task_ids: Sequence[str], remote: str | None = None, *, seal_worktree: bool = False
    ) -> Any:
        """Send tasks' checkpoints and ledgers to a remote (`pitstop push`)."""
        from core.sharing import remote as remotes

        return remotes.push(self.session, task_ids, remote, seal_worktree=seal_worktree)

    def fetch(
        self,
        task_ids: Sequence[str] = (),
        remote: str | None = None,
        repo: str | os.PathLike[str] | None = None,
    ) -> Any:
        """Bring remote tasks into this store (`pitstop fetch`)."""
        from core.sharing import remote as remotes

        return remotes.fetch(self.session, task_ids, remote, repo)

    def list_remote(
        self, remote: str | None = None, repo: str | os.PathLike[str] = "."
    ) -> tuple[str, list[Any]]:
        """Tasks on a remote, from refs and plain headers (`pitstop remote list`)."""
        from core.sharing import remote as remotes

        return remotes.list_remote(self.session, remote, repo)

    def sync(
        self,
        task_ids: Sequence[str] = (),
        remote: str | None = None,
        repo: str | os.PathLike[str] | None = None,
    ) -> dict[str, Any]:
        """Fetch, merge and push (`pitstop sync`)."""
        from core.sharing import remote as remotes

        return remotes.sync(self.session, task_ids, remote, repo)

    def add_remote(self, name: str, url: str, repo: str | os.PathLike[str] = ".") -> dict[str, Any]:
        """Name a remote (`pitstop remote add NAME URL`)."""
        from core.sharing import remote as remotes

        return remotes.add_remote(self.session, name, url, repo)

    def remove_remote(self, name: str) -> None:
        """Forget a named remote."""
        from core.sharing import remote as remotes

        remotes.remove_remote(self.session, name)

    def remotes(self) -> list[dict[str, Any]]:
        """Named remotes."""
        return store.list_remotes(self.db)

    def remote_links(self, task_id: str | None = None) -> list[dict[str, Any]]:
        """Which tasks travel through which remotes, and when they last did."""
        return store.remote_links(self.db, task_id)

    def remote_only_tasks(self) -> list[dict[str, Any]]:
        """Tasks seen on remotes (last listing) that this store does not hold."""
        from core.sharing import remote as remotes

        return remotes.remote_tasks_for_dashboard(self.session)

    def get_task(self, task_id: str) -> Task:
        """One task by id."""
        return store.get_task(self.db, task_id)

    def list_tasks(self, statuses: Sequence[TaskStatus] = ()) -> list[Task]:
        """Tasks, most recently updated first."""
        return store.list_tasks(self.db, tuple(statuses))

    def task_summaries(self) -> list[TaskSummary]:
        """Tasks with their checkpoint counts, pending approvals, uncertain effects and last
        verdict, most recently updated first: one aggregate query, for lists and the dashboard."""
        return [TaskSummary(*row) for row in store.task_rollups(self.db, clock.now_iso())]

    def first_task_summaries(
        self, limit: int, status_order: Sequence[TaskStatus]
    ) -> list[TaskSummary]:
        """The first `limit` task summaries in triage order (statuses as in `status_order`, then
        the most recent checkpoint first), without aggregating the whole store: a first screen."""
        rows = store.first_task_rollups(self.db, clock.now_iso(), limit, tuple(status_order))
        return [TaskSummary(*row) for row in rows]

    def task_status_counts(self) -> dict[TaskStatus, int]:
        """How many tasks have each status."""
        return store.task_status_counts(self.db)

    def finish_task(self, task_id: str, status: TaskStatus, reason: str | None = None) -> Task:
        """Mark a task `done` or `cancelled`; a finished task stays finished."""
        if status not in (TaskStatus.DONE, TaskStatus.CANCELLED):
            raise UsageError(f"a task can be finished as done or cancelled, not {status.value}")
        now = clock.now_iso()
        with write_txn(self.db):
            task = store.get_task(self.db, task_id)
            if task.status.is_final:
                raise ConflictError(
                    f"task {task_id} is already {task.status.value}; nothing to change"
                )
            store.update_task(self.db, task_id, status=status, updated_at=now)
            self._event(
                task_id, "task", task_id, status.value, task.status.value, status.value, reason, now
            )
        return task._replace(status=status, updated_at=now)

    # --- economics, retention and measures -------------------------------------------------

    def estimate(self, task_id: str, **overrides: economics.Amount | None) -> TaskEstimate:
        """Whether checkpointing a task pays: its replay cost from its record, DESIGN §4."""
        from core.economics import metrics

        return metrics.task_estimate(self.db, self.keys, self.config, task_id, **overrides)

    def gc(self, *, dry_run: bool = False) -> GcReport:
        """Expire checkpoints by the retention policy (see `core.engine.retention`); audited."""
        from core.engine import retention

        report = retention.collect_garbage(
            self.db,
            self.paths,
            self.config.retention,
            actor=self.actor,
            interface=self.interface,
            dry_run=dry_run,
        )
        if report.plan.retirements and not dry_run:
            self.session.keys = TaskKeys(self.db)  # forget cached data keys gc just deleted
        return report

    def metrics(self, task_id: str | None = None) -> Metrics:
        """The measures of resume quality (DESIGN §8) for the store or one task."""
        from core.economics import metrics

        return metrics.collect_metrics(self.db, self.keys, self.config, task_id)

    # --- checkpoints -----------------------------------------------------------------------

    def checkpoint(
        self, task_id: str, request: CheckpointRequest | None = None
    ) -> CheckpointResult:
        """Snapshot the task's work tree and record a complete, verified checkpoint.

        The snapshot is taken first (objects only, nothing recorded); a snapshot identical to
        the previous checkpoint with nothing new is skipped unless forced. Then the checkpoint is
        recorded as `writing`, its commit written and re-read, and only then flipped to
        `complete` in one transaction (invariant 1).
        """
        started = time.monotonic()
        request = request or CheckpointRequest()
        task = store.get_task(self.db, task_id)
        if task.status.is_final:
            raise ConflictError(
                f"task {task_id} is {task.status.value}; a finished task takes no checkpoints"
            )
        self._validate_consumption(request)
        self.keys.data_key(task_id, create=True)  # no key: refuse before anything is written
        with self._task_lock(task_id):
            self._expire_stale_writers(task_id)
            if request.reason is CheckpointReason.TURN:  # DESIGN §4: no every-turn snapshots
                from core.economics.policy import turn_skip_reason

                last = store.latest_checkpoint_created_at(self.db, task_id)
                too_soon = turn_skip_reason(
                    clock.parse(last) if last else None,
                    clock.now(),
                    self.config.policy.min_interval_seconds,
                )
                if too_soon:
                    return CheckpointResult(None, skipped=too_soon)
            from core import snapshot  # only now: a skipped turn needs no git
            from core.git import plumbing

            located = snapshot.locate(task.repo_root)  # the repository and its HEAD at once
            store_repo = snapshot.ensure_store_repo(self.paths.repos, located.source)
            with plumbing.session(store_repo):  # one `cat-file` for every read of the store
                return self._checkpoint_in_session(task, request, located, store_repo, started)

    def _checkpoint_in_session(
        self,
        task: Task,
        request: CheckpointRequest,
        located: snapshot.Located,
        store_repo: Path,
        started: float,
    ) -> CheckpointResult:
        from core import snapshot

        task_id = task.id
        source = located.source
        previous = store.latest_complete(self.db, task_id)
        if previous is not None:
            previous = self._open(previous)
        limits = snapshot.SnapshotLimits(request.max_file_bytes or self.config.max_file_bytes)
        snap: snapshot.Snapshot | None = None
        if previous and previous.worktree_tree and previous.index_tree:
            trees = (previous.worktree_tree, previous.index_tree)
            # Every object of the previous trees, walked: the new snapshot stores only what
            # differs from them, and its own verification relies on this walk. The walk runs
            # while the snapshot is taken; a damaged previous checkpoint (rare) throws that
            # snapshot away (or its failure) and starts the chain afresh from the base commit.
            walk = snapshot.verify_checkpoint(
                store_repo,
                commit=previous.commit or "",
                worktree_tree=trees[0],
                index_tree=trees[1],
                manifest_sha256=None,
            )
            try:
                snap = snapshot.take_snapshot(
                    source,
                    store_repo,
                    self.paths.tmp,
                    limits,
                    trees,
                    _lockfiles_of(previous),
                    located,
                )
            except Exception:
                if not walk.problems():
                    raise
            if walk.problems():
                previous, snap = None, None
        if snap is None:
            snap = snapshot.take_snapshot(
                source, store_repo, self.paths.tmp, limits, None, None, located
            )
        progress = self._progress(previous, request)
        pending = store.list_evidence(self.db, task_id, pending=True)
        if (
            previous
            and not request.force
            and not pending
            and self._is_noop(previous, snap, request, task)
        ):
            return CheckpointResult(
                None,
                skipped=f"nothing changed since {previous.ref}; checkpoint skipped "
                "(use --force to record one anyway)",
            )
        return self._record_checkpoint(
            task, source, store_repo, snap, previous, request, progress, started, pending
        )

    def _validate_consumption(self, request: CheckpointRequest) -> None:
        if request.tokens_used is not None and request.tokens_used < 0:
            raise UsageError("--tokens-used must not be negative")
        if request.usd_used is not None and request.usd_used < 0:
            raise UsageError("--usd-used must not be negative")
        if request.max_file_bytes is not None and request.max_file_bytes <= 0:
            raise UsageError("the file size limit must be positive")

    @staticmethod
    def _progress(previous: Checkpoint | None, request: CheckpointRequest) -> _Progress:
        """Steps carried forward: done accumulates; a new todo list replaces the old one."""
        steps = (previous.manifest or {}).get("steps", {}) if previous else {}
        done = list(steps.get("done", []))
        for step in request.done:
            if step not in done:
                done.append(step)
        todo = list(request.todo) if request.todo else list(steps.get("todo", []))
        todo = [step for step in todo if step not in request.done]
        return _Progress(done=done, todo=todo)

    @staticmethod
    def _is_noop(
        previous: Checkpoint, snap: snapshot.Snapshot, request: CheckpointRequest, task: Task
    ) -> bool:
        same_state = (
            previous.worktree_tree == snap.worktree_tree
            and previous.index_tree == snap.index_tree
            and previous.base_commit == snap.base_commit
            and previous.branch == snap.branch
        )
        nothing_said = (
            not request.note
            and not request.done
            and not request.todo
            and request.tokens_used in (None, task.tokens_used)
            and request.usd_used in (None, task.usd_used)
        )
        return same_state and nothing_said

    def _record_checkpoint(
        self,
        task: Task,
        source: snapshot.SourceRepo,
        store_repo: Path,
        snap: snapshot.Snapshot,
        previous: Checkpoint | None,
        request: CheckpointRequest,
        progress: _Progress,
        started: float,
        pending: list[dict[str, Any]],
    ) -> CheckpointResult:
        created_at = clock.now_iso()
        with write_txn(self.db):
            seq = store.next_checkpoint_seq(self.db, task.id)
            store.insert_writing_checkpoint(
                self.db,
                task_id=task.id,
                seq=seq,
                reason=request.reason,
                note=self._seal_note(task.id, seq, request.note),
                created_at=created_at,
                writer_pid=os.getpid(),
                writer_host=os.uname().nodename,
            )
            self._event(
                task.id,
                "checkpoint",
                f"{task.id}@{seq}",
                "write",
                None,
                CheckpointState.WRITING.value,
                None,
                created_at,
            )
        try:
            return self._finish_checkpoint(
                task,
                source,
                store_repo,
                snap,
                previous,
                request,
                progress,
                started,
                seq,
                created_at,
                pending,
            )
        except BaseException as exc:
            failure = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            with write_txn(self.db):
                if store.mark_incomplete(self.db, task.id, seq, failure):
                    self._event(
                        task.id,
                        "checkpoint",
                        f"{task.id}@{seq}",
                        "fail",
                        CheckpointState.WRITING.value,
                        CheckpointState.INCOMPLETE.value,
                        failure,
                        clock.now_iso(),
                    )
            raise

    def _finish_checkpoint(
        self,
        task: Task,
        source: snapshot.SourceRepo,
        store_repo: Path,
        snap: snapshot.Snapshot,
        previous: Checkpoint | None,
        request: CheckpointRequest,
        progress: _Progress,
        started: float,
        seq: int,
        created_at: str,
        pending: list[dict[str, Any]],
    ) -> CheckpointResult:
        from core import snapshot
        from core.security.fingerprint import fingerprint_environment, load_or_create_key
        from core.snapshot import manifest

        base_tree = snap.base_tree or (
            snapshot.tree_of_commit(store_repo, snap.base_commit)
            if snap.base_commit
            else snapshot.EMPTY_TREE
        )
        changed = self._changed_since_base(store_repo, snap, base_tree, previous)
        lockfiles = (
            dict(snap.lockfiles)
            if snap.lockfiles is not None
            else snapshot.lockfiles_in(store_repo, snap.worktree_tree)
        )
        tokens_used = task.tokens_used if request.tokens_used is None else request.tokens_used
        usd_used = task.usd_used if request.usd_used is None else request.usd_used
        minutes_used = (clock.parse(created_at) - clock.parse(task.created_at)).total_seconds() / 60
        key = load_or_create_key(self.paths.fingerprint_key)
        document = manifest.build_manifest(
            task=task,
            seq=seq,
            reason=request.reason,
            note=request.note,
            created_at=created_at,
            parent_commit=previous.commit if previous else None,
            snapshot=snap,
            facts=snap.facts or snapshot.repo_facts(source),
            changed=changed,
            lockfiles=lockfiles,
            credentials=fingerprint_environment(key, task.credentials),
            done=progress.done,
            todo=progress.todo,
            tokens_used=tokens_used,
            usd_used=usd_used,
            minutes_used=minutes_used,
            environment=manifest.environment_identity(snapshot.git_version(self.paths.tmp)),
            max_file_bytes=request.max_file_bytes or self.config.max_file_bytes,
            creation_ms=int((time.monotonic() - started) * 1000),
            evidence=[manifest.evidence_entry(item) for item in pending],
            harness_session=store.latest_harness_session(self.db, task.id),
        )
        document["side_effects"], document["pending_approvals"] = self._ledger_sections(task.id)
        sealed_manifest = self.keys.seal(
            task.id, f"checkpoint/{seq}/manifest", manifest.encode(document)
        )
        manifest_sha256 = hashlib.sha256(sealed_manifest).hexdigest()
        header = manifest.build_header(
            task_id=task.id,
            seq=seq,
            created_at=created_at,
            manifest_sha256=manifest_sha256,
            key_ids=[self.keys.data_key_id(task.id)],
        )
        commit, commit_bytes = snapshot.write_checkpoint_commit(
            store_repo,
            header=manifest.encode(header),
            manifest=sealed_manifest,
            snapshot=snap,
            parent=previous.commit if previous else None,
            message=f"pitstop checkpoint {task.id}@{seq} ({request.reason.value})",
            timestamp=clock.git_timestamp(created_at),
        )
        problems = snapshot.verify_checkpoint(
            store_repo,
            commit=commit,
            worktree_tree=snap.worktree_tree,
            index_tree=snap.index_tree,
            manifest_sha256=manifest_sha256,
            # The snapshot checked each object it added, beyond trees walked just before.
            objects_present=snap.objects_present,
        ).problems()
        if problems:
            raise DamagedCheckpointError(
                f"checkpoint {task.id}@{seq} did not verify after writing: {problems[0]}"
            )
        snapshot.update_checkpoint_ref(store_repo, task.id, commit)
        completed_at = clock.now_iso()
        creation_ms = int((time.monotonic() - started) * 1000)
        bytes_added = snap.bytes_added + commit_bytes
        new_status = _STATUS_AFTER.get(request.reason, task.status)
        if task.status in (TaskStatus.PAUSED, TaskStatus.WAITING) and request.reason in (
            CheckpointReason.MILESTONE,
        ):
            new_status = TaskStatus.RUNNING
        with write_txn(self.db):
            store.complete_checkpoint(
                self.db,
                task.id,
                seq,
                commit=commit,
                worktree_tree=snap.worktree_tree,
                index_tree=snap.index_tree,
                base_commit=snap.base_commit,
                branch=snap.branch,
                manifest=sealed_manifest,
                manifest_sha256=manifest_sha256,
                completed_at=completed_at,
                creation_ms=creation_ms,
                bytes_added=bytes_added,
                changed_count=len(changed),
                left_out_count=len(snap.left_out),
            )
            store.attach_evidence(self.db, task.id, [item["id"] for item in pending], seq)
            for lease in store.active_resumes(self.db, task.id):
                # The resumed agent made progress: its resume is over.
                store.update_resume(self.db, lease["id"], state="done", finished_at=completed_at)
            store.update_task(
                self.db,
                task.id,
                status=new_status,
                tokens_used=tokens_used,
                usd_used=usd_used,
                updated_at=completed_at,
            )
            self._event(
                task.id,
                "checkpoint",
                f"{task.id}@{seq}",
                "complete",
                CheckpointState.WRITING.value,
                CheckpointState.COMPLETE.value,
                request.note,
                completed_at,
            )
            if new_status != task.status:
                self._event(
                    task.id,
                    "task",
                    task.id,
                    "status",
                    task.status.value,
                    new_status.value,
                    f"checkpoint {seq} ({request.reason.value})",
                    completed_at,
                )
        return CheckpointResult(self._open(store.get_checkpoint(self.db, task.id, seq)))

    @staticmethod
    def _changed_since_base(
        store_repo: Path, snap: snapshot.Snapshot, base_tree: str, previous: Checkpoint | None
    ) -> list[ChangedFile]:
        """The files the snapshot changed against its base commit; a previous checkpoint of
        the same base and worktree trees already lists them (a function of the two trees)."""
        from core import snapshot

        recorded = (previous.manifest or {}).get("snapshot", {}) if previous else {}
        if (
            previous is not None
            and previous.worktree_tree == snap.worktree_tree
            and previous.base_commit == snap.base_commit
            and isinstance(recorded.get("changed_files"), list)
        ):
            try:
                return [ChangedFile(**entry) for entry in recorded["changed_files"]]
            except TypeError:
                pass  # an older or foreign shape: ask git
        return snapshot.changed_files(store_repo, base_tree, snap.worktree_tree)

    @contextmanager
    def _task_lock(self, task_id: str) -> Iterator[None]:
        """Serialise checkpoint writers of one task; the OS drops the lock if a writer dies."""
        lock_dir = self.paths.tmp / "locks"
        lock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock_dir / f"{task_id}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _writer_alive(self, task_id: str) -> bool:
        """True while some process holds the task's checkpoint lock."""
        path = self.paths.tmp / "locks" / f"{task_id}.lock"
        if not path.exists():
            return False
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def _expire_stale_writers(self, task_id: str) -> None:
        """Durably mark `writing` checkpoints whose writer died as `incomplete` (lock held)."""
        stale = store.writing_seqs(self.db, task_id)
        if not stale:
            return
        now = clock.now_iso()
        failure = "the process writing this checkpoint stopped before it completed"
        with write_txn(self.db):
            for seq in stale:
                if store.mark_incomplete(self.db, task_id, seq, failure):
                    self._event(
                        task_id,
                        "checkpoint",
                        f"{task_id}@{seq}",
                        "fail",
                        CheckpointState.WRITING.value,
                        CheckpointState.INCOMPLETE.value,
                        failure,
                        now,
                    )

    def _displayed(self, checkpoint: Checkpoint) -> Checkpoint:
        """A `writing` checkpoint whose writer is gone is shown as `incomplete`."""
        if checkpoint.state is CheckpointState.WRITING and not self._writer_alive(
            checkpoint.task_id
        ):
            return checkpoint._replace(
                state=CheckpointState.INCOMPLETE,
                failure="the process writing this checkpoint stopped before it completed",
            )
        return checkpoint

    def _seal_note(self, task_id: str, seq: int, note: str | None) -> bytes | None:
        if not note:
            return None
        return self.keys.seal(task_id, f"checkpoint/{seq}/note", note.encode())

    def _open(self, checkpoint: Checkpoint, *, strict: bool = True) -> Checkpoint:
        """Decrypt a checkpoint's note and manifest (refusing a manifest from the future).

        With `strict` off (lists), content that cannot be decrypted shows as a marker instead.
        """
        from core.security.crypto import DecryptError, MasterKeyError
        from core.snapshot import manifest

        task_id, seq = checkpoint.task_id, checkpoint.seq
        try:
            note = (
                self.keys.open(
                    task_id,
                    f"checkpoint/{seq}/note",
                    checkpoint.sealed_note,
                    f"the note of {checkpoint.ref}",
                ).decode("utf-8", "replace")
                if checkpoint.sealed_note
                else None
            )
            document = None
            if checkpoint.sealed_manifest:
                plain = self.keys.open(
                    task_id,
                    f"checkpoint/{seq}/manifest",
                    checkpoint.sealed_manifest,
                    f"the manifest of {checkpoint.ref}",
                )
                document = manifest.parse(plain, checkpoint.ref)
        except (MasterKeyError, DecryptError):
            if strict:
                raise
            return checkpoint._replace(note=store.UNREADABLE)
        return checkpoint._replace(
            note=note, manifest=document, sealed_note=None, sealed_manifest=None
        )

    def list_checkpoints(self, task_id: str) -> list[Checkpoint]:
        """A task's checkpoints, oldest first; half-written ones show as incomplete."""
        store.get_task(self.db, task_id)
        return [
            self._displayed(self._open(c, strict=False))
            for c in store.list_checkpoints(self.db, task_id)
        ]

    def get_checkpoint(self, ref: str, *, with_content: bool = True) -> Checkpoint:
        """A checkpoint by `TASK@SEQ` (`TASK` alone: its newest), note and manifest decrypted."""
        task_id, seq = parse_checkpoint_ref(ref)
        store.get_task(self.db, task_id)
        if seq is None:
            seq = store.latest_seq(self.db, task_id)
            if seq is None:
                raise NotFoundError(
                    f"task {task_id} has no checkpoints yet; run `pitstop checkpoint {task_id}`"
                )
        found = store.get_checkpoint(self.db, task_id, seq)
        return self._displayed(self._open(found) if with_content else found)

    def _store_repo_for(self, task_id: str) -> Path:
        return self.paths.repos / store.get_task(self.db, task_id).store_repo

    def verify(self, checkpoint: Checkpoint, *, deep: bool = True) -> list[str]:
        """Problems found re-reading a checkpoint from the store (empty when it is sound)."""
        from core import snapshot

        if checkpoint.state is not CheckpointState.COMPLETE:
            return [
                f"checkpoint {checkpoint.ref} is {checkpoint.state.value}: "
                f"{checkpoint.failure or 'not complete'}"
            ]
        assert checkpoint.commit and checkpoint.worktree_tree and checkpoint.index_tree
        return snapshot.verify_checkpoint(
            self._store_repo_for(checkpoint.task_id),
            commit=checkpoint.commit,
            worktree_tree=checkpoint.worktree_tree,
            index_tree=checkpoint.index_tree,
            manifest_sha256=checkpoint.manifest_sha256,
            deep=deep,
        ).problems()

    def _require_sound(self, checkpoint: Checkpoint, *, deep: bool = True) -> Path:
        problems = self.verify(checkpoint, deep=deep)
        if problems:
            raise DamagedCheckpointError(
                f"checkpoint {checkpoint.ref} is damaged: {problems[0]}"
                if checkpoint.state is CheckpointState.COMPLETE
                else problems[0]
            )
        return self._store_repo_for(checkpoint.task_id)

    def diff(self, ref: str, against: str = "base", paths: Sequence[str] = ()) -> str:
        """A unified diff of a checkpoint's snapshot against its base commit or the previous one."""
        from core import snapshot

        checkpoint = self.get_checkpoint(ref, with_content=False)
        store_repo = self._require_sound(checkpoint)
        old_tree = self._comparison_tree(checkpoint, against, store_repo)
        assert checkpoint.worktree_tree
        return snapshot.unified_diff(store_repo, old_tree, checkpoint.worktree_tree, paths)

    def _comparison_tree(self, checkpoint: Checkpoint, against: str, store_repo: Path) -> str:
        from core import snapshot

        if against == "base":
            if not checkpoint.base_commit:
                return snapshot.EMPTY_TREE
            return snapshot.tree_of_commit(store_repo, checkpoint.base_commit)
        if against == "previous":
            earlier = [
                c
                for c in store.list_checkpoints(self.db, checkpoint.task_id)
                if c.seq < checkpoint.seq and c.state is CheckpointState.COMPLETE
            ]
            if not earlier or not earlier[-1].worktree_tree:
                return self._comparison_tree(checkpoint, "base", store_repo)
            return earlier[-1].worktree_tree
        raise UsageError(f"invalid --against {against!r}: use base or previous")

    def changed_files(self, ref: str, against: str = "base") -> list[Any]:
        """Per-file status and line counts of a checkpoint against base or previous."""
        from core import snapshot

        checkpoint = self.get_checkpoint(ref, with_content=False)
        store_repo = self._require_sound(checkpoint)
        assert checkpoint.worktree_tree
        old_tree = self._comparison_tree(checkpoint, against, store_repo)
        return snapshot.changed_files(store_repo, old_tree, checkpoint.worktree_tree)

    def checkout(self, ref: str, into: str | os.PathLike[str]) -> int:
        """Materialise a complete checkpoint's working tree, byte-exact, into a new directory."""
        from core import snapshot

        checkpoint = self.get_checkpoint(ref, with_content=False)
        store_repo = self._require_sound(checkpoint, deep=False)
        assert checkpoint.worktree_tree
        target = Path(into).expanduser().absolute()
        return snapshot.materialise(store_repo, checkpoint.worktree_tree, target, self.paths.tmp)

    # --- evidence --------------------------------------------------------------------------

    def run_command(
        self,
        task_id: str,
        argv: Sequence[str],
        *,
        label: str | None = None,
        timeout: float | None = None,
        cwd: str | os.PathLike[str] | None = None,
        out_fd: int = 1,
        err_fd: int = 2,
        use_pty: bool | None = None,
        limits: evidence.EvidenceLimits | None = None,
    ) -> tuple[RunOutcome, evidence.Evidence]:
        """Run a command with live output and record what it showed as evidence on the task."""
        from core.evidence import storage as evidence
        from core.evidence.capture import check_startable, run_captured

        self._require_open_task(task_id)
        workdir = Path(cwd).expanduser().absolute() if cwd else Path.cwd()
        check_startable(argv, workdir)
        recorder = evidence.EvidenceRecorder(
            self.db,
            self.keys,
            task_id,
            source="run",
            label=label,
            command=evidence.command_record(argv, str(workdir)),
            limits=limits or evidence.EvidenceLimits(),
        )
        try:
            outcome = run_captured(
                argv,
                sink=recorder.feed,
                cwd=workdir,
                timeout=timeout,
                out_fd=out_fd,
                err_fd=err_fd,
                use_pty=use_pty,
            )
        except CommandStartError:
            recorder.discard()  # nothing ran, so nothing is recorded (invariant 7)
            raise
        except BaseException as exc:
            recorder.abort(getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")
            raise
        item = recorder.finish(
            exit_code=None if outcome.signal else outcome.returncode,
            signal=outcome.signal,
            timed_out=outcome.timed_out,
            duration_ms=outcome.duration_ms,
        )
        self._record_evidence_event(item)
        return outcome, item

    def add_evidence_file(
        self,
        task_id: str,
        path: str | os.PathLike[str],
        *,
        command: str | None = None,
        exit_code: int | None = None,
        duration_s: float | None = None,
        label: str | None = None,
        limits: evidence.EvidenceLimits | None = None,
    ) -> evidence.Evidence:
        """Record output a harness captured itself (a log file) as evidence."""
        from core.evidence import storage as evidence

        self._require_open_task(task_id)
        if duration_s is not None and duration_s < 0:
            raise UsageError("--duration must not be negative")
        source = Path(path).expanduser()
        try:
            handle = source.open("rb")
        except OSError as exc:
            raise UsageError(f"cannot read {source}: {exc.strerror}") from exc
        with handle:
            recorder = evidence.EvidenceRecorder(
                self.db,
                self.keys,
                task_id,
                source="file",
                label=label,
                command=evidence.command_record(
                    [command] if command else [], None, file=str(source.absolute())
                ),
                limits=limits or evidence.EvidenceLimits(),
            )
            try:
                while block := handle.read(evidence.DEFAULT_CHUNK_BYTES):
                    recorder.feed(block)
            except OSError as exc:  # the file went away or a disk failed halfway through
                recorder.abort(f"reading {source} failed: {exc.strerror or exc}")
                raise PitstopError(
                    f"cannot read {source} to the end ({exc.strerror or exc}); the evidence item "
                    f"{recorder.id} is marked incomplete"
                ) from exc
            except BaseException:
                recorder.abort("recording was interrupted")
                raise
        item = recorder.finish(
            exit_code=exit_code,
            duration_ms=int(duration_s * 1000) if duration_s is not None else None,
        )
        self._record_evidence_event(item)
        return item

    def _require_open_task(self, task_id: str) -> Task:
        task = store.get_task(self.db, task_id)
        if task.status.is_final:
            raise ConflictError(f"task {task_id} is {task.status.value}; it takes no evidence")
        return task

    def _record_evidence_event(self, item: evidence.Evidence) -> None:
        with write_txn(self.db):
            self._event(
                item.task_id,
                "evidence",
                str(item.id),
                "record",
                None,
                item.outcome,
                item.label,
                clock.now_iso(),
            )

    def list_evidence(self, spec: str) -> list[evidence.Evidence]:
        """Evidence of a task (`TASK`) or of one of its checkpoints (`TASK@SEQ`), oldest first."""
        from core.evidence import storage as evidence

        task_id, seq = parse_checkpoint_ref(spec)
        store.get_task(self.db, task_id)
        if seq is not None:
            store.get_checkpoint(self.db, task_id, seq)
        rows = store.list_evidence(self.db, task_id, checkpoint_seq=seq)
        return [evidence.evidence_from_row(row) for row in rows]

    def get_evidence(self, evidence_id: int, *, decrypt: bool = True) -> evidence.Evidence:
        """One evidence item, with its command and tail decrypted."""
        from core.evidence import storage as evidence

        return evidence.load_evidence(self.db, self.keys, evidence_id, decrypt=decrypt)

    def evidence_output(self, evidence_id: int) -> Iterator[bytes]:
        """The full kept (redacted) output of an evidence item, streamed chunk by chunk."""
        from core.evidence import storage as evidence

        item = self.get_evidence(evidence_id, decrypt=False)
        return evidence.iter_output(self.db, self.keys, item)

    def evidence_last_lines(self, evidence_id: int, count: int) -> list[bytes]:
        """The last `count` lines of an evidence item's output, read from its end."""
        from core.evidence import storage as evidence

        item = self.get_evidence(evidence_id, decrypt=False)
        return evidence.last_lines(self.db, self.keys, item, count)

    # --- side effects and approvals --------------------------------------------------------

    def _ledger(self) -> Ledger:
        from core.ledger.effects import Ledger

        return Ledger(
            self.db, self._event, self.actor, self.paths.tmp / "locks" / "effects", self.keys
        )

    def _approvals(self) -> Approvals:
        from core.ledger.approvals import Approvals

        return Approvals(self.db, self._event, self.actor, self.keys)

    def propose_effect(
        self,
        task_id: str,
        key: str,
        kind: str,
        *,
        target: str | None = None,
        check: str | None = None,
        needs_approval: bool = False,
    ) -> ProposeResult:
        """Record a side effect as `proposed`; an existing key returns the existing effect."""
        return self._ledger().propose(
            task_id, key, kind, target=target, check=check, needs_approval=needs_approval
        )

    def move_effect(
        self,
        task_id: str,
        key: str,
        to_state: EffectState,
        *,
        note: str | None = None,
        reason: str | None = None,
    ) -> SideEffect:
        """Start, confirm, fail or mark uncertain a side effect; settling needs a reason."""
        return self._ledger().move(task_id, key, to_state, note=note, reason=reason)

    def get_effect(self, task_id: str, key: str) -> SideEffect:
        """One side effect by task and idempotency key."""
        return self._ledger().get(task_id, key)

    def list_effects(
        self, task_id: str | None = None, states: Sequence[EffectState] = ()
    ) -> list[SideEffect]:
        """Side effects in the order they were proposed, optionally filtered."""
        return self._ledger().find(task_id, states)

    def unsettled_effects(self, task_id: str) -> list[SideEffect]:
        """The task's effects whose outcome nobody knows: they block a resume (invariant 3)."""
        return [effect for effect in self.list_effects(task_id) if effect.needs_settling]

    def check_effect(
        self, task_id: str, key: str, command: str | None = None, timeout: float | None = None
    ) -> CheckOutcome:
        """Settle an unsettled side effect by running its precondition check."""
        return self._ledger().check(task_id, key, command, timeout)

    def guard_effect(self, request: GuardRequest, notice: Notice | None = None) -> GuardOutcome:
        """Perform a side effect's action at most once; see `core.ledger.effects`."""
        return self._ledger().guard(request, notice)

    def request_approval(
        self,
        task_id: str,
        action: str,
        *,
        effect_key: str | None = None,
        risk: Risk = Risk.MEDIUM,
        expires_in: str | None = None,
        checkpoint: bool = False,
    ) -> Approval:
        """Ask for a human decision; the task waits, after a `before-wait` checkpoint if asked."""
        from core.ledger.approvals import parse_duration
        from core.redaction.free_text import persistable

        approvals = self._approvals()
        lifetime = parse_duration(expires_in) if expires_in is not None else None
        approvals.validate_request(task_id, action, effect_key)
        checkpoint_seq: int | None = None
        if checkpoint:
            taken = self.checkpoint(
                task_id,
                CheckpointRequest(
                    reason=CheckpointReason.BEFORE_WAIT,
                    note=f"waiting for approval: {persistable(action)[:200]}",
                    force=True,
                ),
            )
            checkpoint_seq = taken.checkpoint.seq if taken.checkpoint else None
        return approvals.request(
            task_id,
            action,
            effect_key=effect_key,
            risk=risk,
            expires_in=lifetime,
            checkpoint_seq=checkpoint_seq,
        )

    def decide_approval(self, approval_id: str, approve: bool, reason: str) -> Approval:
        """Approve or reject a pending approval, once, as this engine's operator."""
        return self._approvals().decide(approval_id, approve, reason)

    def get_approval(self, approval_id: str) -> Approval:
        """One approval by `TASK:N`, with expiry applied."""
        return self._approvals().get(approval_id)

    def list_approvals(
        self, task_id: str | None = None, pending_only: bool = False
    ) -> list[Approval]:
        """Approvals across tasks (the inbox) or of one task, oldest first."""
        return self._approvals().find(task_id, pending_only)

    def _ledger_sections(self, task_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The manifest's side-effect ledger and pending approvals, as they stand now."""
        side_effects = [
            {
                "key": e.key,
                "kind": e.kind,
                "state": e.state.value,
                "target": e.target,
                "needs_approval": e.needs_approval,
                "attempts": e.attempts,
                "exit_code": e.exit_code,
                "updated_at": e.updated_at,
            }
            for e in store.list_effects(self.db, task_id, keys=self.keys)
        ]
        pending = [
            {
                "id": a.id,
                "action": a.action,
                "risk": a.risk.value,
                "effect": a.effect_key,
                "requested_by": a.requested_by,
                "requested_at": a.requested_at,
                "expires_at": a.expires_at,
            }
            for a in self.list_approvals(task_id, pending_only=True)
        ]
        return side_effects, pending

    # --- validation and resume ---------------------------------------------------------------

    def validate(
        self,
        ref: str,
        *,
        into: str | os.PathLike[str] | None = None,
        offline: bool = False,
        progress: Callable[[Finding], None] | None = None,
    ) -> ValidationReport:
        """Run every restore check on a checkpoint; the run is stored and audited."""
        from dataclasses import replace

        from core.restore.validate import Verdict, run_checks

        inputs = self._validation_inputs(ref, into, offline)
        report = run_checks(inputs, progress)
        if report.verdict is Verdict.STALE:
            report = replace(report, advice=self._stale_advice(inputs.task.id))
        seq = inputs.seq
        now = clock.now_iso()
        with write_txn(self.db):
            store.insert_validation(
                self.db,
                task_id=inputs.task.id,
                seq=seq,
                verdict=report.verdict.value,
                findings=[f.as_dict() for f in report.findings],
                duration_ms=report.duration_ms,
                at=now,
                actor=self.actor,
                interface=self.interface.value,
            )
            self._event(
                inputs.task.id,
                "checkpoint",
                report.ref,
                "validate",
                None,
                report.verdict.value,
                None,
                now,
            )
        return report

    def _validation_inputs(
        self, ref: str, into: str | os.PathLike[str] | None, offline: bool
    ) -> ValidationInputs:
        from core import snapshot
        from core.restore.validate import ValidationInputs
        from core.security.fingerprint import load_or_create_key

        task_id, seq = parse_checkpoint_ref(ref)
        task = store.get_task(self.db, task_id)
        if seq is None:
            seq = store.latest_seq(self.db, task_id)
            if seq is None:
                raise NotFoundError(f"task {task_id} has no checkpoints yet")
        checkpoint: Checkpoint | None = None
        schema_error = None
        try:
            checkpoint = self.get_checkpoint(f"{task_id}@{seq}")
        except SchemaTooNewError as exc:
            schema_error = exc.message
        if checkpoint is not None and checkpoint.commit and schema_error is None:
            schema_error = self._header_schema_error(task, checkpoint)
        damage = (
            self.verify(checkpoint)
            if checkpoint and checkpoint.state is CheckpointState.COMPLETE
            else []
        )
        source: snapshot.SourceRepo | None = None
        source_error = None
        try:
            source = snapshot.resolve_source_repo(task.repo_root)
        except PitstopError as exc:
            source_error = f"the task's repository is gone: {exc.message}"
        return ValidationInputs(
            task=task,
            seq=seq,
            checkpoint=checkpoint,
            schema_error=schema_error,
            damage=damage,
            source=source,
            source_error=source_error,
            store_repo=self.paths.repos / task.store_repo,
            scratch=self.paths.tmp,
            effects=self.list_effects(task_id),
            approvals=self.list_approvals(task_id),
            live_leases=self._live_leases(task_id),
            fingerprint_key=load_or_create_key(self.paths.fingerprint_key),
            ttl_days=self.config.checkpoint_ttl_days,
            harness_config=self.config.harness(task.harness.name) if task.harness else {},
            into=Path(into).expanduser().absolute() if into else None,
            offline=offline,
        )

    def _stale_advice(self, task_id: str) -> str | None:
        """DESIGN §5: weigh resuming a stale checkpoint against a fresh run, with §4's terms."""
        from core.economics import model as economics

        try:
            estimate = self.estimate(task_id)
        except PitstopError:
            return None
        result = estimate.result
        fresh = result.exposure_usd
        cost = result.scenario.checkpoint
        resume = cost.restore_usd + cost.validation_usd
        rate = result.scenario.replay.human_usd_per_hour
        if fresh <= resume:
            return (
                f"a fresh run is cheaper: replaying costs about {economics.money(fresh)}, "
                f"restoring and validating about {economics.money(resume)} before fixing the drift"
            )
        if rate <= 0:
            return (
                "resuming is cheaper unless fixing the drift costs more than "
                f"{economics.money(fresh - resume)} "
                f"(a fresh run costs about {economics.money(fresh)})"
            )
        minutes = (fresh - resume) / rate * 60
        return (
            f"resuming is cheaper unless fixing the drift takes more than {minutes:.0f} minutes "
            f"at {economics.money(rate)}/h: a fresh run costs about {economics.money(fresh)} "
            f"({result.replay_minutes:.0f} min to rebuild and re-orient), restore and validation "
            f"about {economics.money(resume)}"
        )

    def _header_schema_error(self, task: Task, checkpoint: Checkpoint) -> str | None:
        """A `pitstop.json` header from a newer Pitstop makes the checkpoint unsupported."""
        from core import snapshot
        from core.snapshot import manifest

        assert checkpoint.commit
        try:
            raw = snapshot.read_blob(
                self.paths.repos / task.store_repo, checkpoint.commit, "pitstop.json"
            )
            header = json.loads(raw)
        except (PitstopError, ValueError):
            return None  # a missing or unreadable header is damage, reported by `complete`
        schema = header.get("schema") if isinstance(header, dict) else None
        if schema != manifest.HEADER_SCHEMA:
            return (
                f"checkpoint header schema {schema!r} is not {manifest.HEADER_SCHEMA!r}; "
                "it was written by a newer Pitstop"
            )
        return None

    def _live_leases(self, task_id: str) -> list[str]:
        """Descriptions of resume leases on the task that are still live."""
        live = []
        now = clock.now()
        host = os.uname().nodename
        for row in store.active_resumes(self.db, task_id):
            if clock.parse(row["lease_until"]) <= now:
                continue
            if row["holder_host"] == host and row["launched"] and not _pid_alive(row["holder_pid"]):
                continue
            live.append(
                f"resume {row['id']} of {task_id}@{row['seq']} by {row['actor']} "
                f"(until {row['lease_until'][:19].replace('T', ' ')} UTC)"
            )
        return live

    def resume(
        self,
        ref: str,
        *,
        into: str | os.PathLike[str] | None = None,
        in_place: bool = False,
        accept_stale: bool = False,
        offline: bool = False,
    ) -> ResumePlan:
        """Validate, take the lease, restore the snapshot and write the brief (no launch yet)."""
        from core import snapshot
        from core.restore.resume import ResumePlan, build_brief, harness_command, write_brief
        from core.restore.validate import Status as FindingStatus
        from core.restore.validate import Verdict

        if into and in_place:
            raise UsageError("choose --into DIR or --in-place, not both")
        task_id, _seq = parse_checkpoint_ref(ref)
        task = store.get_task(self.db, task_id)
        source = snapshot.resolve_source_repo(task.repo_root)
        target = (
            source.toplevel
            if in_place
            else Path(into).expanduser().absolute()
            if into
            else _default_resume_dir(source.toplevel, task.id)
        )
        report = self.validate(ref, into=None if in_place else target, offline=offline)
        if report.verdict in (Verdict.BLOCKED, Verdict.UNSUPPORTED) or (
            report.verdict is Verdict.STALE and not accept_stale
        ):
            worst = next(f for f in report.findings if f.status is FindingStatus.FAIL)
            hint = (
                " (use --yes to resume a stale checkpoint anyway)"
                if report.verdict is Verdict.STALE
                else ""
            )
            raise ResumeRefusedError(
                f"{report.ref} is {report.verdict.value}: {worst.message}; {worst.fix}{hint}",
                report.verdict.exit_code,
            )
        checkpoint = self.get_checkpoint(report.ref)
        resume_id = self._take_lease(checkpoint, report.verdict.value, target)
        try:
            started = time.monotonic()
            store_repo = self.paths.repos / task.store_repo
            assert checkpoint.commit and checkpoint.worktree_tree and checkpoint.index_tree
            branch = self._restore(source, store_repo, checkpoint, target, in_place)
            restore_ms = int((time.monotonic() - started) * 1000)
            # Accepted stale: the agent must know why it was stale, not only what warned.
            warnings = [
                f"{f.check}: {f.message}"
                + (f" (fix: {f.fix})" if f.status is FindingStatus.FAIL else "")
                for f in report.findings
                if f.status is not FindingStatus.PASS
            ]
            brief = build_brief(
                task=task,
                checkpoint=checkpoint,
                evidence=[
                    item
                    for item in self.list_evidence(task.id)
                    if item.checkpoint_seq is not None and item.checkpoint_seq <= checkpoint.seq
                ],
                effects=self.list_effects(task.id),
                approvals=self.list_approvals(task.id),
                warnings=warnings,
                workdir=target,
                branch=branch,
            )
            brief_md, brief_json = write_brief(
                self.paths.root / "resumes" / f"{task.id}@{checkpoint.seq}-{resume_id}", brief
            )
        except BaseException as exc:
            failure = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            self._end_resume(resume_id, "failed", failure)
            raise
        now = clock.now_iso()
        with write_txn(self.db):
            store.update_resume(
                self.db,
                resume_id,
                workdir=str(target),
                branch=branch,
                brief_path=str(brief_md),
                restore_ms=restore_ms,
            )
            store.update_task(self.db, task.id, status=TaskStatus.RESUMING, updated_at=now)
            self._event(
                task.id,
                "checkpoint",
                checkpoint.ref,
                "resume",
                task.status.value,
                TaskStatus.RESUMING.value,
                f"into {target}",
                now,
            )
        session = ((checkpoint.manifest or {}).get("harness") or {}).get("session_id") or ""
        values = {
            "brief": str(brief_md),
            "workdir": str(target),
            "task": task.id,
            "checkpoint": checkpoint.ref,
            "session": session,
        }
        template = self.config.harness(task.harness.name).get("resume") if task.harness else None
        return ResumePlan(
            resume_id=resume_id,
            task_id=task.id,
            seq=checkpoint.seq,
            workdir=target,
            branch=branch,
            brief_md=brief_md,
            brief_json=brief_json,
            restore_ms=restore_ms,
            verdict=report.verdict.value,
            warnings=tuple(warnings),
            command=harness_command(template, task.harness.name if task.harness else None, values),
            env={
                "PITSTOP_TASK": task.id,
                "PITSTOP_CHECKPOINT": checkpoint.ref,
                "PITSTOP_BRIEF": str(brief_md),
                "PITSTOP_WORKDIR": str(target),
            },
        )

    def _take_lease(self, checkpoint: Checkpoint, verdict: str, target: Path) -> int:
        from core.restore.validate import Verdict

        now = clock.now()
        until = clock.to_iso(now + timedelta(minutes=self.config.lease_minutes))
        with write_txn(self.db):
            live = self._live_leases(checkpoint.task_id)
            if live:
                raise ResumeRefusedError(
                    f"{checkpoint.ref} is blocked: {live[0]} holds the lease; wait for it to "
                    "finish, or release it if its holder is gone",
                    Verdict.BLOCKED.exit_code,
                )
            for row in store.active_resumes(self.db, checkpoint.task_id):
                store.update_resume(
                    self.db, row["id"], state="expired", finished_at=clock.to_iso(now)
                )
            resume_id = store.insert_resume(
                self.db,
                task_id=checkpoint.task_id,
                seq=checkpoint.seq,
                state="active",
                verdict=verdict,
                workdir=str(target),
                holder_pid=os.getpid(),
                holder_host=os.uname().nodename,
                lease_until=until,
                started_at=clock.to_iso(now),
                actor=self.actor,
            )
            self._event(
                checkpoint.task_id,
                "resume",
                str(resume_id),
                "lease",
                None,
                "active",
                None,
                clock.to_iso(now),
            )
        return resume_id

    def _restore(
        self,
        source: snapshot.SourceRepo,
        store_repo: Path,
        checkpoint: Checkpoint,
        target: Path,
        in_place: bool,
    ) -> str | None:
        from core.restore import worktree

        assert checkpoint.commit and checkpoint.worktree_tree and checkpoint.index_tree
        if not checkpoint.base_commit:
            raise UsageError(
                f"{checkpoint.ref} was taken before the repository's first commit; "
                f"use `pitstop checkout {checkpoint.ref} --into DIR` instead"
            )
        if in_place:
            clean, why = worktree.is_clean_at(source, checkpoint.base_commit)
            if not clean:
                raise UsageError(f"cannot resume in place: {why}; commit or stash, or use --into")
            worktree.bring_objects(source, store_repo, checkpoint.commit)
            worktree.restore_into(source.toplevel, checkpoint.worktree_tree, checkpoint.index_tree)
            return checkpoint.branch
        if (
            target.is_dir()
            and any(target.iterdir())
            and worktree.tree_equals_directory(
                store_repo, checkpoint.worktree_tree, target, self.paths.tmp
            )
        ):
            return None  # already restored there (validation passed it): reuse it as it is
        worktree.require_empty_target(target)
        worktree.bring_objects(source, store_repo, checkpoint.commit)
        branch = worktree.add_worktree(
            source, target, f"pitstop/{checkpoint.task_id}", checkpoint.base_commit
        )
        worktree.restore_into(target, checkpoint.worktree_tree, checkpoint.index_tree)
        return branch

    def launch(self, plan: ResumePlan) -> int:
        """Run the task's harness in the restored worktree (blocking); return its exit code."""
        import subprocess

        with write_txn(self.db):
            store.update_resume(self.db, plan.resume_id, launched=1)
        env = {**os.environ, **plan.env}
        try:
            completed = subprocess.run(list(plan.command), cwd=plan.workdir, env=env, check=False)
        except OSError as exc:
            self._end_resume(plan.resume_id, "failed", str(exc))
            raise UsageError(f"cannot launch the harness: {exc}") from exc
        code = completed.returncode if completed.returncode >= 0 else 128 - completed.returncode
        with write_txn(self.db):
            store.update_resume(self.db, plan.resume_id, exit_code=code)
            self._event(
                plan.task_id,
                "resume",
                str(plan.resume_id),
                "launch-exit",
                None,
                str(code),
                " ".join(plan.command[2:])[:200],
                clock.now_iso(),
            )
        self._end_resume(plan.resume_id, "done", None)
        return code

    def _end_resume(self, resume_id: int, state: str, failure: str | None) -> None:
        with write_txn(self.db):
            store.update_resume(self.db, resume_id, state=state, finished_at=clock.now_iso())
            if failure:
                self._event(
                    None,
                    "resume",
                    str(resume_id),
                    "fail",
                    "active",
                    state,
                    failure,
                    clock.now_iso(),
                )

    def judge_resume(self, task_id: str, accepted: bool, reason: str) -> dict[str, Any]:
        """Record whether the resumed work was accepted; releases the task's lease."""
        from core.redaction.free_text import persistable

        if not reason.strip():
            raise UsageError("say why with --reason")
        now = clock.now_iso()
        with write_txn(self.db):
            store.get_task(self.db, task_id)
            latest = store.latest_resume(self.db, task_id)
            if latest is None:
                raise NotFoundError(
                    f"task {task_id} was never resumed; nothing to accept or reject"
                )
            store.update_resume(
                self.db,
                latest["id"],
                keys=self.keys,
                accepted=int(accepted),
                accept_reason=persistable(reason),
                state="done" if latest["state"] == "active" else latest["state"],
                finished_at=latest["finished_at"] or now,
            )
            verdict = "accepted" if accepted else "rejected"
            self._event(task_id, "resume", str(latest["id"]), verdict, None, verdict, reason, now)
        return {"task": task_id, "resume": latest["id"], "accepted": accepted, "reason": reason}

    def resume_records(self, task_id: str) -> list[dict[str, Any]]:
        """Every resume of a task, oldest first, its accept/reject reason decrypted (or marked)."""
        store.get_task(self.db, task_id)
        return store.list_resumes(self.db, task_id, self.keys)

    # --- evidence output, read chunk by chunk (the dashboard's lazy log view) -----------------

    def evidence_chunk_index(self, evidence_id: int) -> list[dict[str, Any]]:
        """Where each stored chunk of an item's output sits: seq, offset, raw_len, lines."""
        item = self.get_evidence(evidence_id, decrypt=False)
        chunks = store.list_chunks(self.db, evidence_id)
        if not chunks and item.stored_bytes:
            self.keys.data_key(item.task_id, create=False)  # gc took the output with the key
        return [
            {
                "seq": c["seq"],
                "offset": c["offset"],
                "raw_len": c["raw_len"],
                "first_line": c["first_line"],
                "line_count": c["line_count"],
            }
            for c in chunks
        ]

    def evidence_chunk(self, evidence_id: int, seq: int) -> bytes:
        """One chunk of an item's kept (redacted) output, decrypted and decompressed."""
        from core.evidence import storage as evidence

        item = self.get_evidence(evidence_id, decrypt=False)
        return next(evidence.read_chunks(self.db, self.keys, item, [seq]))

    # --- harness sessions (hooks) ------------------------------------------------------------

    def session_task(self, harness: str, session_id: str) -> Task | None:
        """The task a harness session already feeds, or None for a session never seen."""
        task_id = store.session_task_id(self.db, harness, session_id)
        return store.get_task(self.db, task_id) if task_id else None

    def link_harness_session(
        self,
        task_id: str,
        harness: str,
        session_id: str,
        *,
        transcript_path: str | None = None,
        cwd: str | None = None,
    ) -> None:
        """Record that a harness session feeds a task; the newest one is what a resume continues."""
        if not session_id.strip() or len(session_id) > 200:
            raise UsageError("a harness session id is 1-200 characters")
        now = clock.now_iso()
        with write_txn(self.db):
            store.get_task(self.db, task_id)
            known = store.session_task_id(self.db, harness, session_id)
            store.upsert_harness_session(
                self.db,
                harness=harness,
                session_id=session_id,
                task_id=task_id,
                transcript_path=transcript_path,
                cwd=cwd,
                at=now,
            )
            if known != task_id:
                self._event(task_id, "session", session_id, "link", known, harness, None, now)

    def harness_session(self, task_id: str) -> dict[str, Any] | None:
        """The task's newest harness session: harness, session_id, transcript_path, cwd."""
        store.get_task(self.db, task_id)
        return store.latest_harness_session(self.db, task_id)

    def set_task_activity(self, task_id: str, status: TaskStatus, reason: str) -> Task:
        """A harness says its agent waits for input (`waiting`) or works again (`running`)."""
        if status not in (TaskStatus.WAITING, TaskStatus.RUNNING):
            raise UsageError(f"a harness marks a task waiting or running, not {status.value}")
        now = clock.now_iso()
        with write_txn(self.db):
            task = store.get_task(self.db, task_id)
            if task.status.is_final or task.status is status:
                return task
            if status is TaskStatus.RUNNING and self.list_approvals(task_id, pending_only=True):
                return task  # still waiting for an approver, whatever the agent does meanwhile
            store.update_task(self.db, task_id, status=status, updated_at=now)
            self._event(
                task_id, "task", task_id, "status", task.status.value, status.value, reason, now
            )
        return task._replace(status=status, updated_at=now)

    def add_evidence_output(
        self,
        task_id: str,
        output: bytes,
        *,
        argv: Sequence[str],
        cwd: str | None = None,
        exit_code: int | None = None,
        duration_s: float | None = None,
        label: str | None = None,
        source: str = "hook",
        limits: evidence.EvidenceLimits | None = None,
    ) -> evidence.Evidence:
        """Record output a harness already captured in memory (a hook's tool response)."""
        from core.evidence import storage as evidence

        # Output shorter than one batch is recorded on this thread alone, so its four writes
        # (the item, its chunk, its completion, the audit event) can commit as one: one fsync.
        batch = batch_txn(self.db) if len(output) < evidence.BATCH_BYTES else nullcontext()
        with batch:
            self._require_open_task(task_id)
            recorder = evidence.EvidenceRecorder(
                self.db,
                self.keys,
                task_id,
                source=source,
                label=label,
                command=evidence.command_record(list(argv), cwd),
                limits=limits or evidence.EvidenceLimits(),
            )
            for start in range(0, len(output), evidence.DEFAULT_CHUNK_BYTES):
                recorder.feed(output[start : start + evidence.DEFAULT_CHUNK_BYTES])
            item = recorder.finish(
                exit_code=exit_code,
                duration_ms=int(duration_s * 1000) if duration_s is not None else None,
            )
            self._record_evidence_event(item)
        return item

    # --- ledger sync (core.ledger.facts) -------------------------------------------------------

    def export_ledger(self, task_id: str) -> dict[str, bytes]:
        """The task's ledger as fact files (path → bytes) for `refs/pitstop/ledger/<task>`."""
        from core.ledger import facts as ledger

        return ledger.export_facts(self.session, task_id)

    def apply_ledger(self, task_id: str, facts: Mapping[str, bytes]) -> ApplyReport:
        """Merge fetched ledger facts into this store; every change audited as `sync`."""
        from core.ledger import facts as ledger

        return ledger.apply_facts(self.session, task_id, facts)

    def ledger_conflicts(
        self, task_id: str | None = None, entity: str | None = None
    ) -> list[dict[str, Any]]:
        """Decisions that lost a ledger merge (kept and shown, never lost), of one task or all."""
        if task_id is not None:
            store.get_task(self.db, task_id)
        return store.ledger_conflicts(self.db, task_id, entity)

    # --- audit -----------------------------------------------------------------------------

    def events(self, task_id: str | None = None) -> list[AuditEvent]:
        """The audit log, oldest first; reasons decrypted (a marker where the key is missing)."""
        if task_id is not None:
            store.get_task(self.db, task_id)
        return store.list_events(self.db, task_id, self.keys)
