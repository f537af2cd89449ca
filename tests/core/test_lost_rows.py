"""A database that lost committed rows behind the store repository's refs is noticed, no
checkpoint number the repository holds is ever handed out again, and a side effect the
checkpoints' manifests name but the database lost is reported, and recorded again so that no
resume repeats it."""

from __future__ import annotations

from pathlib import Path

import pytest
from corekit import git_bytes, only_store_repo, write
from doctorkit import lose_wal

from core.engine import CheckpointRequest, Engine
from core.errors import ResumeRefusedError, StoreError
from core.models import EffectState


def test_lost_wal_refuses_to_reuse_a_checkpoint_number(store_root: Path, repo: Path) -> None:
    lose_wal(store_root, repo)
    store_repo = only_store_repo(store_root)
    tip = git_bytes(store_repo, "rev-parse", "refs/pitstop/checkpoints/t1").strip()
    with Engine() as engine:
        assert [c.seq for c in engine.list_checkpoints("t1")] == [1]  # 2 and 3 are lost
        write(repo / "src/app.py", "print(4)\n")
        with pytest.raises(StoreError) as refused:
            engine.checkpoint("t1", CheckpointRequest(force=True))
        message = refused.value.message
        assert "\n" not in message
        assert "lost checkpoint t1@2..@3" in message
        assert "`pitstop doctor`" in message
        assert [c.seq for c in engine.list_checkpoints("t1")] == [1]  # nothing recorded
    # the ref still names checkpoint 3: nothing in the repository moved either
    assert git_bytes(store_repo, "rev-parse", "refs/pitstop/checkpoints/t1").strip() == tip


def test_packed_checkpoint_ref_is_read_too(store_root: Path, repo: Path) -> None:
    lose_wal(store_root, repo)
    git_bytes(only_store_repo(store_root), "pack-refs", "--all")
    git_bytes(only_store_repo(store_root), "gc", "-q")
    with Engine() as engine, pytest.raises(StoreError, match=r"lost checkpoint t1@2\.\.@3"):
        engine.checkpoint("t1", CheckpointRequest(force=True))


def test_doctor_reports_effects_the_manifests_name_and_the_database_lost(
    store_root: Path, repo: Path
) -> None:
    lose_wal(store_root, repo, effects_in_manifests=True)
    with Engine() as engine:
        assert engine.list_effects("t1") == []  # both rows went with the WAL
    lost = [f for f in Engine.doctor().remaining if f.kind == "lost-effect"]
    assert sorted(f.line.split("'")[1] for f in lost) == ["mail-1", "pay-1"]
    (pay,) = [f for f in lost if "'pay-1'" in f.line]
    assert "t1@3" in pay.line and "confirmed" in pay.line and "--fix" in pay.line
    assert all(f.task_id == "t1" for f in lost)

    report = Engine.doctor(fix=True)
    assert report.healthy, report.remaining
    with Engine() as engine:
        effects = {e.key: e for e in engine.list_effects("t1")}
        # done stays done (never run again); anything else is unknown until an operator says
        assert effects["pay-1"].state is EffectState.CONFIRMED
        assert effects["pay-1"].target == "invoice 7"
        assert effects["mail-1"].state is EffectState.UNCERTAIN
        fixes = [e for e in engine.events("t1") if e.action == "doctor-fix"]
        assert any("mail-1" in (e.reason or "") for e in fixes)
        with pytest.raises(ResumeRefusedError, match="mail-1"):
            engine.resume("t1@1")
