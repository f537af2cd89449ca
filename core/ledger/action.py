"""Running a side effect's action: its own process group, the key's lock passed on, signals
forwarded, and how it ended turned into the effect's next state.

The action inherits the locked descriptor: if the guard is killed, the key stays locked until
the action (and whatever it started) is gone. Signals that would end a guard are passed on to
the action, whose outcome is then unknown (`uncertain`), as is one that ran out of time.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from types import FrameType

from core.ledger.checks import kill_group
from core.models import EffectState

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    import subprocess

EXIT_TIMEOUT = 124  # as timeout(1): the action ran out of time; its outcome is unknown
EXIT_SIGNAL_BASE = 128  # as shells: 128 + the signal that ended the action
EXIT_CANNOT_EXECUTE = 126

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class ActionResult(NamedTuple):
    """How one run of an action ended."""

    returncode: int
    duration_s: float
    timed_out: bool
    interrupted_by: int | None


def run_action(
    argv: Sequence[str],
    env: Mapping[str, str],
    timeout: float | None,
    lock_fd: int,
    stdout_to_stderr: bool,
) -> ActionResult:
    """Run the action in its own process group, holding the key's lock, passing output through.

    Signals that would end a guard are passed on to the action while it runs.
    """
    import subprocess

    started = time.monotonic()
    received: list[int] = []
    running: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        for proc in running:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)

    # The handlers go in before the action starts: a signal that came between its start and
    # their installation ended the guard and left the action running, unrecorded.
    previous: dict[int, Any] = {}  # whatever signal.signal() hands back
    if threading.current_thread() is threading.main_thread():
        for sig in _FORWARDED:
            previous[sig] = signal.signal(sig, forward)
    timed_out = False
    try:
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            pass_fds=(lock_fd,),
            process_group=0,
            stdout=2 if stdout_to_stderr else None,
        )
        running.append(proc)
        # Signals that came while the action was starting are passed on now (one that comes
        # between these two lines is passed twice, never lost).
        for signum in list(received):
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
            returncode = proc.wait()
    finally:
        for forwarded, handler in previous.items():
            # A handler installed outside Python reads back as None: restore the default then.
            signal.signal(forwarded, signal.SIG_DFL if handler is None else handler)
    return ActionResult(
        returncode=returncode,
        duration_s=time.monotonic() - started,
        timed_out=timed_out,
        interrupted_by=received[0] if received else None,
    )


def classify(result: ActionResult, timeout: float | None) -> tuple[EffectState, int, str]:
    """The effect's new state, the guard's exit code and a note, from how the action ended."""
    took = f"after {result.duration_s:.1f} s"
    if result.timed_out:
        return EffectState.UNCERTAIN, EXIT_TIMEOUT, f"timed out after {timeout:g} s"
    if result.returncode == 0:
        return EffectState.CONFIRMED, 0, f"exit 0 {took}"
    if result.interrupted_by is not None:
        name = _signal_name(result.interrupted_by)
        return (
            EffectState.UNCERTAIN,
            EXIT_SIGNAL_BASE + result.interrupted_by,
            f"the guard was interrupted by {name} {took}",
        )
    if result.returncode < 0:
        name = _signal_name(-result.returncode)
        return (
            EffectState.UNCERTAIN,
            EXIT_SIGNAL_BASE - result.returncode,
            f"the action was killed by {name} {took}",
        )
    return EffectState.FAILED, result.returncode, f"exit {result.returncode} {took}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
