"""The demo store: built through the engine, every situation present, idempotent, reproducible."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from core.demo import (
    BUMP_DEPENDENCIES,
    CART_ROUNDING,
    CHECKOUT_ERRORS,
    DEMO_TASK_IDS,
    DEPLOY_KEY,
    INVOICE_CURRENCY,
    PR_KEY,
    RATE_LIMIT,
    RELEASE,
    RELEASE_TAG_KEY,
    SIGNED_COOKIES,
    SITUATIONS,
    STAGING_MIGRATION_KEY,
    build_demo_store,
)
from core.engine import Engine
from core.errors import ConflictError
from core.models import (
    ApprovalState,
    CheckpointReason,
    CheckpointState,
    EffectState,
    Risk,
    TaskStatus,
)
from core.restore.validate import Verdict

pytestmark = pytest.mark.usefixtures("tui_environment")


def test_every_status_and_reason_is_present(demo_store: Path) -> None:
    with Engine(demo_store) as engine:
        statuses = {task.id: task.status for task in engine.list_tasks()}
        assert statuses == {
            CART_ROUNDING: TaskStatus.DONE,
            SIGNED_COOKIES: TaskStatus.CANCELLED,
            INVOICE_CURRENCY: TaskStatus.WAITING,
            BUMP_DEPENDENCIES: TaskStatus.PAUSED,
            CHECKOUT_ERRORS: TaskStatus.PAUSED,
            RATE_LIMIT: TaskStatus.PAUSED,
            RELEASE: TaskStatus.RUNNING,
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


def test_every_situation_has_its_task(demo_store: Path) -> None:
    assert len(set(SITUATIONS.values())) == 6 and len(DEMO_TASK_IDS) >= 6
    with Engine(demo_store) as engine:
        # Ready to resume: paused, and its latest checkpoint validates ready.
        assert engine.get_task(RATE_LIMIT).status is TaskStatus.PAUSED
        ready = engine.validate(RATE_LIMIT, offline=True)
        # Tests pin the machine identity the demo recorded, so this machine may warn about it.
        assert ready.verdict in (Verdict.READY, Verdict.READY_WITH_WARNINGS), ready.findings
        # Waiting on a high-risk approval that gates a side effect.
        [pending] = engine.list_approvals(None, pending_only=True)
        assert (pending.task_id, pending.risk, pending.state) == (
            INVOICE_CURRENCY,
            Risk.HIGH,
            ApprovalState.PENDING,
        )
        assert pending.effect_key == STAGING_MIGRATION_KEY
        # An uncertain deploy blocks its task's resume.
        assert engine.get_effect(RELEASE, DEPLOY_KEY).state is EffectState.UNCERTAIN
        assert engine.validate(RELEASE, offline=True).verdict is Verdict.BLOCKED
        # The branch moved since the pause, touching a file the checkpoint changed.
        stale = engine.validate(CHECKOUT_ERRORS, offline=True)
        assert stale.verdict is Verdict.STALE
        assert any(
            f.check == "branch" and "src/shopfront/app.py" in f.message for f in stale.findings
        )
        # Side effects confirmed under their keys; finished work.
        assert engine.get_effect(RELEASE, RELEASE_TAG_KEY).state is EffectState.CONFIRMED
        assert engine.get_effect(CART_ROUNDING, PR_KEY).state is EffectState.CONFIRMED
        assert engine.get_task(CART_ROUNDING).status is TaskStatus.DONE


def test_evidence_is_real_a_pytest_run_and_a_long_build_log(demo_store: Path) -> None:
    with Engine(demo_store) as engine:
        [run] = engine.list_evidence(CART_ROUNDING)
        assert run.source == "run" and run.exit_code == 0
        tail = b"".join(engine.evidence_last_lines(run.id, 3)).decode()
        assert "passed" in tail
        [build] = engine.list_evidence(RATE_LIMIT)
        assert build.exit_code == 0 and build.bytes_total > 3 * 1024 * 1024
        last = b"".join(engine.evidence_last_lines(build.id, 2)).decode()
        assert "Successfully built" in last


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


def test_pitstop_demo_no_ui_builds_in_dir_and_the_store_works(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tui.cli import cli

    runner = CliRunner()
    store = tmp_path / "demo"
    result = runner.invoke(cli, ["demo", "--no-ui", str(store)])
    assert result.exit_code == 0, result.output
    assert str(store) in result.output
    again = runner.invoke(cli, ["demo", "--no-open", str(store), "--json"])  # the old alias
    assert again.exit_code == 0 and '"store"' in again.output
    listed = runner.invoke(cli, ["--store", str(store), "approval", "list", "--json"])
    assert INVOICE_CURRENCY in listed.output


def test_pitstop_demo_without_dir_makes_a_new_directory_and_prints_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from tui import cli as cli_module

    made: list[Path] = []

    def fake_build(root: Path) -> list[str]:
        made.append(root)
        return list(DEMO_TASK_IDS)

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr("core.demo.build_demo_store", fake_build)
    first = CliRunner().invoke(cli_module.cli, ["demo", "--no-ui"])
    second = CliRunner().invoke(cli_module.cli, ["demo", "--no-ui"])
    assert first.exit_code == 0 and second.exit_code == 0
    assert len(made) == 2 and made[0] != made[1]
    assert all(path.is_dir() and not any(path.iterdir()) for path in made)
    assert str(made[0]) in first.output


def test_pitstop_ui_opens_the_dashboard_on_the_given_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from tui import cli as cli_module
    from tui.cli import dashboard

    opened: list[tuple[str | None, str | None]] = []
    monkeypatch.setattr(dashboard, "open_dashboard", lambda s, t: opened.append((s, t)))
    runner = CliRunner()
    assert (
        runner.invoke(cli_module.cli, ["ui", "--store", "X", "--theme", "pitstop-light"]).exit_code
        == 0
    )
    assert runner.invoke(cli_module.cli, ["--store", "Y", "--init", "ui"]).exit_code == 0
    assert opened == [("X", "pitstop-light"), ("Y", None)]
