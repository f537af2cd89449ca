"""The benchmarks still run: one quick pass of each cheap one (their numbers are not judged
here; speed is shown by running them, never by a timed test)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_hook_benchmark_runs_and_reports_every_event() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "hook.py"), "--runs", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["baseline_ms"] > 0
    assert {"SessionStart", "PreToolUse git push", "Stop", "SessionEnd"} <= set(report["ratio"])
