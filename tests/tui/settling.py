"""Wait until a Textual app under test has nothing left to do, measured, not guessed.

`Pilot.pause()` waits until the process looks idle: until its CPU time stops advancing as fast
as the wall clock. On a loaded machine (CI's two shared cores) a process that is starved of CPU
looks idle too, so a fixed number of pauses can return while a worker's result is still queued
as a message, and a snapshot shows the screen half loaded. Here the app is quiet only when no
worker is pending or running and no node's message queue or next-callback list holds anything,
several rounds in a row; workers that chain (a load whose handler starts the next load) are
followed to the end of the chain, however slow each hop is.
"""

from __future__ import annotations

import time
from typing import Any

from textual.pilot import Pilot
from textual.worker import WorkerState

QUIET_ROUNDS = 3  # consecutive quiet checks before the app counts as settled
TIMEOUT_SECONDS = 60.0

_ACTIVE = (WorkerState.PENDING, WorkerState.RUNNING)


def busy(app: Any) -> bool:
    """Whether a worker is still active or a message or callback still waits anywhere."""
    if any(worker.state in _ACTIVE for worker in app.workers):
        return True
    nodes = [app]
    for screen in app.screen_stack:
        nodes.append(screen)
        nodes.extend(screen.walk_children(with_self=False))
    return any(node.message_queue_size or node._next_callbacks for node in nodes)


async def settle(pilot: Pilot[Any], *, timeout: float = TIMEOUT_SECONDS) -> None:
    """Let every worker finish and every message it posted be handled, however long that takes.

    Never-ending workers (the live store watcher) would keep the app busy for ever: apps under
    this wait run without them, and a timeout names the problem instead of hanging CI."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < QUIET_ROUNDS:
        if time.monotonic() > deadline:
            active = [worker.name for worker in app.workers if worker.state in _ACTIVE]
            raise AssertionError(f"the app did not settle in {timeout:g} s (workers: {active})")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause(0.01)  # a thread worker's last message lands through the loop
        quiet = 0 if busy(app) else quiet + 1
