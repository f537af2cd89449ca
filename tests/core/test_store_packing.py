"""The store packs as it goes (issue 22): loose objects stay bounded, nothing is ever pruned.

Real checkpoints of a real repository fill the store repository with loose objects; past the
bound, the checkpoint that crosses it packs them (`core/git/upkeep.py`). Every checkpoint must
still verify and check out exactly afterwards, an object no checkpoint references must survive,
and the packed store must stay close to what a full repack gives.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from corekit import git, init_repo, only_store_repo, write

from core.engine import CheckpointRequest, Engine
from core.git import upkeep

FILES = 20
ALL_DIRECTORIES = tuple(f"{n:02x}" for n in range(256))


def _loose(store_repo: Path) -> int:
    objects = store_repo / "objects"
    return sum(
        1
        for bucket in objects.iterdir()
        if len(bucket.name) == 2
        for name in os.listdir(bucket)
        if len(name) == 38
    )


def _bytes(store_repo: Path) -> int:
    return sum(p.stat().st_size for p in (store_repo / "objects").rglob("*") if p.is_file())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {
        f"src/module_{n}.py": "".join(f"def f_{n}_{i}(): return {i}\n" for i in range(200))
        for n in range(FILES)
    }
    return init_repo(tmp_path / "repo", files)


def _edit(repo: Path, round_: int) -> None:
    """Each round edits every file a little, as an agent's work does: versions that delta well."""
    for n in range(FILES):
        path = repo / f"src/module_{n}.py"
        write(path, path.read_text() + f"# round {round_}: value {round_ * 7 + n}\n")


def _checkpoints(engine: Engine, repo: Path, rounds: int) -> None:
    engine.start_task(repo=repo, objective="packing", task_id="t1")
    for round_ in range(rounds):
        _edit(repo, round_)
        result = engine.checkpoint("t1", CheckpointRequest(note=f"round {round_}"))
        assert result.checkpoint is not None, result.skipped


def test_loose_objects_stay_bounded_and_every_checkpoint_still_restores(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upkeep, "LOOSE_BOUND", 256)
    monkeypatch.setattr(upkeep, "SAMPLED", ALL_DIRECTORIES)  # an exact count, not an estimate
    _checkpoints(engine, repo, 24)
    store_repo = only_store_repo(store_root)
    packs = list((store_repo / "objects" / "pack").glob("*.pack"))
    assert packs, "no checkpoint packed the store"
    # each checkpoint adds ~23 objects; past 256, they are packed
    assert _loose(store_repo) <= 256, _loose(store_repo)
    assert len(packs) <= upkeep.MAX_PACKS, [p.name for p in packs]
    for seq in range(1, 25):
        assert engine.verify(engine.get_checkpoint(f"t1@{seq}")) == [], seq
    target = tmp_path / "restored"
    engine.checkout("t1@24", target)
    for n in range(FILES):
        assert (target / f"src/module_{n}.py").read_bytes() == (
            repo / f"src/module_{n}.py"
        ).read_bytes()


def test_packing_prunes_nothing_not_even_an_unreferenced_object(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    _checkpoints(engine, repo, 2)
    store_repo = only_store_repo(store_root)
    stray = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            input=b"referenced by no checkpoint\n",
            env={**os.environ, "GIT_DIR": str(store_repo)},
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    assert upkeep.pack_if_due(store_repo, bound=-1)
    assert _loose(store_repo) == 0
    git(store_repo, "cat-file", "-e", stray)  # still there, now packed
    assert engine.verify(engine.get_checkpoint("t1@2")) == []


def test_many_packs_are_consolidated_keeping_what_nothing_references(
    engine: Engine, repo: Path, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upkeep, "MAX_PACKS", 2)
    engine.start_task(repo=repo, objective="packing", task_id="t1")
    store_repo: Path | None = None
    strays = []
    for round_ in range(4):
        _edit(repo, round_)
        assert engine.checkpoint("t1", CheckpointRequest(note=str(round_))).checkpoint
        store_repo = only_store_repo(store_root)
        strays.append(
            subprocess.run(
                ["git", "hash-object", "-w", "--stdin"],
                input=f"stray {round_}\n".encode(),
                env={**os.environ, "GIT_DIR": str(store_repo)},
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
        assert upkeep.pack_if_due(store_repo, bound=-1)
        assert upkeep.pack_count(store_repo) <= 2
    assert store_repo is not None
    for stray in strays:
        git(store_repo, "cat-file", "-e", stray)
    for seq in range(1, 5):
        assert engine.verify(engine.get_checkpoint(f"t1@{seq}")) == [], seq


def test_below_the_bound_or_with_the_lock_taken_nothing_is_packed(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    _checkpoints(engine, repo, 2)
    store_repo = only_store_repo(store_root)
    before = _loose(store_repo)
    assert before > 0
    assert not upkeep.pack_if_due(store_repo)  # a few dozen objects: far below the bound
    fd = os.open(store_repo / "pitstop-upkeep.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another checkpoint packs this repository now
        assert not upkeep.pack_if_due(store_repo, bound=-1)
    finally:
        os.close(fd)
    assert _loose(store_repo) == before
    assert not list((store_repo / "objects" / "pack").glob("*.pack"))
    assert upkeep.pack_if_due(store_repo, bound=-1)  # the lock released: it packs


def test_a_packed_store_is_close_to_a_full_repack(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22: store bytes after many checkpoints ≤ 1.2× what a full repack gives."""
    # ~23 objects a checkpoint: packs of ~22 checkpoints' versions (the default bound, ~90)
    monkeypatch.setattr(upkeep, "LOOSE_BOUND", 512)
    monkeypatch.setattr(upkeep, "SAMPLED", ALL_DIRECTORIES)
    _checkpoints(engine, repo, 66)
    store_repo = only_store_repo(store_root)
    assert upkeep.pack_count(store_repo) > 1  # the checkpoints packed as they went
    # what is still loose packed as the next packing would, without its consolidation
    git(store_repo, "-c", "repack.writeBitmaps=false", "repack", "-d", "-q")
    assert upkeep.pack_count(store_repo) > 2
    packed = _bytes(store_repo)
    full = tmp_path / "full.git"
    shutil.copytree(store_repo, full)
    git(full, "-c", "repack.writeBitmaps=false", "repack", "-a", "-d", "-f", "-q")
    assert packed <= 1.2 * _bytes(full), (packed, _bytes(full))
