"""Does a checkpoint pay right now? The break-even model (DESIGN §4) asked by a harness hook.

The question: the replay an interruption would cost since the last checkpoint (money spent since
then, the recorded durations of its installs, builds and test runs at the machine rate, and a
person's re-orientation at the human rate) × P(interruption over the remaining work), against
what the checkpoint costs (creation, storage, and P × restore + validation). `weigh` is the one
piece of arithmetic: `core.economics.break_even` (`pitstop cost`) uses it too. Named tuples
only, no dataclasses: a hook asks this after a tool call, so it loads in well under a
millisecond (tests/core/test_hooks.py pins what a hook loads).
"""

from __future__ import annotations

from decimal import Decimal

from core.economics.amounts import (
    MINUTES_PER_HOUR,
    ONE,
    ZERO,
    json_number,
    money,
    non_negative,
    percent,
)
from core.errors import UsageError

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple


class Weighed(NamedTuple):
    """Expected loss avoided against expected checkpoint cost, every term named."""

    avoided_usd: Decimal  # P × exposure
    fixed_usd: Decimal  # creation + storage: paid whether or not the task is interrupted
    expected_use_usd: Decimal  # P × (restore + validation)
    cost_usd: Decimal  # fixed + expected use
    net_usd: Decimal  # avoided − cost; a checkpoint pays only when positive
    break_even_p: Decimal | None  # the P above which a checkpoint pays; None: never


def weigh(p: Decimal, exposure_usd: Decimal, fixed_usd: Decimal, use_usd: Decimal) -> Weighed:
    """The break-even arithmetic: P × exposure − (fixed + P × use)."""
    if not ZERO <= p <= ONE:
        raise UsageError(f"the interruption probability must be between 0 and 1 (got {p})")
    avoided = p * exposure_usd
    expected_use = p * use_usd
    cost = fixed_usd + expected_use
    margin = exposure_usd - use_usd
    threshold = fixed_usd / margin if margin > 0 else None
    return Weighed(
        avoided_usd=avoided,
        fixed_usd=fixed_usd,
        expected_use_usd=expected_use,
        cost_usd=cost,
        net_usd=avoided - cost,
        break_even_p=threshold if threshold is not None and threshold <= ONE else None,
    )


class Exposure(NamedTuple):
    """What an interruption now would cost to replay: the work since the last checkpoint."""

    spent_usd: Decimal = ZERO  # tokens and paid calls since the last checkpoint
    machine_minutes: Decimal = ZERO  # recorded installs, builds and test runs since then
    machine_usd_per_hour: Decimal = ZERO
    reorientation_minutes: Decimal = ZERO  # a person finding their way back in
    human_usd_per_hour: Decimal = ZERO
    evidence: tuple[int, ...] = ()  # the evidence items whose durations count

    @property
    def machine_usd(self) -> Decimal:
        """Machine minutes at the machine rate."""
        return self.machine_minutes * self.machine_usd_per_hour / MINUTES_PER_HOUR

    @property
    def human_usd(self) -> Decimal:
        """Re-orientation minutes at the human rate."""
        return self.reorientation_minutes * self.human_usd_per_hour / MINUTES_PER_HOUR

    @property
    def total_usd(self) -> Decimal:
        """Spent + machine + human."""
        return self.spent_usd + self.machine_usd + self.human_usd


class Price(NamedTuple):
    """What one checkpoint costs (creation and storage from the store's measures)."""

    create_usd: Decimal = ZERO
    storage_usd: Decimal = ZERO
    restore_usd: Decimal = ZERO
    validation_usd: Decimal = ZERO


class Verdict(NamedTuple):
    """The decision, the numbers behind it and one line that says why."""

    take: bool
    p_interrupt: Decimal
    exposure: Exposure
    price: Price
    weighed: Weighed
    reason: str

    def numbers(self) -> dict[str, Any]:
        """Plain JSON numbers, recorded with every automatic decision."""
        return {
            "take": self.take,
            "p_interrupt": json_number(self.p_interrupt),
            "exposure_usd": json_number(self.exposure.total_usd),
            "spent_usd": json_number(self.exposure.spent_usd),
            "machine_minutes": json_number(self.exposure.machine_minutes),
            "machine_usd": json_number(self.exposure.machine_usd),
            "reorientation_minutes": json_number(self.exposure.reorientation_minutes),
            "human_usd": json_number(self.exposure.human_usd),
            "avoided_usd": json_number(self.weighed.avoided_usd),
            "checkpoint_usd": json_number(self.weighed.cost_usd),
            "net_usd": json_number(self.weighed.net_usd),
            "evidence": list(self.exposure.evidence),
        }


def decide(p_interrupt: Decimal, exposure: Exposure, price: Price) -> Verdict:
    """Take a checkpoint now only when the expected replay it avoids exceeds what it costs."""
    for name, value in (*exposure._asdict().items(), *price._asdict().items()):
        if isinstance(value, Decimal):
            non_negative(value, name.replace("_", " "))
    total = exposure.total_usd
    weighed = weigh(
        p_interrupt,
        total,
        price.create_usd + price.storage_usd,
        price.restore_usd + price.validation_usd,
    )
    take = weighed.net_usd > 0
    risk = f"{money(weighed.avoided_usd)} ({percent(p_interrupt)} × {money(total)})"
    if take:
        reason = f"a checkpoint pays: restart risks {risk}, a checkpoint costs "
        reason += money(weighed.cost_usd)
    else:
        reason = f"restart is cheaper: restart costs {risk}, a checkpoint "
        reason += money(weighed.cost_usd)
    return Verdict(take, p_interrupt, exposure, price, weighed, reason)


def p_over(p_per_hour: Decimal, hours: Decimal) -> Decimal:
    """P(interruption) over `hours` of work at `p_per_hour`: linear, at most 1 (an upper bound
    of 1 − (1 − p)^h, so it never understates the risk)."""
    non_negative(p_per_hour, "P(interruption) per hour")
    return min(ONE, p_per_hour * max(hours, ZERO))
