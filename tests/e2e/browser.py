"""A real `pitstop serve` process and a real headless Chromium (Debian's) driven by Selenium.

Shared by the web inbox's end-to-end test and `screenshots/make_web_screenshots.py`. Chromium
and chromedriver come from Debian's packages (`.ci/run` installs them); nothing is downloaded.
Where they are missing the test is skipped, unless `PITSTOP_E2E_REQUIRE=1` (CI), where it fails.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"(http://\S+/pair/[A-Za-z0-9_-]+)")
PHONE = (390, 844)
DESKTOP = (1280, 860)
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def browser_paths() -> tuple[str, str] | None:
    """Chromium and its chromedriver, or None when either is missing."""
    binary = next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)
    driver = shutil.which("chromedriver")
    return (binary, driver) if binary and driver else None


def require_browser() -> tuple[str, str]:
    """The browser's paths; a skip where it is missing, a failure where CI requires it."""
    import pytest

    paths = browser_paths()
    if paths is not None:
        try:
            import selenium  # noqa: F401
        except ImportError:
            paths = None
    if paths is None:
        why = (
            "headless Chromium, chromedriver and selenium are needed "
            "(apt: chromium chromium-driver)"
        )
        if os.environ.get("PITSTOP_E2E_REQUIRE") == "1":
            pytest.fail(why + "; PITSTOP_E2E_REQUIRE=1 makes it a failure")
        pytest.skip(why)
    return paths


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def pitstop_command() -> list[str]:
    """The installed `pitstop` script beside this Python, else the module."""
    script = Path(sys.executable).with_name("pitstop")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]


class Served:
    """A running `pitstop serve`: its address, the pairing link it printed, what it wrote."""

    def __init__(self, process: subprocess.Popen[str], base: str, link: str) -> None:
        self.process = process
        self.base = base
        self.link = link
        self.output: list[str] = []


@contextmanager
def serve(
    env: dict[str, str], approver: str = "alice", args: tuple[str, ...] = ()
) -> Iterator[Served]:
    """Start `pitstop serve` on a free port; stopped with SIGINT (as Ctrl-C) at the end, which
    must end it cleanly within seconds."""
    port = free_port()
    process = subprocess.Popen(
        [*pitstop_command(), "serve", "--port", str(port), "--approver", approver, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    link = None
    deadline = time.monotonic() + 30
    while link is None and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = LINK.search(line)
        link = found.group(1) if found else None
    if link is None:
        process.kill()
        raise AssertionError("pitstop serve printed no pairing link:\n" + "".join(lines))
    served = Served(process, f"http://127.0.0.1:{port}", link)
    served.output = lines
    reader = threading.Thread(
        target=lambda: served.output.extend(process.stdout or []), daemon=True
    )
    reader.start()
    _wait_listening(port)
    try:
        yield served
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
        reader.join(timeout=5)


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"pitstop serve is not listening on port {port}")


@contextmanager
def chromium(size: tuple[int, int] = PHONE, dark: bool = False) -> Iterator[Any]:
    """Headless Chromium at a window size, in light or dark colour scheme."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = require_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        f"--window-size={size[0]},{size[1]}",
        "--hide-scrollbars",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        driver.set_window_size(*size)
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]},
        )
        yield driver
    finally:
        driver.quit()


def wait_until(condition: Any, what: str, seconds: float = 15.0) -> Any:
    """Poll `condition()` until it is truthy; fail naming `what`."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
