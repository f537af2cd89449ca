"""Restore drills on real repositories with a real pytest suite (issue 20)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from corekit import dir_state, write
from drillkit import PYTEST, break_add, record_tests, suite_repo

from core.drill.compare import DrillVerdict
from core.engine import Engine
from core.harness.drill_guard import guard_screen
from core.models import TaskStatus


def _drills_left(store_root: Path) -> list[Path]:
    return sorted((store_root / "tmp").glob("drill-*"))


@pytest.fixture
def suite(tmp_path: Path, engine: Engine) -> tuple[Path, str]:
    repo = suite_repo(tmp_path / "suite")
    task = engine.start_task(repo=repo, objective="drill tests", task_id="calc")
    return repo, task.id


def test_a_checkpoint_whose_tests_still_pass_is_faithful(
    engine: Engine, suite: tuple[Path, str], store_root: Path
) -> None:
    repo, task_id = suite
    recorded = record_tests(engine, task_id, repo)
    engine.checkpoint(task_id)
    before = dir_state(repo)

    report = engine.drill(f"{task_id}@1", screen=guard_screen())

    assert report.verdict is DrillVerdict.FAITHFUL, report
    assert report.differences == ()
    assert report.recorded_evidence_id == recorded
    assert report.replayed is not None and report.replayed.summary is not None
    assert report.replayed.summary["counts"]["passed"] == 3
    assert report.replayed.failing == frozenset()
    assert report.restore_ms is not None and report.replay_ms is not None
    assert report.validation_verdict is not None
    assert report.avoided_usd is not None
    assert dir_state(repo) == before  # the user's repository and worktree are never touched
    assert _drills_left(store_root) == []
    replay = engine.get_evidence(report.replay_evidence_id)
    assert replay.source == "drill" and replay.checkpoint_seq is None
    assert replay.command["cwd"] != str(repo)
    stored = engine.list_drills(task_id)
    assert [d.id for d in stored] == [report.id]
    assert stored[0].verdict is DrillVerdict.FAITHFUL
    assert stored[0].command == report.command
    assert [e.action for e in engine.events(task_id) if e.action == "drill"] == ["drill"]


def test_a_tracked_file_changed_since_the_recorded_run_drifts(
    engine: Engine, suite: tuple[Path, str]
) -> None:
    repo, task_id = suite
    record_tests(engine, task_id, repo)
    engine.checkpoint(task_id)
    break_add(repo)
    engine.checkpoint(task_id)  # the tree now differs from the one the tests passed in

    report = engine.drill(f"{task_id}@2", screen=guard_screen())

    assert report.verdict is DrillVerdict.DRIFTED
    assert "1 test that passed now fails: tests/test_calc.py::test_add" in report.differences
    assert "it ended with exit 1, recorded exit 0" in report.differences
    assert (
        "the summary reads 'pytest: 1 failed, 2 passed', recorded 'pytest: 3 passed'"
        in report.differences
    )
    assert report.replayed is not None
    assert report.replayed.failing == frozenset({"tests/test_calc.py::test_add"})


def test_a_drill_never_takes_the_place_of_the_tasks_own_evidence(
    engine: Engine, suite: tuple[Path, str]
) -> None:
    repo, task_id = suite
    record_tests(engine, task_id, repo)
    engine.checkpoint(task_id)
    engine.drill(task_id, screen=guard_screen())
    # the replay is the drill's evidence: no checkpoint takes it, nothing new to checkpoint
    assert engine.checkpoint(task_id).skipped
    assert [e.source for e in engine.list_evidence(f"{task_id}@1")] == ["run"]
    assert engine.drill(task_id, screen=guard_screen()).recorded_evidence_id == (
        engine.list_evidence(f"{task_id}@1")[0].id
    )


def test_command_replays_against_the_recorded_run_of_the_same_command(
    engine: Engine, suite: tuple[Path, str]
) -> None:
    repo, task_id = suite
    recorded = record_tests(engine, task_id, repo)
    engine.checkpoint(task_id)
    command = " ".join(PYTEST)
    report = engine.drill(task_id, screen=guard_screen(), command=command)
    assert report.verdict is DrillVerdict.FAITHFUL
    assert report.recorded_evidence_id == recorded and report.expectation == "recorded"


def test_command_without_a_recorded_run_is_expected_to_pass(
    engine: Engine, suite: tuple[Path, str]
) -> None:
    repo, task_id = suite
    break_add(repo)
    engine.checkpoint(task_id)
    report = engine.drill(
        task_id, screen=guard_screen(), command=" ".join(PYTEST) + " tests/test_calc.py"
    )
    assert report.expectation == "expected to pass"
    assert report.verdict is DrillVerdict.DRIFTED
    assert "1 test that passed now fails: tests/test_calc.py::test_add" in report.differences


def test_no_verification_evidence_is_not_replayable(
    engine: Engine, suite: tuple[Path, str], store_root: Path
) -> None:
    _, task_id = suite
    engine.checkpoint(task_id)
    report = engine.drill(task_id, screen=guard_screen())
    assert report.verdict is DrillVerdict.NOT_REPLAYABLE
    assert report.reason is not None and report.reason.startswith("no verification evidence")
    assert report.restore_ms is not None  # the restore itself was still drilled
    assert report.replay_evidence_id is None
    assert engine.list_evidence(task_id) == []
    assert _drills_left(store_root) == []


def test_a_command_a_guard_rule_catches_is_never_run(
    engine: Engine, suite: tuple[Path, str], tmp_path: Path
) -> None:
    _, task_id = suite
    engine.checkpoint(task_id)
    marker = tmp_path / "ran"
    report = engine.drill(
        task_id, screen=guard_screen(), command=f"touch {marker} && git push origin main"
    )
    assert report.verdict is DrillVerdict.NOT_REPLAYABLE
    assert report.reason is not None and "guard rule git-push" in report.reason
    assert not marker.exists()
    assert engine.list_evidence(task_id) == []


def test_a_command_repeating_an_unsettled_side_effect_is_never_run(
    engine: Engine, suite: tuple[Path, str], tmp_path: Path
) -> None:
    from core.models import EffectState

    _, task_id = suite
    marker = tmp_path / "deployed"
    command = f"touch {marker}"
    engine.propose_effect(task_id, "deploy-1", "deploy", target=command)
    engine.move_effect(task_id, "deploy-1", EffectState.IN_PROGRESS)
    engine.move_effect(task_id, "deploy-1", EffectState.UNCERTAIN)
    engine.checkpoint(task_id)
    report = engine.drill(task_id, screen=guard_screen(), command=command)
    assert report.verdict is DrillVerdict.NOT_REPLAYABLE
    assert report.reason is not None and "deploy-1" in report.reason
    assert not marker.exists()


def test_a_replay_that_does_not_finish_in_time_is_stopped_and_said(
    engine: Engine, suite: tuple[Path, str], store_root: Path
) -> None:
    import sys

    _, task_id = suite
    engine.checkpoint(task_id)
    sleeper = f"{sys.executable} -c 'import time; time.sleep(60)'"
    report = engine.drill(task_id, screen=guard_screen(), command=sleeper, timeout=1)
    assert report.verdict is DrillVerdict.DRIFTED
    assert report.differences == ("the replay did not finish within 1 s",)
    assert report.replayed is not None and report.replayed.timed_out
    assert _drills_left(store_root) == []


def test_keep_leaves_the_restored_tree_in_the_store(
    engine: Engine, suite: tuple[Path, str], store_root: Path
) -> None:
    repo, task_id = suite
    write(repo / "notes.txt", "untracked work\n")
    engine.checkpoint(task_id)
    report = engine.drill(task_id, screen=guard_screen(), keep=True)
    assert report.kept is not None
    kept = Path(report.kept)
    assert kept.parent == store_root / "drills"
    assert (kept / "notes.txt").read_text() == "untracked work\n"
    assert (kept / "calc.py").exists()
    assert _drills_left(store_root) == []
    assert Engine.doctor(store_root).healthy, Engine.doctor(store_root).remaining


def test_a_damaged_checkpoint_fails_to_restore(
    engine: Engine, suite: tuple[Path, str], store_root: Path
) -> None:
    from corekit import delete_loose_object, make_objects_loose, only_store_repo

    repo, task_id = suite
    record_tests(engine, task_id, repo)
    engine.checkpoint(task_id)
    checkpoint = engine.get_checkpoint(f"{task_id}@1")
    git_dir = only_store_repo(store_root)
    make_objects_loose(git_dir)
    delete_loose_object(git_dir, checkpoint.worktree_tree)
    report = engine.drill(task_id, screen=guard_screen())
    assert report.verdict is DrillVerdict.FAILED_TO_RESTORE
    assert report.reason is not None and "could not be restored" in report.reason
    assert report.replay_evidence_id is None


def test_a_drills_replay_is_not_counted_as_the_tasks_work(
    engine: Engine, suite: tuple[Path, str]
) -> None:
    repo, task_id = suite
    record_tests(engine, task_id, repo)
    engine.checkpoint(task_id)
    before = engine.estimate(task_id).as_dict()
    engine.drill(task_id, screen=guard_screen())
    assert engine.estimate(task_id).as_dict() == before


def test_harness_drift_is_a_finding_and_not_a_failure(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.models import NamedVersion

    repo = suite_repo(tmp_path / "suite")
    engine.start_task(
        repo=repo,
        objective="harness drift",
        task_id="drift",
        harness=NamedVersion("generic", "1.0"),
        model=NamedVersion("some-model", "2026-11"),
    )
    record_tests(engine, "drift", repo)
    engine.checkpoint("drift")
    monkeypatch.setenv("AI_AGENT", "generic/2.0")  # the harness was upgraded since

    report = engine.drill("drift", screen=guard_screen())

    assert report.verdict is DrillVerdict.FAITHFUL
    assert "harness: generic was 1.0, now 2.0 (warn)" in report.findings
    assert "model: some-model@2026-11 as at the checkpoint" in report.findings
    assert engine.list_drills("drift")[0].findings == report.findings


def test_a_fleet_drill_samples_live_tasks_never_drilled_first(
    engine: Engine, make_repo: Callable[..., Path]
) -> None:
    for name in ("a", "b", "c", "done"):
        repo = suite_repo(make_repo(name).parent / f"suite-{name}")
        engine.start_task(repo=repo, objective=f"task {name}", task_id=name)
        record_tests(engine, name, repo)
        engine.checkpoint(name)
    engine.start_task(repo=make_repo("empty"), objective="no checkpoint", task_id="empty")
    engine.finish_task("done", TaskStatus.DONE, reason="merged")
    engine.drill("b", screen=guard_screen())

    assert engine.drill_sample(since="1d", max_count=10) == ["a@1", "c@1", "b@1"]
    assert engine.drill_sample(since="1d", max_count=1) == ["a@1"]
    results = engine.drill_all(screen=guard_screen(), since="1d", max_count=2)
    assert [(r.ref, r.report and r.report.verdict) for r in results] == [
        ("a@1", DrillVerdict.FAITHFUL),
        ("c@1", DrillVerdict.FAITHFUL),
    ]
    assert engine.drill_sample(since="1d", max_count=10) == ["b@1", "a@1", "c@1"]


def test_a_fleet_drill_skips_checkpoints_older_than_since(
    engine: Engine, suite: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import timedelta

    from core import clock

    _, task_id = suite
    engine.checkpoint(task_id)
    later = clock.to_iso(clock.now() + timedelta(days=8))
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", later)
    assert engine.drill_sample(since="7d") == []
    assert engine.drill_sample(since="9d") == [f"{task_id}@1"]


def test_doctor_fix_removes_a_dead_drills_scratch_directory(
    engine: Engine, suite: tuple[Path, str], store_root: Path
) -> None:
    import subprocess

    _, task_id = suite
    engine.checkpoint(task_id)
    gone = subprocess.Popen(["true"])
    gone.wait()
    left = store_root / "tmp" / f"drill-{gone.pid}-{'ab' * 6}"
    (left / "tree").mkdir(parents=True)
    live = store_root / "tmp" / f"drill-{os.getpid()}-{'cd' * 6}"  # a drill still running
    live.mkdir()
    assert any(left.name in f.line for f in Engine.doctor(store_root).found)
    Engine.doctor(store_root, fix=True)
    assert not left.exists() and live.exists()


def test_a_command_line_stored_redacted_is_never_replayed(
    engine: Engine, suite: tuple[Path, str]
) -> None:
    import shlex

    repo, task_id = suite
    token = "ghp_R8xk2Lq9Vm4Tz7Wn3Yb6Hc1Jd5Fg0Ps2Ea9K"
    script = f"GITHUB_TOKEN={token} {shlex.join(PYTEST)}"
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        _, item = engine.run_command(
            task_id, ["sh", "-c", script], cwd=repo, out_fd=devnull, err_fd=devnull
        )
    finally:
        os.close(devnull)
    assert item.exit_code == 0
    engine.checkpoint(task_id)
    report = engine.drill(task_id, screen=guard_screen())
    assert report.verdict is DrillVerdict.NOT_REPLAYABLE
    assert report.reason is not None and "stored redacted" in report.reason
    assert report.recorded_evidence_id == item.id
    assert token not in (report.command or "")


def test_a_program_left_out_of_the_snapshot_is_not_replayable(
    engine: Engine, suite: tuple[Path, str]
) -> None:
    repo, task_id = suite
    write(repo / ".gitignore", "__pycache__/\n.pytest_cache/\nvenv/\n")
    write(repo / "venv" / "check", "#!/bin/sh\necho '3 passed in 0.01s'\n", mode=0o755)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        _, item = engine.run_command(
            task_id, ["venv/check"], label="unit tests", cwd=repo, out_fd=devnull, err_fd=devnull
        )
    finally:
        os.close(devnull)
    engine.checkpoint(task_id)
    report = engine.drill(task_id, screen=guard_screen())
    assert report.recorded_evidence_id == item.id
    assert report.verdict is DrillVerdict.NOT_REPLAYABLE
    assert report.reason == (
        "command not found: venv/check in the restored tree (ignored files such as a "
        "virtualenv are not in a snapshot); drill with --command CMD"
    )
    assert report.replay_evidence_id is None


def test_the_replay_runs_where_the_recorded_run_did(
    engine: Engine, make_repo: Callable[..., Path]
) -> None:
    from drillkit import SUITE

    repo = make_repo("mono", {f"pkg/{name}": text for name, text in SUITE.items()})
    engine.start_task(repo=repo, objective="a package in a subdirectory", task_id="mono")
    record_tests(engine, "mono", repo, cwd=repo / "pkg")
    engine.checkpoint("mono")
    report = engine.drill("mono", screen=guard_screen())
    assert report.cwd == "pkg"
    assert report.verdict is DrillVerdict.FAITHFUL, report.differences
    replay = engine.get_evidence(report.replay_evidence_id)
    assert replay.command["cwd"].endswith("/tree/pkg")


def test_a_hooks_one_line_shell_command_is_replayed_by_sh(
    engine: Engine, suite: tuple[Path, str]
) -> None:
    import shlex

    repo, task_id = suite
    line = shlex.join(PYTEST)
    item = engine.add_evidence_output(
        task_id,
        b"...                                  [100%]\n3 passed in 0.05s\n",
        argv=[line],  # as a harness's Bash tool reports it: one shell line
        cwd=str(repo),
        exit_code=0,
        source="hook",
    )
    engine.checkpoint(task_id)
    report = engine.drill(task_id, screen=guard_screen())
    assert report.recorded_evidence_id == item.id
    assert report.command == line
    assert report.verdict is DrillVerdict.FAITHFUL, report.differences
    assert engine.get_evidence(report.replay_evidence_id).command["argv"] == ["sh", "-c", line]


def test_an_install_needs_the_network_and_is_not_replayed(
    engine: Engine, suite: tuple[Path, str]
) -> None:
    _, task_id = suite
    engine.checkpoint(task_id)
    report = engine.drill(task_id, screen=guard_screen(), command="pip install requests")
    assert report.verdict is DrillVerdict.NOT_REPLAYABLE
    assert report.reason is not None and report.reason.startswith("it installs dependencies")
    assert engine.list_evidence(task_id) == []
