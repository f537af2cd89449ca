"""Numbers the engine takes from outside: NaN, infinities and oversized integers refused first.

Issue #17: click's ranges let `nan`/`inf` through and SQLite stores NaN as NULL, so these ended
as internal errors after a row was half written (or were kept: a NaN budget). The checks live in
the engine, so a harness calling the Python API is refused exactly like the command line.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import numbers
from core.engine import CheckpointRequest, Engine
from core.errors import UsageError
from core.models import Budget

NOT_FINITE = [math.nan, math.inf, -math.inf]


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_checked_amount_is_finite_and_not_negative(value: float) -> None:
    try:
        checked = numbers.non_negative(value, "--x")
    except UsageError as refused:
        assert not math.isfinite(value) or value < 0
        assert refused.message.startswith("--x ") and "\n" not in refused.message
    else:
        assert math.isfinite(checked) and checked >= 0


@given(st.integers())
def test_a_storable_integer_fits_sqlite(value: int) -> None:
    try:
        numbers.storable_integer(value, "--n")
    except UsageError:
        assert abs(value) > 2**63 - 1
    else:
        assert -(2**63) <= value < 2**63


@pytest.mark.parametrize("value", NOT_FINITE)
def test_the_engine_refuses_a_non_finite_consumption_before_writing(
    engine: Engine, repo: Path, value: float
) -> None:
    task = engine.start_task(repo=repo, objective="x")
    with pytest.raises(UsageError, match="--usd-used must be a finite number"):
        engine.checkpoint(task.id, CheckpointRequest(usd_used=value))
    with pytest.raises(UsageError, match="--budget-usd must be a finite number"):
        engine.start_task(repo=repo, objective="y", budget=Budget(usd=value))
    assert engine.list_checkpoints(task.id) == []
    assert [t.id for t in engine.list_tasks()] == [task.id]


@pytest.mark.parametrize("value", NOT_FINITE)
def test_the_engine_refuses_a_non_finite_duration_before_writing(
    engine: Engine, repo: Path, tmp_path: Path, value: float
) -> None:
    task = engine.start_task(repo=repo, objective="x")
    log = tmp_path / "out.txt"
    log.write_text("ok\n")
    with pytest.raises(UsageError, match="--duration must be a finite number"):
        engine.add_evidence_file(task.id, log, duration_s=value)
    with pytest.raises(UsageError, match="--duration must be a finite number"):
        engine.add_evidence_output(task.id, b"ok\n", argv=["true"], duration_s=value)
    assert engine.list_evidence(task.id) == []
