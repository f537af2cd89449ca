"""A real terminal for end-to-end tests: a tmux server of our own running one command, which
runs under `logged_run.py` so that what it wrote survives it (tmux closes a dead pane)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

WIDTH, HEIGHT = 140, 40
WRAPPER = Path(__file__).with_name("logged_run.py")
# Escape sequences, so a log of full-screen frames reads as text: CSI, OSC, charset and others.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[@-Z\\-_=>]"
)


class Terminal:
    """One tmux server of our own (its own socket) running one command in a fixed-size window."""

    def __init__(self, socket: str, env: dict[str, str], log: Path) -> None:
        self.socket = socket
        self.env = env
        self.log = log

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=check,
        )

    def start(self, argv: list[str], size: tuple[int, int] = (WIDTH, HEIGHT)) -> None:
        """Run `argv` in a window of `size` (columns, lines), under the wrapper that logs its
        output to `self.log`."""
        wrapped = [sys.executable, str(WRAPPER), str(self.log), *argv]
        command = " ".join("'" + part.replace("'", "'\\''") + "'" for part in wrapped)
        width, height = size
        self.tmux("new-session", "-d", "-s", "e2e", "-x", str(width), "-y", str(height), command)

    def screen(self) -> str:
        result = self.tmux("capture-pane", "-p", "-t", "e2e", check=False)
        return result.stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "e2e", *(["-l"] if literal else []), *keys)

    def running(self) -> bool:
        return self.tmux("has-session", "-t", "e2e", check=False).returncode == 0

    def app_output(self, last_lines: int = 60) -> str:
        """The end of what the command wrote, escape sequences taken out."""
        if not self.log.exists():
            return "(the wrapper wrote no log: the command never started)"
        text = _ESCAPES.sub("", self.log.read_bytes().decode("utf-8", "replace"))
        lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
        lines = [line.rsplit("\r", 1)[-1] for line in lines if line.strip()]
        return "\n".join(lines[-last_lines:])

    def wait_for(self, condition: Callable[[str], bool], what: str, seconds: float = 30) -> str:
        deadline = time.monotonic() + seconds
        while True:
            screen = self.screen()
            if condition(screen):
                return screen
            if time.monotonic() > deadline:
                state = "running" if self.running() else "gone (its pane closed)"
                raise AssertionError(
                    f"timed out waiting for {what}; the app is {state}; the screen shows:\n"
                    f"{screen}\nthe app's output ({self.log}):\n{self.app_output()}"
                )
            time.sleep(0.1)
