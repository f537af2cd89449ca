"""The break-even model of DESIGN §4: does a checkpoint pay for itself, or is a restart cheaper?

Expected value of a checkpoint = P(interruption) × replay cost avoided − (creation + storage +
P(interruption) × (restore + validation)). Every term is a named field of a frozen dataclass, so
`pitstop cost` can show each one (the worked figures are in `core.economics.model`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from core.economics.amounts import MINUTES_PER_HOUR, ONE, ZERO, json_number, non_negative
from core.economics.decide import weigh
from core.errors import UsageError

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


class Decision(StrEnum):
    """What the model recommends."""

    CHECKPOINT = "checkpoint"
    RESTART = "restart"


@dataclass(frozen=True)
class ReplayCost:
    """What redoing lost work costs: the exposure an interruption without a checkpoint causes."""

    spent_usd: Decimal = ZERO  # tokens and paid calls spent getting here, spent again
    machine_usd: Decimal = ZERO  # sandbox / CI time to rebuild the environment and rerun
    environment_minutes: Decimal = ZERO  # setup, installs, builds, test runs to redo
    reorientation_minutes: Decimal = ZERO  # a person finding their way back in
    human_usd_per_hour: Decimal = ZERO

    def __post_init__(self) -> None:
        for name in (
            "spent_usd",
            "machine_usd",
            "environment_minutes",
            "reorientation_minutes",
            "human_usd_per_hour",
        ):
            non_negative(getattr(self, name), name.replace("_", " "))

    @property
    def human_usd(self) -> Decimal:
        """Re-orientation minutes × the hourly rate."""
        return self.reorientation_minutes * self.human_usd_per_hour / MINUTES_PER_HOUR

    @property
    def total_usd(self) -> Decimal:
        """The exposure in dollars: spent + machine + human."""
        return self.spent_usd + self.machine_usd + self.human_usd

    @property
    def minutes(self) -> Decimal:
        """Wall-clock minutes a replay takes, as far as they were measured or configured."""
        return self.environment_minutes + self.reorientation_minutes


@dataclass(frozen=True)
class CheckpointCost:
    """What a checkpoint costs: always creation and storage, and restore + validation if used."""

    create_usd: Decimal = ZERO
    storage_usd: Decimal = ZERO
    restore_usd: Decimal = ZERO
    validation_usd: Decimal = ZERO

    def __post_init__(self) -> None:
        for name in ("create_usd", "storage_usd", "restore_usd", "validation_usd"):
            non_negative(getattr(self, name), name.replace("_", " "))

    @property
    def fixed_usd(self) -> Decimal:
        """Paid whether or not the task is interrupted: creation + storage."""
        return self.create_usd + self.storage_usd

    @property
    def use_usd(self) -> Decimal:
        """Paid only when the checkpoint is used: restore + validation."""
        return self.restore_usd + self.validation_usd


@dataclass(frozen=True)
class Scenario:
    """One question for the model: this replay cost, this checkpoint cost, this chance."""

    p_interrupt: Decimal
    replay: ReplayCost
    checkpoint: CheckpointCost

    def __post_init__(self) -> None:
        if not ZERO <= self.p_interrupt <= ONE:
            raise UsageError(
                f"the interruption probability must be between 0 and 1 (got {self.p_interrupt})"
            )


@dataclass(frozen=True)
class BreakEven:
    """The model's answer, every term named."""

    scenario: Scenario
    exposure_usd: Decimal  # the replay cost an interruption would cause
    expected_loss_avoided_usd: Decimal  # P × exposure
    fixed_cost_usd: Decimal  # creation + storage
    expected_use_cost_usd: Decimal  # P × (restore + validation)
    expected_checkpoint_cost_usd: Decimal  # fixed + expected use
    net_value_usd: Decimal  # avoided − cost
    decision: Decision  # checkpoint only when the net value is positive
    replay_minutes: Decimal
    expected_minutes_avoided: Decimal  # P × replay minutes
    break_even_p: Decimal | None  # the P above which a checkpoint pays; None: never

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types; money as numbers in dollars."""
        replay = self.scenario.replay
        cost = self.scenario.checkpoint
        return {
            "p_interrupt": json_number(self.scenario.p_interrupt),
            "replay": {
                "spent_usd": json_number(replay.spent_usd),
                "machine_usd": json_number(replay.machine_usd),
                "environment_minutes": json_number(replay.environment_minutes),
                "reorientation_minutes": json_number(replay.reorientation_minutes),
                "human_usd_per_hour": json_number(replay.human_usd_per_hour),
                "human_usd": json_number(replay.human_usd),
                "total_usd": json_number(replay.total_usd),
                "minutes": json_number(replay.minutes),
            },
            "checkpoint_cost": {
                "create_usd": json_number(cost.create_usd),
                "storage_usd": json_number(cost.storage_usd),
                "restore_usd": json_number(cost.restore_usd),
                "validation_usd": json_number(cost.validation_usd),
            },
            "exposure_usd": json_number(self.exposure_usd),
            "expected_loss_avoided_usd": json_number(self.expected_loss_avoided_usd),
            "fixed_cost_usd": json_number(self.fixed_cost_usd),
            "expected_use_cost_usd": json_number(self.expected_use_cost_usd),
            "expected_checkpoint_cost_usd": json_number(self.expected_checkpoint_cost_usd),
            "net_value_usd": json_number(self.net_value_usd),
            "decision": self.decision.value,
            "replay_minutes": json_number(self.replay_minutes),
            "expected_minutes_avoided": json_number(self.expected_minutes_avoided),
            "break_even_p": None if self.break_even_p is None else json_number(self.break_even_p),
        }


def break_even(scenario: Scenario) -> BreakEven:
    """Weigh expected loss avoided against expected checkpoint cost (`decide.weigh`)."""
    p = scenario.p_interrupt
    exposure = scenario.replay.total_usd
    weighed = weigh(p, exposure, scenario.checkpoint.fixed_usd, scenario.checkpoint.use_usd)
    return BreakEven(
        scenario=scenario,
        exposure_usd=exposure,
        expected_loss_avoided_usd=weighed.avoided_usd,
        fixed_cost_usd=weighed.fixed_usd,
        expected_use_cost_usd=weighed.expected_use_usd,
        expected_checkpoint_cost_usd=weighed.cost_usd,
        net_value_usd=weighed.net_usd,
        decision=Decision.CHECKPOINT if weighed.net_usd > 0 else Decision.RESTART,
        replay_minutes=scenario.replay.minutes,
        expected_minutes_avoided=p * scenario.replay.minutes,
        break_even_p=weighed.break_even_p,
    )
