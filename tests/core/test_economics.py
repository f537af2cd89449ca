"""The break-even model of DESIGN §4: seed figures exactly, its algebra, estimates, policy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from corekit import write
from hypothesis import given
from hypothesis import strategies as st

from core import clock
from core.config import EconomicsSettings, load_config
from core.economics.model import (
    CheckpointCost,
    Decision,
    RecordedRun,
    ReplayCost,
    Scenario,
    TaskFacts,
    WorkKind,
    break_even,
    classify_run,
    estimate_task,
    money,
    to_decimal,
)
from core.economics.policy import turn_skip_reason
from core.engine import CheckpointRequest, Engine
from core.errors import UsageError
from core.models import CheckpointReason

D = Decimal


def seed_a() -> Scenario:
    """10% × $8 = $0.80 avoided against $0.12 (create + storage) + $0.05 (10% × $0.50)."""
    return Scenario(
        p_interrupt=D("0.10"),
        replay=ReplayCost(spent_usd=D("8")),
        checkpoint=CheckpointCost(
            create_usd=D("0.12"), restore_usd=D("0.30"), validation_usd=D("0.20")
        ),
    )


def seed_b() -> Scenario:
    """A four-hour migration: $7 machine + 20 min × $90/h = $37; at 5%, $1.85."""
    return Scenario(
        p_interrupt=D("0.05"),
        replay=ReplayCost(
            machine_usd=D("7"), reorientation_minutes=D("20"), human_usd_per_hour=D("90")
        ),
        checkpoint=CheckpointCost(create_usd=D("0.10"), restore_usd=D("0.20")),
    )


def seed_c() -> Scenario:
    """A two-minute lint fix: even at $90/h for the whole two minutes, restarting wins."""
    return Scenario(
        p_interrupt=D("0.02"),
        replay=ReplayCost(reorientation_minutes=D("2"), human_usd_per_hour=D("90")),
        checkpoint=CheckpointCost(create_usd=D("0.10"), restore_usd=D("0.20")),
    )


def test_seed_a_ten_percent_of_eight_dollars() -> None:
    result = break_even(seed_a())
    assert result.exposure_usd == D("8")
    assert result.expected_loss_avoided_usd == D("0.80")
    assert result.fixed_cost_usd == D("0.12")
    assert result.expected_use_cost_usd == D("0.05")
    assert result.expected_checkpoint_cost_usd == D("0.17")
    assert result.net_value_usd == D("0.63")
    assert result.decision is Decision.CHECKPOINT
    assert money(result.expected_loss_avoided_usd) == "$0.80"
    assert money(result.fixed_cost_usd) == "$0.12"
    assert money(result.expected_use_cost_usd) == "$0.05"


def test_seed_b_four_hour_migration() -> None:
    result = break_even(seed_b())
    assert result.scenario.replay.human_usd == D("30")
    assert result.exposure_usd == D("37")
    assert result.expected_loss_avoided_usd == D("1.85")
    assert result.fixed_cost_usd == D("0.10")
    assert result.expected_use_cost_usd == D("0.01")  # 5% × $0.20
    assert result.expected_checkpoint_cost_usd == D("0.11")
    assert result.net_value_usd == D("1.74")
    assert result.decision is Decision.CHECKPOINT
    assert result.replay_minutes == D("20")
    assert money(result.exposure_usd) == "$37.00"
    assert money(result.expected_loss_avoided_usd) == "$1.85"


def test_seed_c_two_minute_lint_fix_restarts() -> None:
    result = break_even(seed_c())
    assert result.exposure_usd == D("3")
    assert result.expected_loss_avoided_usd == D("0.06")
    assert result.expected_checkpoint_cost_usd == D("0.104")
    assert result.net_value_usd == D("-0.044")
    assert result.decision is Decision.RESTART
    assert money(result.net_value_usd) == "-$0.044"


def test_break_even_probability_is_where_net_value_crosses_zero() -> None:
    result = break_even(seed_c())
    assert result.break_even_p is not None
    at_threshold = break_even(Scenario(result.break_even_p, seed_c().replay, seed_c().checkpoint))
    assert abs(at_threshold.net_value_usd) < D("1e-20")
    never = break_even(
        Scenario(
            D("1"),
            ReplayCost(spent_usd=D("0.05")),
            CheckpointCost(create_usd=D("0.10"), restore_usd=D("0.20")),
        )
    )
    assert never.break_even_p is None and never.decision is Decision.RESTART


def test_as_dict_prints_the_exact_digits() -> None:
    document = break_even(seed_b()).as_dict()
    assert document["exposure_usd"] == 37
    assert document["expected_loss_avoided_usd"] == 1.85
    assert document["expected_checkpoint_cost_usd"] == 0.11
    assert document["decision"] == "checkpoint"
    assert repr(document["expected_loss_avoided_usd"]) == "1.85"


@pytest.mark.parametrize(
    "bad",
    [
        lambda: Scenario(D("1.5"), ReplayCost(), CheckpointCost()),
        lambda: Scenario(D("-0.1"), ReplayCost(), CheckpointCost()),
        lambda: ReplayCost(spent_usd=D("-1")),
        lambda: CheckpointCost(restore_usd=D("-0.01")),
        lambda: to_decimal(float("nan")),
        lambda: to_decimal("12 dollars"),
    ],
)
def test_impossible_inputs_are_refused(bad: object) -> None:
    with pytest.raises(UsageError):
        bad()  # type: ignore[operator]


money_amounts = st.decimals(min_value=0, max_value=10_000, places=4, allow_nan=False)
probabilities = st.decimals(min_value=0, max_value=1, places=4, allow_nan=False)


@given(
    p=probabilities,
    spent=money_amounts,
    machine=money_amounts,
    minutes=st.decimals(min_value=0, max_value=600, places=2, allow_nan=False),
    rate=st.decimals(min_value=0, max_value=500, places=2, allow_nan=False),
    create=money_amounts,
    storage=money_amounts,
    restore=money_amounts,
    validation=money_amounts,
)
def test_net_is_avoided_minus_cost_and_the_decision_follows_its_sign(
    p: Decimal,
    spent: Decimal,
    machine: Decimal,
    minutes: Decimal,
    rate: Decimal,
    create: Decimal,
    storage: Decimal,
    restore: Decimal,
    validation: Decimal,
) -> None:
    scenario = Scenario(
        p,
        ReplayCost(
            spent_usd=spent,
            machine_usd=machine,
            reorientation_minutes=minutes,
            human_usd_per_hour=rate,
        ),
        CheckpointCost(create, storage, restore, validation),
    )
    result = break_even(scenario)
    assert result.exposure_usd == spent + machine + minutes * rate / 60
    assert result.expected_loss_avoided_usd == p * result.exposure_usd
    assert result.expected_checkpoint_cost_usd == create + storage + p * (restore + validation)
    assert (
        result.net_value_usd
        == result.expected_loss_avoided_usd - result.expected_checkpoint_cost_usd
    )
    assert (result.decision is Decision.CHECKPOINT) == (result.net_value_usd > 0)
    if result.break_even_p is not None and result.break_even_p < p:
        assert result.decision is Decision.CHECKPOINT


# --- classifying recorded runs ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["pip", "install", "-r", "requirements.txt"], WorkKind.INSTALL),
        (["python3", "-m", "pip", "install", "-e", "."], WorkKind.INSTALL),
        (["uv", "sync"], WorkKind.INSTALL),
        (["uv", "pip", "install", "httpx"], WorkKind.INSTALL),
        (["poetry", "install"], WorkKind.INSTALL),
        (["npm", "ci"], WorkKind.INSTALL),
        (["/usr/bin/npm", "install"], WorkKind.INSTALL),
        (["npm", "run", "build"], WorkKind.BUILD),
        (["make"], WorkKind.BUILD),
        (["cargo", "build", "--release"], WorkKind.BUILD),
        (["env", "CI=1", "go", "build", "./..."], WorkKind.BUILD),
        (["pytest", "-q"], WorkKind.TEST),
        (["uv", "run", "pytest"], WorkKind.TEST),
        (["python", "-m", "pytest", "tests"], WorkKind.TEST),
        (["npm", "test"], WorkKind.TEST),
        (["timeout", "600", "cargo", "test"], WorkKind.TEST),
        (["make", "check"], WorkKind.TEST),
        (["bash", "-c", "pip install -e . && pytest -q"], WorkKind.INSTALL),
        (["sh", "-c", "cd app; npx jest"], WorkKind.TEST),
        (["bash", "-c", "CI=1 make -j4 > build.log"], WorkKind.BUILD),
        (["ls", "-la"], WorkKind.OTHER),
        (["git", "status"], WorkKind.OTHER),
    ],
)
def test_commands_are_classified(argv: list[str], kind: WorkKind) -> None:
    assert classify_run(argv) is kind


def test_summary_and_label_classify_when_the_command_is_unknown() -> None:
    assert classify_run([], "pytest") is WorkKind.TEST
    assert classify_run([], "npm install") is WorkKind.INSTALL
    assert classify_run(["./run.sh"], None, "Install dependencies") is WorkKind.INSTALL
    assert classify_run(["./run.sh"], None, "release build") is WorkKind.BUILD
    assert classify_run(["./run.sh"], None, "unit tests") is WorkKind.TEST
    assert classify_run(["./run.sh"], None, "deploy") is WorkKind.OTHER


# --- estimating a task ------------------------------------------------------------------------


def facts(**changes: object) -> TaskFacts:
    base: dict[str, object] = {
        "task_id": "mig-1",
        "tokens_used": 0,
        "usd_used": D("0"),
        "checkpoint_bytes": 0,
        "checkpoint_count": 0,
    }
    base.update(changes)
    return TaskFacts(**base)  # type: ignore[arg-type]


def test_task_estimate_reproduces_the_migration_from_its_record() -> None:
    # Seven hours of recorded installs, builds and test runs at $1/h of machine time, plus the
    # default 20 minutes of re-orientation at $90/h: the seed's $37 exposure.
    runs = [
        RecordedRun(1, 2 * 3_600_000, WorkKind.INSTALL),
        RecordedRun(2, 3 * 3_600_000, WorkKind.BUILD),
        RecordedRun(3, 2 * 3_600_000, WorkKind.TEST),
        RecordedRun(4, 5 * 3_600_000, WorkKind.OTHER),  # not counted
    ]
    estimate = estimate_task(facts(), runs, EconomicsSettings(machine_usd_per_hour=1.0))
    replay = estimate.result.scenario.replay
    assert replay.environment_minutes == D(420)
    assert replay.machine_usd == D(7)
    assert replay.human_usd == D(30)
    assert estimate.result.exposure_usd == D(37)
    assert estimate.result.expected_loss_avoided_usd == D("1.85")
    assert estimate.result.expected_checkpoint_cost_usd == D("0.11")
    assert estimate.result.decision is Decision.CHECKPOINT
    other = next(k for k in estimate.kinds if k.kind is WorkKind.OTHER)
    assert other.runs == 1 and not other.counted


def test_money_spent_counts_and_tokens_stand_in_when_no_money_was_recorded() -> None:
    settings = EconomicsSettings(reorientation_minutes=0, usd_per_million_tokens=3.0)
    by_money = estimate_task(facts(usd_used=D("4.25"), tokens_used=999), [], settings)
    assert by_money.spent_basis == "usd_used"
    assert by_money.result.exposure_usd == D("4.25")
    by_tokens = estimate_task(facts(tokens_used=2_000_000), [], settings)
    assert by_tokens.spent_basis == "tokens"
    assert by_tokens.result.exposure_usd == D("6")
    assert any("tokens" in note for note in by_tokens.notes)


def test_a_short_task_decides_restart() -> None:
    # Two minutes of agent work ($0.04), a 30-second lint run, nothing to re-orient.
    estimate = estimate_task(
        facts(usd_used=D("0.04")),
        [RecordedRun(1, 30_000, WorkKind.TEST)],
        EconomicsSettings(),
        reorientation_minutes=0,
    )
    assert estimate.result.decision is Decision.RESTART


def test_overrides_and_storage_cost() -> None:
    settings = EconomicsSettings(storage_usd_per_gib_month=0.30)
    estimate = estimate_task(
        facts(checkpoint_bytes=2 * 1024**3, checkpoint_count=2),
        [],
        settings,
        p_interrupt="0.5",
        reorientation_minutes=10,
        human_usd_per_hour=60,
        storage_days=15,
    )
    assert estimate.result.scenario.p_interrupt == D("0.5")
    assert estimate.result.scenario.replay.human_usd == D(10)
    assert estimate.result.scenario.checkpoint.storage_usd == D("0.15")  # 1 GiB, half a month


def test_economics_settings_come_from_config(tmp_path: pytest.TempPathFactory) -> None:
    config_file = tmp_path / "config.toml"  # type: ignore[operator]
    config_file.write_text(
        "[economics]\nreorientation_minutes = 30\nhuman_usd_per_hour = 120\n"
        "[policy]\nmin_interval_seconds = 60\n[retention]\nkeep_last = 3\nmax_task_bytes = 1000\n"
    )
    config = load_config(config_file)
    assert config.economics.reorientation_minutes == 30.0
    assert config.economics.human_usd_per_hour == 120.0
    assert config.economics.create_usd == 0.10  # default kept
    assert config.policy.min_interval_seconds == 60.0
    assert config.retention.keep_last == 3 and config.retention.max_task_bytes == 1000
    assert config.retention.ttl_days == 14.0


@pytest.mark.parametrize(
    "text",
    [
        "[economics]\np_interrupt = 1.5\n",
        "[economics]\nhuman_usd_per_hour = -1\n",
        "[retention]\nkeep_lats = 3\n",
        "[policy]\nmin_interval_seconds = 'soon'\n",
        "retention = 3\n",
    ],
)
def test_bad_settings_are_refused(tmp_path: pytest.TempPathFactory, text: str) -> None:
    config_file = tmp_path / "config.toml"  # type: ignore[operator]
    config_file.write_text(text)
    with pytest.raises(UsageError) as error:
        load_config(config_file)
    assert "\n" not in error.value.message


# --- policy -----------------------------------------------------------------------------------


def test_turn_checkpoints_wait_for_the_minimum_interval() -> None:
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert turn_skip_reason(None, now, 300) is None
    assert turn_skip_reason(now - timedelta(seconds=300), now, 300) is None
    assert turn_skip_reason(now - timedelta(seconds=10), now, 0) is None
    message = turn_skip_reason(now - timedelta(seconds=120), now, 300)
    assert message is not None
    assert "120s" in message and "300s" in message and "180s" in message
    assert "milestone" in message and "\n" not in message


def test_engine_skips_turn_checkpoints_under_the_interval_and_never_milestones(
    engine: Engine, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    monkeypatch.setenv(clock.FROZEN_NOW_ENV, clock.to_iso(start))
    engine.start_task(repo=repo, objective="policy", task_id="policy")
    first = engine.checkpoint("policy", CheckpointRequest(reason=CheckpointReason.TURN))
    assert first.checkpoint is not None  # nothing to be too soon after

    write(repo / "README.md", "# changed\n")
    monkeypatch.setenv(clock.FROZEN_NOW_ENV, clock.to_iso(start + timedelta(seconds=60)))
    skipped = engine.checkpoint(
        "policy", CheckpointRequest(reason=CheckpointReason.TURN, force=True)
    )
    assert skipped.checkpoint is None
    assert skipped.skipped and "minimum interval is 300s" in skipped.skipped
    assert [c.seq for c in engine.list_checkpoints("policy")] == [1]

    for reason in (CheckpointReason.MILESTONE, CheckpointReason.BEFORE_WAIT):
        made = engine.checkpoint("policy", CheckpointRequest(reason=reason, force=True))
        assert made.checkpoint is not None, reason

    monkeypatch.setenv(clock.FROZEN_NOW_ENV, clock.to_iso(start + timedelta(seconds=361)))
    write(repo / "README.md", "# changed again\n")
    later = engine.checkpoint("policy", CheckpointRequest(reason=CheckpointReason.TURN))
    assert later.checkpoint is not None and later.checkpoint.reason is CheckpointReason.TURN
