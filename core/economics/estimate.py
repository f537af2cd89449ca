"""Estimating a real task: its replay cost from what it recorded, weighed by the break-even model.

Replay = money spent (or tokens at the configured rate) + machine time to redo its installs,
builds and test runs (evidence durations) + re-orientation time at the human rate; the checkpoint
costs what config says plus storage of an average checkpoint. Nothing here reads the store:
callers pass plain facts in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from core.economics.amounts import (
    BYTES_PER_GIB,
    DAYS_PER_MONTH,
    MINUTES_PER_HOUR,
    ZERO,
    Amount,
    json_number,
    money,
    to_decimal,
)
from core.economics.break_even import BreakEven, CheckpointCost, ReplayCost, Scenario, break_even
from core.economics.work_kinds import COUNTED_KINDS, WorkKind

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.config import EconomicsSettings


@dataclass(frozen=True)
class RecordedRun:
    """One evidence item as the estimate sees it: how long it took and what it was."""

    evidence_id: int
    duration_ms: int
    kind: WorkKind
    label: str | None = None


@dataclass(frozen=True)
class TaskFacts:
    """What a task recorded that bears on its replay and checkpoint costs."""

    task_id: str
    tokens_used: int
    usd_used: Decimal
    checkpoint_bytes: int  # bytes the task's kept checkpoints hold
    checkpoint_count: int
    mean_creation_ms: int | None = None


@dataclass(frozen=True)
class KindTotal:
    """Recorded runs of one kind: how many, and their minutes."""

    kind: WorkKind
    runs: int
    minutes: Decimal
    counted: bool


@dataclass(frozen=True)
class TaskEstimate:
    """A task's replay cost as derived from its record, and what the model says about it."""

    task_id: str
    spent_basis: str  # "usd_used", "tokens" or "nothing recorded"
    kinds: tuple[KindTotal, ...]
    result: BreakEven
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types."""
        return {
            "task": self.task_id,
            "spent_basis": self.spent_basis,
            "runs": [
                {
                    "kind": total.kind.value,
                    "runs": total.runs,
                    "minutes": json_number(total.minutes.quantize(Decimal("0.01"))),
                    "counted": total.counted,
                }
                for total in self.kinds
            ],
            **self.result.as_dict(),
            "notes": list(self.notes),
        }


def estimate_task(
    facts: TaskFacts,
    runs: Sequence[RecordedRun],
    settings: EconomicsSettings,
    *,
    p_interrupt: Amount | None = None,
    reorientation_minutes: Amount | None = None,
    human_usd_per_hour: Amount | None = None,
    storage_days: Amount = DAYS_PER_MONTH,
) -> TaskEstimate:
    """Derive a task's replay cost from its record and weigh a checkpoint against a restart.

    Replay = money spent (or tokens × the configured blended rate when only tokens were recorded)
    + machine time to redo its installs, builds and test runs (evidence durations × the machine
    rate) + re-orientation minutes × the human rate. The checkpoint's cost is the configured
    creation, restore and validation cost plus storage of an average checkpoint's bytes, priced
    per GiB-month for `storage_days` (callers pass the retention TTL).
    """
    spent, basis, spent_note = _spent_again(facts, settings)
    notes = [spent_note] if spent_note else []
    kinds = _kind_totals(runs)
    if not runs:
        notes.append("no evidence recorded: environment reconstruction counted as zero")
    replay = _replay_cost(spent, kinds, settings, reorientation_minutes, human_usd_per_hour)
    cost = _checkpoint_cost(facts, settings, storage_days)
    scenario = Scenario(
        p_interrupt=to_decimal(
            settings.p_interrupt if p_interrupt is None else p_interrupt, "--p-interrupt"
        ),
        replay=replay,
        checkpoint=cost,
    )
    return TaskEstimate(facts.task_id, basis, kinds, break_even(scenario), tuple(notes))


def _spent_again(facts: TaskFacts, settings: EconomicsSettings) -> tuple[Decimal, str, str | None]:
    """What a replay spends again, on which basis, and a note when it had to be guessed."""
    if facts.usd_used > 0:
        return facts.usd_used, "usd_used", None
    if facts.tokens_used > 0:
        rate = to_decimal(settings.usd_per_million_tokens, "economics.usd_per_million_tokens")
        return (
            Decimal(facts.tokens_used) * rate / Decimal(1_000_000),
            "tokens",
            f"no money recorded: {facts.tokens_used} tokens priced at "
            f"{money(rate)} per million (economics.usd_per_million_tokens)",
        )
    return (
        ZERO,
        "nothing recorded",
        "the task recorded no tokens or money; pass --tokens-used / --usd-used to checkpoints",
    )


def _kind_totals(runs: Sequence[RecordedRun]) -> tuple[KindTotal, ...]:
    """The recorded runs of each kind: how many, and their minutes (every kind, in order)."""
    totals: dict[WorkKind, tuple[int, int]] = {kind: (0, 0) for kind in WorkKind}
    for run in runs:
        count, millis = totals[run.kind]
        totals[run.kind] = (count + 1, millis + max(run.duration_ms, 0))
    return tuple(
        KindTotal(kind, count, Decimal(millis) / Decimal(60_000), kind in COUNTED_KINDS)
        for kind, (count, millis) in totals.items()
    )


def _replay_cost(
    spent: Decimal,
    kinds: Sequence[KindTotal],
    settings: EconomicsSettings,
    reorientation_minutes: Amount | None,
    human_usd_per_hour: Amount | None,
) -> ReplayCost:
    """The exposure: spent again, machine time for the counted runs, and a person's time."""
    environment_minutes = sum((k.minutes for k in kinds if k.counted), ZERO)
    machine_rate = to_decimal(settings.machine_usd_per_hour, "economics.machine_usd_per_hour")
    return ReplayCost(
        spent_usd=spent,
        machine_usd=environment_minutes * machine_rate / MINUTES_PER_HOUR,
        environment_minutes=environment_minutes,
        reorientation_minutes=to_decimal(
            settings.reorientation_minutes
            if reorientation_minutes is None
            else reorientation_minutes,
            "re-orientation minutes",
        ),
        human_usd_per_hour=to_decimal(
            settings.human_usd_per_hour if human_usd_per_hour is None else human_usd_per_hour,
            "hourly rate",
        ),
    )


def _checkpoint_cost(
    facts: TaskFacts, settings: EconomicsSettings, storage_days: Amount
) -> CheckpointCost:
    """The configured creation, restore and validation cost, and an average checkpoint's storage."""
    storage_rate = to_decimal(
        settings.storage_usd_per_gib_month, "economics.storage_usd_per_gib_month"
    )
    per_checkpoint_bytes = (
        Decimal(facts.checkpoint_bytes) / Decimal(facts.checkpoint_count)
        if facts.checkpoint_count
        else ZERO
    )
    return CheckpointCost(
        create_usd=to_decimal(settings.create_usd, "economics.create_usd"),
        storage_usd=per_checkpoint_bytes
        / BYTES_PER_GIB
        * storage_rate
        * to_decimal(storage_days, "storage days")
        / DAYS_PER_MONTH,
        restore_usd=to_decimal(settings.restore_usd, "economics.restore_usd"),
        validation_usd=to_decimal(settings.validation_usd, "economics.validation_usd"),
    )
