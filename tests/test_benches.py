"""The benchmarks still run: one quick pass of each cheap one (their numbers are not judged
here; speed is shown by running them, never by a timed test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.clients import cache_root  # at collection: the real HOME's cache

ROOT = Path(__file__).resolve().parents[1]


def test_the_hook_benchmark_runs_and_reports_every_event() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "hook.py"), "--runs", "1", "--session", "0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["baseline_ms"] > 0
    assert {"SessionStart", "PreToolUse git push", "Stop", "SessionEnd"} <= set(report["ratio"])


def test_the_hook_benchmark_runs_in_a_copy_of_a_given_repository(tmp_path: Path) -> None:
    """`--repo`: the same events in a copy of a given repository (one of 150 files here)."""
    source = tmp_path / "source"
    for number in range(150):
        path = source / f"pkg{number % 7}" / f"module_{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {number}\n")
    gitconfig = tmp_path / "gitconfig"
    gitconfig.touch()
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "files"]):
        subprocess.run(["git", *args], cwd=source, env=env, check=True)
    report = _report("hook.py", "--runs", "1", "--session", "0", "--repo", str(source))
    assert report["repo_files"] == 150
    assert {"Notification", "PreCompact", "SessionEnd"} <= set(report["ratio"])


def test_the_session_benchmark_runs_the_real_client_with_and_without_hooks() -> None:
    from tests.e2e.claude_session import require_claude

    require_claude()  # skipped without the client; a failure where CI requires it
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "hook_session.py"), "--runs", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PITSTOP_E2E_CACHE": str(cache_root())},
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])["session"]
    assert report["with_hooks_s"] > 0 and report["without_s"] > 0
    assert -1 < report["hook_share"] < 1


def _report(script: str, *args: str) -> Any:
    """Run `bench/<script>` at a tiny size; the JSON report it prints last."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_drill_benchmark_runs_a_faithful_drill_beside_a_hand_check() -> None:
    report = _report("drill.py", "--quick")
    assert report["drill_ms"] > 0 and report["by_hand_ms"] > 0
    assert report["replay_ms"] > 0


def test_the_serve_benchmark_times_the_inbox_and_decisions_beside_a_static_file() -> None:
    report = _report(
        "serve.py", "--approvals", "12", "--tasks", "3", "--requests", "2", "--decisions", "4"
    )
    assert report["approvals"] == 12
    assert report["inbox_ms"] > 0 and report["static_ms"] > 0 and report["inbox_ratio"] > 0
    assert report["decisions_per_s"] > 0 and report["static_per_s"] > 0


def test_the_start_up_benchmark_times_every_looking_around_command() -> None:
    report = _report("cli.py", "--runs", "1")
    assert set(report["ratio"]) == {
        "pitstop --help",
        "pitstop locate",
        "pitstop task list",
        "pitstop checkpoints",
        "pitstop show",
    }


def test_the_listing_and_gc_benchmarks_run() -> None:
    listing = _report("listing.py", "--tasks", "30", "--runs", "1")
    assert listing["tasks"] == 30 and listing["ratio"]
    gc = _report("gc.py", "--checkpoints", "3", "--files", "80")
    assert gc["checkpoints"] == 3 and gc["gc_peak_mb"]


def test_the_real_repository_benchmark_runs_every_side_in_one_run() -> None:
    # the sources beside: this checkout itself, timed as a second Pitstop on a store of its own
    report = _report("realrepo.py", "--quick", "--growth", "4", "--against", str(ROOT))
    assert {
        f"pitstop checkpoint ({ROOT.name})",
        f"hook PreCompact checkpoint ({ROOT.name})",
        "git stash create",
        "shadow git add+commit",
        "python -c pass",
        "pitstop diff",
        "git diff HEAD",
        "pitstop validate --offline",
        "git status",
        "pitstop checkout",
        "git worktree add --detach",
    } <= set(report["medians_ms"])
    assert {"diff vs git diff HEAD", "validate --offline vs git status"} <= set(report["ratios"])
    assert report["first"]["store_bytes"] < report["first"]["git_dir_bytes"]
    assert report["growth"]["checkpoints"] == 4 and report["growth"]["growth"] > 0
