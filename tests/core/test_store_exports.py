"""`core.store` loads its modules on first use, and still offers every name it re-exports."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from core import store

PROBE = "import sys, core.store; print([m for m in sys.modules if m.startswith('core.store.')])"


def test_every_exported_name_resolves_from_its_module() -> None:
    assert sorted(store._EXPORTS) == sorted(store.__all__)
    for name in store.__all__:
        module = importlib.import_module(f"core.store.{store._EXPORTS[name]}")
        assert getattr(store, name) is getattr(module, name), name


def test_importing_the_package_loads_none_of_its_tables() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == "[]"
