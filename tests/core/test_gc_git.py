"""`pitstop gc` runs git as every other part of the core does, and repacks in bounded memory.

Its full repack (`repack -a -d`) ran with git's defaults: a delta window per core, a 256 MB
delta cache, 8 GB of pack mappings — 514 MB on a 250-checkpoint store (issue 22). It now runs
through `core.git.run` with the settings of the store's own packing (`core.git.upkeep`), which
git itself is asked to report (trace2 `def_param` events of every git process gc starts).
"""

from __future__ import annotations

import ast
import json
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
