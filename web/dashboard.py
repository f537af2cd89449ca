"""`pitstop serve --dashboard`: the full Textual dashboard in a browser, paired devices only.

textual-serve (an aiohttp server) starts the dashboard program once per browser connection and
has no door of its own: anyone who reaches its port would get the operator's dashboard, keys
and all. This puts the inbox's door in front of every one of its routes: a request must carry
the cookie of a current device session (the same cookie the inbox set: browsers scope cookies by
host, not port), and the websocket that drives the dashboard must come from the dashboard's own
page (its Origin), so another site cannot open one with the approver's cookie. The server runs
on its own thread and event loop beside the inbox's, in the same process.

The aiohttp application itself comes from the caller (the CLI builds it with textual-serve), so
this package stays free of any terminal library.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from web.engines import Engines
from web.guard import COOKIE, HEADERS
from web.limits import Limiter

RECHECK_S = 2.0  # how soon an open dashboard notices that its device was revoked
AppFactory = Callable[[], Awaitable[web.Application]]
_DASHBOARD_HEADERS = {  # its page runs textual-serve's own scripts: no CSP of the inbox's here
    name: HEADERS[name]
    for name in ("x-frame-options", "referrer-policy", "x-content-type-options", "cache-control")
}
_REFUSED = (
    "<!doctype html><meta charset='utf-8'><title>Not paired · Pitstop</title>"
    "<h1>Not paired</h1><p>This browser is not paired with Pitstop. On the machine that runs "
    "it, print a pairing link with <code>pitstop serve pair --approver NAME</code>, open it "
    "here, then come back to the dashboard.</p>"
)


def _same_origin(request: web.Request) -> bool:
    """A websocket's Origin names this server (browsers always send one on a websocket)."""
    origin = request.headers.get("Origin")
    return origin is not None and urlsplit(origin).netloc == request.host


def device_gate(engines: Engines, failed: Limiter) -> Any:
    """An aiohttp middleware: a current device session on every request, or a refusal."""

    @web.middleware
    async def gate(request: web.Request, handler: Any) -> web.StreamResponse:
        client = request.remote or "unknown"
        if failed.exhausted(client):
            return web.Response(status=429, text="Too many attempts; wait a few minutes.")
        token = request.cookies.get(COOKIE, "")
        loop = asyncio.get_running_loop()
        device = (
            await loop.run_in_executor(None, lambda: engines.current().device_for_token(token))
            if token
            else None
        )
        if device is None:
            failed.hit(client)
            return web.Response(status=401, text=_REFUSED, content_type="text/html")
        if request.path == "/ws":
            if not _same_origin(request):
                return web.Response(status=403, text="This dashboard opens only from its own page.")
            return await _while_paired(handler(request), engines, token)
        response: web.StreamResponse = await handler(request)
        if not response.prepared:
            response.headers.update(_DASHBOARD_HEADERS)
        return response

    return gate


async def _while_paired(
    work: Awaitable[web.StreamResponse], engines: Engines, token: str
) -> web.StreamResponse:
    """Run a dashboard's websocket while its device stays paired: revoked, the connection (and
    the dashboard program behind it) ends within `RECHECK_S` seconds."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    while not task.done():
        await asyncio.wait({task}, timeout=RECHECK_S)
        if task.done():
            break
        device = await loop.run_in_executor(None, lambda: engines.current().device_for_token(token))
        if device is None:
            task.cancel()  # textual-serve closes the socket and stops the program
            with contextlib.suppress(asyncio.CancelledError):
                await task
            break
    return task.result()


class Dashboard:
    """The guarded dashboard server on its own thread; `stop()` ends it and its dashboards."""

    def __init__(self, make_app: AppFactory, engines: Engines, host: str, port: int) -> None:
        self.make_app = make_app
        self.engines = engines
        self.host = host
        self.port = port
        self.failed = Limiter(30, 600.0)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._run, name="pitstop-dashboard", daemon=True)

    def start(self) -> Dashboard:
        """Listen; returns once the port is open (or raises what stopped it)."""
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._listen())
        except BaseException as exc:  # handed to start(), which raises it on the caller's thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()

    async def _listen(self) -> None:
        app = await self.make_app()
        app.middlewares.append(device_gate(self.engines, self.failed))
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()

    def stop(self) -> None:
        """Close every dashboard connection and the port."""
        if self._runner is not None and self._thread.is_alive():
            done = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
            with contextlib.suppress(TimeoutError, RuntimeError):  # the process is ending anyway
                done.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
