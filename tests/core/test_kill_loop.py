"""Invariant 1: a `kill -9` at any instant never leaves a half checkpoint that looks complete.

A child process takes forced checkpoints in a loop and is killed (SIGKILL, with any git it was
running) after a random delay. Afterwards the database is intact, every checkpoint shown as
complete verifies and checks out, every one the child saw finish is complete, the killed ones
show as incomplete, and a later checkpoint still succeeds.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from corekit import git, init_repo, only_store_repo, write

from core.engine import CheckpointRequest, Engine
from core.models import CheckpointState

ROOT = Path(__file__).resolve().parents[2]
FILE_COUNT = 300

CHILD = """
import sys
from core.engine import CheckpointRequest, Engine

engine = Engine()
print("ready", flush=True)
round_ = 0
while True:
    result = engine.checkpoint(sys.argv[1], CheckpointRequest(force=True, note=f"round {round_}"))
    print("done", result.checkpoint.seq, flush=True)
    round_ += 1
"""


def _big_repo(path: Path) -> Path:
    files = {
        f"pkg{index % 12}/module_{index}.py": f"VALUE = {index}\n" * 5
        for index in range(FILE_COUNT)
    }
    return init_repo(path, files)


def _spawn(task_id: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, task_id],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the kill takes its git children too
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"child did not start: {line!r} {proc.stderr.read()}")
    return proc


def _kill(proc: subprocess.Popen[str]) -> list[int]:
    """SIGKILL the child's whole process group; return the seqs it reported as done."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"child died on its own: {err[-2000:]}"
    return [int(line.split()[1]) for line in out.splitlines() if line.startswith("done ")]


def _mutate(repo: Path, rng: random.Random, round_: int) -> None:
    for index in rng.sample(range(FILE_COUNT), 5):
        write(repo / f"pkg{index % 12}/module_{index}.py", f"VALUE = {rng.random()!r}\n")
    write(repo / f"scratch/round_{round_}.txt", os.urandom(64).hex())


def _check_store(store_root: Path, finished: set[int], tmp_path: Path) -> list:
    db = sqlite3.connect(store_root / "pitstop.db")
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        db.close()
    with Engine() as engine:
        listed = engine.list_checkpoints("kill")
        by_seq = {cp.seq: cp for cp in listed}
        for seq in finished:
            assert by_seq[seq].state is CheckpointState.COMPLETE, seq
        for cp in listed:
            assert cp.state in (CheckpointState.COMPLETE, CheckpointState.INCOMPLETE), cp
            if cp.state is CheckpointState.INCOMPLETE:
                assert cp.failure
                assert engine.verify(cp) != []
                continue
            full = engine.get_checkpoint(cp.ref)
            assert full.commit and full.worktree_tree and full.index_tree
            assert full.manifest_sha256 and full.completed_at and full.manifest
            assert engine.verify(full) == [], cp.ref
            count = engine.checkout(cp.ref, tmp_path / f"out-{cp.seq}")
            assert count >= FILE_COUNT
        return listed


@pytest.mark.stress
def test_kill_minus_nine_loop(tmp_path: Path, store_root: Path, full_stress: bool) -> None:
    iterations = 100 if full_stress else 15
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    repo = _big_repo(tmp_path / "big")
    with Engine() as engine:
        engine.start_task(repo=repo, objective="survive kill -9", task_id="kill")

    finished: set[int] = set()
    for round_ in range(iterations):
        _mutate(repo, rng, round_)
        proc = _spawn("kill")
        time.sleep(rng.uniform(0.0, 0.3))
        finished.update(_kill(proc))

    listed = _check_store(store_root, finished, tmp_path)
    complete_before = {cp.seq for cp in listed if cp.state is CheckpointState.COMPLETE}

    with Engine() as engine:
        result = engine.checkpoint("kill", CheckpointRequest(force=True, note="after the storm"))
        assert result.checkpoint is not None
        assert result.checkpoint.state is CheckpointState.COMPLETE
        assert engine.verify(result.checkpoint) == []
        after = engine.list_checkpoints("kill")
        assert {c.seq for c in after if c.state is CheckpointState.COMPLETE} == (
            complete_before | {result.checkpoint.seq}
        )
    db = sqlite3.connect(store_root / "pitstop.db")
    try:
        stored = db.execute("SELECT COUNT(*) FROM checkpoints WHERE state = 'writing'").fetchone()
    finally:
        db.close()
    assert stored == (0,), "the next writer should durably mark dead writers incomplete"


@pytest.mark.stress
def test_kill_while_a_checkpoint_is_being_written(tmp_path: Path, store_root: Path) -> None:
    """Deterministic: wait until the child has recorded `writing`, then kill it."""
    repo = _big_repo(tmp_path / "big")
    with Engine() as engine:
        engine.start_task(repo=repo, objective="killed mid-write", task_id="kill")
    rng = random.Random(7)
    caught: int | None = None
    finished: set[int] = set()
    for attempt in range(20):
        _mutate(repo, rng, attempt)
        proc = _spawn("kill")
        seq = _wait_for_writing(store_root / "pitstop.db", proc)
        finished.update(_kill(proc))
        if seq is not None and seq not in finished:
            with Engine() as engine:
                shown = engine.get_checkpoint(f"kill@{seq}")
            if shown.state is CheckpointState.INCOMPLETE:
                caught = seq
                break
    assert caught is not None, "never managed to kill a checkpoint while it was being written"

    with Engine() as engine:
        shown = engine.get_checkpoint(f"kill@{caught}")
        assert shown.state is CheckpointState.INCOMPLETE
        assert shown.failure and "stopped" in shown.failure
        assert engine.verify(shown) != []
        with pytest.raises(Exception) as raised:
            engine.checkout(shown.ref, tmp_path / "never")
        assert type(raised.value).__name__ == "DamagedCheckpointError"
        assert not (tmp_path / "never").exists()
    _check_store(store_root, finished, tmp_path)
    with Engine() as engine:
        later = engine.checkpoint("kill", CheckpointRequest(force=True))
        assert later.checkpoint is not None and engine.verify(later.checkpoint) == []
        assert later.checkpoint.seq > caught
        stored = engine.db.execute(
            "SELECT state FROM checkpoints WHERE task_id = 'kill' AND seq = ?", [caught]
        ).fetchone()
        assert stored == ("incomplete",)


def _wait_for_writing(database: Path, proc: subprocess.Popen[str]) -> int | None:
    """Poll (read-only) until a `writing` row appears; return its seq, or None on timeout."""
    deadline = time.monotonic() + 20
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                row = conn.execute(
                    "SELECT seq FROM checkpoints WHERE state = 'writing' ORDER BY seq DESC"
                ).fetchone()
            except sqlite3.OperationalError:
                row = None
            if row:
                return int(row[0])
            time.sleep(0.0005)
    finally:
        conn.close()
    return None


def test_stale_ref_lock_from_a_killed_writer_does_not_block_the_task(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    """A writer killed inside `git update-ref` leaves `<ref>.lock` behind in the store repo.

    Checkpoint writers of a task are serialised by the engine's task lock, so a ref lock found
    while holding it can only be stale: the next checkpoint must still succeed.
    """
    engine.start_task(repo=repo, objective="stale lock", task_id="t1")
    first = engine.checkpoint("t1").checkpoint
    assert first is not None
    store_repo = only_store_repo(store_root)
    lock = store_repo / "refs/pitstop/checkpoints/t1.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(f"{first.commit}\n")  # what a killed `git update-ref` leaves behind

    write(repo / "more.txt", "more work\n")
    result = engine.checkpoint("t1")
    assert result.checkpoint is not None
    assert result.checkpoint.state is CheckpointState.COMPLETE
    assert engine.verify(result.checkpoint) == []


@pytest.mark.parametrize("left_behind", ["no-pitstop-config", "stale-config-lock", "no-head"])
def test_store_repo_half_initialised_by_a_killed_writer_is_completed(
    engine: Engine, repo: Path, store_root: Path, left_behind: str
) -> None:
    """A writer killed while creating the store repo leaves it half made; the next one finishes it.

    `no-pitstop-config`: killed between `git init` and writing Pitstop's config (no gc guard).
    `stale-config-lock`: killed while git or GitPython held `config.lock`.
    `no-head`: killed inside `git init`, after the templates were copied but before HEAD.
    """
    from core.snapshot import resolve_source_repo

    name = resolve_source_repo(repo).store_repo_name
    half = store_root / "repos" / name
    half.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "--bare", str(half)], check=True)
    if left_behind == "stale-config-lock":
        (half / "config.lock").write_text("[core]\n")
    elif left_behind == "no-head":
        (half / "HEAD").unlink()
        (half / "config").unlink()

    engine.start_task(repo=repo, objective="half init", task_id="t1")
    cp = engine.checkpoint("t1").checkpoint
    assert cp is not None and engine.verify(cp) == []
    write(repo / "more.txt", "and a second checkpoint\n")
    again = engine.checkpoint("t1").checkpoint
    assert again is not None and engine.verify(again) == []
    config = subprocess.run(
        ["git", f"--git-dir={half}", "config", "--get", "gc.auto"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert config.stdout.strip() == "0", "the store repo must never auto-gc"


GO_SCRIPT = """
import os, sys, time
from core.engine import CheckpointRequest, Engine

engine = Engine()
print("ready", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.0005)
for n in range(int(sys.argv[3])):
    engine.checkpoint(sys.argv[1], CheckpointRequest(force=True, note=str(n)))
engine.close()
"""


def _run_together(tasks: list[str], go: Path, rounds: int) -> None:
    """Start one process per task, release them at the same instant, wait for all."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", GO_SCRIPT, task, str(go), str(rounds)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for task in tasks
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    go.write_text("go")
    failures = []
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            failures.append(err.strip().splitlines()[-1] if err.strip() else proc.returncode)
        assert "database is locked" not in err
    assert failures == []


@pytest.mark.parametrize(("warm", "rounds"), [(False, 1), (True, 3)], ids=["fresh", "warm"])
def test_concurrent_checkpoints_from_several_processes(
    tmp_path: Path, store_root: Path, make_repo, warm: bool, rounds: int
) -> None:
    """Agents checkpointing tasks of one repo into one store at the same time.

    `fresh`: the store has no repository for that source yet, so all of them race to create it.
    `warm`: it exists already; the writers race on objects, refs and the database only.
    """
    repo = make_repo("shared", {f"f{i}.txt": f"{i}\n" for i in range(30)})
    write(repo / "wip.txt", "work in progress\n")
    tasks = [f"agent-{n}" for n in range(4)]
    with Engine() as engine:
        for task in tasks:
            engine.start_task(repo=repo, objective=task, task_id=task)
        if warm:
            engine.start_task(repo=repo, objective="warm up", task_id="warmup")
            assert engine.checkpoint("warmup").checkpoint is not None
    _run_together(tasks, tmp_path / "go", rounds)
    with Engine() as engine:
        for task in tasks:
            listed = engine.list_checkpoints(task)
            assert [c.seq for c in listed] == list(range(1, rounds + 1))
            for cp in listed:
                assert cp.state is CheckpointState.COMPLETE
                assert engine.verify(cp) == []
    git(repo, "status", "--porcelain")  # the user's repository is still a healthy repository
