"""`pitstop cost TASK --why`, `pitstop log` and `pitstop metrics` show the hooks' checkpoint
decisions (issue 23): a two-minute lint fix replayed from the real client's payloads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.engine import Engine
from core.harness.claude_code import claude_code
from core.harness.context import HookContext

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "real"
ROOT = Path(__file__).resolve().parents[2]


def send(repo: Path, name: str, at: str, monkeypatch: pytest.MonkeyPatch, **fields: object) -> None:
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", at)
    body = json.loads((REAL / f"{name}.json").read_text().replace("$CWD", str(repo)))
    claude_code(json.dumps({**body, **fields}).encode(), HookContext())


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.launch", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "demo"
    path.mkdir()
    (path / "README.md").write_text("# demo\n")
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "initial")):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


@pytest.fixture
def lint_fix(repo: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    send(repo, "session_start", "2026-12-03T08:00:00Z", monkeypatch)
    (repo / "README.md").write_text("# fixed\n")
    send(
        repo,
        "post_tool_use_bash",
        "2026-12-03T08:01:00Z",
        monkeypatch,
        tool_input={"command": "ruff check --fix ."},
        duration_ms=3000,
    )
    send(repo, "stop", "2026-12-03T08:02:00Z", monkeypatch)
    send(repo, "session_end", "2026-12-03T08:02:00Z", monkeypatch)
    with Engine() as engine:
        [task] = engine.list_tasks()
        return task.id


def test_cost_why_shows_the_timeline_of_decisions(lint_fix: str) -> None:
    shown = cli("cost", lint_fix, "--why")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"{lint_fix}: 3 decisions, 1 taken, 2 skipped"
    assert "milestone" in lines[2] and "restart is cheaper" in lines[2]
    assert "turn checkpoint skipped (a turn ended): restart is cheaper: restart costs" in lines[3]
    assert "interrupt" in lines[4] and "taken" in lines[4]
    as_json = json.loads(cli("cost", lint_fix, "--why", "--json").stdout)
    assert [d["outcome"].split(":")[0] for d in as_json] == ["skipped", "skipped", "taken"]
    assert as_json[1]["numbers"]["checkpoint_usd"] > as_json[1]["numbers"]["avoided_usd"]


def test_why_needs_a_task() -> None:
    refused = cli("cost", "--why")
    assert refused.returncode != 0 and "--why needs a TASK" in refused.stderr


def test_the_log_and_metrics_show_skipped_checkpoints(lint_fix: str) -> None:
    logged = cli("log", lint_fix)
    assert logged.returncode == 0, logged.stderr
    assert "turn checkpoint skipped (a turn ended): restart is cheaper" in logged.stdout
    measured = json.loads(cli("metrics", "--json").stdout)
    avoided = measured["checkpoint_overhead_avoided"]
    assert avoided["skipped"] == 2 and avoided["usd"] == 0.2  # two checkpoints at ~$0.10 each
    [line] = [ln for ln in cli("metrics").stdout.splitlines() if "overhead avoided" in ln]
    # $0.10 creation + P × $0.20 restore and validation, P = 5%/h over one and two minutes
    assert " ".join(line.split()) == (
        "checkpoint overhead avoided $0.2005 over 2 checkpoint(s) skipped as cheaper to restart"
    )


def test_a_tasks_own_policy_makes_its_turns_pay(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-12-03T08:00:00Z")
    started = cli(
        "task", "start", "--repo", str(repo), "--objective", "urgent fix",
        "--p-interrupt", "1", "--rate", "600", "--json",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    task_id = json.loads(started.stdout)["id"]
    send(repo, "session_start", "2026-12-03T08:00:00Z", monkeypatch)
    (repo / "README.md").write_text("# fixed\n")
    send(repo, "stop", "2026-12-03T08:02:00Z", monkeypatch)  # the same two minutes as above
    [turn] = json.loads(cli("cost", task_id, "--why", "--json").stdout)
    assert turn["outcome"].startswith("taken")
    assert turn["numbers"]["p_interrupt"] == pytest.approx(2 / 60)
    assert turn["numbers"]["exposure_usd"] == 20  # two minutes at $600/h
    assert "p_interrupt_per_hour = 1, human_usd_per_hour = 600" in cli("log", task_id).stdout


def test_a_bad_task_policy_is_refused_before_anything_is_made(repo: Path) -> None:
    refused = cli("task", "start", "--repo", str(repo), "--objective", "x", "--p-interrupt", "2")
    assert refused.returncode != 0 and "--p-interrupt" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert json.loads(cli("task", "list", "--json").stdout) == []


def test_pitstop_run_of_a_green_test_run_takes_a_milestone_when_it_pays(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-12-03T08:00:00Z")
    started = cli(
        "task", "start", "--repo", str(repo), "--objective", "long job",
        "--p-interrupt", "1", "--rate", "600", "--json",
    )  # fmt: skip
    task_id = json.loads(started.stdout)["id"]
    (repo / "README.md").write_text("# step one done\n")
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-12-03T08:30:00Z")  # half an hour of work
    ran = cli("run", "--task", task_id, "--", sys.executable, "-m", "pytest", "--version")
    assert ran.returncode == 0, ran.stderr
    assert f"pitstop: milestone {task_id}@1" in ran.stderr
    [milestone] = json.loads(cli("cost", task_id, "--why", "--json").stdout)
    assert milestone["checkpoint_reason"] == "milestone"
    assert milestone["asked_by"].startswith("a green test, evidence ")
    listed = json.loads(cli("checkpoints", task_id, "--json").stdout)
    assert [c["reason"] for c in listed] == ["milestone"]
    assert listed[0]["note"].startswith("after a green test (evidence ")
