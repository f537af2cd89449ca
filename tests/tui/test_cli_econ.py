"""`pitstop cost`, `gc`, `metrics` and the turn policy, end to end in real processes."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.gitconfig import EMPTY_GITCONFIG

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
    "GIT_CONFIG_NOSYSTEM": "1",
}

SEED_A = (
    "--p-interrupt", "0.10", "--replay-usd", "8",
    "--create-usd", "0.12", "--restore-usd", "0.30", "--validate-usd", "0.20",
)  # fmt: skip
SEED_B = (
    "--p-interrupt", "0.05", "--machine-usd", "7", "--replay-minutes", "20",
    "--rate-usd-per-hour", "90", "--create-usd", "0.10", "--restore-usd", "0.20",
)  # fmt: skip
SEED_C = (
    "--p-interrupt", "0.02", "--replay-minutes", "2", "--rate-usd-per-hour", "90",
    "--create-usd", "0.10", "--restore-usd", "0.20",
)  # fmt: skip


@pytest.fixture()
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    env.update(GIT_ENV)
    env["PITSTOP_HOME"] = str(tmp_path / "store")
    env["PITSTOP_CONFIG_DIR"] = str(tmp_path / "config")
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    env["PITSTOP_KEY"] = base64.b64encode(os.urandom(32)).decode()
    return env


@pytest.fixture()
def repo(tmp_path: Path, cli_env: dict[str, str]) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "initial")):
        if args[0] == "add":
            (path / "app.py").write_text("def main():\n    return 1\n")
        subprocess.run(["git", *args], cwd=path, env=cli_env, check=True, capture_output=True)
    return path


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def ok_json(env: dict[str, str], *args: str) -> Any:
    result = run(env, *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pitstop: "), result.stderr
    return lines[0]


def money(value: Any) -> Decimal:
    return Decimal(str(value))


def store_digest(store: Path) -> str:
    digest = hashlib.sha256()
    connection = sqlite3.connect(f"file:{store / 'pitstop.db'}?mode=ro", uri=True)
    try:
        for line in connection.iterdump():
            digest.update(line.encode())
    finally:
        connection.close()
    for path in sorted((store / "repos").rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(store)).encode() + path.read_bytes())
    return digest.hexdigest()


# --- cost ---------------------------------------------------------------------------------------


def test_cost_seed_a(cli_env: dict[str, str]) -> None:
    result = ok_json(cli_env, "cost", *SEED_A)
    assert money(result["expected_loss_avoided_usd"]) == Decimal("0.80")
    assert money(result["fixed_cost_usd"]) == Decimal("0.12")
    assert money(result["expected_use_cost_usd"]) == Decimal("0.05")
    assert money(result["expected_checkpoint_cost_usd"]) == Decimal("0.17")
    assert money(result["net_value_usd"]) == Decimal("0.63")
    assert result["decision"] == "checkpoint"


def test_cost_seed_b_four_hour_migration(cli_env: dict[str, str]) -> None:
    result = ok_json(cli_env, "cost", *SEED_B)
    assert money(result["exposure_usd"]) == Decimal("37")
    assert money(result["replay"]["human_usd"]) == Decimal("30")
    assert money(result["expected_loss_avoided_usd"]) == Decimal("1.85")
    assert money(result["expected_checkpoint_cost_usd"]) == Decimal("0.11")
    assert result["decision"] == "checkpoint"


def test_cost_seed_c_lint_fix_restarts(cli_env: dict[str, str]) -> None:
    result = ok_json(cli_env, "cost", *SEED_C)
    assert money(result["expected_loss_avoided_usd"]) == Decimal("0.06")
    assert money(result["net_value_usd"]) == Decimal("-0.044")
    assert result["decision"] == "restart"


def test_cost_human_output_names_every_term(cli_env: dict[str, str], tmp_path: Path) -> None:
    result = run(cli_env, "cost", *SEED_B)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    for term in (
        "P(interruption)",
        "replay cost (exposure)",
        "machine",
        "human re-orientation",
        "20 min × $90.00/h",
        "expected loss avoided",
        "$1.85   = 5% × $37.00",
        "expected checkpoint cost",
        "create + storage",
        "expected restore + validation",
        "5% × ($0.20 + $0.00)",
        "net value",
        "$1.74",
        "break-even P",
        "decision: checkpoint",
    ):
        assert term in text, term
    assert not (tmp_path / "store").exists()  # figures alone never open the store


@pytest.mark.parametrize(
    "args",
    [
        ("cost", "--p-interrupt", "1.5", "--replay-usd", "8", "--create-usd", "1",
         "--restore-usd", "1"),
        ("cost", "--p-interrupt", "0.1", "--replay-usd", "-8", "--create-usd", "1",
         "--restore-usd", "1"),
        ("cost", "--p-interrupt", "lots", "--replay-usd", "8"),
        ("cost", "--p-interrupt", "0.1", "--create-usd", "1", "--restore-usd", "1"),
        ("cost", "--p-interrupt", "0.1", "--replay-usd", "8", "--restore-usd", "1"),
        ("cost", "--p-interrupt", "0.1", "--replay-minutes", "20", "--create-usd", "1",
         "--restore-usd", "1"),
        ("cost", "--replay-usd", "8", "--create-usd", "1", "--restore-usd", "1"),
    ],
)  # fmt: skip
def test_cost_bad_input_is_one_line_exit_2(cli_env: dict[str, str], args: tuple[str, ...]) -> None:
    assert_one_line_error(run(cli_env, *args), 2)


def test_cost_of_a_task_from_its_record(cli_env: dict[str, str], repo: Path) -> None:
    ok_json(cli_env, "task", "start", "--repo", str(repo), "--objective", "x", "--id", "mig")
    subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "--task", "mig", "--label", "install deps",
         "--quiet", "--", sys.executable, "-c", "print('Successfully installed demo-1.0')"],
        env=cli_env, check=True, capture_output=True,
    )  # fmt: skip
    (repo / "app.py").write_text("def main():\n    return 2\n")
    ok_json(cli_env, "checkpoint", "mig", "--reason", "milestone", "--usd-used", "6.5")
    estimate = ok_json(cli_env, "cost", "mig", "--p-interrupt", "0.05")
    assert estimate["task"] == "mig"
    assert money(estimate["replay"]["spent_usd"]) == Decimal("6.5")
    assert money(estimate["replay"]["human_usd"]) == Decimal("30")  # 20 min × $90/h defaults
    assert estimate["decision"] == "checkpoint"
    assert [r["kind"] for r in estimate["runs"] if r["runs"]] == ["install"]
    human = run(cli_env, "cost", "mig")
    assert human.returncode == 0 and "install runs: 1" in human.stdout
    assert "decision: checkpoint" in human.stdout
    line = assert_one_line_error(run(cli_env, "cost", "mig", "--create-usd", "1"), 2)
    assert "not with TASK" in line
    assert_one_line_error(run(cli_env, "cost", "ghost"), 2)


# --- policy -------------------------------------------------------------------------------------


def test_turn_checkpoints_are_skipped_under_the_minimum_interval(
    cli_env: dict[str, str], repo: Path
) -> None:
    ok_json(cli_env, "task", "start", "--repo", str(repo), "--objective", "x", "--id", "turns")
    first = ok_json(cli_env, "checkpoint", "turns", "--reason", "turn")
    assert first["skipped"] is False
    (repo / "app.py").write_text("changed\n")
    skipped = run(cli_env, "checkpoint", "turns", "--reason", "turn")
    assert skipped.returncode == 0
    assert "turn checkpoint skipped" in skipped.stdout and "min_interval_seconds" in skipped.stdout
    as_json = ok_json(cli_env, "checkpoint", "turns", "--reason", "turn")
    assert as_json["skipped"] is True
    milestone = ok_json(cli_env, "checkpoint", "turns", "--reason", "milestone")
    assert milestone["skipped"] is False and milestone["checkpoint"]["seq"] == 2


# --- gc -----------------------------------------------------------------------------------------


def test_gc_dry_run_then_gc_then_retire(
    cli_env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("[retention]\nkeep_last = 1\nfinished_keep_days = 0\n")
    ok_json(cli_env, "task", "start", "--repo", str(repo), "--objective", "x", "--id", "gc")
    recorded = run(cli_env, "run", "--task", "gc", "--", sys.executable, "-c", "print('hello')")
    assert recorded.returncode == 0, recorded.stderr
    evidence = ok_json(cli_env, "evidence", "list", "gc")[0]["id"]
    for number in range(3):
        (repo / "app.py").write_text(f"step {number}\n")
        ok_json(cli_env, "checkpoint", "gc", "--reason", "milestone")
    store = tmp_path / "store"

    before = store_digest(store)
    dry = ok_json(cli_env, "gc", "--dry-run")
    assert store_digest(store) == before
    assert dry["dry_run"] is True
    assert [(e["checkpoint"], e["rule"]) for e in dry["expire"]] == [
        ("gc@1", "keep_last"),
        ("gc@2", "keep_last"),
    ]
    assert all(e["bytes"] > 0 for e in dry["expire"])
    assert [p["checkpoint"] for p in dry["protected"]] == []
    human = run(cli_env, "gc", "--dry-run")
    assert human.returncode == 0 and "dry run: nothing changed" in human.stdout
    assert "gc@1" in human.stdout and "retention.keep_last" in human.stdout
    assert store_digest(store) == before

    done = ok_json(cli_env, "gc")
    assert done["dry_run"] is False and len(done["expire"]) == 2
    states = [c["state"] for c in ok_json(cli_env, "checkpoints", "gc")]
    assert states == ["expired", "expired", "complete"]

    ok_json(cli_env, "task", "done", "gc")
    retired = run(cli_env, "gc")
    assert retired.returncode == 0, retired.stderr
    assert "retire" in retired.stdout and "refs deleted: gc" in retired.stdout
    assert ok_json(cli_env, "task", "show", "gc")["status"] == "expired"
    line = assert_one_line_error(run(cli_env, "evidence", "show", str(evidence)), 1)
    assert "deleted by gc" in line


# --- metrics ------------------------------------------------------------------------------------


def test_metrics_shape_and_text(cli_env: dict[str, str], repo: Path) -> None:
    ok_json(cli_env, "task", "start", "--repo", str(repo), "--objective", "x", "--id", "m")
    (repo / "app.py").write_text("changed\n")
    ok_json(cli_env, "checkpoint", "m", "--reason", "milestone")
    document = ok_json(cli_env, "metrics")
    assert document["checkpoints"]["count"] == 1 and document["checkpoints"]["bytes_total"] > 0
    assert document["creation_latency"]["count"] == 1
    assert document["duplicate_effects_detected"] == 0
    assert document["acceptance"]["rate"] is None
    for key in ("restore_latency", "validation_latency", "replay_avoided", "stale_restores"):
        assert key in document
    assert ok_json(cli_env, "metrics", "--task", "m")["task"] == "m"
    text = run(cli_env, "metrics")
    assert text.returncode == 0
    for label in (
        "checkpoint bytes",
        "creation latency",
        "restore latency",
        "validation latency",
        "replay avoided",
        "stale restores",
        "duplicate side effects detected",
        "resumed-task acceptance",
        "none recorded",
    ):
        assert label in text.stdout, label
    assert_one_line_error(run(cli_env, "metrics", "--task", "ghost"), 2)


def test_the_readme_cost_example_is_what_pitstop_prints(cli_env: dict[str, str]) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```\n\$ pitstop (cost [^\n]*)\n(.*?)```", readme, re.S)
    assert match, "README has no `$ pitstop cost` example"
    result = run(cli_env, *shlex.split(match.group(1)))
    assert result.returncode == 0, result.stderr
    assert result.stdout == match.group(2)
