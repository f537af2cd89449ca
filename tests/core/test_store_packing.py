"""The store packs as it goes (issue 22): small packs and loose objects stay bounded, nothing
is ever pruned, and a roll-up killed at any moment loses nothing.

Real checkpoints of a real repository each add a small pack (and a few loose objects) to the
store repository; past the bounds, the checkpoint that crosses them rolls them into one
(`core/git/upkeep.py`). Every checkpoint must still verify and check out exactly afterwards, an
object no checkpoint references must survive, and the packed store must stay close to what a
full repack gives.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
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


def _small_packs(store_repo: Path) -> list[str]:
    sizes = upkeep.pack_sizes(store_repo)
    return sorted(name for name, count in sizes.items() if count <= upkeep.SMALL_PACK_OBJECTS)


def test_a_checkpoint_writes_its_objects_as_one_pack(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    _checkpoints(engine, repo, 1)
    store_repo = only_store_repo(store_root)
    packs, loose = set(upkeep.pack_sizes(store_repo)), _loose(store_repo)
    _edit(repo, 1)  # 20 files changed: 20 blobs and 2 trees
    assert engine.checkpoint("t1", CheckpointRequest(note="one pack")).checkpoint
    (new,) = set(upkeep.pack_sizes(store_repo)) - packs
    assert upkeep.pack_sizes(store_repo)[new] >= FILES + 2
    # loose: the checkpoint's commit, its tree and its two documents (header and manifest)
    assert _loose(store_repo) - loose == 4


def test_small_packs_and_loose_objects_stay_bounded_and_every_checkpoint_still_restores(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upkeep, "SMALL_PACKS", 4)
    monkeypatch.setattr(upkeep, "LOOSE_BOUND", 16)
    monkeypatch.setattr(upkeep, "SAMPLED", ALL_DIRECTORIES)  # an exact count, not an estimate
    engine.start_task(repo=repo, objective="packing", task_id="t1")
    store_repo: Path | None = None
    for round_ in range(24):
        _edit(repo, round_)
        assert engine.checkpoint("t1", CheckpointRequest(note=f"round {round_}")).checkpoint
        store_repo = only_store_repo(store_root)
        assert len(_small_packs(store_repo)) <= 4, round_
        assert _loose(store_repo) <= 16, round_
    assert store_repo is not None
    assert upkeep.pack_count(store_repo) <= upkeep.MAX_PACKS
    for seq in range(1, 25):
        assert engine.verify(engine.get_checkpoint(f"t1@{seq}")) == [], seq
    target = tmp_path / "restored"
    engine.checkout("t1@24", target)
    for n in range(FILES):
        assert (target / f"src/module_{n}.py").read_bytes() == (
            repo / f"src/module_{n}.py"
        ).read_bytes()


def test_a_roll_up_leaves_the_larger_packs_as_they_are(
    engine: Engine, repo: Path, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _checkpoints(engine, repo, 1)
    store_repo = only_store_repo(store_root)
    git(store_repo, "repack", "-a", "-d", "-q")  # the base and the first checkpoint: ~50 objects
    (large,) = upkeep.pack_sizes(store_repo)
    for round_ in (1, 2):
        _edit(repo, round_)
        assert engine.checkpoint("t1", CheckpointRequest(note=str(round_))).checkpoint
    sizes = upkeep.pack_sizes(store_repo)
    loose = _loose(store_repo)
    assert len(sizes) == 3 and sizes[large] > max(n for p, n in sizes.items() if p != large)
    monkeypatch.setattr(upkeep, "SMALL_PACK_OBJECTS", sizes[large] - 1)
    pack = store_repo / "objects" / "pack" / large
    before = pack.stat()
    assert upkeep.pack_if_due(store_repo, bound=-1)
    after = upkeep.pack_sizes(store_repo)
    assert large in after and len(after) == 2, after  # it, and the roll-up of the others
    assert (pack.stat().st_ino, pack.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # no object lost, none twice: the roll-up holds what the small packs and loose objects held
    assert _loose(store_repo) == 0
    assert sum(after.values()) == sum(sizes.values()) + loose
    for seq in range(1, 4):
        assert engine.verify(engine.get_checkpoint(f"t1@{seq}")) == [], seq


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
    monkeypatch.setattr(upkeep, "SMALL_PACK_OBJECTS", 1)  # every pack is left as it is...
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
        assert upkeep.pack_count(store_repo) <= 2  # ...until there are too many: then all in one
    assert store_repo is not None
    for stray in strays:
        git(store_repo, "cat-file", "-e", stray)
    for seq in range(1, 5):
        assert engine.verify(engine.get_checkpoint(f"t1@{seq}")) == [], seq


def test_below_the_bounds_or_with_the_lock_taken_nothing_is_packed(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    _checkpoints(engine, repo, 2)
    store_repo = only_store_repo(store_root)
    before = (_loose(store_repo), sorted(upkeep.pack_sizes(store_repo)))
    assert before[0] > 0 and len(before[1]) == 2
    assert not upkeep.pack_if_due(store_repo)  # two small packs, a few loose objects
    fd = os.open(store_repo / "pitstop-upkeep.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another checkpoint packs this repository now
        assert not upkeep.pack_if_due(store_repo, bound=-1)
    finally:
        os.close(fd)
    assert (_loose(store_repo), sorted(upkeep.pack_sizes(store_repo))) == before
    assert upkeep.pack_if_due(store_repo, bound=-1)  # the lock released: it packs
    assert _loose(store_repo) == 0 and upkeep.pack_count(store_repo) == 1


def test_a_packed_store_is_close_to_a_full_repack(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22: store bytes after many checkpoints ≤ 1.2× what a full repack gives."""
    # ~23 objects a checkpoint, a small pack each: rolled up every 17 checkpoints (the default)
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


ROLL_UP = (
    "import sys; from pathlib import Path; from core.git import upkeep; "
    "upkeep.pack_if_due(Path(sys.argv[1]), bound=-1)"
)


def test_a_roll_up_killed_at_any_moment_loses_nothing(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    """kill -9 at spread-out moments of a roll-up (git's repack mid-way included): every
    checkpoint still verifies, the unreferenced object survives, and the next roll-up runs."""
    _checkpoints(engine, repo, 6)
    store_repo = only_store_repo(store_root)
    stray = git(store_repo, "hash-object", "-w", "--stdin", input=b"referenced by nothing\n")
    root = Path(__file__).resolve().parents[2]
    for delay in (ms / 1000 for ms in range(0, 100, 8)):  # a roll-up here: ~40-60 ms
        killed = subprocess.Popen(
            [sys.executable, "-c", ROLL_UP, str(store_repo)], cwd=root, start_new_session=True
        )
        time.sleep(delay)
        os.killpg(killed.pid, signal.SIGKILL)  # git's repack with it
        killed.wait()
        git(store_repo, "cat-file", "-e", stray.strip())
        for seq in range(1, 7):
            assert engine.verify(engine.get_checkpoint(f"t1@{seq}")) == [], (delay, seq)
    assert upkeep.pack_if_due(store_repo, bound=-1)
    git(store_repo, "cat-file", "-e", stray.strip())
    for seq in range(1, 7):
        assert engine.verify(engine.get_checkpoint(f"t1@{seq}")) == [], seq


def test_a_failed_checkpoint_takes_its_pack_with_it(
    engine: Engine, repo: Path, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint that fails after its snapshot's pack was written removes it (nothing names
    it); with another task on the same repository it is left to `pitstop gc`, which packs by
    reachability (that task may have found an object there)."""
    from core.engine import checkpoint as checkpoint_module

    _checkpoints(engine, repo, 1)
    store_repo = only_store_repo(store_root)
    packs = set(upkeep.pack_sizes(store_repo))

    def fail(*_args: object) -> object:
        raise RuntimeError("the store refused the row")

    monkeypatch.setattr(checkpoint_module, "_record_checkpoint", fail)
    write(repo / "failed.txt", "only the failed checkpoint held this\n")
    blob = git(repo, "hash-object", "failed.txt").strip()
    with pytest.raises(RuntimeError):
        engine.checkpoint("t1", CheckpointRequest(force=True))
    assert set(upkeep.pack_sizes(store_repo)) == packs
    assert subprocess.run(["git", "cat-file", "-e", blob], cwd=store_repo).returncode != 0

    engine.start_task(repo=repo, objective="shares the store repository", task_id="t2")
    with pytest.raises(RuntimeError):
        engine.checkpoint("t1", CheckpointRequest(force=True))
    assert len(set(upkeep.pack_sizes(store_repo)) - packs) == 1
    git(store_repo, "cat-file", "-e", blob)
    monkeypatch.undo()
    engine.gc()
    assert subprocess.run(["git", "cat-file", "-e", blob], cwd=store_repo).returncode != 0
    assert engine.verify(engine.get_checkpoint("t1@1")) == []


def test_a_command_answers_first_and_its_store_packs_beside(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pitstop checkpoint` (a CLI process, as a hook is) that finds the store due does not roll
    it up itself: a detached process of its own does, and every checkpoint survives it."""
    from core.digests import sha1_hex
    from core.git import pack_writer

    _checkpoints(engine, repo, 1)
    store_repo = only_store_repo(store_root)
    for number in range(upkeep.SMALL_PACKS + 1):  # the small packs 17 checkpoints leave
        body = f"filler {number}\n".encode()
        oid = sha1_hex(f"blob {len(body)}\0".encode() + body)
        pack_writer.write_pack(store_repo, {oid: ("blob", body)})
    assert upkeep.due(store_repo)
    real = shutil.which("git")
    log = tmp_path / "git-calls.log"
    bin_dir = tmp_path / "logging-bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\necho "$PPID $*" >> "{log}"\nexec "{real}" "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    _edit(repo, 1)
    command = subprocess.Popen(
        [sys.executable, "-m", "tui.launch", "checkpoint", "t1"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _out, err = command.communicate(timeout=60)
    assert command.returncode == 0, err
    lock = store_repo / "pitstop-upkeep.lock"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the roll-up ends, and lets its lock go
        if not upkeep.due(store_repo) and lock.exists():
            fd = os.open(lock, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            finally:
                os.close(fd)
        time.sleep(0.05)
    assert not upkeep.due(store_repo)
    repacks = [line.split(" ", 1) for line in log.read_text().splitlines() if " repack " in line]
    assert repacks and all(ppid != str(command.pid) for ppid, _args in repacks), repacks
    for seq in (1, 2):
        assert engine.verify(engine.get_checkpoint(f"t1@{seq}")) == [], seq
