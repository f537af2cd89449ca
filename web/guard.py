"""No anonymous door (invariant 13): device sessions, CSRF tokens, refusals, security headers.

A paired device holds a random session token in an HttpOnly, SameSite=Strict cookie (Secure
when the request came over TLS); the store knows only its hash. Every request looks the token
up again, so a revoked device is refused on its next request. Every write also carries a CSRF
token derived from the session token (an HMAC, so nothing more is stored) and compared in
constant time. Requests without a valid session get a page that says how to pair and shows
nothing else; too many of them from one client are refused outright.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.engine import Engine
from core.errors import ConflictError, NotAllowedError, NotFoundError, PitstopError
from core.models import Device
from web.render import page

COOKIE = "pitstop_device"
COOKIE_MAX_AGE_S = 90 * 24 * 3600  # a phone stays paired for months, until revoked
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=(), interest-cohort=()",
    "cache-control": "no-store",
}


class SecurityHeaders:
    """ASGI middleware: the strict headers on every response (HSTS too when over TLS)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = dict(HEADERS)
        if scope.get("scheme") == "https":
            extra["strict-transport-security"] = "max-age=31536000"

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.decode() not in extra]
                headers.extend((k.encode(), v.encode()) for k, v in extra.items())
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def csrf_token(session_token: str) -> str:
    """The CSRF token of a device session: bound to it, useless without it."""
    return hmac.new(session_token.encode(), b"pitstop web csrf/1", hashlib.sha256).hexdigest()


def client_key(request: Request) -> str:
    """Who is asking, for the rate limits: the client's address."""
    return request.client.host if request.client else "unknown"


def set_device_cookie(response: Response, request: Request, session_token: str) -> None:
    """The device's session cookie: HttpOnly, SameSite=Strict, Secure over TLS."""
    response.set_cookie(
        COOKIE,
        session_token,
        max_age=COOKIE_MAX_AGE_S,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def refusal(request: Request, status: int, title: str, message: str) -> Response:
    """A page that says why nothing is shown, and nothing else."""
    return page(request, "refused.html", status=status, title=title, message=message)


def unpaired(request: Request) -> Response:
    """The answer to any request without a valid device session."""
    return refusal(
        request,
        401,
        "Not paired",
        "This browser is not paired with Pitstop. On the machine that runs it, print a "
        "pairing link with `pitstop serve pair --approver NAME` and open it here.",
    )


class Visit(NamedTuple):
    """One authenticated request: the engine acting for its device, and what it sent."""

    request: Request
    engine: Engine
    device: Device
    csrf: str
    form: FormData | None

    def field(self, name: str) -> str:
        """A form field as text ('' when absent)."""
        value = self.form.get(name) if self.form is not None else None
        return value if isinstance(value, str) else ""


Work = Callable[[Visit], Response]


def error_status(exc: PitstopError) -> int:
    """The HTTP status of an engine refusal."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, NotAllowedError):
        return 403
    if isinstance(exc, ConflictError):
        return 409
    return 400


def paired(work: Work) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint for paired devices only; a write also needs the session's CSRF token."""

    async def endpoint(request: Request) -> Response:
        server = request.app.state.web
        if server.failed.exhausted(client_key(request)):
            return refusal(request, 429, "Too many attempts", "Wait a few minutes, then pair.")
        token = request.cookies.get(COOKIE, "")
        if not token:
            server.failed.hit(client_key(request))
            return unpaired(request)
        form = await request.form() if request.method == "POST" else None
        return await run_in_threadpool(_serve, request, token, form, work)

    endpoint.__name__ = work.__name__
    endpoint.__doc__ = work.__doc__
    return endpoint


def _serve(request: Request, token: str, form: FormData | None, work: Work) -> Response:
    server = request.app.state.web
    device = server.engines.current().device_for_token(token)
    if device is None:
        server.failed.hit(client_key(request))
        return unpaired(request)
    csrf = csrf_token(token)
    if form is not None:
        sent = form.get("csrf")
        if not isinstance(sent, str) or not hmac.compare_digest(sent, csrf):
            return refusal(
                request,
                403,
                "Refused",
                "This form is stale or did not come from this page; reload the page and try again.",
            )
    with server.engines.acting_for(device) as engine:
        visit = Visit(request, engine, device, csrf, form)
        try:
            return work(visit)
        except PitstopError as exc:
            return page(
                request,
                "refused.html",
                status=error_status(exc),
                title="Not done",
                message=exc.message,
                visit=visit,
            )


def device_from_request(request: Request) -> Any:
    """The active device of a request (blocking: call it on a worker thread), or None."""
    token = request.cookies.get(COOKIE, "")
    return request.app.state.web.engines.current().device_for_token(token) if token else None
