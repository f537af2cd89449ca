"""Fixtures for core tests: an engine on the test's private store, and real repositories."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from corekit import init_repo

from core.engine import Engine


@pytest.fixture
def store_root(isolated_env: dict[str, Path]) -> Path:
    """The store directory PITSTOP_HOME points at."""
    return isolated_env["store"]


@pytest.fixture
def engine(store_root: Path) -> Iterator[Engine]:
    """An engine on the test's private store (found through PITSTOP_HOME)."""
    with Engine() as opened:
        yield opened


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """Factory: a real git repository on branch main with one commit."""

    def factory(name: str = "repo", files: dict[str, str | bytes] | None = None) -> Path:
        return init_repo(tmp_path / name, files)

    return factory


@pytest.fixture
def repo(make_repo: Callable[..., Path]) -> Path:
    """A small repository: a few text files, one in a subdirectory, one executable script."""
    path = make_repo(
        "repo",
        {
            "README.md": "# demo\n",
            "src/app.py": "print('hello')\n",
            "src/util.py": "def add(a, b):\n    return a + b\n",
            "docs/guide.txt": "line 1\nline 2\n",
            "old_name.txt": "rename me\n",
            "delete_me.txt": "bye\n",
        },
    )
    return path
