"""`pitstop serve`: the web inbox for approvers, paired devices only; `serve pair`, `serve devices`.

Serving prints a one-time pairing link (and its QR code) for `--approver`; opening it on a phone
pairs that phone as the approver. The server binds to 127.0.0.1 unless told otherwise: reach it
from a phone through an SSH tunnel, a tailnet or a TLS reverse proxy (README, "Approve from a
phone"), and pass the address the phone uses as `--public-url` so the link points there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from tui.cli.base import Context, emit, json_option, pass_ctx

if TYPE_CHECKING:
    from core.engine.devices import Pairing

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@click.group(invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option("--approver", help="Print a pairing link for this approver (default: the operator).")
@click.option("--no-pair", is_flag=True, help="Print no pairing link (devices already paired).")
@click.option("--public-url", help="The address phones use (tunnel, tailnet or TLS proxy).")
@click.option("--pair-minutes", default=10.0, show_default=True, help="How long the link works.")
@click.option(
    "--dashboard",
    is_flag=True,
    help="Also serve the full dashboard (textual-serve), to paired devices only.",
)
@click.option(
    "--dashboard-port",
    type=click.IntRange(0, 65535),
    help="Port of the dashboard (default: --port + 1).",
)
@pass_ctx
@click.pass_context
def serve(
    click_ctx: click.Context,
    ctx: Context,
    host: str,
    port: int,
    approver: str | None,
    no_pair: bool,
    public_url: str | None,
    pair_minutes: float,
    dashboard: bool,
    dashboard_port: int | None,
) -> None:
    """Serve the approvals inbox to paired browsers (phone first) until interrupted."""
    if click_ctx.invoked_subcommand is not None:
        return
    _need_the_serve_extra(dashboard)
    import uvicorn

    from web.app import create_app

    engine = ctx.engine()
    base = (public_url or f"http://{_url_host(host)}:{port}").rstrip("/")
    if host not in LOOPBACK:
        click.echo(
            f"warning: listening on {host}, beyond this machine; use it only on a tailnet or "
            "behind a TLS reverse proxy, never as plain HTTP on an open network",
            err=True,
        )
    if not no_pair:
        pairing = engine.create_pairing(approver or engine.actor, pair_minutes)
        _print_pairing(pairing, base)
    click.echo(f"serving the inbox of {engine.paths.root} at http://{_url_host(host)}:{port}/")
    click.echo("stop with Ctrl-C: nothing is lost (every decision is already in the store)")
    dashboard_at = dashboard_port or port + 1
    dashboard_url = f"http://{_url_host(host)}:{dashboard_at}/" if dashboard else None
    app = create_app(engine.paths.root, dashboard_url=dashboard_url)
    guarded = None
    if dashboard:
        guarded = start_dashboard(app.state.web.engines, host, dashboard_at)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        access_log=False,  # a pairing link's path must not land in a log
        log_level="warning",
        proxy_headers=True,
        forwarded_allow_ips="127.0.0.1",
        timeout_graceful_shutdown=3,
    )
    stopping = app.state.web.stopping

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            stopping.set()  # live streams end first, so shutting down waits on no browser
            super().handle_exit(sig, frame)

    try:
        Server(config).run()
    finally:
        if guarded is not None:
            guarded.stop()


def start_dashboard(engines: Any, host: str, port: int) -> Any:
    """The full dashboard through textual-serve on `port`, behind the inbox's device door."""
    import shlex
    import sys
    from pathlib import Path

    from textual_serve.server import Server

    from web.dashboard import Dashboard

    script = Path(sys.executable).with_name("pitstop")
    program = [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]
    url = f"http://{_url_host(host)}:{port}"

    class Quiet(Server):
        async def on_startup(self, app: Any) -> None:  # no logo on our terminal
            return None

    command = shlex.join([*program, "--store", str(engines.current().paths.root)])
    served = Quiet(command, host=host, port=port, title="Pitstop", public_url=url)
    dashboard = Dashboard(served._make_app, engines, host, port).start()
    click.echo(f"serving the dashboard to paired browsers at {url}/ (pair at the inbox first)")
    return dashboard


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _need_the_serve_extra(dashboard: bool = False) -> None:
    """One clear line when the web inbox's packages are not installed (`pip install -e .`
    alone does not bring them)."""
    import importlib.util

    from core.errors import UsageError

    wanted = ("starlette", "uvicorn", "jinja2", "segno", *(("textual_serve",) if dashboard else ()))
    missing = [m for m in wanted if not importlib.util.find_spec(m)]
    if missing:
        raise UsageError(
            f"pitstop serve needs {', '.join(missing)}: install the serve extra "
            "(.venv/bin/pip install -e '.[serve]'), then run it again"
        )


def _print_pairing(pairing: Pairing, base: str) -> None:
    _need_the_serve_extra()
    import segno

    link = f"{base}/pair/{pairing.token}"
    until = pairing.expires_at[11:16]
    click.echo(f"pair a device as {pairing.approver} (works once, until {until} UTC):")
    click.echo(f"  {link}")
    segno.make(link, error="m").terminal(compact=True)


@serve.command("pair")
@click.option("--approver", help="Who the device acts for (default: the operator).")
@click.option("--public-url", default="http://127.0.0.1:8765", show_default=True)
@click.option("--minutes", default=10.0, show_default=True, help="How long the link works.")
@pass_ctx
def serve_pair(ctx: Context, approver: str | None, public_url: str, minutes: float) -> None:
    """Print a new one-time pairing link (and QR code) for a running server."""
    engine = ctx.engine()
    _print_pairing(engine.create_pairing(approver or engine.actor, minutes), public_url.rstrip("/"))


@serve.command("devices")
@click.option("--revoke", "revoke_id", metavar="ID", help="Revoke this device: refused at once.")
@json_option
@pass_ctx
def serve_devices(ctx: Context, revoke_id: str | None, as_json: bool) -> None:
    """List the paired devices, or revoke one."""
    from tui.render import jsonable, table

    engine = ctx.engine()
    if revoke_id is not None:
        device = engine.revoke_device(revoke_id)
        emit(as_json, device, f"device {device.id} ({device.approver}) revoked")
        return
    devices = engine.list_devices()
    if as_json:
        emit(True, [jsonable(d) for d in devices], "")
        return
    if not devices:
        click.echo("no paired devices; `pitstop serve` prints a pairing link")
        return
    rows = [
        (
            d.id,
            d.approver,
            "revoked" if d.revoked_at else "active",
            d.created_at[:16].replace("T", " "),
            (d.last_seen_at or "-")[:16].replace("T", " "),
            d.label[:40],
        )
        for d in devices
    ]
    click.echo(table(["id", "approver", "state", "paired", "last seen", "browser"], rows))
