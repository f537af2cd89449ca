"""The dashboard in a real 80×24 terminal keeps what needs a human on screen (issue 18).

tmux runs `pitstop demo DIR` in an 80-column, 24-line window, the smallest terminal people
still use. The essential columns (status, task, approvals, uncertain effects, verdict) must be
on screen, and the release task's blocked verdict and uncertain deploy must be readable in its
row, not cut off to the right.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from core.demo import INVOICE_CURRENCY, RELEASE
from tests.e2e.test_tmux_inbox import pitstop_command
from tests.e2e.tmux_terminal import Terminal

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

ESSENTIAL = ("Status", "Task", "Appr", "Unc", "Verdict")


def _row(screen: str, task_id_prefix: str) -> str:
    rows = [line for line in screen.splitlines() if task_id_prefix in line]
    assert rows, f"no row for {task_id_prefix!r} on screen:\n{screen}"
    return rows[0]


def test_the_essential_columns_fit_an_80x24_terminal(terminal: Terminal, tmp_path: Path) -> None:
    terminal.start([*pitstop_command(), "demo", str(tmp_path / "demo")], size=(80, 24))
    screen = terminal.wait_for(
        lambda s: "need attention" in s and RELEASE[:12] in s, "the dashboard", seconds=60
    )
    lines = screen.splitlines()
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines), screen
    header = next((line for line in lines if "Status" in line and "Task" in line), None)
    assert header is not None, screen
    positions = [header.find(name) for name in ESSENTIAL]
    assert all(p >= 0 for p in positions), f"missing columns in {header!r}"
    assert positions == sorted(positions), header  # in their order, none overlapping

    release = _row(screen, RELEASE[:12])
    assert "blocked" in release, release  # the verdict, under its column
    verdict_at = header.find("Verdict")
    assert release.find("blocked") >= verdict_at - 1, (header, release)
    assert release[header.find("Unc") :].split()[0] == "1", (header, release)  # the deploy
    waiting = _row(screen, INVOICE_CURRENCY[:12])
    assert waiting[header.find("Appr") :].split()[0] == "1", (header, waiting)  # its approval

    terminal.keys("q")
    deadline = time.monotonic() + 15
    while terminal.running():
        assert time.monotonic() < deadline, f"pitstop did not quit:\n{terminal.screen()}"
        time.sleep(0.1)
