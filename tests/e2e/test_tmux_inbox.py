"""The approvals inbox in a real terminal: tmux runs `pitstop demo DIR`, keys decide an approval.

A person at a terminal does exactly this: builds the demo, presses `a` for the inbox, `y` to
approve the high-risk request, types a reason, sees a request another process makes appear
live, quits with `q`. The store, read afterwards with `pitstop approval list --json`, must say
the approval was decided through the TUI.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.demo import INVOICE_CURRENCY, RELEASE
from tests.gitconfig import EMPTY_GITCONFIG

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 140, 40
REASON = "migration plan reviewed with the DBA"


def pitstop_command() -> list[str]:
    """The installed `pitstop` script beside this Python, else the module."""
    script = Path(sys.executable).with_name("pitstop")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]


class Terminal:
    """One tmux server of our own (its own socket) running one command in a fixed-size window."""

    def __init__(self, socket: str, env: dict[str, str]) -> None:
        self.socket = socket
        self.env = env

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=check,
        )

    def start(self, argv: list[str]) -> None:
        command = " ".join(f"'{part}'" for part in argv)
        self.tmux("new-session", "-d", "-s", "e2e", "-x", str(WIDTH), "-y", str(HEIGHT), command)

    def screen(self) -> str:
        result = self.tmux("capture-pane", "-p", "-t", "e2e", check=False)
        return result.stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "e2e", *(["-l"] if literal else []), *keys)

    def running(self) -> bool:
        return self.tmux("has-session", "-t", "e2e", check=False).returncode == 0

    def wait_for(self, condition: Callable[[str], bool], what: str, seconds: float = 30) -> str:
        deadline = time.monotonic() + seconds
        while True:
            screen = self.screen()
            if condition(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen shows:\n{screen}")
            time.sleep(0.1)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PITSTOP_", "TMUX", "TEXTUAL"))
    }
    env.update(
        {
            "TERM": "xterm-256color",
            "PITSTOP_HOME": str(tmp_path / "default-store"),
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "PITSTOP_KEY": base64.b64encode(b"pitstop-e2e-tmux-master-key-32b!").decode(),
            "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
            "GIT_CONFIG_NOSYSTEM": "1",
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "PYTHONPATH": str(ROOT),
        }
    )
    term = Terminal(f"pitstop-e2e-{os.getpid()}", env)
    try:
        yield term
    finally:
        term.tmux("kill-server", check=False)


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
