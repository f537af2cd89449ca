"""`pitstop serve --dashboard` in a real browser: the Textual dashboard runs for a paired browser
only. A browser that never paired sees the refusal and starts nothing; once paired at the inbox,
the same browser opening the dashboard's port gets the dashboard program started for it (a child
process of the server, running `pitstop --store STORE`), drawn in the page; revoking the device
ends that open dashboard and its program."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.engine import Engine
from tests.core.corekit import init_repo
from tests.e2e.browser import DESKTOP, chromium, free_port, require_browser, serve, wait_until

pytestmark = pytest.mark.e2e


def _children(pid: int) -> list[str]:
    """The command lines of a process's children and their children."""
    found = []
    pending = [pid]
    while pending:
        parent = pending.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            for child in (task / "children").read_text().split():
                pending.append(int(child))
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
                found.append(cmdline.decode(errors="replace"))
    return found


def test_the_dashboard_runs_only_for_a_paired_browser(
    isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    require_browser()
    root = isolated_env["store"]
    repo = init_repo(tmp_path / "repo", {"README.md": "# shop\n"})
    with Engine(root) as engine:
        engine.start_task(repo=repo, objective="Switch invoices to EUR", task_id="invoices")
    port = free_port()
    dashboard = f"http://127.0.0.1:{port}/"
    args = ("--dashboard", "--dashboard-port", str(port))
    with serve(dict(os.environ), args=args) as served, chromium(DESKTOP) as driver:
        assert any(dashboard in line for line in served.output)
        driver.get(dashboard)
        body = driver.find_element("tag name", "body").text
        assert "Not paired" in body
        assert not [c for c in _children(served.process.pid) if "--store" in c]

        driver.get(served.link)
        driver.find_element("id", "pair").click()
        wait_until(lambda: "Waiting for you" in driver.page_source, "the inbox after pairing")
        driver.find_element("id", "dashboard").click()  # the inbox links to it
        running = wait_until(
            lambda: [c for c in _children(served.process.pid) if f"--store {root}" in c],
            "the dashboard program started for the paired browser",
            seconds=30,
        )
        assert "pitstop" in running[0]
        assert "Not paired" not in driver.find_element("tag name", "body").text

        with Engine(root) as engine:  # revoked: the open dashboard ends, its program with it
            [device] = engine.list_devices()
            engine.revoke_device(device.id)
        wait_until(
            lambda: not [c for c in _children(served.process.pid) if f"--store {root}" in c],
            "the dashboard program ended after the revocation",
            seconds=30,
        )
        driver.get(dashboard)
        assert "Not paired" in driver.find_element("tag name", "body").text
    assert "Traceback" not in "".join(served.output)
