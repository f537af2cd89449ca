"""The money spent since the last checkpoint counts after the first checkpoint too (issue 23's
bug: "USD spent since the last checkpoint only counts before the first one").

Budgets reported between checkpoints (`Engine.record_usage`, or a decision's own request
carrying them) are the task's cumulative spend; the replay an interruption would cost is what
was spent since the newest complete checkpoint, never what was spent before it.
"""

from __future__ import annotations

import base64
import os
from decimal import Decimal as D
from pathlib import Path

import pytest

from core.engine import CheckpointRequest, Engine
from core.errors import UsageError
from core.models import CheckpointReason


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())


@pytest.fixture(autouse=True)
def only_money(isolated_env: dict[str, Path]) -> None:
    """No machine or human terms: the exposure is the money alone, P a flat 10%."""
    (isolated_env["config"] / "config.toml").write_text(
        "[policy]\np_interrupt_per_hour = 1\nmachine_usd_per_hour = 0\nhuman_usd_per_hour = 0\n"
        "[economics]\ncreate_usd = 0.12\nrestore_usd = 0.5\nvalidation_usd = 0\n"
        "storage_usd_per_gib_month = 0\nreorientation_minutes = 0\nusd_per_million_tokens = 10\n"
    )


def _checkpoint(engine: Engine, task_id: str, repo: Path, text: str, **usage: float) -> None:
    (repo / "work.txt").write_text(text)
    made = engine.checkpoint(task_id, CheckpointRequest(note=text, **usage))  # type: ignore[arg-type]
    assert made.checkpoint is not None


def test_usd_recorded_after_the_first_checkpoint_counts(repo: Path) -> None:
    with Engine() as engine:
        task = engine.start_task(repo=repo, objective="spend after a checkpoint")
        _checkpoint(engine, task.id, repo, "one", usd_used=1.0)
        assert engine.checkpoint_verdict(task.id).exposure.spent_usd == 0  # nothing since
        engine.record_usage(task.id, usd_used=9.0)
        verdict = engine.checkpoint_verdict(task.id)
    assert verdict.exposure.spent_usd == 8  # $9 so far, $1 of it before checkpoint 1
    assert verdict.numbers()["spent_usd"] == 8


def test_only_the_spend_since_the_newest_checkpoint_counts(repo: Path) -> None:
    with Engine() as engine:
        task = engine.start_task(repo=repo, objective="spend across checkpoints")
        _checkpoint(engine, task.id, repo, "one", usd_used=1.0)
        engine.record_usage(task.id, usd_used=3.0)
        engine.record_usage(task.id, usd_used=4.5)
        assert engine.checkpoint_verdict(task.id).exposure.spent_usd == D("3.5")
        _checkpoint(engine, task.id, repo, "two")  # the $4.50 is now kept by checkpoint 2
        assert engine.checkpoint_verdict(task.id).exposure.spent_usd == 0
        engine.record_usage(task.id, usd_used=6.0)
        assert engine.checkpoint_verdict(task.id).exposure.spent_usd == D("1.5")


def test_tokens_recorded_after_a_checkpoint_count_at_the_token_rate(repo: Path) -> None:
    with Engine() as engine:
        task = engine.start_task(repo=repo, objective="tokens after a checkpoint")
        _checkpoint(engine, task.id, repo, "one", tokens_used=100_000)
        engine.record_usage(task.id, tokens_used=900_000)
        verdict = engine.checkpoint_verdict(task.id)
    assert verdict.exposure.spent_usd == 8  # 800,000 tokens at $10 per million


def test_the_decision_counts_the_spend_and_takes_the_checkpoint(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seed's (a): 10% × $8 = $0.80 against $0.12 + 10% × $0.50 = $0.17: checkpoint —
    with the $8 spent after checkpoint 1, reported by the decision's own request."""
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-12-03T08:00:00+00:00")
    with Engine() as engine:
        task = engine.start_task(repo=repo, objective="the seed's figures after a checkpoint")
        _checkpoint(engine, task.id, repo, "one", usd_used=2.0)
        (repo / "work.txt").write_text("two")
        # six minutes of work at 1 per hour: P = 10%
        monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-12-03T08:06:00+00:00")
        request = CheckpointRequest(reason=CheckpointReason.TURN, usd_used=10.0)
        before = engine.checkpoint_verdict(task.id)
        verdict, result = engine.decide_checkpoint(task.id, request, why="a turn ended")
    assert not before.take  # without the $8 a restart is cheaper
    assert verdict.p_interrupt == D("0.1")
    assert verdict.exposure.spent_usd == 8
    assert verdict.weighed.avoided_usd == D("0.80")
    assert verdict.weighed.cost_usd == D("0.17")
    assert verdict.take and result is not None and result.checkpoint is not None


def test_a_skipped_decision_keeps_the_spend_it_was_told(repo: Path) -> None:
    with Engine() as engine:
        task = engine.start_task(repo=repo, objective="a skip keeps the budget")
        _checkpoint(engine, task.id, repo, "one", usd_used=2.0)
        request = CheckpointRequest(reason=CheckpointReason.TURN, usd_used=2.01)
        verdict, result = engine.decide_checkpoint(task.id, request, why="a turn ended")
        assert not verdict.take and result is None
        assert engine.get_task(task.id).usd_used == pytest.approx(2.01)
        engine.record_usage(task.id, usd_used=3.0)
        assert engine.checkpoint_verdict(task.id).exposure.spent_usd == 1  # since checkpoint 1


def test_a_lower_total_never_makes_the_spend_negative(repo: Path) -> None:
    with Engine() as engine:
        task = engine.start_task(repo=repo, objective="a total that went down")
        _checkpoint(engine, task.id, repo, "one", usd_used=5.0)
        engine.record_usage(task.id, usd_used=4.0)
        assert engine.checkpoint_verdict(task.id).exposure.spent_usd == 0


def test_negative_usage_is_refused_and_nothing_changes(repo: Path) -> None:
    with Engine() as engine:
        task = engine.start_task(repo=repo, objective="bad usage")
        with pytest.raises(UsageError, match="usd"):
            engine.record_usage(task.id, usd_used=-1.0)
        with pytest.raises(UsageError, match="tokens"):
            engine.record_usage(task.id, tokens_used=-5)
        assert engine.get_task(task.id).usd_used == 0
        assert engine.get_task(task.id).tokens_used == 0
        assert not [e for e in engine.events(task.id) if e.action == "usage"]
