"""Invariant 3 under fire: a guarded action whose guard is SIGKILLed never runs twice.

A tiny HTTP service on 127.0.0.1, started by the test, counts calls per key. Each run guards one
key's call with `pitstop effect guard`, kills the guard with SIGKILL at a random moment (once or
twice), then runs the guard again with a precondition check that asks the service. Every key's
count must end at exactly 1: no action lost, none duplicated. A second test starts two guards on
one key at the same instant: one action.

The default run is reduced (40 runs); `pytest --full-stress` runs the issue's 200.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import sqlite_utils

from core import store
from core.engine import Engine
from core.store.db import open_database

ROOT = Path(__file__).resolve().parents[2]
REDUCED_RUNS = 40
FULL_RUNS = 200
WORKERS = 3

ACTION = textwrap.dedent(
    """
    import os, time, urllib.request
    url = os.environ["COUNTER_URL"] + "/call/" + os.environ["PITSTOP_EFFECT_KEY"]
    time.sleep(float(os.environ.get("ACTION_BEFORE", "0")))
    urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=30).read()
    time.sleep(float(os.environ.get("ACTION_AFTER", "0")))
    """
)
# Exit 0: the call already happened; 1: it did not; 2: cannot tell (the service did not answer).
CHECK = textwrap.dedent(
    """
    import os, sys, urllib.request
    url = os.environ["COUNTER_URL"] + "/count/" + os.environ["PITSTOP_EFFECT_KEY"]
    try:
        count = int(urllib.request.urlopen(url, timeout=30).read())
    except Exception:
        sys.exit(2)
    sys.exit(0 if count >= 1 else 1)
    """
)


@dataclass
class CountingService:
    """Counts POST /call/KEY per key; GET /count/KEY answers the count."""

    counts: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""


@pytest.fixture
def service() -> Iterator[CountingService]:
    state = CountingService()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, count: int) -> None:
            body = str(count).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            key = self.path.removeprefix("/call/")
            with state.lock:
                state.counts[key] += 1
                count = state.counts[key]
            self._answer(count)

        def do_GET(self) -> None:
            key = self.path.removeprefix("/count/")
            with state.lock:
                count = state.counts[key]
            self._answer(count)

        def log_message(self, *_: object) -> None:  # keep the test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def guard_env(
    service: CountingService, tmp_path: Path, repo: Path
) -> tuple[dict[str, str], Path, Path]:
    action = tmp_path / "action.py"
    check = tmp_path / "check.py"
    action.write_text(ACTION)
    check.write_text(CHECK)
    with Engine() as engine:
        engine.start_task(repo=repo, objective="call the service once per key", task_id="svc")
    env = {**os.environ, "COUNTER_URL": service.url}
    return env, action, check


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "README.md").write_text("service client\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "initial"]):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


def _guard_argv(key: str, action: Path, check: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tui.cli",
        "effect",
        "guard",
        "--task",
        "svc",
        "--key",
        key,
        "--kind",
        "http-call",
        "--check",
        f"{sys.executable} {check}",
        "--",
        sys.executable,
        str(action),
    ]


def _start(argv: list[str], env: dict[str, str], *, output: bool = True) -> subprocess.Popen[str]:
    """Start a guard; without `output`, nothing of ours waits on what its orphans print."""
    pipe = subprocess.PIPE if output else subprocess.DEVNULL
    return subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdout=pipe,
        stderr=pipe,
        text=True,
        start_new_session=True,
    )


def _ledger_entry(db: sqlite_utils.Database, key: str) -> tuple[str, int]:
    """The key's state and attempts as the store has them now ("none" before it is proposed)."""
    found = store.find_effect(db, "svc", key, None)
    return (found.state.value, found.attempts) if found else ("none", 0)


@dataclass
class RunReport:
    key: str
    killed_in: list[str]
    final: str


@dataclass(frozen=True)
class KillWindow:
    """When to kill: Python's start-up takes most of a guard's life, so aim past it mostly."""

    startup: float  # a pitstop command that does nothing much
    overhead: float  # a whole guard whose action takes no time

    def pick(self, rng: random.Random, action_s: float) -> float:
        whole = self.overhead + action_s
        if rng.random() < 0.2:
            return rng.uniform(0, whole)
        return rng.uniform(min(self.startup * 0.9, whole), whole)


def _one_run(
    key: str, env: dict[str, str], action: Path, check: Path, window: KillWindow, seed: int
) -> RunReport:
    rng = random.Random(seed)
    argv = _guard_argv(key, action, check)
    # Now and then the action is slower than a whole new guard's start-up, so an orphaned
    # action is still running while the next guard asks whether it happened.
    slow = rng.random() < 0.3
    before = rng.uniform(1.5, 3) * window.startup if slow else rng.uniform(0, 0.15)
    after = rng.uniform(0, 0.15)
    env = {**env, "ACTION_BEFORE": f"{before:.3f}", "ACTION_AFTER": f"{after:.3f}"}
    killed_in = []
    db = open_database(Path(env["PITSTOP_HOME"]) / "pitstop.db")
    try:
        for _ in range(rng.choice((1, 1, 2))):
            attempts = _ledger_entry(db, key)[1]
            guard = _start(argv, env, output=False)
            if rng.random() < 0.5:
                # Any moment of the guard's life, the start-up mostly excepted.
                time.sleep(window.pick(rng, before + after))
            else:
                # Whatever the machine's load: once this guard has durably started the action.
                while guard.poll() is None and _ledger_entry(db, key)[1] == attempts:
                    time.sleep(0.005)
                time.sleep(rng.uniform(0, before + after + 0.05))
            if guard.poll() is None:
                os.kill(guard.pid, signal.SIGKILL)  # the guard only: its action, if any, goes on
            guard.wait()
            killed = guard.returncode == -signal.SIGKILL
            killed_in.append(_ledger_entry(db, key)[0] if killed else "finished")
    finally:
        db.close()
    final = subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert final.returncode == 0, (key, final.returncode, final.stderr)
    return RunReport(key, killed_in, final.stderr.strip().splitlines()[-1])


def test_killed_guards_never_run_an_action_twice(
    guard_env: tuple[dict[str, str], Path, Path],
    service: CountingService,
    full_stress: bool,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env, action, check = guard_env
    runs = FULL_RUNS if full_stress else REDUCED_RUNS
    # Calibrate the kill window on this machine: start-up alone, and a whole guard.
    started = time.monotonic()
    listing = [sys.executable, "-m", "tui.cli", "effect", "list", "--task", "svc"]
    subprocess.run(listing, cwd=ROOT, env=env, capture_output=True, check=True)
    startup = time.monotonic() - started
    started = time.monotonic()
    calibration = subprocess.run(
        _guard_argv("calibration", action, check), cwd=ROOT, env=env, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert calibration.returncode == 0, calibration.stderr
    window = KillWindow(startup=startup, overhead=time.monotonic() - started)

    seeds = random.Random(os.environ.get("PITSTOP_KILL_SEED", "guard-kill")).sample(
        range(10**9), runs
    )
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        reports = list(
            pool.map(
                lambda n: _one_run(f"call-{n}", env, action, check, window, seeds[n]),
                range(runs),
            )
        )

    counts = {key: service.counts[key] for key in [f"call-{n}" for n in range(runs)]}
    duplicates = sum(count - 1 for count in counts.values() if count > 1)
    lost = [key for key, count in counts.items() if count == 0]
    where = Counter(state for report in reports for state in report.killed_in)
    with capsys.disabled():
        print(
            f"\nguard kill: {runs} runs, {sum(len(r.killed_in) for r in reports)} kills, "
            f"left behind {dict(where)}; duplicates {duplicates}, lost {len(lost)}"
        )
    assert duplicates == 0, {key: count for key, count in counts.items() if count > 1}
    assert not lost, lost
    assert service.counts["calibration"] == 1
    # The kills landed where it matters: with the action under way and the guard gone.
    assert where["in_progress"] > 0, where
    with Engine() as engine:
        states = Counter(e.state.value for e in engine.list_effects("svc"))
    assert states == {"confirmed": runs + 1}


def test_two_guards_racing_on_one_key_run_one_action(
    guard_env: tuple[dict[str, str], Path, Path], service: CountingService
) -> None:
    env, action, check = guard_env
    for round_ in range(4):
        key = f"race-{round_}"
        argv = _guard_argv(key, action, check)
        if round_ % 2:  # half the rounds without a check: the ledger alone must be enough
            cut = argv.index("--check")
            argv = argv[:cut] + argv[cut + 2 :]
        racers = [_start(argv, env) for _ in range(2)]
        results = [racer.communicate(timeout=120) for racer in racers]
        assert [racer.returncode for racer in racers] == [0, 0], results
        said = sorted(stderr.strip().splitlines()[-1] for _, stderr in results)
        assert service.counts[key] == 1, (key, said)
        assert "already confirmed" in said[0] and "ran and is confirmed" in said[1], said


def test_guard_json_outcome_is_the_only_stdout(
    guard_env: tuple[dict[str, str], Path, Path], service: CountingService
) -> None:
    env, action, check = guard_env
    argv = _guard_argv("json", action, check)
    argv.insert(argv.index("--"), "--json")
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["ran"] is True and outcome["effect"]["state"] == "confirmed"
    assert service.counts["json"] == 1
