"""Measures of resume quality (DESIGN §8), computed from what the store already records.

Checkpoint bytes and creation latency come from the checkpoints table; restore and validation
latency, stale restores and acceptance from the `resumes` and `validations` tables that restore
validation keeps — a store without them reports those measures as `None` ("none recorded"), not
zero. Replay avoided is the break-even model's exposure (core.economics.model) of each resumed task,
once per resume. Duplicate side effects detected counts the audited moments a side effect was
found already done instead of being run again (a precondition check that said it happened).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from core import store
from core.config import Config
from core.economics import model as economics
from core.errors import PitstopError
from core.models import CheckpointState
from core.security.keys import TaskKeys
from core.store.db import Database

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

_STALE = "stale"
# A decision's outcomes when the model itself skipped (not "nothing changed" after it took one).
_MODEL_SKIPS = frozenset({"skipped", "skipped: trivially restartable"})


@dataclass(frozen=True)
class Latency:
    """A distribution of durations in milliseconds (nearest-rank percentiles)."""

    count: int
    p50_ms: int | None
    p95_ms: int | None
    max_ms: int | None
    mean_ms: int | None

    @classmethod
    def of(cls, values: Sequence[int]) -> Latency:
        """Summarise durations; an empty sequence gives counts of zero and no percentiles."""
        ordered = sorted(values)
        if not ordered:
            return cls(0, None, None, None, None)
        return cls(
            count=len(ordered),
            p50_ms=_nearest_rank(ordered, 50),
            p95_ms=_nearest_rank(ordered, 95),
            max_ms=ordered[-1],
            mean_ms=round(sum(ordered) / len(ordered)),
        )


def _nearest_rank(ordered: Sequence[int], percent: int) -> int:
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Fidelity:
    """Restore drills (issue 20): how many came back faithful, and how fast they restored."""

    drills: int
    verdicts: dict[str, int]
    stale: int
    restore: Latency

    @property
    def faithful_share(self) -> float | None:
        """Faithful drills over every drill that replayed or failed to restore (a drill with
        nothing to replay says nothing about fidelity)."""
        judged = self.drills - self.verdicts.get("not-replayable", 0)
        return self.verdicts.get("faithful", 0) / judged if judged else None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types."""
        return {
            "drills": self.drills,
            "verdicts": dict(self.verdicts),
            "faithful_share": self.faithful_share,
            "stale": self.stale,
            "mean_restore_ms": self.restore.mean_ms,
        }


def fidelity(db: Database, task_id: str | None) -> Fidelity | None:
    """The store's (or a task's) restore drills; None before the drills table exists."""
    totals = store.drill_totals(db, task_id)
    if totals is None:
        return None
    stale = totals.pop("stale", 0)
    restores = store.recorded_values(db, "drills", "restore_ms", task_id) or []
    return Fidelity(sum(totals.values()), totals, stale, Latency.of(restores))


@dataclass(frozen=True)
class Metrics:
    """Every §8 measure for the store or one task; `None` means the store records no such data."""

    task_id: str | None
    checkpoints: int
    checkpoint_bytes: int
    checkpoint_bytes_avg: int | None
    expired_checkpoints: int
    creation: Latency
    restore: Latency | None
    validation: Latency | None
    resumes: int | None
    replay_avoided_usd: Decimal | None
    replay_avoided_minutes: Decimal | None
    stale_restores: int | None
    duplicate_effects_detected: int
    accepted: int
    rejected: int
    fidelity: Fidelity | None = None
    skipped_checkpoints: int = 0  # automatic decisions that found a restart cheaper
    overhead_avoided_usd: Decimal = Decimal(0)  # what those checkpoints would have cost

    @property
    def acceptance_rate(self) -> float | None:
        """Accepted resumed work over decided resumed work."""
        decided = self.accepted + self.rejected
        return self.accepted / decided if decided else None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types."""

        def latency(value: Latency | None) -> dict[str, Any] | None:
            if value is None:
                return None
            return {
                "count": value.count,
                "p50_ms": value.p50_ms,
                "p95_ms": value.p95_ms,
                "max_ms": value.max_ms,
                "mean_ms": value.mean_ms,
            }

        def amount(value: Decimal | None) -> float | int | None:
            if value is None:
                return None
            return economics.json_number(value.quantize(Decimal("0.01")))

        return {
            "task": self.task_id,
            "checkpoints": {
                "count": self.checkpoints,
                "bytes_total": self.checkpoint_bytes,
                "bytes_avg": self.checkpoint_bytes_avg,
                "expired": self.expired_checkpoints,
            },
            "creation_latency": latency(self.creation),
            "restore_latency": latency(self.restore),
            "validation_latency": latency(self.validation),
            "resumes": self.resumes,
            "replay_avoided": {
                "usd": amount(self.replay_avoided_usd),
                "minutes": amount(self.replay_avoided_minutes),
            },
            "stale_restores": self.stale_restores,
            "duplicate_effects_detected": self.duplicate_effects_detected,
            "acceptance": {
                "accepted": self.accepted,
                "rejected": self.rejected,
                "rate": self.acceptance_rate,
            },
            "restore_fidelity": self.fidelity.as_dict() if self.fidelity else None,
            "checkpoint_overhead_avoided": {
                "skipped": self.skipped_checkpoints,
                "usd": amount(self.overhead_avoided_usd),
            },
        }


def recorded_runs(
    db: Database, keys: TaskKeys | None, task_id: str
) -> tuple[list[economics.RecordedRun], list[str]]:
    """A task's completed evidence, classified; commands are read when the key allows it."""
    from core.evidence import storage as evidence

    runs: list[economics.RecordedRun] = []
    notes: list[str] = []
    unreadable = 0
    for row in store.list_evidence(db, task_id):
        if row["state"] != "complete" or row["source"] == "drill":  # a drill's replay is no work
            continue
        argv: list[str] = []
        label = row["label"]  # sealed: the marker until the item is opened with the key
        if keys is None:
            unreadable += 1
        else:
            try:
                loaded = evidence.load_evidence(db, keys, int(row["id"]))
            except PitstopError:  # no master key here, or the task's key was deleted by gc
                unreadable += 1
                keys = None
            else:
                argv = [str(arg) for arg in (loaded.command or {}).get("argv", [])]
                label = loaded.label
        summary = row["summary"] or {}
        kind = economics.classify_run(argv, summary.get("tool"), label)
        runs.append(
            economics.RecordedRun(int(row["id"]), int(row["duration_ms"] or 0), kind, label)
        )
    if unreadable:
        notes.append(
            f"{unreadable} evidence command line(s) could not be decrypted; classified by their "
            "summary and label only"
        )
    return runs, notes


def task_facts(db: Database, task_id: str) -> economics.TaskFacts:
    """What the task recorded that the break-even model needs."""
    task = store.get_task(db, task_id)
    kept = [
        row
        for row in store.checkpoint_facts(db, task_id)
        if row["state"] == CheckpointState.COMPLETE.value
    ]
    creation = [int(row["creation_ms"]) for row in kept if row["creation_ms"] is not None]
    return economics.TaskFacts(
        task_id=task.id,
        tokens_used=task.tokens_used,
        usd_used=economics.to_decimal(task.usd_used),
        checkpoint_bytes=sum(int(row["bytes_added"] or 0) for row in kept),
        checkpoint_count=len(kept),
        mean_creation_ms=round(sum(creation) / len(creation)) if creation else None,
    )


def task_estimate(
    db: Database,
    keys: TaskKeys | None,
    config: Config,
    task_id: str,
    **overrides: economics.Amount | None,
) -> economics.TaskEstimate:
    """The break-even estimate of a real task from its record (see `economics.estimate_task`)."""
    facts = task_facts(db, task_id)
    runs, notes = recorded_runs(db, keys, task_id)
    estimate = economics.estimate_task(
        facts,
        runs,
        config.economics,
        p_interrupt=overrides.get("p_interrupt"),
        reorientation_minutes=overrides.get("reorientation_minutes"),
        human_usd_per_hour=overrides.get("human_usd_per_hour"),
        storage_days=config.retention.ttl_days,
    )
    if notes:
        return economics.TaskEstimate(
            estimate.task_id,
            estimate.spent_basis,
            estimate.kinds,
            estimate.result,
            (*estimate.notes, *notes),
        )
    return estimate


def collect_metrics(
    db: Database,
    keys: TaskKeys | None,
    config: Config,
    task_id: str | None = None,
) -> Metrics:
    """Compute every measure of DESIGN §8 for the whole store or one task."""
    if task_id is not None:
        store.get_task(db, task_id)
    rows = store.checkpoint_facts(db, task_id)
    complete = [r for r in rows if r["state"] == CheckpointState.COMPLETE.value]
    expired = [r for r in rows if r["state"] == CheckpointState.EXPIRED.value]
    kept_bytes = sum(int(r["bytes_added"] or 0) for r in complete)
    creation = [int(r["creation_ms"]) for r in complete + expired if r["creation_ms"] is not None]
    restore = store.recorded_values(db, "resumes", "restore_ms", task_id)
    validation = store.recorded_values(db, "validations", "duration_ms", task_id)
    resumes = store.resume_outcomes(db, task_id)
    avoided_usd: Decimal | None = None
    avoided_minutes: Decimal | None = None
    stale: int | None = None
    accepted = rejected = 0
    if resumes is not None:
        avoided_usd, avoided_minutes = Decimal(0), Decimal(0)
        estimates: dict[str, economics.TaskEstimate] = {}
        for resume in resumes:
            if resume.get("restore_ms") is None and "restore_ms" in resume:
                continue  # refused or never materialised: nothing was avoided
            resumed = resume["task_id"]
            if resumed not in estimates:
                estimates[resumed] = task_estimate(db, keys, config, resumed)
            avoided_usd += estimates[resumed].result.exposure_usd
            avoided_minutes += estimates[resumed].result.replay_minutes
        if "verdict" in store.table_columns(db, "resumes"):
            stale = sum(1 for resume in resumes if resume.get("verdict") == _STALE)
        decided = [r.get("accepted") for r in resumes if r.get("accepted") is not None]
        accepted = sum(1 for value in decided if value)
        rejected = len(decided) - accepted
    if not accepted and not rejected:
        for action in store.task_decision_events(db, task_id).values():
            accepted += action == "accept"
            rejected += action == "reject"
    return Metrics(
        task_id=task_id,
        checkpoints=len(complete),
        checkpoint_bytes=kept_bytes,
        checkpoint_bytes_avg=round(kept_bytes / len(complete)) if complete else None,
        expired_checkpoints=len(expired),
        creation=Latency.of(creation),
        restore=None if restore is None else Latency.of(restore),
        validation=None if validation is None else Latency.of(validation),
        resumes=None if resumes is None else len(resumes),
        replay_avoided_usd=avoided_usd,
        replay_avoided_minutes=avoided_minutes,
        stale_restores=stale,
        duplicate_effects_detected=store.effect_duplicate_hits(db, task_id),
        accepted=accepted,
        rejected=rejected,
        fidelity=fidelity(db, task_id),
        **_overhead_avoided(db, task_id),
    )


def _overhead_avoided(db: Database, task_id: str | None) -> dict[str, Any]:
    """Checkpoints the break-even model skipped (core.engine.pays), and what they would have
    cost: each skipped decision's own `checkpoint_usd`."""
    skipped, usd = 0, Decimal(0)
    for detail in store.event_details(db, task_id, "checkpoint", "decide").values():
        if detail.get("outcome") in _MODEL_SKIPS and "numbers" in detail:
            numbers = json.loads(detail["numbers"])
            skipped += 1
            usd += economics.to_decimal(numbers.get("checkpoint_usd", 0))
    return {"skipped_checkpoints": skipped, "overhead_avoided_usd": usd}
