"""`pitstop gc` runs git as every other part of the core does, and repacks in bounded memory.

Its full repack (`repack -a -d`) ran with git's defaults: a delta window per core, a 256 MB
delta cache, 8 GB of pack mappings — 514 MB on a 250-checkpoint store (issue 22). It now runs
through `core.git.run` with the settings of the store's own packing (`core.git.upkeep`), which
git itself is asked to report (trace2 `def_param` events of every git process gc starts).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from corekit import only_store_repo, write

from core.engine import CheckpointRequest, Engine

CORE = Path(__file__).resolve().parents[2] / "core"
BOUNDED = {
    "pack.threads": "1",
    "pack.windowmemory": "64m",
    "pack.deltacachesize": "32m",
    "core.packedgitlimit": "128m",
    "core.packedgitwindowsize": "16m",
}


def starts_git(call: ast.Call) -> bool:
    """`subprocess.<anything>(["git", ...])`: a git process started by hand."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return False
    if func.value.id != "subprocess" or not call.args:
        return False
    first = call.args[0]
    return (
        isinstance(first, ast.List)
        and bool(first.elts)
        and isinstance(first.elts[0], ast.Constant)
        and first.elts[0].value == "git"
    )


def test_only_core_git_run_starts_git() -> None:
    started_by_hand = sorted(
        str(path.relative_to(CORE))
        for path in CORE.rglob("*.py")
        if any(
            isinstance(node, ast.Call) and starts_git(node)
            for node in ast.walk(ast.parse(path.read_text()))
        )
    )
    # The demo builds throwaway user repositories of its own, never the store's.
    assert started_by_hand == ["demo/repos.py", "git/run.py"]


def test_gc_repacks_with_bounded_memory(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.start_task(repo=repo, objective="gc", task_id="g1")
    for index in range(3):
        write(repo / "src" / f"f{index}.py", f"value = {index}\n")
        engine.checkpoint("g1", CheckpointRequest(force=True))
    events = tmp_path / "trace2.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(events))
    monkeypatch.setenv("GIT_TRACE2_CONFIG_PARAMS", "pack.*,core.packedgit*")
    report = engine.gc()
    assert report.problems == () and report.repos_pruned
    records = [json.loads(line) for line in events.read_text().splitlines()]
    commands = {r["sid"]: r["argv"] for r in records if r["event"] == "start"}
    settings: dict[str, dict[str, str]] = {}
    for record in records:
        if record["event"] == "def_param":
            settings.setdefault(record["sid"], {})[record["param"]] = record["value"]
    repacks = [sid for sid, argv in commands.items() if argv[1:2] == ["repack"]]
    packs = [sid for sid, argv in commands.items() if argv[1:2] == ["pack-objects"]]
    assert repacks and packs, commands
    for sid in repacks + packs:
        assert settings.get(sid, {}).items() >= BOUNDED.items(), (commands[sid], settings.get(sid))
    # Every checkpoint still restores from the repacked repository.
    assert [engine.verify(c) for c in engine.list_checkpoints("g1")] == [[], [], []]
    assert not list((only_store_repo(store_root) / "objects").glob("??/*"))


PEAK_BOUND_MB = 200
"""Issue 22: `pitstop gc` stays within this, itself and every git process it starts."""

MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True)
sys.stderr.buffer.write(done.stderr)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""
"""A small Python that runs a command and reports the largest resident set (KiB) of it and of
every process it waited for (git's children count); forked from this small process, not from
pytest, so no child starts out holding the test runner's pages."""


def test_gc_peak_memory_with_its_git_children_stays_bounded(
    repo: Path, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reduced `bench/gc.py`: many checkpoints' objects all loose, then the real `pitstop gc`
    (the bench shows 250 checkpoints of a 2,000-file repository against git's defaults)."""
    with Engine() as engine:
        engine.start_task(repo=repo, objective="gc memory", task_id="g2")
        for index in range(24):
            for n in range(8):
                body = "".join(f"def f_{n}_{i}(): return {i * index}\n" for i in range(300))
                write(repo / "src" / f"module_{n}.py", body)
            engine.checkpoint("g2", CheckpointRequest(force=True))
    store_repo = only_store_repo(store_root)
    monkeypatch.setenv("GIT_DIR", str(store_repo))
    for pack in sorted((store_repo / "objects" / "pack").glob("*.pack")):
        data = pack.read_bytes()
        for sibling in pack.parent.glob(pack.stem + ".*"):
            sibling.unlink()
        subprocess.run(["git", "unpack-objects", "-q"], input=data, check=True)
    monkeypatch.delenv("GIT_DIR")
    loose_before = len(list((store_repo / "objects").glob("??/*")))
    assert loose_before > 300
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-m", "tui.launch", "gc"],
        capture_output=True,
        text=True,
        check=False,
        cwd=repo,
    )
    code, peak_kib = (int(word) for word in done.stdout.split()[-2:])
    assert code == 0, done.stderr
    assert not list((store_repo / "objects").glob("??/*"))  # it did repack everything
    assert 10 * 1024 < peak_kib <= PEAK_BOUND_MB * 1024, peak_kib  # a real process, bounded
    with Engine() as engine:
        kept = [c for c in engine.list_checkpoints("g2") if c.state.value == "complete"]
        assert len(kept) == 10 and [engine.verify(c) for c in kept] == [[]] * 10  # keep_last
