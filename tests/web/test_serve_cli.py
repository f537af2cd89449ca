"""`pitstop serve pair` and `pitstop serve devices [--revoke ID]`, as real processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from starlette.testclient import TestClient

from core.engine import Engine
from tests.web.conftest import make_client

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"(https?://\S+/pair/([A-Za-z0-9_-]+))")


def pitstop(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the real command line on the test's store (PITSTOP_HOME)."""
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_pair_prints_a_link_and_a_qr_code_that_pair_a_browser(
    store_root: Path, engine: Engine
) -> None:
    done = pitstop("serve", "pair", "--approver", "bob", "--public-url", "https://phone.example/")
    assert done.returncode == 0, done.stderr
    found = LINK.search(done.stdout)
    assert found and found.group(1).startswith("https://phone.example/pair/")
    assert "pair a device as bob" in done.stdout
    assert "█" in done.stdout or "▀" in done.stdout  # the QR code, drawn in the terminal
    with make_client(store_root) as browser:
        answer = browser.post("/pair", data={"token": found.group(2)}, follow_redirects=False)
        assert answer.status_code == 303
        assert "bob" in browser.get("/").text


def test_devices_lists_and_revokes(store_root: Path, engine: Engine) -> None:
    assert "no paired devices" in pitstop("serve", "devices").stdout
    with make_client(store_root) as browser:
        link = engine.create_pairing("carol")
        browser.post("/pair", data={"token": link.token}, headers={"user-agent": "Phone/1"})
        _still_in(browser)
        listed = json.loads(pitstop("serve", "devices", "--json").stdout)
        assert [(d["approver"], d["label"], d["revoked_at"]) for d in listed] == [
            ("carol", "Phone/1", None)
        ]
        device_id = listed[0]["id"]
        table = pitstop("serve", "devices").stdout
        assert device_id in table and "active" in table
        revoked = pitstop("serve", "devices", "--revoke", device_id)
        assert revoked.returncode == 0 and f"device {device_id} (carol) revoked" in revoked.stdout
        assert browser.get("/").status_code == 401
    twice = pitstop("serve", "devices", "--revoke", device_id)
    assert twice.returncode == 2 and "already revoked" in twice.stderr
    assert len(twice.stderr.strip().splitlines()) == 1
    unknown = pitstop("serve", "devices", "--revoke", "dev-nope")
    assert unknown.returncode == 2 and "no paired device" in unknown.stderr
    events = [
        (e.action, e.actor)
        for e in engine.events()
        if e.entity == "device" and e.action != "pairing_link"
    ]
    assert [action for action, _ in events] == ["pair", "revoke"]


def _still_in(browser: TestClient) -> None:
    assert browser.get("/").status_code == 200


def test_a_bad_approver_name_is_one_clear_line(store_root: Path) -> None:
    done = pitstop("serve", "pair", "--approver", " ")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "approver" in done.stderr
