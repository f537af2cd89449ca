"""The demo store: built through the engine, every situation present, idempotent, reproducible."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from core.demo import (
    BUMP_DEPENDENCIES,
    CART_ROUNDING,
    DEMO_TASK_IDS,
    INVOICE_CURRENCY,
    RATE_LIMIT,
    SIGNED_COOKIES,
    build_demo_store,
)
from core.engine import Engine
from core.errors import ConflictError
from core.models import CheckpointReason, CheckpointState, TaskStatus

pytestmark = pytest.mark.usefixtures("tui_environment")


def test_every_status_and_reason_is_present(demo_store: Path) -> None:
    with Engine(demo_store) as engine:
        statuses = {task.id: task.status for task in engine.list_tasks()}
        assert statuses == {
            CART_ROUNDING: TaskStatus.DONE,
            SIGNED_COOKIES: TaskStatus.CANCELLED,
            INVOICE_CURRENCY: TaskStatus.WAITING,
            BUMP_DEPENDENCIES: TaskStatus.PAUSED,
            RATE_LIMIT: TaskStatus.RUNNING,
        }
        reasons = {c.reason for task_id in DEMO_TASK_IDS for c in engine.list_checkpoints(task_id)}
        assert reasons == {
            CheckpointReason.MILESTONE,
            CheckpointReason.BEFORE_WAIT,
            CheckpointReason.INTERRUPT,
            CheckpointReason.MANUAL,
        }
        harnesses = {str(task.harness) for task in engine.list_tasks()}
        assert {"claude-code@2.0.14", "codex@0.46.0"} <= harnesses


def test_a_killed_writer_left_one_incomplete_checkpoint(demo_store: Path) -> None:
    with Engine(demo_store) as engine:
        states = {
            c.ref: c.state for task_id in DEMO_TASK_IDS for c in engine.list_checkpoints(task_id)
        }
        incomplete = [ref for ref, state in states.items() if state is not CheckpointState.COMPLETE]
        assert incomplete == [f"{BUMP_DEPENDENCIES}@2"]
        checkpoint = engine.get_checkpoint(f"{BUMP_DEPENDENCIES}@2")
        assert checkpoint.failure and "stopped before it completed" in checkpoint.failure
        assert engine.verify(engine.get_checkpoint(f"{BUMP_DEPENDENCIES}@3")) == []


def test_snapshots_hold_staged_unstaged_untracked_and_deleted_changes(demo_store: Path) -> None:
    with Engine(demo_store) as engine:
        statuses = {c.path: c.status for c in engine.changed_files(f"{INVOICE_CURRENCY}@2")}
        assert statuses["scripts/legacy_import.py"] == "D"  # deleted with git rm
        assert statuses["migrations/0002_add_currency.sql"] == "A"  # untracked
        assert statuses["src/invoicer/export.py"] == "M"  # unstaged
        # Staged and unstaged differ: the snapshot keeps the staged state as its own tree.
        mixed = engine.get_checkpoint(f"{RATE_LIMIT}@2")
        assert mixed.index_tree != mixed.worktree_tree
        assert "+from shopfront.ratelimit import RateLimiter" in engine.diff(f"{RATE_LIMIT}@2")


def test_a_credential_file_is_left_out_and_listed(demo_store: Path) -> None:
    with Engine(demo_store) as engine:
        checkpoint = engine.get_checkpoint(f"{SIGNED_COOKIES}@1")
        assert checkpoint.manifest is not None
        assert [item["path"] for item in checkpoint.manifest["left_out"]] == [".env"]
        diff = engine.diff(f"{SIGNED_COOKIES}@1")
        assert "b/.env" not in diff and "9f1c2e7a4b6d" not in diff  # neither name nor secret
        credentials = checkpoint.manifest["credentials"]
        assert credentials[0]["name"] == "SHOPFRONT_DEPLOY_TOKEN" and credentials[0]["present"]


def test_building_again_changes_nothing(demo_store: Path) -> None:
    with Engine(demo_store) as engine:
        before = {t: len(engine.list_checkpoints(t)) for t in DEMO_TASK_IDS}
        events = len(engine.events())
    assert build_demo_store(demo_store) == list(DEMO_TASK_IDS)
    with Engine(demo_store) as engine:
        assert {t: len(engine.list_checkpoints(t)) for t in DEMO_TASK_IDS} == before
        assert len(engine.events()) == events


def test_the_same_frozen_time_builds_the_same_snapshots(
    demo_template: Path, tmp_path: Path
) -> None:
    fresh = tmp_path / "fresh"
    build_demo_store(fresh)
    with Engine(demo_template) as first, Engine(fresh) as second:
        for task_id in DEMO_TASK_IDS:
            a = [
                (c.seq, c.state, c.base_commit, c.worktree_tree, c.index_tree, c.created_at)
                for c in first.list_checkpoints(task_id)
            ]
            b = [
                (c.seq, c.state, c.base_commit, c.worktree_tree, c.index_tree, c.created_at)
                for c in second.list_checkpoints(task_id)
            ]
            assert a == b, task_id


def test_a_half_built_demo_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with Engine(store) as engine:
        engine.start_task(repo=repo, objective="left over", task_id=CART_ROUNDING)
    with pytest.raises(ConflictError, match="part of the demo"):
        build_demo_store(store)
