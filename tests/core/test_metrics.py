"""Measures of resume quality (DESIGN §8): their shape, arithmetic, and stores without data."""

from __future__ import annotations

import base64
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from corekit import write

from core.economics.metrics import Latency
from core.engine import CheckpointRequest, Engine
from core.models import CheckpointReason, EffectState

# What `resumes` and `validations` hold, should this build's migrations not create them yet.
FALLBACK_TABLES = {
    "resumes": "CREATE TABLE resumes (id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, "
    "seq INTEGER NOT NULL, state TEXT NOT NULL, verdict TEXT NOT NULL, restore_ms INTEGER, "
    "accepted INTEGER, started_at TEXT NOT NULL)",
    "validations": "CREATE TABLE validations (id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, "
    "seq INTEGER, verdict TEXT NOT NULL, duration_ms INTEGER NOT NULL, at TEXT NOT NULL)",
}


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())


@pytest.fixture
def task_id(engine: Engine, repo: Path) -> str:
    """A task with an install run, two checkpoints and money spent."""
    engine.start_task(repo=repo, objective="measured work", task_id="measured")
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        engine.run_command(
            "measured",
            ["python3", "-c", "print('Successfully installed demo-1.0')"],
            label="install deps",
            out_fd=devnull,
        )
    finally:
        os.close(devnull)
    for number in range(2):
        write(repo / "work.txt", f"step {number}\n")
        engine.checkpoint(
            "measured",
            CheckpointRequest(reason=CheckpointReason.MILESTONE, usd_used=4.0 + number),
        )
    return "measured"


def insert_row(engine: Engine, table: str, **values: Any) -> None:
    """Insert a row, filling any other required column with a neutral value."""
    if table not in engine.db.table_names():
        engine.db.execute(FALLBACK_TABLES[table])
    for column in engine.db.execute(f"PRAGMA table_info({table})").fetchall():
        _cid, name, kind, notnull, default, primary = column
        if notnull and default is None and not primary and name not in values:
            values[name] = 0 if "INT" in str(kind).upper() else "x"
    names = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    engine.db.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(values.values()))


def test_latency_percentiles_are_nearest_rank() -> None:
    assert Latency.of([]) == Latency(0, None, None, None, None)
    spread = Latency.of(list(range(1, 101)))
    assert (spread.p50_ms, spread.p95_ms, spread.max_ms, spread.mean_ms) == (50, 95, 100, 50)
    assert Latency.of([7]).p95_ms == 7


def test_a_store_without_resume_tables_reports_none_recorded(engine: Engine, task_id: str) -> None:
    for table in ("resumes", "validations"):
        engine.db.execute(f"DROP TABLE IF EXISTS {table}")
    measured = engine.metrics()
    assert measured.checkpoints == 2
    assert measured.checkpoint_bytes > 0
    assert measured.checkpoint_bytes_avg == round(measured.checkpoint_bytes / 2)
    assert measured.creation.count == 2 and measured.creation.p50_ms is not None
    assert measured.restore is None and measured.validation is None
    assert measured.resumes is None and measured.stale_restores is None
    assert measured.replay_avoided_usd is None and measured.acceptance_rate is None
    document = measured.as_dict()
    assert document["restore_latency"] is None and document["validation_latency"] is None
    assert document["replay_avoided"] == {"usd": None, "minutes": None}


def test_measures_from_resumes_validations_and_the_ledger(engine: Engine, task_id: str) -> None:
    for table in ("resumes", "validations"):
        if table in engine.db.table_names():
            engine.db.execute(f"DELETE FROM {table}")
    insert_row(
        engine, "resumes", task_id=task_id, seq=2, state="done", verdict="ready",
        restore_ms=120, accepted=1,
    )  # fmt: skip
    insert_row(
        engine, "resumes", task_id=task_id, seq=2, state="done", verdict="stale",
        restore_ms=300, accepted=0,
    )  # fmt: skip
    for duration in (50, 70, 900):
        insert_row(
            engine, "validations", task_id=task_id, seq=2, verdict="ready", duration_ms=duration
        )
    engine.propose_effect(task_id, "deploy-1", "deploy", check="true")
    engine.move_effect(task_id, "deploy-1", EffectState.IN_PROGRESS)
    engine.check_effect(task_id, "deploy-1")  # the check says it already happened

    measured = engine.metrics(task_id)
    assert measured.restore == Latency(2, 120, 300, 300, 210)
    assert measured.validation == Latency(3, 70, 900, 900, 340)
    assert measured.resumes == 2
    assert measured.stale_restores == 1
    assert (measured.accepted, measured.rejected, measured.acceptance_rate) == (1, 1, 0.5)
    assert measured.duplicate_effects_detected == 1
    estimate = engine.estimate(task_id)
    assert measured.replay_avoided_usd == 2 * estimate.result.exposure_usd
    assert measured.replay_avoided_minutes == 2 * estimate.result.replay_minutes
    assert estimate.result.scenario.replay.spent_usd == Decimal("5")  # the last --usd-used
    install = next(k for k in estimate.kinds if k.kind.value == "install")
    assert install.runs == 1

    document = measured.as_dict()
    assert set(document) == {
        "task",
        "checkpoints",
        "creation_latency",
        "restore_latency",
        "validation_latency",
        "resumes",
        "replay_avoided",
        "stale_restores",
        "duplicate_effects_detected",
        "acceptance",
        "restore_fidelity",
        "checkpoint_overhead_avoided",
    }
    # no hook decided anything here: nothing skipped, nothing avoided
    assert document["checkpoint_overhead_avoided"] == {"skipped": 0, "usd": 0}
    assert document["restore_fidelity"] == {
        "drills": 0,
        "verdicts": {},
        "faithful_share": None,
        "stale": 0,
        "mean_restore_ms": None,
    }
    assert document["acceptance"] == {"accepted": 1, "rejected": 1, "rate": 0.5}
    assert document["restore_latency"]["p95_ms"] == 300
    assert isinstance(document["replay_avoided"]["usd"], int | float)


def test_metrics_of_an_unknown_task_is_a_clear_error(engine: Engine) -> None:
    from core.errors import NotFoundError

    with pytest.raises(NotFoundError, match="no task 'ghost'"):
        engine.metrics("ghost")
