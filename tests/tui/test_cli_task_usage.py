"""`pitstop task usage TASK --tokens-used N --usd-used X`: what a task spent, between checkpoints.

Whether the next checkpoint pays counts the money spent since the newest one (issue 23); a
harness wrapper or the agent reports it with this command, audited, without a checkpoint.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import pytest

from core.engine import CheckpointRequest, Engine
from tests.tui.test_cli_faults import store_state
from tests.tui.test_cli_pays import cli as pitstop


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())


@pytest.fixture
def repo(tmp_path: Path, isolated_env: dict[str, Path]) -> Path:
    path = tmp_path / "demo"
    path.mkdir()
    (path / "README.md").write_text("# demo\n")
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "initial")):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


@pytest.fixture
def task_id(repo: Path) -> str:
    with Engine() as engine:
        task = engine.start_task(repo=repo, objective="report what was spent")
        (repo / "work.txt").write_text("one")
        engine.checkpoint(task.id, CheckpointRequest(note="one", usd_used=1.0))
        return task.id


def test_usage_is_kept_audited_and_counted_as_spent_since_the_checkpoint(task_id: str) -> None:
    done = pitstop("task", "usage", task_id, "--usd-used", "4.5", "--tokens-used", "120000")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"task {task_id} has used $4.5 and 120,000 tokens so far"
    with Engine() as engine:
        task = engine.get_task(task_id)
        assert (task.usd_used, task.tokens_used) == (4.5, 120_000)
        assert engine.checkpoint_verdict(task_id).exposure.spent_usd == pytest.approx(3.5)
    log = pitstop("log", task_id)
    assert "budgets used so far: $4.5, 120000 tokens" in log.stdout, log.stdout


def test_usage_as_json_is_the_task(task_id: str) -> None:
    done = pitstop("task", "usage", task_id, "--usd-used", "2", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["id"] == task_id and shown["usd_used"] == 2.0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "say what was spent"),
        (("--usd-used", "nan"), "--usd-used"),
        (("--usd-used", "-1"), "--usd-used"),
        (("--tokens-used", "-5"), "--tokens-used"),
        (("--usd-used", "inf"), "--usd-used"),
    ],
)
def test_a_bad_report_says_why_in_one_line_and_changes_nothing(
    task_id: str, isolated_env: dict[str, Path], args: tuple[str, ...], says: str
) -> None:
    before = store_state(isolated_env["store"])
    done = pitstop("task", "usage", task_id, *args)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert store_state(isolated_env["store"]) == before


def test_an_unknown_task_is_refused(task_id: str, isolated_env: dict[str, Path]) -> None:
    before = store_state(isolated_env["store"])
    done = pitstop("task", "usage", "no-such-task", "--usd-used", "1")
    assert done.returncode == 2 and "no-such-task" in done.stderr, done.stderr
    assert store_state(isolated_env["store"]) == before
