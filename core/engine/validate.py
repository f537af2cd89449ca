"""Validation: may this checkpoint be resumed here, now? Every restore check, stored and audited.

The checks themselves live in `core.restore.validate` and see only a `ValidationInputs`; this
module gathers those inputs from the store (the checkpoint, its damage, the ledger, live leases,
the task's repository) and, for a stale verdict, weighs resuming against a fresh run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from core import clock, store
from core.engine.checkpoints import get_checkpoint, parse_checkpoint_ref, verify
from core.engine.effects import list_effects
from core.engine.leases import live_leases
from core.engine.ledgers import approval_book
from core.engine.measures import estimate
from core.errors import NotFoundError, PitstopError, SchemaTooNewError
from core.models import Checkpoint, CheckpointState, Task
from core.session import Session
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:  # the checks and the snapshot reader load only when a validation runs
    from typing import NamedTuple

    from core import snapshot
    from core.restore.validate import Finding, ValidationInputs, ValidationReport
else:
    from core.records import NamedTuple


def validate(
    session: Session,
    ref: str,
    *,
    into: str | os.PathLike[str] | None = None,
    offline: bool = False,
    progress: Callable[[Finding], None] | None = None,
) -> ValidationReport:
    """Run every restore check on a checkpoint; the run is stored and audited."""
    from core.git.run import drop_ahead
    from core.restore.validate import Verdict, run_checks

    try:
        inputs = validation_inputs(session, ref, into, offline, ahead=True)
        report = run_checks(inputs, progress)
    finally:
        drop_ahead()  # a check that did not run leaves its call: stopped here
    if report.verdict is Verdict.STALE:
        report = report._replace(advice=stale_advice(session, inputs.task.id))
    now = clock.now_iso()
    with write_txn(session.db):
        store.insert_validation(
            session.db,
            task_id=inputs.task.id,
            seq=inputs.seq,
            verdict=report.verdict.value,
            findings=[f.as_dict() for f in report.findings],
            duration_ms=report.duration_ms,
            at=now,
            actor=session.actor,
            interface=session.interface.value,
        )
        session.record_event(
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


class StoredValidation(NamedTuple):
    """The newest validation kept for a checkpoint: what the Validation tab opens with."""

    ref: str
    verdict: str
    findings: tuple[Finding, ...]
    at: str
    actor: str
    interface: str
    duration_ms: int


def stored_validation(session: Session, ref: str) -> StoredValidation | None:
    """The newest stored run of the checks on checkpoint `ref` (`TASK@SEQ`), or None."""
    from core.restore.validate import Finding, Status

    task_id, seq = parse_checkpoint_ref(ref)
    if seq is None:
        seq = store.latest_seq(session.db, task_id)
        if seq is None:
            return None
    row = store.latest_validation(session.db, task_id, seq)
    if row is None:
        return None
    findings = []
    for item in row["findings"] if isinstance(row["findings"], list) else []:
        if not isinstance(item, dict):
            continue
        try:
            status = Status(str(item.get("status")))
        except ValueError:  # a newer Pitstop's word for it, fetched by sync
            status = Status.UNKNOWN
        findings.append(
            Finding(
                str(item.get("check", "?")),
                status,
                str(item.get("message", "")),
                str(item.get("fix", "")),
            )
        )
    return StoredValidation(
        f"{task_id}@{seq}",
        str(row["verdict"]),
        tuple(findings),
        str(row["at"]),
        str(row["actor"]),
        str(row["interface"]),
        int(row["duration_ms"]),
    )


def validation_inputs(
    session: Session,
    ref: str,
    into: str | os.PathLike[str] | None,
    offline: bool,
    *,
    ahead: bool = False,
) -> ValidationInputs:
    """Everything the restore checks look at, read from the store and the task's repository;
    `ahead`: the checks' git calls are started as soon as what they ask is known
    (`core.restore.ahead`; the caller stops what is left with `core.git.run.drop_ahead`)."""
    from core import snapshot
    from core.restore import ahead as checks_ahead
    from core.restore.validate import ValidationInputs

    task_id, seq = parse_checkpoint_ref(ref)
    task = store.get_task(session.db, task_id, session.keys)  # its harness picks the config
    if ahead:
        checks_ahead.locate_ahead(task.repo_root)
    if seq is None:
        seq = store.latest_seq(session.db, task_id)
        if seq is None:
            raise NotFoundError(f"task {task_id} has no checkpoints yet")
    checkpoint, schema_error = _readable_checkpoint(session, task, seq)
    damage = (
        verify(session, checkpoint)
        if checkpoint and checkpoint.state is CheckpointState.COMPLETE
        else []
    )
    source: snapshot.SourceRepo | None = None
    source_error = None
    try:
        source = snapshot.resolve_source_repo(task.repo_root)
    except PitstopError as exc:
        source_error = f"the task's repository is gone: {exc.message}"
    store_repo = session.paths.repos / task.store_repo
    if ahead:
        checks_ahead.checks_ahead(checkpoint, source, store_repo)
    config = session.config
    return ValidationInputs(
        task=task,
        seq=seq,
        checkpoint=checkpoint,
        schema_error=schema_error,
        damage=damage,
        source=source,
        source_error=source_error,
        store_repo=store_repo,
        scratch=session.paths.tmp,
        effects=list_effects(session, task_id),
        # the approval book itself (`list_approvals`' module loads the checkpoint writer)
        approvals=approval_book(session).find(task_id, False),
        live_leases=live_leases(session, task_id),
        fingerprint_key=_fingerprint_key(session, checkpoint),
        ttl_days=config.checkpoint_ttl_days,
        harness_config=config.harness(task.harness.name) if task.harness else {},
        into=Path(into).expanduser().absolute() if into else None,
        offline=offline,
        environ=dict(os.environ),
    )


def _fingerprint_key(session: Session, checkpoint: Checkpoint | None) -> bytes:
    """The key credential fingerprints are made with, read (or made) only when the checkpoint
    names credentials to compare: `hmac` loads OpenSSL, ~3 ms of a validation that needs none."""
    if not (checkpoint and (checkpoint.manifest or {}).get("credentials")):
        return b""
    from core.security.fingerprint import load_or_create_key

    return load_or_create_key(session.paths.fingerprint_key)


def _readable_checkpoint(
    session: Session, task: Task, seq: int
) -> tuple[Checkpoint | None, str | None]:
    """The checkpoint opened, or why a newer Pitstop's manifest or header cannot be read."""
    checkpoint: Checkpoint | None = None
    schema_error = None
    try:
        checkpoint = get_checkpoint(session, f"{task.id}@{seq}")
    except SchemaTooNewError as exc:
        schema_error = exc.message
    if checkpoint is not None and checkpoint.commit and schema_error is None:
        schema_error = _header_schema_error(session, task, checkpoint)
    return checkpoint, schema_error


def stale_advice(session: Session, task_id: str) -> str | None:
    """DESIGN §5: weigh resuming a stale checkpoint against a fresh run, with §4's terms."""
    from core.economics import model as economics

    try:
        task_estimate = estimate(session, task_id)
    except PitstopError:
        return None
    result = task_estimate.result
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


def _header_schema_error(session: Session, task: Task, checkpoint: Checkpoint) -> str | None:
    """A `pitstop.json` header from a newer Pitstop makes the checkpoint unsupported."""
    from core.git.reader import read_objects
    from core.snapshot import manifest

    assert checkpoint.commit
    try:  # read from the store's files (a checkpoint's commit and root are loose): no process
        raw = read_objects(
            session.paths.repos / task.store_repo, [f"{checkpoint.commit}:pitstop.json"]
        ).get(f"{checkpoint.commit}:pitstop.json")
        if raw is None:
            return None
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
