"""End-to-end fixtures: a real terminal (tmux) whose app's output is kept, and shown on failure."""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.tmux_terminal import Terminal
from tests.gitconfig import EMPTY_GITCONFIG

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    """A tmux server of the test's own; the app it runs logs its output to `app-output.log`."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PITSTOP_", "TMUX", "TEXTUAL"))
    }
    env.update(
        {
            "TERM": "xterm-256color",
            "PITSTOP_HOME": str(tmp_path / "default-store"),
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "PITSTOP_KEY": base64.b64encode(b"pitstop-e2e-tmux-master-key-32b!").decode(),
            "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
            "GIT_CONFIG_NOSYSTEM": "1",
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "PYTHONPATH": str(ROOT),
        }
    )
    term = Terminal(f"pitstop-e2e-{os.getpid()}", env, tmp_path / "app-output.log")
    try:
        yield term
    finally:
        term.tmux("kill-server", check=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    """A failed test that drove a terminal shows what the app wrote (its last screens, and
    whatever it printed as it died), beside the captured output."""
    outcome: Any = yield
    report = outcome.get_result()
    term = getattr(item, "funcargs", {}).get("terminal")
    if report.failed and isinstance(term, Terminal):
        report.sections.append((f"the app's output ({term.log})", term.app_output()))
