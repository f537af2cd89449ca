"""The approvals inbox in a real terminal: tmux runs `pitstop demo DIR`, keys decide an approval.

A person at a terminal does exactly this: builds the demo, presses `a` for the inbox, `y` to
approve the high-risk request, types a reason, sees a request another process makes appear
live, quits with `q`. The store, read afterwards with `pitstop approval list --json`, must say
the approval was decided through the TUI. The app runs under a wrapper that logs its output
(`tests/e2e/tmux_terminal.py`), shown when the test fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.demo import INVOICE_CURRENCY, RELEASE
from tests.e2e.tmux_terminal import Terminal

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

REASON = "migration plan reviewed with the DBA"


def pitstop_command() -> list[str]:
    """The installed `pitstop` script beside this Python, else the module."""
    script = Path(sys.executable).with_name("pitstop")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]


def test_approve_from_the_inbox_in_a_real_terminal(terminal: Terminal, tmp_path: Path) -> None:
    store = tmp_path / "demo"
    terminal.start([*pitstop_command(), "demo", str(store)])
    terminal.wait_for(lambda s: "need attention" in s, "the dashboard", seconds=60)

    terminal.keys("a")
    terminal.wait_for(lambda s: "waiting across" in s, "the approvals inbox")
    terminal.keys("y")
    terminal.wait_for(lambda s: f"Approve {INVOICE_CURRENCY}:1" in s, "the reason dialog")
    terminal.keys(REASON, literal=True)
    terminal.keys("Enter")
    terminal.wait_for(lambda s: "No approvals are waiting" in s, "the emptied inbox")

    # Live: an agent asks for another decision from its own process; the open inbox shows it.
    subprocess.run(
        [
            *pitstop_command(),
            "--store",
            str(store),
            "approval",
            "request",
            "--task",
            RELEASE,
            "--action",
            "Roll production back to 0.4.2",
            "--risk",
            "high",
        ],
        env=terminal.env,
        capture_output=True,
        check=True,
    )
    terminal.wait_for(lambda s: "Roll production back" in s, "the new request, live", seconds=10)

    terminal.keys("q")
    deadline = time.monotonic() + 15
    while terminal.running():
        assert time.monotonic() < deadline, f"pitstop did not quit:\n{terminal.screen()}"
        time.sleep(0.1)

    listed = subprocess.run(
        [*pitstop_command(), "--store", str(store), "approval", "list", "--json"],
        env=terminal.env,
        capture_output=True,
        text=True,
        check=True,
    )
    [approval] = [a for a in json.loads(listed.stdout) if a["id"] == f"{INVOICE_CURRENCY}:1"]
    assert approval["state"] == "approved"
    assert approval["reason"] == REASON
    assert approval["decided_via"] == "tui"
