"""The checkpoint decision (core.economics.decide): the seed's figures, and one arithmetic."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.economics.break_even import CheckpointCost, ReplayCost, Scenario, break_even
from core.economics.decide import Exposure, Price, decide, p_over
from core.errors import UsageError

D = Decimal


def test_seed_a_ten_percent_of_eight_dollars_pays() -> None:
    verdict = decide(
        D("0.10"), Exposure(spent_usd=D(8)), Price(create_usd=D("0.12"), restore_usd=D("0.50"))
    )
    assert verdict.take
    assert verdict.weighed.avoided_usd == D("0.80") and verdict.weighed.cost_usd == D("0.17")
    assert "restart risks $0.80" in verdict.reason and "costs $0.17" in verdict.reason


def test_seed_b_four_hour_migration_pays() -> None:
    exposure = Exposure(
        machine_minutes=D(420),
        machine_usd_per_hour=D(1),
        reorientation_minutes=D(20),
        human_usd_per_hour=D(90),
    )
    price = Price(create_usd=D("0.10"), restore_usd=D("0.10"), validation_usd=D("0.10"))
    verdict = decide(D("0.05"), exposure, price)
    assert exposure.total_usd == D(37)
    assert verdict.take and verdict.weighed.avoided_usd == D("1.85")
    assert verdict.weighed.cost_usd == D("0.11")
    assert verdict.reason == (
        "a checkpoint pays: restart risks $1.85 (5% × $37.00), a checkpoint costs $0.11"
    )


def test_seed_c_lint_fix_restarts() -> None:
    exposure = Exposure(reorientation_minutes=D(2), human_usd_per_hour=D(90))
    price = Price(create_usd=D("0.10"), restore_usd=D("0.10"), validation_usd=D("0.10"))
    verdict = decide(D("0.02"), exposure, price)
    assert not verdict.take
    assert verdict.weighed.avoided_usd == D("0.06") and verdict.weighed.cost_usd == D("0.104")
    assert verdict.reason == (
        "restart is cheaper: restart costs $0.06 (2% × $3.00), a checkpoint $0.104"
    )
    assert verdict.numbers()["checkpoint_usd"] == 0.104


def test_p_over_is_linear_and_capped() -> None:
    assert p_over(D("0.05"), D(4)) == D("0.20")
    assert p_over(D("0.5"), D(3)) == 1
    with pytest.raises(UsageError):
        p_over(D("-0.1"), D(1))


def test_negative_amounts_are_refused() -> None:
    with pytest.raises(UsageError, match="spent usd"):
        decide(D("0.1"), Exposure(spent_usd=D(-1)), Price())
    with pytest.raises(UsageError, match="between 0 and 1"):
        decide(D("1.5"), Exposure(), Price())


cents = st.decimals(min_value=0, max_value=10_000, places=2)
probability = st.decimals(min_value=0, max_value=1, places=3)


@given(p=probability, spent=cents, minutes=cents, human=cents, create=cents, use=cents)
def test_decide_agrees_with_pitstop_cost(
    p: Decimal, spent: Decimal, minutes: Decimal, human: Decimal, create: Decimal, use: Decimal
) -> None:
    exposure = Exposure(spent, D(0), D(0), minutes, human)
    verdict = decide(p, exposure, Price(create_usd=create, restore_usd=use))
    model = break_even(
        Scenario(
            p,
            ReplayCost(spent_usd=spent, reorientation_minutes=minutes, human_usd_per_hour=human),
            CheckpointCost(create_usd=create, restore_usd=use),
        )
    )
    assert verdict.weighed.net_usd == model.net_value_usd
    assert verdict.take == (model.decision.value == "checkpoint")
    assert verdict.take == (verdict.weighed.avoided_usd > verdict.weighed.cost_usd)


@given(p=probability, exposure=cents, fixed=cents, use=cents, more=cents)
def test_more_exposure_never_turns_a_take_into_a_skip(
    p: Decimal, exposure: Decimal, fixed: Decimal, use: Decimal, more: Decimal
) -> None:
    price = Price(create_usd=fixed, restore_usd=use)
    low = decide(p, Exposure(spent_usd=exposure), price)
    high = decide(p, Exposure(spent_usd=exposure + more), price)
    assert not low.take or high.take


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("pytest -q", "test"),  # a hook records the shell's command line as one word
        ("uv sync", "install"),
        ("ruff check --fix .", "test"),
        ("alembic upgrade head", "build"),  # a migration: redone to rebuild the environment
        ("npm run build && npm test", "build"),
        ("echo hello-from-e2e", "other"),
    ],
)
def test_a_hooks_command_line_is_classified(command: str, kind: str) -> None:
    from core.economics.work_kinds import classify_run

    assert classify_run([command]).value == kind


def test_policy_rates_come_from_config(tmp_path: Path) -> None:
    from core.config import load_config

    file = tmp_path / "config.toml"
    file.write_text(
        "[policy]\np_interrupt_per_hour = 0.2\nmachine_usd_per_hour = 3\n"
        "human_usd_per_hour = 150\ntrivial_restart_usd = 1\n"
    )
    policy = load_config(file).policy
    assert (policy.p_interrupt_per_hour, policy.machine_usd_per_hour) == (0.2, 3.0)
    assert (policy.human_usd_per_hour, policy.trivial_restart_usd) == (150.0, 1.0)
    assert policy.min_interval_seconds == 300.0  # default kept
    file.write_text("[policy]\np_interrupt_per_hour = 1.5\n")
    with pytest.raises(UsageError, match=r"policy\.p_interrupt_per_hour is a probability"):
        load_config(file)
