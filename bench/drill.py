"""Benchmark a restore drill against doing the same by hand in a `git worktree add`.

Issue 20's target: `Engine.drill` in-process — restore the checkpoint into a scratch directory,
validate it, replay its recorded test run through the evidence recorder, compare, clean up and
store the audited result — costs at most 1.2x what a person's check costs on the same
5,000-file repository: `git worktree add --detach DIR <commit>`, the same test command in DIR,
`git worktree remove --force DIR`. Runs are interleaved (A, B, A, B, ...) and medians compared.
Nothing here asserts a time.

    .venv/bin/python bench/drill.py            # 5,000-file generated repo, 7 runs
    .venv/bin/python bench/drill.py --quick    # 300 files, 2 runs (smoke run)

The last line printed is one JSON document (for tests/test_benches.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.snapshot import (  # noqa: E402  (the path line above makes `bench` importable)
    build_repo,
    git,
    interleave,
    isolate_environment,
    ms,
    verdict,
)

TARGET_RATIO = 1.2
SUITE = {
    "drillcalc/__init__.py": "def add(a, b):\n    return a + b\n",
    "drilltests/test_drillcalc.py": (
        "import pytest\n\nfrom drillcalc import add\n\n\n"
        "@pytest.mark.parametrize('n', range(40))\n"
        "def test_add(n):\n    assert add(n, 1) == n + 1\n"
    ),
    "drill.ini": "[pytest]\npythonpath = .\n",
}
COMMAND = [
    sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", "drill.ini",
    "drilltests",
]  # fmt: skip


def prepare(workdir: Path, files: int) -> tuple[Path, str]:
    """A generated repository with a small pytest suite, a task, its recorded run, checkpoint 1."""
    from core.engine import Engine

    repo = workdir / "repo"
    build_repo(repo, files)
    for name, text in SUITE.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(["add", "-A"], repo)
    git(["commit", "-qm", "a test suite"], repo)
    devnull = os.open(os.devnull, os.O_WRONLY)
    with Engine() as engine:
        engine.start_task(repo=repo, objective="bench drills", task_id="bench")
        _, item = engine.run_command(
            "bench", COMMAND, cwd=repo, out_fd=devnull, err_fd=devnull, use_pty=False
        )
        assert item.exit_code == 0, "the bench's own suite failed"
        engine.checkpoint("bench")
    os.close(devnull)
    return repo, git(["rev-parse", "HEAD"], repo).decode().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="300 files, 2 runs")
    args = parser.parse_args()
    if args.quick:
        args.files, args.runs = 300, 2
    workdir = Path(tempfile.mkdtemp(prefix="pitstop-bench-drill-"))
    try:
        isolate_environment(workdir)
        repo, commit = prepare(workdir, args.files)
        print(json.dumps(run(repo, commit, workdir, args.runs)))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(repo: Path, commit: str, workdir: Path, runs: int) -> dict[str, Any]:
    """Time drills and hand checks alternately; print the table; the JSON report."""
    from core.engine import Engine
    from core.harness.drill_guard import guard_screen

    engine = Engine()
    screen = guard_screen()
    reports: list[Any] = []
    by_hand = workdir / "by-hand"

    def drill() -> None:
        reports.append(engine.drill("bench", screen=screen, offline=True))

    def hand_check() -> None:
        git(["worktree", "add", "-q", "--detach", str(by_hand), commit], repo)
        subprocess.run(COMMAND, cwd=by_hand, capture_output=True, check=True)
        git(["worktree", "remove", "--force", str(by_hand)], repo)

    drills, hands = interleave(runs, drill, hand_check)
    engine.close()
    assert all(r.verdict.value == "faithful" for r in reports), [r.reason for r in reports]
    drill_s, hand_s = statistics.median(drills), statistics.median(hands)
    ratio = drill_s / hand_s
    parts = {
        name: statistics.median(getattr(r, name) or 0 for r in reports)
        for name in ("restore_ms", "validation_ms", "replay_ms")
    }
    print(f"repository: {sum(1 for _ in repo.rglob('*') if '.git' not in _.parts)} files")
    print(f"drill (restore, validate, replay, compare, record): {ms(drill_s)}")
    print(f"  restore {parts['restore_ms']} ms, validation {parts['validation_ms']} ms, "
          f"replay {parts['replay_ms']} ms")  # fmt: skip
    print(f"by hand (git worktree add, the same tests, worktree remove): {ms(hand_s)}")
    print(f"ratio {ratio:.2f}x (target <= {TARGET_RATIO}x: {verdict(ratio, TARGET_RATIO)})")
    return {
        "drill_ms": round(drill_s * 1000, 1),
        "by_hand_ms": round(hand_s * 1000, 1),
        "ratio": round(ratio, 3),
        **parts,
    }


if __name__ == "__main__":
    main()
