"""The tmux tests keep what the app wrote when it dies, and show it when they fail.

Once in three full runs the inbox test saw a blank screen and nothing else: tmux closes the pane
of a process that exits, and its last words go with it. The app now runs under
`logged_run.py`, which gives it a terminal of the window's size and logs all it writes.
"""

from __future__ import annotations

import shutil
import sys
import time

import pytest

from tests.e2e.tmux_terminal import HEIGHT, WIDTH, Terminal

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

DYING_APP = (
    "import sys, time\n"
    "print('\\x1b[2Jthe dashboard, briefly', flush=True)\n"
    "time.sleep(0.3)\n"
    "sys.stderr.write('Traceback (most recent call last):\\nRuntimeError: the app died\\n')\n"
    "sys.exit(3)\n"
)


def _gone(terminal: Terminal, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while terminal.running():
        assert time.monotonic() < deadline, "the command did not end"
        time.sleep(0.05)


def test_an_app_that_dies_leaves_its_output_and_exit_code(terminal: Terminal) -> None:
    terminal.start([sys.executable, "-c", DYING_APP])
    _gone(terminal)
    output = terminal.app_output()
    assert "the dashboard, briefly" in output
    assert "RuntimeError: the app died" in output
    assert output.endswith("[exited with 3]")
    assert "\x1b" not in output


def test_a_timed_out_wait_shows_what_the_app_wrote(terminal: Terminal) -> None:
    terminal.start([sys.executable, "-c", DYING_APP])
    with pytest.raises(AssertionError) as failed:
        terminal.wait_for(lambda screen: "never shown" in screen, "a screen", seconds=3)
    message = str(failed.value)
    assert "the app is gone" in message
    assert "RuntimeError: the app died" in message and "[exited with 3]" in message


def test_the_app_gets_the_windows_size_and_keys(terminal: Terminal) -> None:
    terminal.start(["sh", "-c", 'stty size; read line; echo "got $line"'])
    terminal.wait_for(lambda screen: f"{HEIGHT} {WIDTH}" in screen, "the size")
    terminal.keys("hello", "Enter")
    _gone(terminal)
    output = terminal.app_output()
    assert f"{HEIGHT} {WIDTH}" in output and "got hello" in output
