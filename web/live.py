"""Live updates: a server-sent event each time the store changes, for the inbox to re-read.

The store is watched the way the dashboard watches it (`Engine.watch_commits`: the write-ahead
log through inotify, `PRAGMA data_version` as the check), on a worker thread abandoned when the
browser goes away. A harness hook holding a permission prompt open commits its request, so the
prompt appears within a second. The device is checked again after every change, so revoking it
(a commit too) ends its stream at once; a stopping server ends every stream within half a
second, so shutting down never waits on a browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from web.guard import COOKIE, device_from_request, unpaired

HEARTBEAT_S = 15.0
POLL_S = 0.5  # how soon a stream notices that the server is stopping


async def live(request: Request) -> Response:
    """`text/event-stream`: `changed` after each commit; ends when the device is revoked."""
    if (
        not request.cookies.get(COOKIE)
        or await run_in_threadpool(device_from_request, request) is None
    ):
        return unpaired(request)
    return StreamingResponse(
        _events(request), media_type="text/event-stream", headers={"x-accel-buffering": "no"}
    )


async def _events(request: Request) -> AsyncIterator[str]:
    stop = threading.Event()
    changes: asyncio.Queue[int | None] = asyncio.Queue()
    watcher = threading.Thread(
        target=_watch, args=(request, stop, asyncio.get_running_loop(), changes), daemon=True
    )
    watcher.start()
    stopping = request.app.state.web.stopping
    quiet_s = 0.0
    try:
        yield "retry: 3000\n\n"
        while not stopping.is_set():
            try:
                version = await asyncio.wait_for(changes.get(), POLL_S)
            except TimeoutError:
                quiet_s += POLL_S
                if quiet_s >= HEARTBEAT_S:
                    quiet_s = 0.0
                    yield ": still here\n\n"
                continue
            if version is None:
                return
            if await run_in_threadpool(device_from_request, request) is None:
                yield "event: revoked\ndata: pair again\n\n"
                return
            yield f"event: changed\ndata: {version}\n\n"
    finally:
        stop.set()


def _watch(
    request: Request,
    stop: threading.Event,
    loop: asyncio.AbstractEventLoop,
    changes: asyncio.Queue[int | None],
) -> None:
    """On its own thread (the watcher's connection stays on it): hand each commit to the loop."""
    engines = request.app.state.web.engines
    try:
        for version in engines.current().watch_commits(stop):
            loop.call_soon_threadsafe(changes.put_nowait, version)
    finally:
        with contextlib.suppress(RuntimeError):  # the loop may be closed by now
            loop.call_soon_threadsafe(changes.put_nowait, None)
