"""`pitstop validate`, `pitstop resume` and `pitstop task accept|reject` as real processes.

Each command runs as `python -m tui.cli` against a real git repository and a private store; the
exit codes are the contract (0 ready / ready with warnings, 3 stale, 4 blocked, 5 unsupported)
and every refusal is one line on stderr.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.gitconfig import EMPTY_GITCONFIG


@pytest.fixture()
def cli_env(tmp_path: Path) -> dict[str, str]:
    """A private store, config dir, master key and git identity; no frozen clock."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    env.update(
        {
            "GIT_AUTHOR_NAME": "Test",
            "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "Test",
            "GIT_COMMITTER_EMAIL": "test@example.com",
            "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
            "GIT_CONFIG_NOSYSTEM": "1",
            "PITSTOP_HOME": str(tmp_path / "store"),
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "PITSTOP_KEY": base64.b64encode(os.urandom(32)).decode(),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        }
    )
    (tmp_path / "config").mkdir()
    return env


def run(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def ok_json(env: dict[str, str], *args: str) -> Any:
    result = run(env, *args, "--json")
    assert result.returncode == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def json_with_code(env: dict[str, str], code: int, *args: str) -> Any:
    result = run(env, *args, "--json")
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    return json.loads(result.stdout)


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("pitstop: ")
    return lines[0]


def git(cwd: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode()


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under `root` (not `.git`) with its bytes."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or not path.is_file():
            continue
        found[rel.as_posix()] = path.read_bytes()
    return found


def paused_task(
    env: dict[str, str], tmp_path: Path, *options: str, name: str = "repo"
) -> tuple[Path, str, str]:
    """A repository, a task on it, and a checkpoint taken mid-edit; returns (repo, task, ref)."""
    repo = tmp_path / name
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def main():\n    return 1\n")
    (repo / "lib.py").write_text("X = 1\n")
    (repo / "old.txt").write_text("remove me\n")
    (repo / "uv.lock").write_text("version = 1\n")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "initial")
    task = ok_json(
        env, "task", "start", "--repo", str(repo), "--objective", "fix the login bug", *options
    )
    (repo / "app.py").write_text("def main():\n    return 2\n")
    (repo / "lib.py").write_text("X = 2\n")
    git(repo, env, "add", "lib.py")
    (repo / "notes.md").write_text("half-way notes\n")
    git(repo, env, "rm", "-q", "old.txt")
    checkpoint = ok_json(
        env,
        "checkpoint",
        task["id"],
        "--reason",
        "interrupt",
        "--done",
        "reproduce",
        "--todo",
        "write the fix",
    )
    return repo, task["id"], f"{task['id']}@{checkpoint['checkpoint']['seq']}"


def resumes(env: dict[str, str]) -> list[dict[str, Any]]:
    """Every resume in the store, oldest first; their reasons (sealed at rest) decrypted."""
    from core.engine import Engine

    old_key = os.environ.get("PITSTOP_KEY")
    os.environ["PITSTOP_KEY"] = env["PITSTOP_KEY"]
    try:
        with Engine(env["PITSTOP_HOME"]) as engine:
            rows = [r for t in engine.list_tasks() for r in engine.resume_records(t.id)]
    finally:
        if old_key is not None:
            os.environ["PITSTOP_KEY"] = old_key
        else:
            del os.environ["PITSTOP_KEY"]
    return sorted(rows, key=lambda row: row["id"])


def set_manifest_schema(env: dict[str, str], task_id: str, schema: str) -> None:
    """Make the task's stored manifests look written by a newer Pitstop (they are sealed)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
    from corekit import rewrite_manifests

    old_key = os.environ.get("PITSTOP_KEY")
    os.environ["PITSTOP_KEY"] = env["PITSTOP_KEY"]
    try:
        rewrite_manifests(Path(env["PITSTOP_HOME"]), task_id, lambda d: d.update(schema=schema))
    finally:
        if old_key is not None:
            os.environ["PITSTOP_KEY"] = old_key


# --- validate -----------------------------------------------------------------------------------


def test_validate_verdicts_exit_codes_and_json(cli_env: dict[str, str], tmp_path: Path) -> None:
    repo, task_id, ref = paused_task(cli_env, tmp_path)

    ready = json_with_code(cli_env, 0, "validate", ref, "--offline")
    assert ready["verdict"] == "ready"
    assert isinstance(ready["duration_ms"], int)
    assert all(set(f) >= {"check", "status", "message", "fix"} for f in ready["findings"])
    assert {f["status"] for f in ready["findings"]} == {"pass"}

    (repo / "uv.lock").write_text("version = 2\n")
    stale = json_with_code(cli_env, 3, "validate", ref)
    assert stale["verdict"] == "stale"
    (lock,) = [f for f in stale["findings"] if f["status"] != "pass"]
    assert lock["check"] == "lockfiles" and "uv.lock" in lock["message"] and lock["fix"]

    human = run(cli_env, "validate", ref)
    assert human.returncode == 3, human.stderr
    lines = human.stdout.splitlines()
    assert any(line.startswith("✗ lockfiles") and "uv.lock" in line for line in lines)
    assert any(line.strip().startswith("fix: ") for line in lines)
    assert any(line.startswith("✓ schema") for line in lines)
    assert lines[-1].startswith("verdict: stale")
    (repo / "uv.lock").write_text("version = 1\n")

    approval = ok_json(cli_env, "approval", "request", "--task", task_id, "--action", "deploy")
    blocked = json_with_code(cli_env, 4, "validate", ref)
    assert blocked["verdict"] == "blocked"
    (pending,) = [f for f in blocked["findings"] if f["status"] == "fail"]
    assert approval["id"] in pending["message"] and approval["id"] in pending["fix"]
    ok_json(cli_env, "approval", "approve", approval["id"], "--reason", "fine")

    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "x.txt").write_text("x\n")
    into = json_with_code(cli_env, 4, "validate", ref, "--into", str(occupied))
    assert any(f["check"] == "target" and str(occupied) in f["message"] for f in into["findings"])

    set_manifest_schema(cli_env, task_id, "pitstop.manifest/9")
    future = json_with_code(cli_env, 5, "validate", ref)
    assert future["verdict"] == "unsupported"
    assert [f["check"] for f in future["findings"]] == ["schema"]
    assert "pitstop.manifest/9" in future["findings"][0]["message"]

    with sqlite3.connect(Path(cli_env["PITSTOP_HOME"]) / "pitstop.db") as db:
        verdicts = [row[0] for row in db.execute("SELECT verdict FROM validations ORDER BY id")]
    assert verdicts == ["ready", "stale", "stale", "blocked", "blocked", "unsupported"]
    audited = [e for e in ok_json(cli_env, "log", task_id) if e["action"] == "validate"]
    assert [(e["to_state"], e["interface"]) for e in audited] == [(v, "cli") for v in verdicts]
    assert all(e["entity_id"].startswith(task_id) for e in audited)


def test_validate_unknown_ref_is_one_line(cli_env: dict[str, str]) -> None:
    assert_one_line_error(run(cli_env, "validate", "nope@1"), 2)


# --- resume -------------------------------------------------------------------------------------


def test_resume_into_a_new_dir_then_refuse_the_second_then_accept(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    repo, task_id, ref = paused_task(cli_env, tmp_path)
    files_before = tree_bytes(repo)
    status_before = git(repo, cli_env, "status", "--porcelain")
    base = git(repo, cli_env, "rev-parse", "HEAD").strip()

    target = tmp_path / "resumed"
    plan = ok_json(cli_env, "resume", ref, "--into", str(target))
    assert plan["checkpoint"] == ref and plan["verdict"] == "ready"
    assert plan["workdir"] == str(target) and plan["branch"] == f"pitstop/{task_id}"
    assert isinstance(plan["restore_ms"], int)
    assert tree_bytes(target) == files_before
    assert git(target, cli_env, "status", "--porcelain") == status_before
    assert git(target, cli_env, "rev-parse", "HEAD").strip() == base

    checkout = tmp_path / "checkout"
    ok_json(cli_env, "checkout", ref, "--into", str(checkout))
    assert tree_bytes(checkout) == tree_bytes(target)

    brief = json.loads(Path(plan["brief_json"]).read_text())
    assert brief["done"] == ["reproduce"] and brief["todo"] == ["write the fix"]
    assert "## Still to do\n- write the fix" in Path(plan["brief"]).read_text()

    second = run(cli_env, "resume", ref, "--into", str(tmp_path / "second"))
    line = assert_one_line_error(second, 4)
    assert "blocked" in line and "lease" in line and f"resume {plan['resume']}" in line
    assert not (tmp_path / "second").exists()

    human = run(cli_env, "task", "accept", task_id, "--reason", "tests pass")
    assert human.returncode == 0, human.stderr
    assert f"resumed work on {task_id} accepted: tests pass" in human.stdout
    (row,) = resumes(cli_env)
    assert (row["accepted"], row["accept_reason"], row["state"]) == (1, "tests pass", "done")

    again = ok_json(cli_env, "resume", ref, "--into", str(tmp_path / "third"))
    rejected = ok_json(cli_env, "task", "reject", task_id, "--reason", "wrong approach")
    assert rejected == {
        "task": task_id,
        "resume": again["resume"],
        "accepted": False,
        "reason": "wrong approach",
    }
    assert [(r["accepted"], r["accept_reason"]) for r in resumes(cli_env)] == [
        (1, "tests pass"),
        (0, "wrong approach"),
    ]
    assert_one_line_error(run(cli_env, "task", "accept", task_id, "--reason", " "), 2)
    missing = run(cli_env, "task", "accept", task_id)
    assert missing.returncode == 2 and "--reason" in missing.stderr


def test_stale_needs_yes(cli_env: dict[str, str], tmp_path: Path) -> None:
    repo, _task_id, ref = paused_task(cli_env, tmp_path)
    (repo / "uv.lock").write_text("version = 2\n")
    line = assert_one_line_error(run(cli_env, "resume", ref, "--into", str(tmp_path / "a")), 3)
    assert "stale" in line and "uv.lock" in line and "--yes" in line
    assert not (tmp_path / "a").exists()
    plan = ok_json(cli_env, "resume", ref, "--into", str(tmp_path / "a"), "--yes")
    assert plan["verdict"] == "stale"
    assert (tmp_path / "a" / "uv.lock").read_text() == "version = 1\n"


def test_in_place_refused_dirty_and_works_clean(cli_env: dict[str, str], tmp_path: Path) -> None:
    repo, _task_id, ref = paused_task(cli_env, tmp_path)
    snapshot = tree_bytes(repo)
    snapshot_status = git(repo, cli_env, "status", "--porcelain")
    line = assert_one_line_error(run(cli_env, "resume", ref, "--in-place"), 2)
    assert "uncommitted changes" in line
    assert tree_bytes(repo) == snapshot

    git(repo, cli_env, "reset", "-q", "--hard")
    git(repo, cli_env, "clean", "-qfd")
    plan = ok_json(cli_env, "resume", ref, "--in-place")
    assert plan["workdir"] == str(repo)
    assert tree_bytes(repo) == snapshot
    assert git(repo, cli_env, "status", "--porcelain") == snapshot_status

    both = run(cli_env, "resume", ref, "--in-place", "--into", str(tmp_path / "x"))
    assert both.returncode != 0 and "Traceback" not in both.stderr


def test_resume_of_a_newer_manifest_exits_5(cli_env: dict[str, str], tmp_path: Path) -> None:
    """validate says unsupported with exit 5; resume must refuse with the same code."""
    _repo, task_id, ref = paused_task(cli_env, tmp_path)
    set_manifest_schema(cli_env, task_id, "pitstop.manifest/9")
    line = assert_one_line_error(run(cli_env, "resume", ref, "--into", str(tmp_path / "x")), 5)
    assert "pitstop.manifest/9" in line
    assert not (tmp_path / "x").exists()


# --- launch -------------------------------------------------------------------------------------

FAKE_HARNESS = """\
import json, os, sys
with open(os.environ["PITSTOP_BRIEF"], encoding="utf-8") as handle:
    brief = handle.read()
with open(sys.argv[1], "w") as out:
    json.dump({
        "argv": sys.argv[2:],
        "cwd": os.getcwd(),
        "env": {k: v for k, v in os.environ.items() if k.startswith("PITSTOP_")},
        "brief": brief,
    }, out)
if os.environ.get("FAKE_KILL_PITSTOP"):
    # Die with the pitstop process that launched us, as a closed terminal would.
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as cmd:
            if b"tui.cli" in cmd.read():
                os.kill(pid, 9)
                break
        with open(f"/proc/{pid}/stat") as stat:
            pid = int(stat.read().rsplit(")", 1)[1].split()[1])
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


def configure_fake_harness(env: dict[str, str], tmp_path: Path) -> Path:
    script = tmp_path / "fake.py"
    script.write_text(FAKE_HARNESS)
    seen = tmp_path / "seen.json"
    command = f"python3 {shlex.quote(str(script))} {shlex.quote(str(seen))} {{brief}}"
    config = Path(env["PITSTOP_CONFIG_DIR"]) / "config.toml"
    config.write_text(f"[harness.fake]\nresume = {json.dumps(command)}\n")
    return seen


def test_launch_runs_the_fake_harness_and_propagates_its_exit_code(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    seen = configure_fake_harness(cli_env, tmp_path)
    _repo, task_id, ref = paused_task(cli_env, tmp_path, "--harness", "fake@1")
    target = tmp_path / "work"
    result = run({**cli_env, "FAKE_EXIT": "7"}, "resume", ref, "--into", str(target), "--launch")
    assert result.returncode == 7, result.stderr
    assert "launching" in result.stdout

    record = json.loads(seen.read_text())
    assert Path(record["cwd"]) == target
    assert record["env"]["PITSTOP_TASK"] == task_id
    assert record["env"]["PITSTOP_CHECKPOINT"] == ref
    brief_path = record["env"]["PITSTOP_BRIEF"]
    assert record["argv"] == [brief_path]
    assert Path(brief_path).name == "BRIEF.md"
    assert record["brief"] == Path(brief_path).read_text()
    assert "- write the fix" in record["brief"] and "fix the login bug" in record["brief"]
    (row,) = resumes(cli_env)
    assert (row["launched"], row["exit_code"], row["state"]) == (1, 7, "done")

    zero = run(cli_env, "resume", ref, "--into", str(tmp_path / "again"), "--launch", "--json")
    assert zero.returncode == 0, zero.stderr
    assert json.loads(zero.stdout)["exit_code"] == 0


def test_a_dead_launched_holder_does_not_keep_the_lease(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    configure_fake_harness(cli_env, tmp_path)
    _repo, _task_id, ref = paused_task(cli_env, tmp_path, "--harness", "fake@1")
    killed = run(
        {**cli_env, "FAKE_KILL_PITSTOP": "1"},
        "resume",
        ref,
        "--into",
        str(tmp_path / "a"),
        "--launch",
    )
    assert killed.returncode == -9, (killed.returncode, killed.stderr)
    (row,) = resumes(cli_env)
    assert (row["state"], row["launched"]) == ("active", 1)  # nobody released it

    report = json_with_code(cli_env, 0, "validate", ref)
    (lease,) = [f for f in report["findings"] if f["check"] == "lease"]
    assert lease["status"] == "pass"
    ok_json(cli_env, "resume", ref, "--into", str(tmp_path / "b"))
    assert [r["state"] for r in resumes(cli_env)] == ["expired", "active"]


def test_an_unlaunched_resume_holds_its_lease_after_the_cli_exits(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    """`resume --no-launch` hands the workdir to a person: the lease outlives the process."""
    _repo, _task_id, ref = paused_task(cli_env, tmp_path)
    ok_json(cli_env, "resume", ref, "--into", str(tmp_path / "a"), "--no-launch")
    assert_one_line_error(run(cli_env, "resume", ref, "--into", str(tmp_path / "b")), 4)
    # The default lease is two hours; three hours later nobody holds it any more.
    later = (datetime.now(UTC) + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    ok_json({**cli_env, "PITSTOP_FROZEN_NOW": later}, "resume", ref, "--into", str(tmp_path / "b"))
    assert [r["state"] for r in resumes(cli_env)] == ["expired", "active"]
