"""Helpers for drill tests: a real repository holding a real small pytest suite."""

from __future__ import annotations

import sys
from pathlib import Path

from corekit import init_repo, write

from core.engine import Engine

SUITE = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    "tests/test_calc.py": (
        "from calc import add, mul\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_mul():\n    assert mul(2, 3) == 6\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n"
    ),
    "pytest.ini": "[pytest]\npythonpath = .\n",
    ".gitignore": "__pycache__/\n.pytest_cache/\n",
}
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def suite_repo(root: Path) -> Path:
    """A repository on main with `calc.py` and three passing tests."""
    return init_repo(root, dict(SUITE))


def break_add(repo: Path) -> None:
    """Change a tracked file so `test_add` (only) fails."""
    write(repo / "calc.py", SUITE["calc.py"].replace("return a + b", "return a - b"))


def record_tests(engine: Engine, task_id: str, repo: Path, cwd: Path | None = None) -> int:
    """Run the suite through `Engine.run_command` (as `pitstop run` does); its evidence id."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        _, item = engine.run_command(
            task_id, PYTEST, cwd=cwd or repo, out_fd=devnull, err_fd=devnull, use_pty=False
        )
    finally:
        os.close(devnull)
    return item.id
