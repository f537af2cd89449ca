"""`pitstop doctor`: each kind of damage made for real is reported in one line, changed by
nothing but `--fix`, mended by it (audited), and a second doctor finds the store healthy."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from corekit import git, git_bytes, only_store_repo, write
from doctorkit import lose_wal, store_digest

from core.engine import CheckpointRequest, Engine
from core.ledger.guard import GuardRequest

Damage = Callable[[Path, Path], None]


def _started(store_root: Path, repo: Path, checkpoints: int = 1) -> None:
    with Engine() as engine:
        engine.start_task(repo=repo, objective="doctor", task_id="t1")
        for number in range(checkpoints):
            write(repo / "src/app.py", f"print({number})\n")
            engine.checkpoint("t1", CheckpointRequest(force=True))


def ref_ahead(store_root: Path, repo: Path) -> None:
    lose_wal(store_root, repo)


def sequence_gap(store_root: Path, repo: Path) -> None:
    _started(store_root, repo, checkpoints=3)
    with sqlite3.connect(store_root / "pitstop.db") as db:  # a hand edit lost one row
        db.execute("DELETE FROM checkpoints WHERE task_id = 't1' AND seq = 2")


def temporary_objects(store_root: Path, repo: Path) -> None:
    """What a snapshot killed before its ref moved leaves: unreachable objects, a temp file."""
    _started(store_root, repo)
    store_repo = only_store_repo(store_root)
    git_bytes(store_repo, "hash-object", "-w", "--stdin", input=os.urandom(4096))
    write(store_repo / "objects/pack/tmp_pack_Xk3Hq9", os.urandom(2048))


def git_lock(store_root: Path, repo: Path) -> None:
    """A writer killed while updating the task's ref leaves git's lock file."""
    _started(store_root, repo)
    write(only_store_repo(store_root) / "refs/pitstop/checkpoints/t1.lock", "0" * 40 + "\n")


def effect_locks(store_root: Path, repo: Path) -> None:
    """Guards killed while they held their keys leave the keys' lock files behind (a guard
    that ends removes its own)."""
    _started(store_root, repo)
    with Engine() as engine:
        for key in ("deploy-1", "deploy-2"):
            engine.guard_effect(GuardRequest(task_id="t1", key=key, argv=("true",), kind="deploy"))
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\n"
            "from core.engine import Engine\n"
            "from core.engine.ledgers import effect_ledger\n"
            "engine = Engine()\n"
            "locks = effect_ledger(engine).locks\n"
            "with locks.hold('t1', 'deploy-1', 0.0), locks.hold('t1', 'deploy-2', 0.0):\n"
            "    print('in', flush=True); time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stdout.readline() == b"in\n"
    child.send_signal(signal.SIGKILL)
    child.wait()


def killed_scratch(store_root: Path, repo: Path) -> None:
    """A process killed inside a scratch directory (a temporary index) leaves it behind."""
    _started(store_root, repo)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from core.snapshot.scratch import scratch_directory\n"
            "with scratch_directory(Path(sys.argv[1]), 'snapshot-') as temp:\n"
            "    (temp / 'index').touch(0o600)\n"
            "    print('in', flush=True); time.sleep(60)\n",
            str(store_root / "tmp"),
        ],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stdout.readline() == b"in\n"
    child.send_signal(signal.SIGKILL)
    child.wait()


def resume_leftover(store_root: Path, repo: Path) -> None:
    """A resume killed after `git worktree add` and before it was recorded."""
    _started(store_root, repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "worktree", "add", "-q", "-b", "pitstop/t1", str(repo.parent / "left-t1"), base)


def file_modes(store_root: Path, repo: Path) -> None:
    _started(store_root, repo)
    (only_store_repo(store_root) / "refs/pitstop/checkpoints/t1").chmod(0o644)
    (only_store_repo(store_root) / "objects").chmod(0o755)


def migration_row(store_root: Path, repo: Path) -> None:
    _started(store_root, repo)
    with sqlite3.connect(store_root / "pitstop.db") as db:
        db.execute("DELETE FROM _sqlite_migrations WHERE name = '0002_effects_approvals'")


DAMAGE: dict[str, tuple[Damage, str]] = {
    "ref-ahead": (ref_ahead, "lost checkpoint t1@2..@3"),
    "sequence-gap": (sequence_gap, "lost checkpoint row(s) t1 @2"),
    "temporary-objects": (temporary_objects, "2 unreachable object(s) or temporary file(s)"),
    "git-lock": (git_lock, "refs/pitstop/checkpoints/t1.lock"),
    "effect-locks": (effect_locks, "2 effect lock file(s) no guard holds"),
    "temporary-files": (killed_scratch, "1 temporary index(es) or scratch directory(ies)"),
    "resume-leftover": (resume_leftover, "on branch pitstop/t1"),
    "file-modes": (file_modes, "2 store path(s) others can read or write"),
    "migrations": (migration_row, "migration 0002_effects_approvals is not recorded"),
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_doctor_reports_fixes_and_audits(name: str, store_root: Path, repo: Path) -> None:
    damage, words = DAMAGE[name]
    damage(store_root, repo)
    before, worktrees = store_digest(store_root), git(repo, "worktree", "list")

    report = Engine.doctor()
    lines = [finding.line for finding in report.remaining]
    assert not report.healthy and any(words in line for line in lines), lines
    assert all("\n" not in line for line in lines)
    assert store_digest(store_root) == before  # without --fix nothing changed
    assert git(repo, "worktree", "list") == worktrees

    fixed = Engine.doctor(fix=True)
    assert fixed.healthy, [finding.line for finding in fixed.remaining]
    assert len(fixed.fixed) == len(report.found)
    assert Engine.doctor().healthy
    with Engine() as engine:
        audited = [event for event in engine.events() if event.action == "doctor-fix"]
    assert len(audited) == len(fixed.fixed)


def test_doctor_leaves_a_store_with_a_bad_state_alone(store_root: Path, repo: Path) -> None:
    _started(store_root, repo)
    with sqlite3.connect(store_root / "pitstop.db") as db:
        db.execute("UPDATE tasks SET status = 'sleeping' WHERE id = 't1'")
    before = store_digest_raw(store_root)
    for fix in (False, True):
        report = Engine.doctor(fix=fix)
        assert [finding.kind for finding in report.remaining] == ["state"]
        assert "status 'sleeping'" in report.remaining[0].line
        assert store_digest_raw(store_root) == before


def store_digest_raw(store_root: Path) -> bytes:
    return (store_root / "pitstop.db").read_bytes()


def test_after_fixing_a_lost_wal_checkpoints_go_on_with_new_numbers(
    store_root: Path, repo: Path
) -> None:
    lose_wal(store_root, repo)
    assert Engine.doctor(fix=True).healthy
    with Engine() as engine:
        write(repo / "src/app.py", "print('after')\n")
        result = engine.checkpoint("t1", CheckpointRequest(force=True))
        assert result.checkpoint is not None and result.checkpoint.seq == 4
        assert engine.verify(result.checkpoint) == []
    store_repo = only_store_repo(store_root)
    # the lost checkpoints' commits stay reachable, so gc keeps them
    log = git_bytes(store_repo, "log", "--format=%s", "refs/pitstop/lost/t1").decode()
    assert "pitstop checkpoint t1@3" in log


def _pitstop(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args], capture_output=True, text=True, cwd=cwd
    )


def test_cli_doctor_exit_codes_and_json(store_root: Path, repo: Path) -> None:
    lose_wal(store_root, repo)
    write(repo / "src/app.py", "print('refused')\n")
    refused = _pitstop("checkpoint", "t1", "--force", cwd=repo)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.count("\n") == 1 and "run `pitstop doctor`" in refused.stderr

    found = _pitstop("doctor")
    assert found.returncode == 1, found.stderr
    assert found.stdout.startswith("ref-ahead: the store's database lost checkpoint t1@2..@3")
    document = json.loads(_pitstop("doctor", "--json").stdout)
    assert document["healthy"] is False
    assert {item["kind"] for item in document["remaining"]} >= {"ref-ahead"}

    fixed = _pitstop("doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "fixed: recorded t1@2..@3 as lost" in fixed.stdout
    assert _pitstop("doctor").stdout.strip() == "the store is healthy"


def test_doctor_reports_a_damaged_database_and_fixes_nothing(store_root: Path, repo: Path) -> None:
    _started(store_root, repo, checkpoints=2)
    database = store_root / "pitstop.db"
    with sqlite3.connect(database) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (page,) = db.execute(
            "SELECT pageno FROM dbstat WHERE name = 'sqlite_autoindex_checkpoints_1' LIMIT 1"
        ).fetchone()
        (size,) = db.execute("PRAGMA page_size").fetchone()
    with open(database, "r+b") as handle:  # a torn write inside one index page
        handle.seek(page * size - 200)
        handle.write(os.urandom(200))
    before = store_digest_raw(store_root)
    for fix in (False, True):
        report = Engine.doctor(fix=fix)
        assert [finding.kind for finding in report.remaining] == ["database"]
        assert "integrity check" in report.remaining[0].line
        assert report.fixed == () and store_digest_raw(store_root) == before
