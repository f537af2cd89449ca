"""The Starlette application of `pitstop serve`: routes, limits and headers, one store.

One process serves every device; it holds nothing of its own that a restart would lose (device
sessions and pairing links are in the store, decisions are written as they are made), and it
writes through the engine's `BEGIN IMMEDIATE` transactions like every other writer, so agents
never wait on it beyond one short transaction.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import NamedTuple

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from web import effects, inbox
from web.engines import Engines
from web.guard import SecurityHeaders, paired, refusal
from web.limits import Limiter, RateLimits
from web.live import live
from web.pairing import pair, pair_page

STATIC = Path(__file__).parent / "static"


class Server(NamedTuple):
    """What every request of one server shares: the engines, the rate limits, whether the
    server is stopping (set by whoever runs it; live streams end when it is), and the address
    of the `--dashboard` beside it, if one runs."""

    engines: Engines
    pairing: Limiter
    failed: Limiter
    stopping: threading.Event
    dashboard_url: str | None = None


async def _not_found(request: Request, exc: Exception) -> Response:
    return refusal(request, 404, "Not here", "There is no such page.")


def create_app(
    store_root: Path | None = None,
    limits: RateLimits | None = None,
    dashboard_url: str | None = None,
) -> Starlette:
    """The web inbox over the store at `store_root` (default: PITSTOP_HOME, then the platform's);
    with `dashboard_url`, its pages link to the dashboard served there."""
    limits = limits or RateLimits()
    routes = [
        Route("/", paired(inbox.inbox)),
        Route("/inbox.part", paired(inbox.inbox_part)),
        Route("/approvals/{approval_id}", paired(inbox.approval)),
        Route("/approvals/{approval_id}", paired(inbox.decide), methods=["POST"]),
        Route("/effects/{task_id}/{key:path}/check", paired(effects.check), methods=["POST"]),
        Route("/effects/{task_id}/{key:path}/settle", paired(effects.settle), methods=["POST"]),
        Route("/effects/{task_id}/{key:path}", paired(effects.effect)),
        Route("/live", live),
        Route("/pair/{token}", pair_page),
        Route("/pair", pair, methods=["POST"]),
        Route("/forget", paired(inbox.forget), methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(SecurityHeaders)],
        exception_handlers={404: _not_found, 405: _not_found},
    )
    app.state.web = Server(
        Engines(store_root),
        Limiter(limits.pairing_attempts, limits.window_s),
        Limiter(limits.failed_requests, limits.window_s),
        threading.Event(),
        dashboard_url,
    )
    return app
