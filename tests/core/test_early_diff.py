"""`pitstop diff TASK@SEQ`'s git process started before the engine loads
(`core.snapshot.early_diff`): taken over only for the very diff the engine asks for, started
only where the store says plainly what to diff, and never left running."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from corekit import write

from core.engine import Engine
from core.snapshot import early_diff
from core.snapshot.diff import finish_unified_diff
from core.store.diff_inputs import diff_inputs


@pytest.fixture(autouse=True)
def nothing_left() -> Iterator[None]:
    assert not early_diff._started
    yield
    assert not early_diff._started, "an early diff was left running"


@pytest.fixture
def checkpointed(engine: Engine, repo: Path) -> tuple[Engine, str]:
    engine.start_task(repo=repo, objective="early", task_id="t1")
    write(repo / "src/app.py", "print('early')\n")
    made = engine.checkpoint("t1").checkpoint
    assert made is not None
    return engine, made.ref


def test_the_engine_takes_the_diff_started_early(checkpointed: tuple[Engine, str]) -> None:
    engine, ref = checkpointed
    expected = engine.diff(ref)
    early_diff.start(None, ref)
    (process,) = early_diff._started.values()
    assert engine.diff(ref) == expected
    assert not early_diff._started  # taken, not started again
    assert process.returncode == 0


def test_another_diff_is_not_given_the_early_one(checkpointed: tuple[Engine, str]) -> None:
    engine, ref = checkpointed
    early_diff.start(None, ref)
    ((store_repo, old, new),) = early_diff._started
    assert early_diff.take(Path(store_repo), old, "0" * 40) is None
    assert early_diff.take(Path(store_repo + "x"), old, new) is None
    assert "+print('early')" in engine.diff(ref, paths=["src/app.py"])
    (process,) = early_diff._started.values()  # a diff of some paths asked its own
    early_diff.drop()
    assert process.returncode is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(process.pid, os.WNOHANG)


def test_the_early_text_is_the_diff(checkpointed: tuple[Engine, str]) -> None:
    engine, ref = checkpointed
    early_diff.start(None, ref)
    ((store_repo, old, new),) = early_diff._started
    process = early_diff.take(Path(store_repo), old, new)
    assert process is not None
    assert finish_unified_diff(process) == engine.diff(ref)
    assert "+print('early')" in engine.diff(ref)


@pytest.mark.parametrize(
    "ref", ["t1", "t1@latest", "t1@01", "t1@2", "nobody@1", " t1@1", "t1@1 ", "t1@9" * 10]
)
def test_nothing_is_started_for_a_ref_the_store_does_not_answer_plainly(
    checkpointed: tuple[Engine, str], ref: str
) -> None:
    early_diff.start(None, ref)
    assert not early_diff._started


def test_a_store_that_does_not_say_plainly_starts_nothing(
    checkpointed: tuple[Engine, str], tmp_path: Path
) -> None:
    engine, ref = checkpointed
    database = str(engine.paths.database)
    with sqlite3.connect(database) as db:
        db.execute("UPDATE tasks SET store_repo = '../../elsewhere.git'")
    early_diff.start(None, ref)  # a name that leaves the store's repos: not followed
    assert not early_diff._started
    with sqlite3.connect(database) as db:
        db.execute("UPDATE checkpoints SET state = 'writing'")
    assert diff_inputs(database, "t1", 1) is None
    missing = tmp_path / "no-store" / "pitstop.db"
    assert diff_inputs(str(missing), "t1", 1) is None
    assert not missing.exists()  # read-only: nothing is created
    early_diff.start(str(tmp_path / "no-store"), ref)
    assert not early_diff._started
