"""Restore drills: a planned interruption that proves a checkpoint resumes as it was saved.

A drill restores the checkpoint into a scratch directory of the store (never the user's
repository or worktree), runs restore validation, replays the checkpoint's verification — the
newest successful test or build run recorded at or before it, or `--command` — through the same
path as `pitstop run` (evidence recorded, redacted), and compares exit status, the tool summary
and the failing tests with what was recorded (`core.drill.compare`). Its verdict, latencies and
the replay cost the checkpoint avoids are stored in `drills` and audited.

The scratch directory is named `drill-<pid>-<hex>` under the store's `tmp/`, so a drill killed
with `kill -9` leaves a directory the next drill (and `pitstop doctor --fix`) recognise as dead
and remove; `--keep` moves it to `<store>/drills/` instead.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path

from core import clock, numbers, store
from core.drill.compare import DrillVerdict, Observed, differences, verdict_of
from core.engine.checkpoints import checkout, get_checkpoint
from core.engine.drill_plan import GuardScreen, ReplayPlan, plan_replay
from core.engine.leases import pid_alive
from core.errors import CommandStartError, ConflictError, PitstopError
from core.session import Session
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.evidence.items import Evidence

SCRATCH_PREFIX = "drill-"
TREE = "tree"
_CENT = Decimal("0.01")


@dataclass(frozen=True)
class DrillReport:
    """What one drill did and found."""

    id: str
    ref: str
    task_id: str
    seq: int
    verdict: DrillVerdict
    at: str
    reason: str | None = None  # why not replayable, or why the restore failed
    differences: tuple[str, ...] = ()
    command: str | None = None
    cwd: str | None = None
    recorded_evidence_id: int | None = None
    replay_evidence_id: int | None = None
    recorded: Observed | None = None
    replayed: Observed | None = None
    expectation: str = "recorded"  # or "expected to pass" when --command has no recorded run
    restore_ms: int | None = None
    validation_ms: int | None = None
    validation_verdict: str | None = None
    replay_ms: int | None = None
    avoided_usd: str | None = None
    avoided_minutes: str | None = None
    kept: str | None = None
    findings: tuple[str, ...] = field(default=())  # harness and model drift: said, not failed

    def detail(self) -> dict[str, Any]:
        """The words a drill said (sealed at rest)."""

        def observed(value: Observed | None) -> dict[str, Any] | None:
            if value is None:
                return None
            return {
                "status": value.status,
                "exit_code": value.exit_code,
                "timed_out": value.timed_out,
                "signal": value.signal,
                "summary": dict(value.summary) if value.summary else None,
                "failing": None if value.failing is None else sorted(value.failing),
                "duration_ms": value.duration_ms,
            }

        return {
            "reason": self.reason,
            "differences": list(self.differences),
            "command": self.command,
            "cwd": self.cwd,
            "expectation": self.expectation,
            "recorded": observed(self.recorded),
            "replayed": observed(self.replayed),
            "kept": self.kept,
            "findings": list(self.findings),
        }

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types."""
        return {
            "drill": self.id,
            "checkpoint": self.ref,
            "task": self.task_id,
            "seq": self.seq,
            "verdict": self.verdict.value,
            "at": self.at,
            **self.detail(),
            "recorded_evidence": self.recorded_evidence_id,
            "replay_evidence": self.replay_evidence_id,
            "restore_ms": self.restore_ms,
            "validation_ms": self.validation_ms,
            "validation_verdict": self.validation_verdict,
            "replay_ms": self.replay_ms,
            "replay_avoided": {
                "usd": _number(self.avoided_usd),
                "minutes": _number(self.avoided_minutes),
            },
        }


def _number(text: str | None) -> float | int | None:
    """A stored amount (exact text) as the JSON number the other reports use."""
    from core.economics.model import json_number

    return None if text is None else json_number(Decimal(text))


def drill(
    session: Session,
    ref: str,
    *,
    screen: GuardScreen,
    command: str | None = None,
    keep: bool = False,
    timeout: float | None = None,
    offline: bool = False,
    out_fd: int | None = None,
) -> DrillReport:
    """Drill one checkpoint (`TASK@SEQ`, or `TASK` for its newest); stored and audited.

    `screen` says whether a guard rule catches a command (`core.harness.drill_guard`);
    `out_fd` receives the replay's live output (None: discarded)."""
    if timeout is not None:
        numbers.seconds(timeout, "--timeout", positive=True)
    checkpoint = get_checkpoint(session, ref)
    task = store.get_task(session.db, checkpoint.task_id, session.keys)
    if task.status.is_final:
        raise ConflictError(
            f"task {task.id} is {task.status.value}; a drill records its replay as the task's "
            "evidence, so only live tasks are drilled"
        )
    plan = plan_replay(session, task, checkpoint, command, screen)  # refuses bad input first
    remove_leftovers(session)
    report = DrillReport(
        id=f"d{os.urandom(6).hex()}",
        ref=checkpoint.ref,
        task_id=task.id,
        seq=checkpoint.seq,
        verdict=DrillVerdict.NOT_REPLAYABLE if plan.reason else DrillVerdict.FAITHFUL,
        at=clock.now_iso(),
        reason=plan.reason,
        command=plan.shown if plan.argv else None,
        cwd=plan.cwd if plan.argv else None,
        recorded_evidence_id=plan.recorded.id if plan.recorded else None,
        expectation="recorded" if plan.recorded else "expected to pass",
    )
    scratch = _new_scratch(session.paths.tmp)
    try:
        report = _restore(session, report, scratch / TREE, offline)
        if report.verdict is DrillVerdict.FAITHFUL:
            report = _replay(session, report, plan, scratch / TREE, timeout, out_fd)
    finally:
        kept = _keep(session, report, scratch) if keep else None
        if kept is None:
            shutil.rmtree(scratch, ignore_errors=True)
    avoided_usd, avoided_minutes = _avoided(session, task.id)
    report = replace(
        report,
        kept=str(kept) if kept else None,
        avoided_usd=avoided_usd,
        avoided_minutes=avoided_minutes,
    )
    _record(session, report)
    return report


def _new_scratch(parent: Path) -> Path:
    """A private `drill-<pid>-<hex>` directory (see the module docstring)."""
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    while True:
        path = parent / f"{SCRATCH_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue


def remove_leftovers(session: Session) -> int:
    """Remove scratch directories of drills whose process is gone (a `kill -9`); how many."""
    tmp = session.paths.tmp
    removed = 0
    if not tmp.is_dir():
        return 0
    for path in tmp.glob(f"{SCRATCH_PREFIX}*-*"):
        pid = path.name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def _keep(session: Session, report: DrillReport, scratch: Path) -> Path | None:
    """Move the restored tree out of `tmp/` for inspection: `<store>/drills/<task>-<seq>-<id>`."""
    tree = scratch / TREE
    if not tree.is_dir():
        return None
    kept = session.paths.root / "drills" / f"{report.task_id}-{report.seq}-{report.id}"
    kept.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.rename(tree, kept)
    # The store is its owner's alone (invariant 9): checkout wrote the tree under the user's
    # umask, as a restore into the user's own directory should be; in the store, it is private.
    for path in (kept, *kept.rglob("*")):
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & 0o7700)
    shutil.rmtree(scratch, ignore_errors=True)
    return kept


def _restore(session: Session, report: DrillReport, tree: Path, offline: bool) -> DrillReport:
    """Materialise the checkpoint and validate it; failed-to-restore when either cannot."""
    from core.restore.findings import Verdict

    started = time.monotonic()
    try:
        checkout(session, report.ref, tree)
    except PitstopError as exc:
        return _failed(report, exc.message, started)
    restore_ms = round((time.monotonic() - started) * 1000)
    try:
        validation = _validate(session, report.ref, offline)
    except PitstopError as exc:
        return replace(_failed(report, exc.message, started), restore_ms=restore_ms)
    report = replace(
        report,
        restore_ms=restore_ms,
        validation_ms=validation.duration_ms,
        validation_verdict=validation.verdict.value,
        findings=tuple(_drift(session, report, validation)),
    )
    if validation.verdict is Verdict.UNSUPPORTED:
        failing = [f.message for f in validation.findings if f.status.value == "fail"]
        return replace(
            report,
            verdict=DrillVerdict.FAILED_TO_RESTORE,
            reason="validation says unsupported" + (f": {failing[0]}" if failing else ""),
        )
    return report


def _drift(session: Session, report: DrillReport, validation: Any) -> list[str]:
    """Harness and model versions now against the checkpoint's (`core.drill.drift`)."""
    from core.drill.drift import drift_findings

    checkpoint = get_checkpoint(session, report.ref)
    task = store.get_task(session.db, report.task_id, session.keys)
    model = (checkpoint.manifest or {}).get("model")
    now = {"name": task.model.name, "version": task.model.version} if task.model else None
    checks = [(f.check, f.status.value, f.message) for f in validation.findings]
    return drift_findings(checks, model, now)


def _validate(session: Session, ref: str, offline: bool) -> Any:
    from core.engine.validate import validate

    return validate(session, ref, offline=offline)


def _failed(report: DrillReport, message: str, started: float) -> DrillReport:
    return replace(
        report,
        verdict=DrillVerdict.FAILED_TO_RESTORE,
        reason=f"the checkpoint could not be restored: {message}",
        restore_ms=round((time.monotonic() - started) * 1000),
    )


def _replay(
    session: Session,
    report: DrillReport,
    plan: ReplayPlan,
    tree: Path,
    timeout: float | None,
    out_fd: int | None,
) -> DrillReport:
    """Run the plan's command in the restored tree and compare; the report with the outcome."""
    from core.engine.evidence import run_command

    workdir = tree / plan.cwd
    if not workdir.is_dir():
        return _not_replayable(
            report, f"its directory {plan.cwd} is not in the restored tree (left out of it?)"
        )
    sink = os.open(os.devnull, os.O_WRONLY) if out_fd is None else out_fd
    try:
        outcome, item = run_command(
            session,
            report.task_id,
            list(plan.argv),
            label=f"drill of {report.ref}",
            timeout=timeout,
            cwd=workdir,
            out_fd=sink,
            err_fd=sink,
            use_pty=False,
            source="drill",
        )
    except CommandStartError as exc:
        return _not_replayable(
            report,
            f"{exc.message} in the restored tree (ignored files such as a virtualenv are not in "
            "a snapshot); drill with --command CMD",
        )
    finally:
        if out_fd is None:
            os.close(sink)
    replayed = observed_of(session, item)
    recorded = (
        observed_of(session, plan.recorded)
        if plan.recorded
        else Observed(0, False, None, frozenset())
    )
    found = differences(recorded, replayed, timeout)
    return replace(
        report,
        verdict=verdict_of(found),
        differences=tuple(found),
        recorded=recorded,
        replayed=replayed,
        replay_evidence_id=item.id,
        replay_ms=outcome.duration_ms,
    )


def _not_replayable(report: DrillReport, reason: str) -> DrillReport:
    return replace(report, verdict=DrillVerdict.NOT_REPLAYABLE, reason=reason)


def observed_of(session: Session, item: Evidence) -> Observed:
    """How a recorded run ended, with the failing tests its kept output names (None when its
    output cannot be read any more)."""
    from core.drill.failing_tests import failing_tests
    from core.engine.evidence import evidence_output

    try:
        failing: frozenset[str] | None = failing_tests(evidence_output(session, item.id))
    except PitstopError:
        failing = None
    return Observed(
        exit_code=item.exit_code,
        timed_out=item.timed_out,
        summary=item.summary,
        failing=failing,
        duration_ms=item.duration_ms,
        signal=item.signal,
    )


def _avoided(session: Session, task_id: str) -> tuple[str | None, str | None]:
    """The replay cost the checkpoint avoids (DESIGN §4's exposure), when it can be estimated."""
    from core.engine.measures import estimate

    try:
        result = estimate(session, task_id).result
    except PitstopError:
        return None, None
    return str(result.exposure_usd.quantize(_CENT)), str(result.replay_minutes.quantize(_CENT))


def _record(session: Session, report: DrillReport) -> None:
    """Keep the drill and its audit event in one transaction."""
    with write_txn(session.db):
        store.insert_drill(
            session.db,
            session.keys,
            report.detail(),
            id=report.id,
            task_id=report.task_id,
            seq=report.seq,
            verdict=report.verdict.value,
            at=report.at,
            actor=session.actor,
            interface=session.interface.value,
            restore_ms=report.restore_ms,
            validation_ms=report.validation_ms,
            validation_verdict=report.validation_verdict,
            replay_ms=report.replay_ms,
            recorded_evidence_id=report.recorded_evidence_id,
            replay_evidence_id=report.replay_evidence_id,
            avoided_usd=report.avoided_usd,
            avoided_minutes=report.avoided_minutes,
        )
        session.record_event(
            report.task_id,
            "checkpoint",
            report.ref,
            "drill",
            None,
            report.verdict.value,
            None,
            clock.now_iso(),
            detail={"drill": report.id},
        )


def list_drills(session: Session, task_id: str | None = None) -> list[DrillReport]:
    """Drills recorded in the store (of one task), oldest first."""
    if task_id is not None:
        store.get_task(session.db, task_id)
    return [_report_of(row) for row in store.list_drills(session.db, session.keys, task_id)]


def _report_of(row: dict[str, Any]) -> DrillReport:
    detail = row["detail"]
    return DrillReport(
        id=row["id"],
        ref=f"{row['task_id']}@{row['seq']}",
        task_id=row["task_id"],
        seq=int(row["seq"]),
        verdict=DrillVerdict(row["verdict"]),
        at=row["at"],
        reason=detail.get("reason"),
        differences=tuple(detail.get("differences") or ()),
        command=detail.get("command"),
        cwd=detail.get("cwd"),
        recorded_evidence_id=row["recorded_evidence_id"],
        replay_evidence_id=row["replay_evidence_id"],
        expectation=detail.get("expectation") or "recorded",
        restore_ms=row["restore_ms"],
        validation_ms=row["validation_ms"],
        validation_verdict=row["validation_verdict"],
        replay_ms=row["replay_ms"],
        avoided_usd=row["avoided_usd"],
        avoided_minutes=row["avoided_minutes"],
        kept=detail.get("kept"),
        findings=tuple(detail.get("findings") or ()),
    )
