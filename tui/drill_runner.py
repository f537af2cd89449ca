"""Run one restore drill for the dashboard: start the child, follow it, stop it on request.

A thread worker calls `run_drill`; it reports the replay's last output line and the time spent
through `progress` twice a second, kills the child and everything under it as soon as `cancel`
is set, and returns what the child printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

PROGRESS_SECONDS = 0.5
KILL_GRACE_SECONDS = 3.0


class DrillOutcome(NamedTuple):
    """How a drill from the dashboard ended: its report and words, an error, or cancelled."""

    report: dict[str, Any] | None = None
    text: str = ""
    error: str | None = None
    cancelled: bool = False


def run_drill(
    store: Path,
    ref: str,
    progress: Callable[[float, str], None],
    cancel: threading.Event,
) -> DrillOutcome:
    """Drill `ref` of the store at `store` in a child process and wait for it (or `cancel`)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tui.drill_child", str(store), ref],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own group: a cancel ends the replay it started too
    )
    assert child.stdout is not None and child.stderr is not None
    started = time.monotonic()
    last_line = ""
    partial = b""
    out = bytearray()
    selector = selectors.DefaultSelector()
    selector.register(child.stdout, selectors.EVENT_READ, "out")
    selector.register(child.stderr, selectors.EVENT_READ, "err")
    open_streams = 2
    next_report = started
    while open_streams:
        if cancel.is_set():
            _stop(child)
            selector.close()
            return DrillOutcome(cancelled=True)
        for key, _ in selector.select(PROGRESS_SECONDS / 2):
            data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
            if not data:
                selector.unregister(key.fileobj)
                open_streams -= 1
            elif key.data == "out":
                out += data
            else:
                lines = (partial + data).split(b"\n")
                partial = lines.pop()
                shown = [line for line in lines if line.strip()]
                if shown:
                    last_line = shown[-1].decode("utf-8", "replace")[-200:]
        now = time.monotonic()
        if now >= next_report:
            progress(now - started, last_line)
            next_report = now + PROGRESS_SECONDS
    selector.close()
    child.wait()
    try:
        printed = json.loads(out.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return DrillOutcome(error=f"the drill ended with exit {child.returncode} and no report")
    if "error" in printed:
        return DrillOutcome(error=str(printed["error"]))
    return DrillOutcome(report=printed.get("report"), text=str(printed.get("text", "")))


def _stop(child: subprocess.Popen[bytes]) -> None:
    """End the drill at once and every process under it (the replay runs in a session of its
    own, so its group is not the drill's). A SIGTERM would be relayed to the replay and the drill
    would go on to record the killed replay as drift: a cancelled drill records nothing."""
    below = _descendants(child.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    for pid in below:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=KILL_GRACE_SECONDS)


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, read from /proc (on a system without it: `ps`)."""
    parents: dict[int, int] = {}
    proc = Path("/proc")
    if proc.is_dir():
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    else:
        listing = subprocess.run(
            ["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True, check=False
        ).stdout
        for line in listing.splitlines():
            with contextlib.suppress(ValueError):
                child, parent = (int(word) for word in line.split())
                parents[child] = parent
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        for child, parent in parents.items():
            if parent == current and child not in found:
                found.append(child)
                frontier.append(child)
    return found
