"""`pitstop serve --dashboard`: textual-serve's routes behind the inbox's device door.

The real textual-serve application (as the CLI builds it) on a real port over a real store:
no request reaches it without a current device session, and its websocket, which would start
the operator's dashboard, opens only from its own page.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from core.engine import Engine
from tests.e2e.browser import free_port
from tui.cli.serve import start_dashboard
from web.dashboard import Dashboard
from web.engines import Engines
from web.guard import COOKIE

ROUTES = ("/", "/ws", "/static/css/xterm.css", "/download/abc")


@pytest.fixture
def dashboard(store_root: Path) -> Iterator[tuple[Dashboard, int]]:
    """The guarded dashboard server on a free port."""
    port = free_port()
    served = start_dashboard(Engines(store_root), "127.0.0.1", port)
    try:
        yield served, port
    finally:
        served.stop()


def _get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        connection.close()


def _websocket_headers(origin: str | None, cookie: str) -> dict[str, str]:
    headers = {
        "Cookie": f"{COOKIE}={cookie}",
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    if origin is not None:
        headers["Origin"] = origin
    return headers


def test_without_a_session_every_dashboard_route_refuses(dashboard: tuple[Dashboard, int]) -> None:
    _, port = dashboard
    for path in ROUTES:
        status, body = _get(port, path)
        assert status == 401, (path, body)
        assert "Not paired" in body and "/ws" not in body
    for cookie in ("forged-" + "a" * 40, ""):
        status, _ = _get(port, "/", {"Cookie": f"{COOKIE}={cookie}"})
        assert status == 401


def test_a_paired_device_gets_the_dashboard_until_it_is_revoked(
    dashboard: tuple[Dashboard, int], paired: TestClient, engine: Engine
) -> None:
    _, port = dashboard
    token = paired.cookies.get(COOKIE)
    assert token
    status, page = _get(port, "/", {"Cookie": f"{COOKIE}={token}"})
    assert status == 200 and f"ws://127.0.0.1:{port}/ws" in page
    [device] = engine.list_devices()
    engine.revoke_device(device.id)
    status, page = _get(port, "/", {"Cookie": f"{COOKIE}={token}"})
    assert status == 401 and "Not paired" in page


def test_the_dashboard_websocket_opens_only_from_its_own_page(
    dashboard: tuple[Dashboard, int], paired: TestClient
) -> None:
    _, port = dashboard
    token = paired.cookies.get(COOKIE)
    assert token
    for origin in (None, "http://evil.example", f"http://127.0.0.1:{port + 7}"):
        status, body = _get(port, "/ws", _websocket_headers(origin, token))
        assert status == 403 and "only from its own page" in body, origin
    unpaired, _ = _get(port, "/ws", _websocket_headers(f"http://127.0.0.1:{port}", "forged"))
    assert unpaired == 401


def test_the_inbox_links_to_the_dashboard_only_when_one_is_served(
    store_root: Path, engine: Engine
) -> None:
    from tests.web.conftest import make_client, pair
    from web.app import create_app

    with make_client(store_root) as plain:
        pair(plain, engine)
        assert 'id="dashboard"' not in plain.get("/").text
    app = create_app(store_root, dashboard_url="http://127.0.0.1:8766/")
    with TestClient(app, base_url="http://127.0.0.1") as beside:
        pair(beside, engine, "bob")
        assert '<a href="http://127.0.0.1:8766/" id="dashboard">' in beside.get("/").text
