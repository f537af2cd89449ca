"""Faults get messages that name what happened and what to do, not a misleading guess.

A swapped blob is not a lost key; a read-only store is not a damaged one; a failed restore
names the git command that failed, not `-c`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from corekit import make_objects_loose, only_store_repo, write

from core.engine import Engine
from core.errors import DamagedCheckpointError, StoreError
from core.security.crypto import DecryptError


def _evidence(engine: Engine, task_id: str, tmp_path: Path, text: str) -> int:
    log = write(tmp_path / f"{task_id}-{len(text)}.log", text)
    return engine.add_evidence_file(task_id, log, command="echo", exit_code=0).id


def test_a_blob_swapped_in_from_another_task_says_so_not_to_restore_a_key(
    engine: Engine, make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    engine.start_task(repo=make_repo("one"), objective="one", task_id="t1")
    engine.start_task(repo=make_repo("two"), objective="two", task_id="t2")
    mine = _evidence(engine, "t1", tmp_path, "mine\n")
    theirs = _evidence(engine, "t2", tmp_path, "theirs, from another task\n")
    swap = "SELECT blob FROM evidence_chunks WHERE evidence_id = ? AND seq = 0"
    blob = engine.db.execute(swap, [theirs]).fetchone()[0]
    with engine.db.conn:
        engine.db.execute(
            "UPDATE evidence_chunks SET blob = ? WHERE evidence_id = ? AND seq = 0", [blob, mine]
        )
    with pytest.raises(DecryptError) as refused:
        b"".join(engine.evidence_output(mine))
    message = refused.value.message
    assert "swapped" in message and "pitstop doctor" in message, message
    assert "backup" not in message and "right key" not in message, message


@pytest.fixture
def read_only_store(
    isolated_env: dict[str, Path],
    small_disk: Callable[[str], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    """A store that works, then cannot be written: a read-only mount for root (whom file
    modes do not stop), its modes taken away for anyone else."""
    if os.geteuid() == 0:
        disk = small_disk("8m")
        root = disk / "store"
    else:
        disk = None
        root = isolated_env["store"]
    monkeypatch.setenv("PITSTOP_HOME", str(root))
    with Engine() as engine:
        engine.list_tasks()
    if disk is not None:
        done = subprocess.run(
            ["mount", "-o", "remount,ro", str(disk)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot remount the tmpfs read-only: {done.stderr.strip()}")
    else:
        for path in [*root.iterdir(), root]:
            path.chmod(0o500 if path.is_dir() else 0o400)
    yield root
    if disk is not None:
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=False)
    else:
        for path in [root, *root.iterdir()]:
            path.chmod(0o700 if path.is_dir() else 0o600)


def test_a_read_only_store_says_it_is_read_only_not_to_move_it_aside(
    read_only_store: Path,
) -> None:
    with pytest.raises(StoreError) as refused:
        Engine()
    message = refused.value.message
    assert "read-only" in message and "move it aside" not in message, message
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "task", "list"], capture_output=True, text=True
    )
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert "read-only" in line and "internal error" not in line, line
    doctor = subprocess.run(
        [sys.executable, "-m", "tui.cli", "doctor"], capture_output=True, text=True
    )
    assert doctor.returncode != 0 and "read-only" in doctor.stdout + doctor.stderr
    assert "move it aside" not in doctor.stdout + doctor.stderr


def test_a_failed_restore_names_the_git_command_not_its_options(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    write(repo / "notes/only-in-the-snapshot.txt", "a blob nobody else holds\n")
    engine.start_task(repo=repo, objective="restore", task_id="t1")
    checkpoint = engine.checkpoint("t1").checkpoint
    assert checkpoint is not None
    store_repo = only_store_repo(store_root)
    blob = subprocess.run(
        ["git", "hash-object", str(repo / "notes/only-in-the-snapshot.txt")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    make_objects_loose(store_repo)  # a checkpoint packs its objects: one file each, to lose one
    (store_repo / "objects" / blob[:2] / blob[2:]).unlink()
    with pytest.raises(DamagedCheckpointError) as refused:
        engine.checkout(checkpoint.ref, tmp_path / "restored")
    message = refused.value.message
    assert "git checkout-index failed" in message, message
    assert "git -c" not in message, message
