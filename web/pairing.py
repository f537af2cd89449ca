"""Pairing a device: a one-time link opened on the phone becomes its device session.

Opening the link only shows a button (a link previewer or a prefetching browser must not use
the link up); pressing it posts the token, which the engine exchanges once for a device
session. The pairing token travels in the path, never in a Referer (`no-referrer`), and every
attempt, good or bad, counts against the client's rate limit.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from core.errors import PitstopError
from web.guard import client_key, refusal, set_device_cookie
from web.render import page

_TOKEN_MAX = 100


async def pair_page(request: Request) -> Response:
    """The page a pairing link opens: who this device will act for is said on the button."""
    if not request.app.state.web.pairing.hit(client_key(request)):
        return _too_many(request)
    token = request.path_params["token"]
    if not token or len(token) > _TOKEN_MAX:
        return _refused_link(request)
    return page(request, "pair.html", token=token)


async def pair(request: Request) -> Response:
    """Exchange a pairing token for a device session, then go to the inbox."""
    if not request.app.state.web.pairing.hit(client_key(request)):
        return _too_many(request)
    form = await request.form()
    token = form.get("token")
    if not isinstance(token, str) or not token or len(token) > _TOKEN_MAX:
        return _refused_link(request)
    label = request.headers.get("user-agent", "")
    try:
        paired = await run_in_threadpool(_redeem, request, token, label)
    except PitstopError as exc:
        return refusal(request, 403, "Pairing refused", exc.message)
    response = RedirectResponse("/", status_code=303)
    set_device_cookie(response, request, paired.token)
    return response


def _redeem(request: Request, token: str, label: str):  # type: ignore[no-untyped-def]
    return request.app.state.web.engines.current().redeem_pairing(token, label)


def _refused_link(request: Request) -> Response:
    return refusal(
        request,
        403,
        "Pairing refused",
        "This pairing link is not valid; print a new one with "
        "`pitstop serve pair --approver NAME`.",
    )


def _too_many(request: Request) -> Response:
    return refusal(
        request, 429, "Too many attempts", "Too many pairing attempts; wait a few minutes."
    )
