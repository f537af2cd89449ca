"""Shared fixtures: every test runs against a private store, config dir and git identity.

The environment is rebuilt for each test so that the user's own git configuration, keyring and
Pitstop store can never leak into (or be touched by) the suite.
"""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

import pyrage
import pytest

from core.git.run import REPO_LOCATION_VARS
from tests.gitconfig import EMPTY_GITCONFIG

# Variables that would point git or Pitstop somewhere other than the test's own directories.
_SCRUBBED = (
    *REPO_LOCATION_VARS,
    "GIT_CEILING_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "PITSTOP_KEY",
    "PITSTOP_IDENTITY",
    "PITSTOP_FROZEN_NOW",
    # What a harness running the suite says about itself (read by hooks and validation).
    "AI_AGENT",
    "ANTHROPIC_MODEL",
)


TEST_MASTER_KEY = base64.b64encode(secrets.token_bytes(32)).decode()
# The operator's age identity (AGE-SECRET-KEY-1…), new for each session like the master key.
TEST_IDENTITY = str(pyrage.x25519.Identity.generate())


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full-stress",
        action="store_true",
        default=False,
        help="run stress tests (kill loops, large streams) at full size",
    )


@pytest.fixture
def full_stress(request: pytest.FixtureRequest) -> bool:
    """True when the run asked for full-size stress tests."""
    return bool(request.config.getoption("--full-stress"))


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A private HOME, store, config dir and git identity for every test."""
    home = tmp_path / "_home"
    store = tmp_path / "_store"
    config = tmp_path / "_config"
    home.mkdir()
    config.mkdir()
    for name in _SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PITSTOP_HOME", str(store))
    monkeypatch.setenv("PITSTOP_CONFIG_DIR", str(config))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    # Content is encrypted at rest, so every store needs a master key; tests about a missing
    # or wrong key remove or replace this one themselves.
    monkeypatch.setenv("PITSTOP_KEY", TEST_MASTER_KEY)
    # Likewise every operator has an identity; tests about having none remove it themselves.
    monkeypatch.setenv("PITSTOP_IDENTITY", TEST_IDENTITY)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", EMPTY_GITCONFIG)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    return {"home": home, "store": store, "config": config}
