"""A full disk, for real (a small tmpfs): a failed checkpoint leaves nothing behind, gc frees
what a killed writer left, and `pitstop run` keeps the output it could store and says so."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from corekit import git_bytes, only_store_repo, write

from core.engine import CheckpointRequest, Engine
from core.errors import DiskFullError

SmallDisk = Callable[[str], Path]


def _garbage(store_repo: Path) -> str:
    """What `git prune` would remove: unreachable objects and temporary files."""
    return git_bytes(store_repo, "prune", "-n", "-v", "--expire=now").decode()


@pytest.fixture
def full_store(small_disk: SmallDisk, monkeypatch: pytest.MonkeyPatch) -> Path:
    store_root = small_disk("2m") / "store"
    monkeypatch.setenv("PITSTOP_HOME", str(store_root))
    return store_root


def test_failed_checkpoint_on_a_full_disk_leaves_nothing(full_store: Path, repo: Path) -> None:
    with Engine() as engine:
        engine.start_task(repo=repo, objective="fill the disk", task_id="t1")
        engine.checkpoint("t1")
        used = shutil.disk_usage(full_store).used
        for number in range(3):
            write(repo / f"big{number}.bin", os.urandom(900_000))
        with pytest.raises(DiskFullError) as full:
            engine.checkpoint("t1", CheckpointRequest(force=True))
        assert "\n" not in full.value.message
        assert "the objects it wrote were removed" in full.value.message
        assert [c.seq for c in engine.list_checkpoints("t1")] == [1]
    store_repo = only_store_repo(full_store)
    assert _garbage(store_repo) == ""  # no tmp_obj_*, no unreachable object left
    assert shutil.disk_usage(full_store).used <= used + 64 * 1024
    assert Engine.doctor().healthy


def _fill_with_garbage(store_repo: Path) -> None:
    """What writers killed mid-snapshot leave: unreachable loose objects, until the disk is full."""
    with pytest.raises(subprocess.CalledProcessError):
        for _ in range(100):
            subprocess.run(
                ["git", "--git-dir", str(store_repo), "hash-object", "-w", "--stdin"],
                input=os.urandom(200_000),
                capture_output=True,
                check=True,
            )


def test_opening_a_store_on_a_full_disk_says_so(full_store: Path, repo: Path) -> None:
    with Engine() as engine:
        engine.start_task(repo=repo, objective="fill the disk", task_id="t1")
        engine.checkpoint("t1")
    _fill_with_garbage(only_store_repo(full_store))
    with pytest.raises(DiskFullError, match="the store cannot even be opened"):
        Engine().close()


def test_gc_frees_what_a_killed_writer_left_on_a_full_disk(full_store: Path, repo: Path) -> None:
    with Engine() as engine:
        engine.start_task(repo=repo, objective="fill the disk", task_id="t1")
        engine.checkpoint("t1")
        store_repo = only_store_repo(full_store)
        _fill_with_garbage(store_repo)
        assert _garbage(store_repo)
        report = engine.gc()  # the dashboard's engine, opened before, can
    assert report.repos_pruned == (store_repo.name,), report.problems
    assert _garbage(store_repo) == ""
    assert shutil.disk_usage(full_store).free > 1024 * 1024


def test_run_on_a_full_disk_keeps_what_it_could(
    small_disk: SmallDisk, monkeypatch: pytest.MonkeyPatch, repo: Path
) -> None:
    store_root = small_disk("4m") / "store"
    monkeypatch.setenv("PITSTOP_HOME", str(store_root))
    with Engine() as engine:
        engine.start_task(repo=repo, objective="fill the disk", task_id="t1")
    noisy = (
        "import os, base64\nfor _ in range(80): print(base64.b64encode(os.urandom(75000)).decode())"
    )
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "--task", "t1", "--", sys.executable, "-c", noisy],
        capture_output=True,
        text=True,
        cwd=repo,
    )
    assert done.returncode == 1, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith("pitstop: the disk holding the store is full")
    assert "evidence #1 keeps the first" in line
    with Engine() as engine:
        (item,) = engine.list_evidence("t1")
        kept = b"".join(engine.evidence_output(item.id))
    assert kept and f"keeps the first {len(kept)} bytes" in line
