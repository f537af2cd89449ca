"""Run a command in a terminal of its own, passing everything through, and keep what it wrote.

`python logged_run.py LOG CMD...`: CMD gets a pseudo-terminal the size of ours (and follows
resizes), our keys go to it and its output comes to us, and every byte it writes is appended to
LOG, then a last line `[exited with N]`. When the app dies in a tmux test, tmux closes its pane
and the screen is gone; the log still holds its last screens and whatever it printed on the
way out (a traceback), for the test to show.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import sys
import termios
import tty
from types import FrameType
from typing import BinaryIO


def _size(fd: int) -> bytes:
    return fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)


def _pump(master: int, log: BinaryIO) -> None:
    """Copy our keys to the command and its output to us and the log, until it closes."""
    while True:
        try:
            ready, _, _ = select.select([0, master], [], [])
        except InterruptedError:
            continue
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the command and all its children closed the terminal
                return
            if not data:
                return
            log.write(data)
            os.write(1, data)
        if 0 in ready:
            keys = os.read(0, 65536)
            if keys:
                os.write(master, keys)


def main(argv: list[str]) -> int:
    log_path, command = argv[0], argv[1:]
    size = _size(0)
    pid, master = pty.fork()
    if pid == 0:  # the child: its terminal is the new one; give it our size, then become CMD
        fcntl.ioctl(0, termios.TIOCSWINSZ, size)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(2, f"logged_run: cannot run {command[0]}: {exc}\n".encode())
            os._exit(127)

    def resized(_signal: int, _frame: FrameType | None) -> None:
        fcntl.ioctl(master, termios.TIOCSWINSZ, _size(0))

    signal.signal(signal.SIGWINCH, resized)
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    try:
        with open(log_path, "ab", buffering=0) as log:
            _pump(master, log)
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            log.write(f"\n[exited with {code}]\n".encode())
    finally:
        termios.tcsetattr(0, termios.TCSAFLUSH, saved)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
