"""Benchmark `pitstop task list --json` against `pitstop task list` on a store of many tasks.

Issue 22's target: a `--json` listing is linear and cheap — on 5,000 tasks at most 2x the
human table, which reads the same rows and decrypts the same objectives. The store is built
through the engine once (one task started for real, the rest copied from it with their own
ids and keys, as many `task start`s would leave them), then both commands run as a user runs
them: the installed `pitstop` script, a new process each, interleaved, medians compared.

    .venv/bin/python bench/listing.py                 # 5,000 tasks, 7 interleaved runs
    .venv/bin/python bench/listing.py --tasks 500 --runs 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.cli import pitstop_program, setup

TARGET_RATIO = 2.0


def fill(env: dict[str, str], tasks: int) -> None:
    """Copy the bench's one task into `tasks` tasks, each with its own id and data key."""
    script = """
import sys
from core import store
from core.engine import Engine
from core.store.db import write_txn
with Engine() as engine:
    [first] = engine.list_tasks()
    with write_txn(engine.db):
        for index in range(int(sys.argv[1]) - 1):
            copy = first._replace(id=f"bench-{index:05d}", objective=f"task number {index}")
            store.insert_task(engine.db, copy, engine.keys)
"""
    subprocess.run([sys.executable, "-c", script, str(tasks)], env=env, check=True)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode(errors='replace')}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="pitstop-bench-listing-"))
    try:
        repo, env = setup(work)
        env = {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        fill(env, args.tasks)
        pitstop = pitstop_program()
        sides = {
            "task list": [*pitstop, "task", "list"],
            "task list --json": [*pitstop, "task", "list", "--json"],
        }
        listed = subprocess.run(sides["task list --json"], env=env, cwd=repo, capture_output=True)
        assert len(json.loads(listed.stdout)) == args.tasks, listed.stderr
        for command in sides.values():  # warm the bytecode and page caches
            timed(command, env, repo)
        times: dict[str, list[float]] = {label: [] for label in sides}
        for _ in range(args.runs):
            for label, command in sides.items():
                times[label].append(timed(command, env, repo))
        medians = {label: statistics.median(spent) * 1000 for label, spent in times.items()}
        ratio = medians["task list --json"] / medians["task list"]
        verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
        print(f"{args.tasks} tasks, {args.runs} interleaved runs; medians")
        for label, spent in medians.items():
            print(f"{label:<20}{spent:8.1f} ms")
        print(f"ratio {ratio:.2f}x (target <= {TARGET_RATIO:.0f}x): {verdict}")
        print(
            json.dumps(
                {
                    "tasks": args.tasks,
                    "command_ms": {label: round(spent, 2) for label, spent in medians.items()},
                    "ratio": round(ratio, 2),
                    "target_met": ratio <= TARGET_RATIO,
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
