"""A database that lost committed rows behind the store repository's refs is noticed, and no
checkpoint number the repository holds is ever handed out again."""

from __future__ import annotations

from pathlib import Path

import pytest
from corekit import git_bytes, only_store_repo, write
from doctorkit import lose_wal

from core.engine import CheckpointRequest, Engine
from core.errors import StoreError


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
