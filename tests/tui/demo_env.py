"""The demo store the TUI tests, snapshot tests and screenshots all render, built reproducibly.

Snapshots compare pixels, so everything the screen shows must be the same on every machine:

- the clock is frozen (`PITSTOP_FROZEN_NOW`), so ages read the same;
- the store is built at one fixed path, because manifests record repository paths and their
  size counts in each checkpoint's bytes; it is then copied wherever a test wants it;
- the machine identity, the fingerprint key and the creation timer recorded in manifests are
  pinned while it is built, for the same reason (hostnames and timings differ between machines).

Everything else is the real engine writing a real store: git repositories, snapshots, manifests.
"""

from __future__ import annotations

import base64
import fcntl
import importlib
import os
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from core.demo import build_demo_store
from tests.gitconfig import EMPTY_GITCONFIG

FROZEN_NOW = "2026-03-02T15:04:05Z"
BUILD_ROOT = Path("/tmp/pitstop-tui-demo")
BUILD_STORE = BUILD_ROOT / "store"
TERMINAL_SIZE = (120, 34)
# A fixed master key, so content the engine encrypts can be read back by every test.
MASTER_KEY = base64.b64encode(b"pitstop-tui-tests-master-key-32b").decode()

PINNED_ENVIRONMENT = {
    "os": "Linux",
    "os_release": "6.1.0",
    "arch": "x86_64",
    "python": "3.12.7",
    "git": "2.43.0",
    "hostname": "pitstop-demo",
}


def isolated_env(scratch: Path) -> dict[str, str]:
    """Environment variables that keep a test away from the user's store, config and keyring."""
    return {
        "PITSTOP_FROZEN_NOW": FROZEN_NOW,
        "PITSTOP_HOME": str(scratch / "default-store"),
        "PITSTOP_CONFIG_DIR": str(scratch / "config"),
        "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "PITSTOP_KEY": MASTER_KEY,
    }


@contextmanager
def pinned_machine() -> Iterator[None]:
    """Record the same machine identity, fingerprint key and creation time on every machine.

    Each pin applies only where the engine has that seam, so the build keeps working while the
    engine grows; a seam that moves shows up as a snapshot difference, not a crash.
    """
    key = b"pitstop-demo-fingerprint-key-32b"
    pins = {
        "core.snapshot.manifest.environment_identity": lambda git: dict(PINNED_ENVIRONMENT),
        "core.security.fingerprint.load_or_create_key": lambda path: key,  # imported late
        "core.engine.checkpoint.time": SimpleNamespace(monotonic=lambda: 0.0),
        "core.engine.resume.time": SimpleNamespace(monotonic=lambda: 0.0),
        # The demo stores validations; the runtime they compare with is the pinned one too.
        "core.restore.checks.environment.platform": SimpleNamespace(
            system=lambda: PINNED_ENVIRONMENT["os"],
            machine=lambda: PINNED_ENVIRONMENT["arch"],
            python_version=lambda: PINNED_ENVIRONMENT["python"],
        ),
        "core.restore.checks.environment.git_version": lambda: PINNED_ENVIRONMENT["git"],
        "core.restore.validate.time": SimpleNamespace(monotonic=lambda: 0.0),
    }
    with ExitStack() as stack:
        for target, replacement in pins.items():
            module_name, attribute = target.rsplit(".", 1)
            if hasattr(importlib.import_module(module_name), attribute):
                stack.enter_context(mock.patch(target, replacement))
        yield


@contextmanager
def _build_lock() -> Iterator[None]:
    """One builder at a time on this machine: the build path is fixed."""
    BUILD_ROOT.parent.mkdir(parents=True, exist_ok=True)
    with open(BUILD_ROOT.parent / "pitstop-tui-demo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_reproducible_demo(destination: Path, scratch: Path) -> Path:
    """Build the demo store at the fixed path and copy it to `destination`; return `destination`.

    `scratch` holds the default store and config directory used while building.
    """
    saved = {name: os.environ.get(name) for name in isolated_env(scratch)}
    os.environ.update(isolated_env(scratch))
    try:
        with _build_lock():
            if BUILD_ROOT.exists():
                shutil.rmtree(BUILD_ROOT)
            with pinned_machine():
                build_demo_store(BUILD_STORE)
            shutil.copytree(BUILD_STORE, destination, symlinks=True)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return destination
