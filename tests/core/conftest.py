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


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Factory: a size-limited tmpfs (`"2m"`…) mounted under the test's directory, unmounted
    afterwards. Needs root and a kernel that lets it mount; skipped, with why, elsewhere."""
    import os
    import subprocess

    mounted: list[Path] = []

    def mount(size: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root")
        point = tmp_path / f"disk-{len(mounted)}"
        point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in reversed(mounted):
        subprocess.run(["umount", "-l", str(point)], check=False)
