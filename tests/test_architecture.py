"""The core stays UI-free: checked by importing it alone, and by import-linter's contract.

`sqlite_utils` itself imports `click` (through its plugin hookspecs), so `click` may be present
after importing the third-party libraries core is built on; what core must not do is load any
UI package beyond that, and `textual`, `rich` and `tui` must never be loaded at all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("textual", "rich", "click", "tui")

PROBE = """
import importlib, json, pkgutil, sys
forbidden = json.loads(sys.argv[1])
def matching(modules):
    return sorted(
        m for m in modules if any(m == bad or m.startswith(bad + ".") for bad in forbidden)
    )
import git, sqlite_utils  # the third-party base core stands on
baseline = set(sys.modules)
import core
names = ["core"] + [
    info.name for info in pkgutil.walk_packages(core.__path__, prefix="core.")
]
for name in names:
    importlib.import_module(name)
print(json.dumps({
    "imported": names,
    "loaded_by_core": matching(set(sys.modules) - baseline),
    "loaded_at_all": matching(sys.modules),
}))
"""


def test_core_imports_no_ui_package() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(FORBIDDEN)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    expected = {
        "core." + ".".join(path.relative_to(ROOT / "core").with_suffix("").parts)
        for path in (ROOT / "core").rglob("*.py")
        if path.name != "__init__.py"
    }
    assert expected <= set(report["imported"])
    assert "core.engine" in report["imported"]
    assert report["loaded_by_core"] == []
    never = [m for m in report["loaded_at_all"] if m.split(".")[0] in ("textual", "rich", "tui")]
    assert never == []


def test_import_linter_contracts_hold() -> None:
    venv_tool = Path(sys.executable).parent / "lint-imports"
    tool = str(venv_tool) if venv_tool.exists() else shutil.which("lint-imports")
    if tool is None:
        pytest.skip("import-linter (lint-imports) is not installed")
    proc = subprocess.run(
        [tool, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "core is UI-free" in proc.stdout
