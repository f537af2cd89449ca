"""Resume: validate a checkpoint, take its lease, restore it and brief the next agent.

The steps in order — validate, refuse unless resumable, take the lease, restore the snapshot
into a worktree (or in place), write the brief, mark the task `resuming` — so a refusal changes
nothing and a failure after the lease ends that resume. `launch` then runs the harness, and
`judge_resume` records whether the resumed work was accepted.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from core import clock, store
from core.engine.approvals import list_approvals
from core.engine.checkpoints import get_checkpoint, open_sealed_files, parse_checkpoint_ref
from core.engine.effects import list_effects
from core.engine.evidence import list_evidence
from core.engine.leases import end_resume, take_lease
from core.engine.validate import validate
from core.errors import ConflictError, NotFoundError, PitstopError, ResumeRefusedError, UsageError
from core.models import Checkpoint, Task, TaskStatus
from core.session import Session
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:  # restore and brief modules load only when a resume runs
    from core import snapshot
    from core.restore.resume import ResumePlan
    from core.restore.validate import ValidationReport


class _Restored(NamedTuple):
    """A checkpoint restored into its workdir, and the brief written for it."""

    branch: str | None
    restore_ms: int
    warnings: list[str]
    brief_md: Path
    brief_json: Path


def resume(
    session: Session,
    ref: str,
    *,
    into: str | os.PathLike[str] | None = None,
    in_place: bool = False,
    accept_stale: bool = False,
    offline: bool = False,
    keep_worktree: bool = False,
) -> ResumePlan:
    """Validate, take the lease, restore the snapshot and write the brief (no launch yet).

    A restore that fails removes the git worktree and `pitstop/<task>` branch it added to the
    user's repository, unless `keep_worktree` (to look at what went wrong)."""
    from core import snapshot

    if into and in_place:
        raise UsageError("choose --into DIR or --in-place, not both")
    task_id, _seq = parse_checkpoint_ref(ref)
    task = store.get_task(session.db, task_id, session.keys)  # the brief shows its objective
    source = snapshot.resolve_source_repo(task.repo_root)
    target = _resume_target(source, task, into, in_place)
    report = validate(session, ref, into=None if in_place else target, offline=offline)
    _refuse_unless_resumable(report, accept_stale)
    checkpoint = get_checkpoint(session, report.ref)
    resume_id = take_lease(session, checkpoint, report.verdict.value, target)
    fresh = not in_place and not (target.is_dir() and any(target.iterdir()))
    try:
        restored = _restore_and_brief(
            session, task, source, checkpoint, report, target, in_place, resume_id
        )
    except BaseException as exc:
        failure = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        if fresh and not keep_worktree:
            _discard_worktree(source, target, task.id)
        end_resume(session, resume_id, "failed", failure)
        raise
    _mark_resuming(session, task, checkpoint, resume_id, target, restored)
    return _plan(session, task, checkpoint, report, resume_id, target, restored)


def _discard_worktree(source: snapshot.SourceRepo, target: Path, task_id: str) -> bool:
    """Undo what a failed resume added to the user's repository (a worktree, its branch)."""
    from core.restore import worktree

    with contextlib.suppress(PitstopError, OSError):  # the failure itself is what gets said
        return worktree.discard_worktree(source, target, task_id) is not None
    return False


def _resume_target(
    source: snapshot.SourceRepo,
    task: Task,
    into: str | os.PathLike[str] | None,
    in_place: bool,
) -> Path:
    """Where the checkpoint is restored: the repository itself, the given directory, or a new
    one beside the repository."""
    if in_place:
        return source.toplevel
    if into:
        return Path(into).expanduser().absolute()
    return default_resume_dir(source.toplevel, task.id)


def default_resume_dir(toplevel: Path, task_id: str) -> Path:
    """`<repo>-pitstop-<task>` beside the repository, numbered if taken."""
    candidate = toplevel.parent / f"{toplevel.name}-pitstop-{task_id}"
    number = 1
    while candidate.exists() and any(candidate.iterdir()):
        number += 1
        candidate = toplevel.parent / f"{toplevel.name}-pitstop-{task_id}-{number}"
    return candidate


def _refuse_unless_resumable(report: ValidationReport, accept_stale: bool) -> None:
    """Refuse a blocked or unsupported checkpoint, and a stale one unless accepted."""
    from core.restore.validate import Status as FindingStatus
    from core.restore.validate import Verdict

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


def _restore_and_brief(
    session: Session,
    task: Task,
    source: snapshot.SourceRepo,
    checkpoint: Checkpoint,
    report: ValidationReport,
    target: Path,
    in_place: bool,
    resume_id: int,
) -> _Restored:
    """Restore the checkpoint into `target` and write the brief the resumed agent reads."""
    from core.restore.resume import build_brief, write_brief
    from core.restore.validate import Status as FindingStatus

    started = time.monotonic()
    store_repo = session.paths.repos / task.store_repo
    assert checkpoint.commit and checkpoint.worktree_tree and checkpoint.index_tree
    branch = restore_snapshot(session, source, store_repo, checkpoint, target, in_place)
    restore_ms = int((time.monotonic() - started) * 1000)
    # Accepted stale: the agent must know why it was stale, not only what warned.
    warnings = [
        f"{f.check}: {f.message}" + (f" (fix: {f.fix})" if f.status is FindingStatus.FAIL else "")
        for f in report.findings
        if f.status is not FindingStatus.PASS
    ]
    brief = build_brief(
        task=task,
        checkpoint=checkpoint,
        evidence=[
            item
            for item in list_evidence(session, task.id)
            if item.checkpoint_seq is not None and item.checkpoint_seq <= checkpoint.seq
        ],
        effects=list_effects(session, task.id),
        approvals=list_approvals(session, task.id),
        warnings=warnings,
        workdir=target,
        branch=branch,
    )
    brief_md, brief_json = write_brief(
        session.paths.root / "resumes" / f"{task.id}@{checkpoint.seq}-{resume_id}", brief
    )
    return _Restored(branch, restore_ms, warnings, brief_md, brief_json)


def restore_snapshot(
    session: Session,
    source: snapshot.SourceRepo,
    store_repo: Path,
    checkpoint: Checkpoint,
    target: Path,
    in_place: bool,
) -> str | None:
    """Put the checkpoint's work tree and index into `target`; return the branch it is on.

    Files stored sealed (they hold a secret) are opened first, so a key that fails writes
    nothing; they are restored with their real bytes."""
    from core import snapshot
    from core.restore import worktree

    assert checkpoint.commit and checkpoint.worktree_tree and checkpoint.index_tree
    if not checkpoint.base_commit:
        raise UsageError(
            f"{checkpoint.ref} was taken before the repository's first commit; "
            f"use `pitstop checkout {checkpoint.ref} --into DIR` instead"
        )
    sealed = snapshot.sealed_files_of(checkpoint.manifest)
    trees = (checkpoint.worktree_tree, checkpoint.index_tree)
    if in_place:
        clean, why = worktree.is_clean_at(source, checkpoint.base_commit)
        if not clean:
            raise UsageError(f"cannot resume in place: {why}; commit or stash, or use --into")
        opened = open_sealed_files(session, checkpoint, store_repo, sealed)
        worktree.bring_objects(source, store_repo, checkpoint.commit)
        worktree.restore_into(source.toplevel, *trees, sealed, opened)
        return checkpoint.branch
    if (
        target.is_dir()
        and any(target.iterdir())
        and worktree.tree_equals_directory(
            store_repo,
            checkpoint.worktree_tree,
            target,
            session.paths.tmp,
            [entry for entry in sealed if entry.tree == "worktree"],
        )
    ):
        return None  # already restored there (validation passed it): reuse it as it is
    worktree.require_empty_target(target)
    opened = open_sealed_files(session, checkpoint, store_repo, sealed)
    worktree.bring_objects(source, store_repo, checkpoint.commit)
    branch = worktree.add_worktree(
        source, target, f"pitstop/{checkpoint.task_id}", checkpoint.base_commit
    )
    worktree.restore_into(target, *trees, sealed, opened)
    return branch


def _mark_resuming(
    session: Session,
    task: Task,
    checkpoint: Checkpoint,
    resume_id: int,
    target: Path,
    restored: _Restored,
) -> None:
    """Record where the resume restored to, and mark the task `resuming`."""
    now = clock.now_iso()
    with write_txn(session.db):
        store.update_resume(
            session.db,
            resume_id,
            workdir=str(target),
            branch=restored.branch,
            brief_path=str(restored.brief_md),
            restore_ms=restored.restore_ms,
        )
        store.update_task(session.db, task.id, status=TaskStatus.RESUMING, updated_at=now)
        session.record_event(
            task.id,
            "checkpoint",
            checkpoint.ref,
            "resume",
            task.status.value,
            TaskStatus.RESUMING.value,
            f"into {target}",
            now,
        )


def _plan(
    session: Session,
    task: Task,
    checkpoint: Checkpoint,
    report: ValidationReport,
    resume_id: int,
    target: Path,
    restored: _Restored,
) -> ResumePlan:
    """The plan the caller launches: the harness command, its workdir and environment."""
    from core.restore.resume import ResumePlan, harness_command

    brief_md = restored.brief_md
    session_id = ((checkpoint.manifest or {}).get("harness") or {}).get("session_id") or ""
    values = {
        "brief": str(brief_md),
        "workdir": str(target),
        "task": task.id,
        "checkpoint": checkpoint.ref,
        "session": session_id,
    }
    harness = task.harness.name if task.harness else None
    template = session.config.harness(task.harness.name).get("resume") if task.harness else None
    return ResumePlan(
        resume_id=resume_id,
        task_id=task.id,
        seq=checkpoint.seq,
        workdir=target,
        branch=restored.branch,
        brief_md=brief_md,
        brief_json=restored.brief_json,
        restore_ms=restored.restore_ms,
        verdict=report.verdict.value,
        warnings=tuple(restored.warnings),
        command=harness_command(template, harness, values),
        env={
            "PITSTOP_TASK": task.id,
            "PITSTOP_CHECKPOINT": checkpoint.ref,
            "PITSTOP_BRIEF": str(brief_md),
            "PITSTOP_WORKDIR": str(target),
        },
        previous_status=task.status.value,
    )


# What `sh -c` says with its exit code when the harness's program never ran.
_CANNOT_START = {
    126: "the harness's program cannot be run (sh exited 126)",
    127: "the harness's program is not installed or not on PATH (sh exited 127)",
}


def launch(session: Session, plan: ResumePlan, *, keep_worktree: bool = False) -> int:
    """Run the task's harness in the restored worktree (blocking); return its exit code.

    A harness that cannot start ends the resume as failed and puts the task back to the status
    it had (audited). A program that could not be executed at all takes back the worktree and
    branch the resume added, unless `keep_worktree`; one the shell could not find (126, 127)
    leaves them and the brief for the next resume to take up, since a template may have run
    part of its line."""
    import subprocess

    with write_txn(session.db):
        store.update_resume(session.db, plan.resume_id, launched=1)
    env = {**os.environ, **plan.env}
    try:
        completed = subprocess.run(list(plan.command), cwd=plan.workdir, env=env, check=False)
    except OSError as exc:
        raise _failed_launch(session, plan, str(exc), remove=not keep_worktree) from exc
    code = completed.returncode if completed.returncode >= 0 else 128 - completed.returncode
    if code in _CANNOT_START and plan.command[:2] == ("sh", "-c"):
        raise _failed_launch(session, plan, _CANNOT_START[code], remove=False)
    with write_txn(session.db):
        store.update_resume(session.db, plan.resume_id, exit_code=code)
        session.record_event(
            plan.task_id,
            "resume",
            str(plan.resume_id),
            "launch-exit",
            None,
            str(code),
            " ".join(plan.command[2:])[:200],
            clock.now_iso(),
        )
    end_resume(session, plan.resume_id, "done", None)
    return code


def _failed_launch(session: Session, plan: ResumePlan, failure: str, *, remove: bool) -> UsageError:
    """End a resume whose harness never started; the error that says what became of it."""
    removed = ""
    repo_root = store.get_task(session.db, plan.task_id).repo_root
    in_repo = plan.workdir == Path(repo_root)
    if plan.branch and remove and not in_repo:
        from core import snapshot

        with contextlib.suppress(PitstopError):
            source = snapshot.resolve_source_repo(repo_root)
            if _discard_worktree(source, plan.workdir, plan.task_id):
                with write_txn(session.db):
                    store.update_resume(session.db, plan.resume_id, workdir=None)
                removed = f"; removed {plan.workdir} and branch {plan.branch}"
    elif not in_repo and plan.workdir.is_dir():
        removed = (
            f"; kept {plan.workdir} and its brief: fix the harness, then "
            f"`pitstop resume {plan.ref} --into {plan.workdir}` takes them up"
        )
    end_resume(session, plan.resume_id, "failed", failure)
    status = _put_task_back(session, plan, failure)
    back = f"; task {plan.task_id} is {status} again" if status else ""
    return UsageError(f"cannot launch the harness: {failure}{removed}{back}")


def _put_task_back(session: Session, plan: ResumePlan, failure: str) -> str | None:
    """Return a task the failed launch left `resuming` to its status before the resume
    (audited); the status it has now, or None when something else moved it meanwhile."""
    previous = plan.previous_status
    now = clock.now_iso()
    with write_txn(session.db):
        task = store.get_task(session.db, plan.task_id)
        if task.status is not TaskStatus.RESUMING or previous in (None, task.status.value):
            return None
        store.update_task(session.db, plan.task_id, status=TaskStatus(previous), updated_at=now)
        session.record_event(
            plan.task_id,
            "task",
            plan.task_id,
            "status",
            TaskStatus.RESUMING.value,
            previous,
            f"the harness could not be launched: {failure}",
            now,
        )
    return previous


def judge_resume(session: Session, task_id: str, accepted: bool, reason: str) -> dict[str, Any]:
    """Record whether the resumed work was accepted; releases the task's lease."""
    from core.redaction.free_text import persistable

    if not reason.strip():
        raise UsageError("say why with --reason")
    now = clock.now_iso()
    with write_txn(session.db):
        store.get_task(session.db, task_id)
        latest = store.latest_resume(session.db, task_id)
        if latest is None:
            raise NotFoundError(f"task {task_id} was never resumed; nothing to accept or reject")
        store.update_resume(
            session.db,
            latest["id"],
            keys=session.keys,
            accepted=int(accepted),
            accept_reason=persistable(reason),
            state="done" if latest["state"] == "active" else latest["state"],
            finished_at=latest["finished_at"] or now,
        )
        verdict = "accepted" if accepted else "rejected"
        session.record_event(
            task_id, "resume", str(latest["id"]), verdict, None, verdict, reason, now
        )
    return {"task": task_id, "resume": latest["id"], "accepted": accepted, "reason": reason}


def clean_failed_resume(session: Session, task_id: str) -> str:
    """Remove the worktree and `pitstop/<task>` branch the task's latest resume left behind
    when its launch failed (audited); what was removed. Anything else is left as it is."""
    from core import snapshot
    from core.restore import worktree

    task = store.get_task(session.db, task_id)
    latest = store.latest_resume(session.db, task_id)
    if latest is None or latest["state"] != "failed" or not latest["workdir"]:
        raise ConflictError(f"task {task_id} has no failed resume with a worktree to clean up")
    target = Path(latest["workdir"])
    if target == Path(task.repo_root) or not target.is_dir():
        raise ConflictError(f"{target} is not a resume worktree to remove; left as it is")
    source = snapshot.resolve_source_repo(task.repo_root)
    branch = worktree.discard_worktree(source, target, task_id)
    if branch is None:
        raise ConflictError(f"{target} is not a worktree a resume made; left as it is")
    removed = f"removed {target} and branch {branch}"
    with write_txn(session.db):
        store.update_resume(session.db, latest["id"], workdir=None)
        session.record_event(
            task_id, "resume", str(latest["id"]), "clean", "failed", "failed", removed,
            clock.now_iso(),
        )  # fmt: skip
    return removed


def resume_records(session: Session, task_id: str) -> list[dict[str, Any]]:
    """Every resume of a task, oldest first, its accept/reject reason decrypted (or marked)."""
    store.get_task(session.db, task_id)
    return store.list_resumes(session.db, task_id, session.keys)
