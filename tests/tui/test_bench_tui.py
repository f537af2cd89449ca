"""`bench/tui.py` runs as shipped (issue 18: it once crashed on a changed signature): a tiny run
prints every measure the issue names, each with its target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_dashboard_benchmark_runs_at_a_tiny_size() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "tui.py"), "--tasks", "40", "--checkpoints", "2",
         "--runs", "1"],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    for measure in ("first paint", "filter, per keystroke", "work per keystroke", "palette opens"):
        assert measure in out, out
    assert "rows matching 'cache 042'" in out
