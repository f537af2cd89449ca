"""When the next checkpoint pays (issue 23's "next checkpoint pays after ~N min of work"): the
first minute, of a fixed ladder, at which the break-even model's verdict turns to take."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from core.engine import Engine
from core.engine.pays import _PAYS_STEPS


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())


def config(isolated_env: dict[str, Path], create_usd: float) -> None:
    (isolated_env["config"] / "config.toml").write_text(
        "[policy]\np_interrupt_per_hour = 0.2\nmachine_usd_per_hour = 0\nhuman_usd_per_hour = 60\n"
        f"[economics]\ncreate_usd = {create_usd}\nrestore_usd = 0\nvalidation_usd = 0\n"
        "storage_usd_per_gib_month = 0\nreorientation_minutes = 20\n"
    )


@pytest.mark.parametrize("create_usd", [0.0, 0.05, 0.5, 2.0, 500.0])
def test_the_minute_it_pays_is_the_first_step_the_verdict_turns(
    isolated_env: dict[str, Path], repo: Path, create_usd: float
) -> None:
    config(isolated_env, create_usd)
    with Engine() as engine:
        task = engine.start_task(repo=repo, objective="weigh it")
        minutes = engine.minutes_until_it_pays(task.id)
        verdicts = [engine.checkpoint_verdict(task.id, ahead_minutes=m).take for m in _PAYS_STEPS]
    if minutes is None:
        assert not any(verdicts)  # never within the horizon
    else:
        at = _PAYS_STEPS.index(minutes)
        assert verdicts[at] and not any(verdicts[:at])
    if create_usd == 0.0:
        assert minutes == 0  # a free checkpoint pays at once
    if create_usd == 500.0:
        assert minutes is None  # $500 a checkpoint never pays for 20 minutes of orientation


def test_a_dearer_checkpoint_never_pays_sooner(isolated_env: dict[str, Path], repo: Path) -> None:
    answers = []
    for create_usd in (0.01, 0.2, 1.0, 3.0, 9.0):
        config(isolated_env, create_usd)
        with Engine() as engine:
            task = engine.start_task(repo=repo, objective=f"weigh {create_usd}")
            found = engine.minutes_until_it_pays(task.id)
        answers.append(10_000 if found is None else found)
    assert answers == sorted(answers)
    assert answers[0] < answers[-1]
