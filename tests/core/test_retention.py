"""Retention: `gc` expires by policy, never what waits on a person, and a dry run changes nothing.

Real repositories, real checkpoints, a real store; time is moved with PITSTOP_FROZEN_NOW so that
checkpoints can be weeks old.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from corekit import write

from core import clock
from core.config import RetentionSettings, load_config
from core.engine import CheckpointRequest, Engine
from core.models import CheckpointReason, CheckpointState, EffectState, TaskStatus
from core.security.crypto import MasterKeyError

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())


class Timeline:
    """Moves Pitstop's clock: `at(days_ago)` before acting, `now()` before collecting."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch

    def at(self, days_ago: float) -> None:
        moment = NOW - timedelta(days=days_ago)
        self.monkeypatch.setenv(clock.FROZEN_NOW_ENV, clock.to_iso(moment))

    def now(self) -> None:
        self.at(0)


@pytest.fixture
def timeline(monkeypatch: pytest.MonkeyPatch) -> Iterator[Timeline]:
    line = Timeline(monkeypatch)
    line.now()
    yield line


def open_engine(store_root: Path, **retention: object) -> Engine:
    config = load_config()._replace(retention=RetentionSettings(**retention))  # type: ignore[arg-type]
    return Engine(store_root, config=config)


def checkpoints(engine: Engine, task_id: str, count: int, repo: Path) -> None:
    for number in range(count):
        write(repo / "progress.txt", f"{task_id} step {number}\n")
        engine.checkpoint(task_id, CheckpointRequest(reason=CheckpointReason.MILESTONE, force=True))


def states(engine: Engine, task_id: str) -> dict[int, str]:
    return {c.seq: c.state.value for c in engine.list_checkpoints(task_id)}


def store_digest(store_root: Path) -> str:
    """Everything the store holds: the database's content, and every file of its git repos."""
    digest = hashlib.sha256()
    connection = sqlite3.connect(f"file:{store_root / 'pitstop.db'}?mode=ro", uri=True)
    try:
        for line in connection.iterdump():
            digest.update(line.encode())
    finally:
        connection.close()
    for path in sorted((store_root / "repos").rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(store_root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def git_has(git_dir: Path, oid: str) -> bool:
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "-e", oid], capture_output=True, check=False
    )
    return proc.returncode == 0


def refs(git_dir: Path) -> list[str]:
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", "for-each-ref", "--format=%(refname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


@pytest.fixture
def world(
    store_root: Path, make_repo: Callable[..., Path], timeline: Timeline
) -> Iterator[tuple[Engine, dict[str, Path]]]:
    """Five tasks, a month old, each in a state retention must treat differently.

    - `live`: running, three checkpoints 30 days old (two expire by TTL, the newest stays);
    - `approval`: two checkpoints and a pending approval (everything stays);
    - `uncertain`: done, two checkpoints, an uncertain side effect (everything stays);
    - `finished`: done five days ago, in its own repository, with evidence (retired entirely);
    - `busy`: running, four fresh checkpoints, keep_last = 2 (the two oldest go).
    """
    engine = open_engine(store_root, keep_last=2)
    repos = {name: make_repo(name) for name in ("shared", "finished")}
    timeline.at(30)
    for name, count in (("live", 3), ("approval", 2), ("uncertain", 2)):
        engine.start_task(repo=repos["shared"], objective=f"{name} work", task_id=name)
        checkpoints(engine, name, count, repos["shared"])
    engine.request_approval("approval", "deploy the preview")
    engine.propose_effect("uncertain", "pr-1", "open-pr", check="false")
    engine.move_effect("uncertain", "pr-1", EffectState.IN_PROGRESS)
    engine.move_effect("uncertain", "pr-1", EffectState.UNCERTAIN)
    engine.finish_task("uncertain", TaskStatus.DONE, "merged")
    timeline.at(6)
    engine.start_task(repo=repos["finished"], objective="finished work", task_id="finished")
    write(repos["finished"] / "unique.txt", "only the finished task ever saw this\n")
    engine.run_command(
        "finished",
        ["python3", "-c", "print('3 passed in 0.01s')"],
        out_fd=os.open(os.devnull, os.O_WRONLY),
    )
    checkpoints(engine, "finished", 2, repos["finished"])
    timeline.at(5)
    engine.finish_task("finished", TaskStatus.DONE, "merged")
    timeline.now()
    engine.start_task(repo=repos["shared"], objective="busy work", task_id="busy")
    checkpoints(engine, "busy", 4, repos["shared"])
    yield engine, repos
    engine.close()


def test_protected_checkpoints_survive_and_the_rest_go(
    world: tuple[Engine, dict[str, Path]], store_root: Path
) -> None:
    engine, repos = world
    finished_repo = store_root / "repos" / engine.get_task("finished").store_repo
    unique_blob = subprocess.run(
        ["git", "hash-object", str(repos["finished"] / "unique.txt")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert git_has(finished_repo, unique_blob)
    evidence_id = engine.list_evidence("finished")[0].id

    report = engine.gc()

    assert states(engine, "live") == {1: "expired", 2: "expired", 3: "complete"}
    assert set(states(engine, "approval").values()) == {"complete"}
    assert set(states(engine, "uncertain").values()) == {"complete"}
    assert states(engine, "finished") == {1: "expired", 2: "expired"}
    assert states(engine, "busy") == {1: "expired", 2: "expired", 3: "complete", 4: "complete"}
    why = {p.ref: p.why for p in report.plan.protected}
    assert why["live@3"] == "newest complete checkpoint of running task"
    assert why["approval@1"] == "task held: approval approval:1 is pending"
    assert why["uncertain@2"] == "task held: side effect 'pr-1' is uncertain"
    rules = {e.ref: e.rule for e in report.plan.expiries}
    assert rules == {
        "live@1": "ttl",
        "live@2": "ttl",
        "finished@1": "finished",
        "finished@2": "finished",
        "busy@1": "keep_last",
        "busy@2": "keep_last",
    }

    # The finished task is retired: ref, key and evidence output gone, objects pruned.
    assert engine.get_task("finished").status is TaskStatus.EXPIRED
    assert report.refs_deleted == ("finished",)
    assert "refs/pitstop/checkpoints/finished" not in refs(finished_repo)
    assert not git_has(finished_repo, unique_blob)
    with pytest.raises(MasterKeyError, match="deleted by gc"):
        engine.get_evidence(evidence_id)
    with pytest.raises(MasterKeyError, match="deleted by gc"):
        list(engine.evidence_output(evidence_id))
    # Live chains are untouched: their refs stay and their kept checkpoints verify.
    shared_repo = store_root / "repos" / engine.get_task("live").store_repo
    assert {f"refs/pitstop/checkpoints/{t}" for t in ("live", "approval", "uncertain", "busy")} <= (
        set(refs(shared_repo))
    )
    for task_id in ("live", "approval", "uncertain", "busy"):
        for checkpoint in engine.list_checkpoints(task_id):
            if checkpoint.state is CheckpointState.COMPLETE:
                assert engine.verify(checkpoint) == [], checkpoint.ref
    # Every expiry and the retirement are audited.
    expire_events = [e for e in engine.events() if e.action == "expire"]
    assert sorted(e.entity_id for e in expire_events) == sorted(rules)
    assert all(e.to_state == "expired" and e.reason for e in expire_events)
    retire = [e for e in engine.events("finished") if e.action == "retire"]
    assert (
        len(retire) == 1
        and retire[0].from_state == "done"
        and "data key deleted" in (retire[0].reason or "")
    )
    # A second run finds nothing more to do, and live tasks go on checkpointing.
    again = engine.gc()
    assert again.plan.expiries == () and again.plan.retirements == () and again.refs_deleted == ()
    write(repos["shared"] / "after-gc.txt", "more work\n")
    made = engine.checkpoint("live", CheckpointRequest(reason=CheckpointReason.MILESTONE))
    assert made.checkpoint is not None and made.checkpoint.seq == 4
    assert engine.verify(made.checkpoint) == []


def test_a_dry_run_changes_nothing_and_lists_what_the_real_run_does(
    world: tuple[Engine, dict[str, Path]], store_root: Path
) -> None:
    engine, _ = world
    before = store_digest(store_root)
    dry = engine.gc(dry_run=True)
    assert store_digest(store_root) == before
    assert dry.dry_run and dry.refs_deleted == () and dry.bytes_after is None
    assert dry.plan.expiring_bytes > 0 and dry.plan.reclaimable_bytes > 0
    assert [r.task_id for r in dry.plan.retirements] == ["finished"]
    real = engine.gc()
    assert [e.ref for e in real.plan.expiries] == [e.ref for e in dry.plan.expiries]
    assert store_digest(store_root) != before
    assert real.bytes_after is not None and real.bytes_before is not None


def test_settling_what_held_a_task_releases_its_checkpoints(
    world: tuple[Engine, dict[str, Path]], timeline: Timeline
) -> None:
    engine, _ = world
    engine.gc()
    engine.decide_approval("approval:1", approve=False, reason="not now")
    engine.move_effect("uncertain", "pr-1", EffectState.CONFIRMED, reason="the PR exists")
    report = engine.gc()
    expired = {e.ref for e in report.plan.expiries}
    assert "approval@1" in expired and "approval@2" not in expired  # newest of a live task
    assert {"uncertain@1", "uncertain@2"} <= expired
    assert engine.get_task("uncertain").status is TaskStatus.EXPIRED


def test_a_finished_task_keeps_its_newest_checkpoint_for_the_grace_period(
    store_root: Path, make_repo: Callable[..., Path], timeline: Timeline
) -> None:
    repo = make_repo("grace")
    with open_engine(store_root, finished_keep_days=2) as engine:
        engine.start_task(repo=repo, objective="grace", task_id="grace")
        checkpoints(engine, "grace", 2, repo)
        engine.finish_task("grace", TaskStatus.CANCELLED, "not needed")
        engine.gc()
        assert states(engine, "grace") == {1: "expired", 2: "complete"}
        assert engine.get_task("grace").status is TaskStatus.CANCELLED
        timeline.at(-3)  # three days later
        report = engine.gc()
        assert states(engine, "grace") == {1: "expired", 2: "expired"}
        assert [e.rule for e in report.plan.expiries] == ["finished"]
        assert engine.get_task("grace").status is TaskStatus.EXPIRED


def test_byte_caps_expire_oldest_first_and_warn_when_protection_exceeds_them(
    store_root: Path, make_repo: Callable[..., Path], timeline: Timeline
) -> None:
    repo = make_repo("caps")
    with open_engine(store_root) as engine:
        engine.start_task(repo=repo, objective="caps", task_id="caps")
        checkpoints(engine, "caps", 4, repo)
        sizes = {c.seq: c.bytes_added or 0 for c in engine.list_checkpoints("caps")}
    cap = sizes[3] + sizes[4]
    with open_engine(store_root, max_task_bytes=cap) as engine:
        plan = engine.gc(dry_run=True).plan
        assert [(e.ref, e.rule) for e in plan.expiries] == [
            ("caps@1", "max_task_bytes"),
            ("caps@2", "max_task_bytes"),
        ]
        assert plan.kept_bytes == cap and plan.warnings == ()
    with open_engine(store_root, max_store_bytes=1) as engine:
        plan = engine.gc(dry_run=True).plan
        assert [e.ref for e in plan.expiries] == ["caps@1", "caps@2", "caps@3"]
        assert len(plan.warnings) == 1 and "max_store_bytes" in plan.warnings[0]
        assert "protected" in plan.warnings[0]


def test_a_checkpoint_under_a_live_resume_lease_stays(
    store_root: Path, make_repo: Callable[..., Path], timeline: Timeline
) -> None:
    repo = make_repo("leased")
    with open_engine(store_root) as engine:
        timeline.at(30)
        engine.start_task(repo=repo, objective="leased", task_id="leased")
        checkpoints(engine, "leased", 3, repo)
        timeline.now()
        lease = {"task_id": "leased", "seq": 1, "state": "active"}
        lease["lease_until"] = clock.to_iso(NOW + timedelta(hours=1))
        required = engine.db.execute("PRAGMA table_info(resumes)").fetchall()
        for _cid, name, kind, notnull, default, primary in required:
            if notnull and default is None and not primary and name not in lease:
                lease[name] = 0 if "INT" in str(kind).upper() else "x"
        engine.db.table("resumes").insert(lease)
        plan = engine.gc(dry_run=True).plan
        assert [e.ref for e in plan.expiries] == ["leased@2"]
        why = {p.ref: p.why for p in plan.protected}
        assert why["leased@1"].startswith("being resumed (lease until")
        timeline.at(-0.5)  # half a day later the lease has run out
        assert [e.ref for e in engine.gc(dry_run=True).plan.expiries] == ["leased@1", "leased@2"]
