"""Taking a checkpoint: snapshot the work tree, seal its manifest, write and verify its commit.

The steps run in a fixed order so a crash at any point leaves something honest behind: the
snapshot's objects first (nothing recorded), then a `writing` row, then the commit written and
re-read, and only then the flip to `complete` in one transaction with its audit events
(invariant 1). A failure between the row and the flip marks the checkpoint `incomplete`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from core import clock, numbers, store
from core.digests import sha256_hex
from core.engine.checkpoint_secrets import allowed_secret_paths, record_allowed_secrets, sealing_for
from core.engine.checkpoints import open_checkpoint
from core.engine.integrity import refuse_reused_seq
from core.engine.ledgers import ledger_sections
from core.engine.workdir import Workdir, audit_move, task_workdir
from core.engine.writers import expire_stale_writers, failed_writes_discarded, task_lock
from core.errors import ConflictError, DamagedCheckpointError, UsageError
from core.models import (
    ChangedFile,
    Checkpoint,
    CheckpointReason,
    CheckpointState,
    Interface,
    Task,
    TaskStatus,
)
from core.session import Session
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:  # snapshot pulls in git plumbing: loaded only when a checkpoint is taken
    from typing import Any, NamedTuple

    from core import snapshot
else:
    from core.records import NamedTuple

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
    # False when the note only names the moment (a hook's "the agent finished a turn"): it is
    # recorded, but a note alone then does not make a checkpoint with nothing new worth taking.
    note_is_news: bool = True
    # The note is Pitstop's own wording (a hook's, from constants and a checked word), so its
    # audit copy needs no redaction; an operator's or agent's note is always redacted.
    note_is_ours: bool = False
    # Where the agent says it is (a hook event's `cwd`): picks which of the task's directories
    # is snapshot (core/engine/workdir.py); never a directory that is not the task's.
    workdir_hint: str | None = None
    # Files (relative to the repository's top) kept as they are though they hold a secret,
    # each audited; every other file holding one is left out (untracked) or sealed (tracked).
    allow_secrets: tuple[str, ...] = ()


class _Progress(NamedTuple):
    """Carry-over of steps and consumption from one checkpoint to the next."""

    done: list[str]
    todo: list[str]


class _Draft(NamedTuple):
    """A checkpoint on its way: what it is made of, and (once recorded) its row."""

    task: Task
    source: snapshot.SourceRepo
    store_repo: Path
    snap: snapshot.Snapshot
    previous: Checkpoint | None
    request: CheckpointRequest
    progress: _Progress
    started: float
    pending: list[dict[str, Any]]
    workdir: Workdir
    seq: int = 0
    created_at: str = ""


class _Written(NamedTuple):
    """A checkpoint's commit, written and verified, and what its row records of it."""

    commit: str
    commit_bytes: int
    sealed_manifest: bytes
    manifest_sha256: str
    changed_count: int
    tokens_used: int | None
    usd_used: float | None


def checkpoint(
    session: Session, task_id: str, request: CheckpointRequest | None = None
) -> CheckpointResult:
    """Snapshot the task's work tree and record a complete, verified checkpoint.

    The snapshot is taken first (objects only, nothing recorded); a snapshot identical to
    the previous checkpoint with nothing new is skipped unless forced. Then the checkpoint is
    recorded as `writing`, its commit written and re-read, and only then flipped to
    `complete` in one transaction (invariant 1).
    """
    started = time.monotonic()
    request = request or CheckpointRequest()
    task = store.get_task(session.db, task_id)
    if task.status.is_final:
        raise ConflictError(
            f"task {task_id} is {task.status.value}; a finished task takes no checkpoints"
        )
    _validate_consumption(request)
    session.keys.data_key(task_id, create=True)  # no key: refuse before anything is written
    with task_lock(session.paths, task_id):
        expire_stale_writers(session, task_id)
        if request.reason is CheckpointReason.TURN:  # DESIGN §4: no every-turn snapshots
            too_soon = _turn_too_soon(session, task_id)
            if too_soon:
                return CheckpointResult(None, skipped=too_soon)
        # the manifest holds the objective, harness and model: read them opened, under the lock
        task = store.get_task(session.db, task_id, session.keys)
        from core import snapshot  # only now: a skipped turn needs no git
        from core.git import plumbing

        workdir = task_workdir(session, task, request.workdir_hint)
        allowed = allowed_secret_paths(workdir.path, request.allow_secrets)
        located = snapshot.locate(workdir.path)  # the repository and its HEAD at once
        store_repo = snapshot.ensure_store_repo(
            session.paths.repos, located.source, task.store_repo
        )
        with (
            failed_writes_discarded(session, task_id, store_repo),
            plumbing.session(store_repo),  # one `cat-file` for every read of the store
        ):
            result = _checkpoint_in_session(
                session, task, request, located, store_repo, started, workdir, allowed
            )
        if result.checkpoint is not None:  # the store packs as it goes (core/git/upkeep.py)
            from core.git.upkeep import after_checkpoint

            after_checkpoint(store_repo, later=session.interface in (Interface.CLI, Interface.HOOK))
        return result


def _turn_too_soon(session: Session, task_id: str) -> str | None:
    """Why a turn's checkpoint comes too soon after the last one (None: take it)."""
    from core.economics.policy import turn_skip_reason

    last = store.latest_checkpoint_created_at(session.db, task_id)
    return turn_skip_reason(
        clock.parse(last) if last else None,
        clock.now(),
        session.config.policy.min_interval_seconds,
    )


def _validate_consumption(request: CheckpointRequest) -> None:
    if request.tokens_used is not None:
        numbers.non_negative(request.tokens_used, "--tokens-used")
    if request.usd_used is not None:
        numbers.non_negative(request.usd_used, "--usd-used")
    if request.max_file_bytes is not None:
        numbers.storable_integer(request.max_file_bytes, "the file size limit")
        if request.max_file_bytes <= 0:
            raise UsageError("the file size limit must be positive")


def _checkpoint_in_session(
    session: Session,
    task: Task,
    request: CheckpointRequest,
    located: snapshot.Located,
    store_repo: Path,
    started: float,
    workdir: Workdir,
    allowed: frozenset[str],
) -> CheckpointResult:
    previous = store.latest_complete(session.db, task.id)
    if previous is not None:
        previous = open_checkpoint(session, previous)
    sealing = sealing_for(session, task.id, previous, allowed)
    snap, previous = _take_snapshot(session, request, located, store_repo, previous, sealing)
    progress = _progress(previous, request)
    pending = store.list_evidence(session.db, task.id, pending=True, keys=session.keys)
    if previous and not request.force and not pending and _is_noop(previous, snap, request, task):
        return CheckpointResult(
            None,
            skipped=f"nothing changed since {previous.ref}; checkpoint skipped "
            "(use --force to record one anyway)",
        )
    draft = _Draft(
        task,
        located.source,
        store_repo,
        snap,
        previous,
        request,
        progress,
        started,
        pending,
        workdir,
    )
    return _record_checkpoint(session, draft)


def _take_snapshot(
    session: Session,
    request: CheckpointRequest,
    located: snapshot.Located,
    store_repo: Path,
    previous: Checkpoint | None,
    sealing: snapshot.Sealing,
) -> tuple[snapshot.Snapshot, Checkpoint | None]:
    """The new snapshot, stored as a delta on the previous checkpoint when that one is sound.

    Returns the previous checkpoint it builds on: None when there was none, or when it proved
    damaged and the chain starts afresh from the base commit.
    """
    from core import snapshot

    source = located.source
    limits = snapshot.SnapshotLimits(request.max_file_bytes or session.config.max_file_bytes)
    snap: snapshot.Snapshot | None = None
    if previous and previous.worktree_tree and previous.index_tree:
        trees = (previous.worktree_tree, previous.index_tree)
        # Every object of the previous trees present (walked while the snapshot is taken,
        # unless none can have gone since it was verified): the new snapshot stores only what
        # differs from them, and its own verification relies on this. A damaged previous
        # checkpoint throws that snapshot away and starts the chain afresh from the base.
        walk = snapshot.verify_previous(store_repo, previous.commit or "", trees)
        try:
            snap = snapshot.take_snapshot(
                source,
                store_repo,
                session.paths.tmp,
                limits,
                trees,
                _lockfiles_of(previous),
                located,
                sealing=sealing,
            )
        except Exception:
            if not walk.problems():
                raise
        if walk.problems():
            previous, snap = None, None
    if snap is None:
        snap = snapshot.take_snapshot(
            source, store_repo, session.paths.tmp, limits, None, None, located, sealing=sealing
        )
    return snap, previous


def _lockfiles_of(checkpoint: Checkpoint | None) -> dict[str, str] | None:
    """The lockfiles a checkpoint's manifest recorded for its worktree tree, when it has them."""
    found = (checkpoint.manifest or {}).get("lockfiles") if checkpoint else None
    if not isinstance(found, dict):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
        return None
    return dict(found)


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
        (not request.note or not request.note_is_news)
        and not request.done
        and not request.todo
        and request.tokens_used in (None, task.tokens_used)
        and request.usd_used in (None, task.usd_used)
    )
    return same_state and nothing_said


def _record_checkpoint(session: Session, draft: _Draft) -> CheckpointResult:
    """Record the checkpoint as `writing`, then finish it; a failure leaves it `incomplete`."""
    task, request = draft.task, draft.request
    created_at = clock.now_iso()
    with write_txn(session.db):
        seq = store.next_checkpoint_seq(session.db, task.id)
        refuse_reused_seq(draft.store_repo, task.id, seq)
        store.insert_writing_checkpoint(
            session.db,
            task_id=task.id,
            seq=seq,
            reason=request.reason,
            note=_seal_note(session, task.id, seq, request.note),
            created_at=created_at,
            writer_pid=os.getpid(),
            writer_host=os.uname().nodename,
        )
        session.record_event(
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
        return _finish_checkpoint(session, draft._replace(seq=seq, created_at=created_at))
    except BaseException as exc:
        failure = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        with write_txn(session.db):
            if store.mark_incomplete(session.db, task.id, seq, failure):
                session.record_event(
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


def _seal_note(session: Session, task_id: str, seq: int, note: str | None) -> bytes | None:
    if not note:
        return None
    return session.keys.seal(task_id, f"checkpoint/{seq}/note", note.encode())


def _finish_checkpoint(session: Session, draft: _Draft) -> CheckpointResult:
    """Write the recorded checkpoint's commit, verify it, point the ref at it, complete it."""
    from core import snapshot

    document, changed_count, tokens_used, usd_used = _build_manifest(session, draft)
    commit, commit_bytes, sealed_manifest, manifest_sha256 = _write_commit(session, draft, document)
    snapshot.update_checkpoint_ref(draft.store_repo, draft.task.id, commit)
    written = _Written(
        commit, commit_bytes, sealed_manifest, manifest_sha256, changed_count, tokens_used, usd_used
    )
    _complete(session, draft, written)
    snapshot.record_verified(draft.store_repo, commit)  # the next one need not walk its trees
    return CheckpointResult(
        open_checkpoint(session, store.get_checkpoint(session.db, draft.task.id, draft.seq))
    )


def _build_manifest(
    session: Session, draft: _Draft
) -> tuple[dict[str, Any], int, int | None, float | None]:
    """The checkpoint's manifest, and the changed-file count and consumption it records."""
    from core import snapshot
    from core.security.fingerprint import fingerprint_environment, load_or_create_key
    from core.snapshot import manifest

    task, snap, request, store_repo = draft.task, draft.snap, draft.request, draft.store_repo
    base_tree = snap.base_tree or (
        snapshot.tree_of_commit(store_repo, snap.base_commit)
        if snap.base_commit
        else snapshot.EMPTY_TREE
    )
    changed = _changed_since_base(store_repo, snap, base_tree, draft.previous)
    lockfiles = (
        dict(snap.lockfiles)
        if snap.lockfiles is not None
        else snapshot.lockfiles_in(store_repo, snap.worktree_tree)
    )
    for sealed in snap.sealed:  # a sealed lockfile is recorded by its real bytes' id
        if sealed.tree == "worktree" and sealed.path in lockfiles:
            lockfiles[sealed.path] = sealed.plain_blob
    tokens_used = task.tokens_used if request.tokens_used is None else request.tokens_used
    usd_used = task.usd_used if request.usd_used is None else request.usd_used
    created = clock.parse(draft.created_at)
    minutes_used = (created - clock.parse(task.created_at)).total_seconds() / 60
    key = load_or_create_key(session.paths.fingerprint_key)
    document = manifest.build_manifest(
        task=task,
        seq=draft.seq,
        reason=request.reason,
        note=request.note,
        created_at=draft.created_at,
        parent_commit=draft.previous.commit if draft.previous else None,
        snapshot=snap,
        facts=snap.facts or snapshot.repo_facts(draft.source),
        toplevel=str(draft.source.toplevel),
        changed=changed,
        lockfiles=lockfiles,
        credentials=fingerprint_environment(key, task.credentials),
        done=draft.progress.done,
        todo=draft.progress.todo,
        tokens_used=tokens_used,
        usd_used=usd_used,
        minutes_used=minutes_used,
        environment=manifest.environment_identity(snapshot.git_version(session.paths.tmp)),
        max_file_bytes=request.max_file_bytes or session.config.max_file_bytes,
        creation_ms=int((time.monotonic() - draft.started) * 1000),
        evidence=[manifest.evidence_entry(item) for item in draft.pending],
        harness_session=store.latest_harness_session(session.db, task.id),
    )
    document["side_effects"], document["pending_approvals"] = ledger_sections(session, task.id)
    return document, len(changed), tokens_used, usd_used


def _changed_since_base(
    store_repo: Path, snap: snapshot.Snapshot, base_tree: str, previous: Checkpoint | None
) -> list[ChangedFile]:
    """The files the snapshot changed against its base commit; a previous checkpoint of
    the same base already lists them for its worktree tree (a function of the two trees):
    the same tree reuses its list, another one updates it for the paths that differ."""
    from core import snapshot

    recorded = (previous.manifest or {}).get("snapshot", {}) if previous else {}
    same_base = previous is not None and previous.base_commit == snap.base_commit
    entries = recorded.get("changed_files") if same_base else None
    before: list[ChangedFile] | None = None
    if isinstance(entries, list):
        try:
            before = [ChangedFile(**entry) for entry in entries]
        except TypeError:  # an older or foreign shape: ask git
            before = None
    if before is not None and previous is not None and previous.worktree_tree == snap.worktree_tree:
        return before
    if before is not None and snap.worktree_changes is not None:
        paths = [path for path, _blob in snap.worktree_changes]
        found = snapshot.changed_files_after(
            store_repo, base_tree, snap.worktree_tree, before, paths
        )
        if found is not None:
            return found
    return snapshot.changed_files(store_repo, base_tree, snap.worktree_tree)


def _write_commit(
    session: Session, draft: _Draft, document: dict[str, Any]
) -> tuple[str, int, bytes, str]:
    """Seal the manifest, write the checkpoint commit and re-read it: commit, its size, the
    sealed manifest and its digest. A commit that does not verify is refused."""
    from core import snapshot
    from core.snapshot import manifest

    task, seq, snap = draft.task, draft.seq, draft.snap
    sealed_manifest = session.keys.seal(
        task.id, f"checkpoint/{seq}/manifest", manifest.encode(document)
    )
    manifest_sha256 = sha256_hex(sealed_manifest)
    header = manifest.build_header(
        task_id=task.id,
        seq=seq,
        created_at=draft.created_at,
        manifest_sha256=manifest_sha256,
        key_ids=[session.keys.data_key_id(task.id)],
    )
    commit, commit_bytes = snapshot.write_checkpoint_commit(
        draft.store_repo,
        header=manifest.encode(header),
        manifest=sealed_manifest,
        snapshot=snap,
        parent=draft.previous.commit if draft.previous else None,
        message=f"pitstop checkpoint {task.id}@{seq} ({draft.request.reason.value})",
        timestamp=clock.git_timestamp(draft.created_at),
    )
    problems = snapshot.verify_checkpoint(
        draft.store_repo,
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
    return commit, commit_bytes, sealed_manifest, manifest_sha256


def _status_after(task: Task, reason: CheckpointReason) -> TaskStatus:
    """A wait or an interrupt parks the task; a milestone wakes a parked one."""
    new_status = _STATUS_AFTER.get(reason, task.status)
    if task.status in (TaskStatus.PAUSED, TaskStatus.WAITING) and reason in (
        CheckpointReason.MILESTONE,
    ):
        new_status = TaskStatus.RUNNING
    return new_status


def _complete(session: Session, draft: _Draft, written: _Written) -> None:
    """Flip the checkpoint to `complete` with everything it settles, in one transaction."""
    task, seq, request, snap = draft.task, draft.seq, draft.request, draft.snap
    completed_at = clock.now_iso()
    creation_ms = int((time.monotonic() - draft.started) * 1000)
    new_status = _status_after(task, request.reason)
    with write_txn(session.db):
        store.complete_checkpoint(
            session.db,
            task.id,
            seq,
            commit=written.commit,
            worktree_tree=snap.worktree_tree,
            index_tree=snap.index_tree,
            base_commit=snap.base_commit,
            branch=snap.branch,
            manifest=written.sealed_manifest,
            manifest_sha256=written.manifest_sha256,
            completed_at=completed_at,
            creation_ms=creation_ms,
            bytes_added=snap.bytes_added + written.commit_bytes,
            changed_count=written.changed_count,
            left_out_count=len(snap.left_out),
        )
        store.attach_evidence(session.db, task.id, [item["id"] for item in draft.pending], seq)
        for lease in store.active_resumes(session.db, task.id):
            # The resumed agent made progress: its resume is over.
            store.update_resume(session.db, lease["id"], state="done", finished_at=completed_at)
        store.update_task(
            session.db,
            task.id,
            status=new_status,
            tokens_used=written.tokens_used,
            usd_used=written.usd_used,
            updated_at=completed_at,
        )
        _record_completion(session, task, seq, request, new_status, completed_at)
        audit_move(session, task, draft.workdir)
        record_allowed_secrets(session, task.id, seq, snap, completed_at)


def _record_completion(
    session: Session,
    task: Task,
    seq: int,
    request: CheckpointRequest,
    new_status: TaskStatus,
    at: str,
) -> None:
    """The audit events of a completed checkpoint: its completion and any status it moved."""
    session.record_event(
        task.id,
        "checkpoint",
        f"{task.id}@{seq}",
        "complete",
        CheckpointState.WRITING.value,
        CheckpointState.COMPLETE.value,
        request.note,
        at,
        own_words=request.note_is_ours,
    )
    if new_status != task.status:
        session.record_event(
            task.id,
            "task",
            task.id,
            "status",
            task.status.value,
            new_status.value,
            f"checkpoint {seq} ({request.reason.value})",
            at,
            own_words=True,
        )
