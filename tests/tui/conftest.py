"""Fixtures for the dashboard tests: an isolated environment and a copy of the demo store.

Nothing here is autouse: the CLI's tests share this directory and must not get a frozen clock
or a master key they did not ask for. Dashboard test modules opt in with `pytestmark`.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from demo_env import build_reproducible_demo, isolated_env


@pytest.fixture
def tui_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A frozen clock and private store, config and keyring for every TUI test."""
    for name, value in isolated_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    yield


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store, built once per session (about three seconds)."""
    base = tmp_path_factory.mktemp("demo-template")
    return build_reproducible_demo(base / "store", base / "scratch")


@pytest.fixture
def demo_store(tui_environment: None, demo_template: Path, tmp_path: Path) -> Path:
    """A private copy of the demo store that a test may change."""
    store = tmp_path / "store"
    shutil.copytree(demo_template, store, symlinks=True)
    return store


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed snapshot says what differs in the test's own output, row by row: CI keeps only
    its log, not the HTML report the snapshot plugin writes on the machine that ran it."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call" or not report.failed:
        return
    from snapshot_text import difference_of_report

    difference = difference_of_report(item)
    if difference:
        report.sections.append(("snapshot difference (text rows)", difference))
