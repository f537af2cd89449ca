"""`pitstop drill` and `pitstop metrics`' restore fidelity as real processes (issue 20).

Real git repositories with a real pytest suite and a private store; the exit codes are the
contract (0 faithful, 1 drifted or failed to restore, 3 not replayable, 2 bad input) and every
refusal is one line on stderr that changes nothing.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.gitconfig import EMPTY_GITCONFIG

CALC = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


@pytest.fixture()
def cli_env(tmp_path: Path) -> dict[str, str]:
    """A private store, config dir, master key and git identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    env.update(
        {
            "GIT_AUTHOR_NAME": "Test",
            "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "Test",
            "GIT_COMMITTER_EMAIL": "test@example.com",
            "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
            "GIT_CONFIG_NOSYSTEM": "1",
            "PITSTOP_HOME": str(tmp_path / "store"),
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "PITSTOP_KEY": base64.b64encode(os.urandom(32)).decode(),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        }
    )
    (tmp_path / "config").mkdir()
    return env


def run(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def ok(env: dict[str, str], *args: str, cwd: Path | None = None) -> str:
    done = run(env, *args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture()
def task(tmp_path: Path, cli_env: dict[str, str]) -> tuple[Path, str]:
    """A repository with a passing suite, its run recorded, and checkpoint 1."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "suite"]):
        subprocess.run(["git", *args], cwd=repo, env=cli_env, check=True)
    ok(cli_env, "task", "start", "--repo", str(repo), "--objective", "drills", "--id", "calc")
    ok(cli_env, "run", "--task", "calc", "--", *PYTEST, cwd=repo)
    ok(cli_env, "checkpoint", "calc")
    return repo, "calc"


def drill_rows(env: dict[str, str]) -> int:
    with sqlite3.connect(Path(env["PITSTOP_HOME"]) / "pitstop.db") as db:
        return int(db.execute("SELECT COUNT(*) FROM drills").fetchone()[0])


def test_faithful_then_drifted_with_their_exit_codes(
    cli_env: dict[str, str], task: tuple[Path, str]
) -> None:
    repo, task_id = task
    faithful = run(cli_env, "drill", f"{task_id}@1")
    assert faithful.returncode == 0, faithful.stderr
    assert faithful.stdout.startswith("drill calc@1: faithful\n")
    assert "recorded: exit 0, pytest: 2 passed (evidence #1)" in faithful.stdout
    assert "2 passed" in faithful.stderr  # the replay's own output, live, on stderr

    (repo / "calc.py").write_text(CALC.replace("a + b", "a - b"))
    ok(cli_env, "checkpoint", task_id)
    drifted = run(cli_env, "drill", task_id, "--json")
    assert drifted.returncode == 1, drifted.stderr
    document = json.loads(drifted.stdout)
    assert document["verdict"] == "drifted" and document["checkpoint"] == "calc@2"
    assert "1 test that passed now fails: tests/test_calc.py::test_add" in document["differences"]
    assert document["replayed"]["failing"] == ["tests/test_calc.py::test_add"]
    assert isinstance(document["replay_avoided"]["usd"], int | float)
    assert drifted.stderr == ""
    rows = [line.split("  ") for line in ok(cli_env, "evidence", "list", task_id).splitlines()]
    belongs = {row[0].strip(): [cell.strip() for cell in row if cell.strip()][-2] for row in rows}
    assert belongs == {"ID": "CHECKPOINT", "1": "@1", "2": "drill", "3": "drill"}

    metrics = ok(cli_env, "metrics")
    assert "restore fidelity" in metrics
    assert "50% faithful (1 of 2); 1 drifted; mean restore" in metrics
    fidelity = json.loads(ok(cli_env, "metrics", "--json"))["restore_fidelity"]
    assert fidelity["drills"] == 2 and fidelity["faithful_share"] == 0.5
    assert fidelity["mean_restore_ms"] is not None


def test_a_guarded_command_is_not_replayable(
    cli_env: dict[str, str], task: tuple[Path, str]
) -> None:
    done = run(cli_env, "drill", "calc", "--command", "git push origin main")
    assert done.returncode == 3
    assert "why: it matches the guard rule git-push" in done.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["nope"], "pitstop: no task 'nope' in this store"),
        (["calc@9"], "pitstop: task 'calc' has no checkpoint 9"),
        (["calc@x"], "pitstop: invalid checkpoint 'calc@x'"),
        ([], "pitstop: give the checkpoint to drill"),
        (["calc", "--timeout", "0"], "pitstop: Invalid value for '--timeout'"),
        (["calc", "--command", "  "], "pitstop: --command is empty"),
        (["calc", "--command", "pytest 'unclosed"], "pitstop: cannot read --command"),
        (["calc", "--since", "7d"], "pitstop: --since and --max go with --all"),
        (["--all", "calc"], "pitstop: --all drills each task's own record"),
        (["--all", "--since", "seven"], "pitstop: invalid --since 'seven'"),
        (["--all", "--max", "0"], "pitstop: invalid --max 0"),
        (["--list", "--all"], "pitstop: --list takes only TASK and --json"),
        (["--list", "calc@1"], "pitstop: --list takes a task, not a checkpoint"),
        (["--list", "nope"], "pitstop: no task 'nope' in this store"),
    ],
)
def test_every_bad_input_is_one_line_and_changes_nothing(
    cli_env: dict[str, str], task: tuple[Path, str], args: list[str], said: str
) -> None:
    done = run(cli_env, "drill", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith(said), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""
    assert drill_rows(cli_env) == 0


def test_fleet_drills_live_tasks_newest_checkpoints(
    cli_env: dict[str, str], task: tuple[Path, str]
) -> None:
    done = run(cli_env, "drill", "--all", "--since", "1d", "--max", "5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("✓ calc@1: faithful")
    assert done.stdout.splitlines()[-1] == "1 of 1 drill(s) faithful"
    listed = json.loads(ok(cli_env, "drill", "--all", "--json"))
    assert [item["checkpoint"] for item in listed] == ["calc@1"]

    kept = ok(cli_env, "drill", "--list", "calc").splitlines()
    assert len(kept) == 2 and all(
        line.endswith("✓ calc@1: faithful — as recorded") for line in kept
    )
    stored = json.loads(ok(cli_env, "drill", "--list", "--json"))
    assert [item["verdict"] for item in stored] == ["faithful", "faithful"]


def test_a_drill_killed_with_sigkill_leaves_nothing_the_next_one_keeps(
    cli_env: dict[str, str], task: tuple[Path, str]
) -> None:
    tmp = Path(cli_env["PITSTOP_HOME"]) / "tmp"
    sleeper = f"{sys.executable} -c 'import time; time.sleep(60)'"
    drilling = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "drill", "calc", "--command", sleeper],
        env=cli_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not list(tmp.glob("drill-*/tree/calc.py")):
            assert drilling.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)  # the replay has started
    finally:
        os.killpg(drilling.pid, signal.SIGKILL)
        drilling.wait()
    left = list(tmp.glob("drill-*"))
    assert len(left) == 1  # what kill -9 leaves

    doctor = run(cli_env, "doctor")
    assert left[0].name in doctor.stdout + doctor.stderr
    done = run(cli_env, "drill", "calc")
    assert done.returncode == 0, done.stderr
    assert list(tmp.glob("drill-*")) == []
