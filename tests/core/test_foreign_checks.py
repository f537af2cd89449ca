"""Another store's precondition check is shown, never run blind (issue #14).

Two real stores share a task over a bare git remote. A check that came in by a sync is a shell
command somebody else chose: `effect check` and `effect guard` refuse to run it without
`--yes-run-check` (printing it, quoted, on one line), `validate` shows it in its fix, and a check
this store wrote itself runs as before. Each check writes a marker file, so "not run" is seen.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from core import store
from core.engine import CheckpointRequest, Engine
from core.errors import ForeignCheckError
from core.ledger.checks import shell_quoted
from core.ledger.guard import GuardRequest
from core.models import EffectState
from tests.core.corekit import git, init_repo

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def shared(tmp_path: Path) -> dict[str, object]:
    """Store A proposes an effect with a marker-writing check, leaves it in progress, pushes;
    store B fetches the task: the effect and its check are A's."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    author = init_repo(tmp_path / "author", {"README.md": "# project\n"})
    git(author, "remote", "add", "origin", str(remote))
    git(author, "push", "-q", "origin", "HEAD:refs/heads/main")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    marker = tmp_path / "foreign-check-ran"
    check = f"touch {shlex.quote(str(marker))}\nexit 0"
    with Engine(tmp_path / "store-a", actor="alice") as a:
        task = a.start_task(repo=author, objective="deploy the preview")
        a.checkpoint(task.id, CheckpointRequest(note="before the deploy"))
        a.propose_effect(task.id, "deploy-1", "deploy", target="preview", check=check)
        a.move_effect(task.id, "deploy-1", EffectState.IN_PROGRESS)
        assert not a.get_effect(task.id, "deploy-1").check_foreign  # A's own
        a.push([task.id])
    store_b = tmp_path / "store-b"
    with Engine(store_b, actor="bob") as b:
        b.fetch([task.id], repo=other)
        effect = b.get_effect(task.id, "deploy-1")
        assert effect.check == check and effect.check_foreign
    return {
        "task": task.id,
        "marker": marker,
        "check": check,
        "b": store_b,
        "a": tmp_path / "store-a",
    }


def cli(store_root: object, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", "--store", str(store_root), "--init", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def test_effect_check_refuses_another_stores_check_until_confirmed(
    shared: dict[str, object],
) -> None:
    task, marker, check = shared["task"], shared["marker"], str(shared["check"])
    assert isinstance(marker, Path)
    proc = cli(shared["b"], "effect", "check", "--task", str(task), "--key", "deploy-1")
    assert proc.returncode == 3
    [line] = proc.stderr.strip().splitlines()  # one line, even for a two-line check
    assert "came from another store" in line and "--yes-run-check" in line
    assert shell_quoted(check) in line
    assert "$'touch " in line  # the newline shown escaped, the exact command recoverable
    assert not marker.exists()  # not run
    with Engine(shared["b"]) as b:  # type: ignore[arg-type]
        assert b.get_effect(str(task), "deploy-1").state is EffectState.IN_PROGRESS
    proc = cli(
        shared["b"], "effect", "check", "--task", str(task), "--key", "deploy-1", "--yes-run-check"
    )
    assert proc.returncode == 0, proc.stderr
    assert marker.exists()
    with Engine(shared["b"]) as b:  # type: ignore[arg-type]
        assert b.get_effect(str(task), "deploy-1").state is EffectState.CONFIRMED


def test_effect_guard_refuses_another_stores_check_until_confirmed(
    shared: dict[str, object], tmp_path: Path
) -> None:
    task, marker = str(shared["task"]), shared["marker"]
    assert isinstance(marker, Path)
    action = tmp_path / "action-ran"
    guard = ("effect", "guard", "--task", task, "--key", "deploy-1", "--", "touch", str(action))
    proc = cli(shared["b"], *guard)
    assert proc.returncode == 3
    [line] = proc.stderr.strip().splitlines()
    assert "came from another store" in line and "--yes-run-check" in line
    assert not marker.exists() and not action.exists()
    proc = cli(shared["b"], *guard[:-3], "--yes-run-check", *guard[-3:])
    assert proc.returncode == 0, proc.stderr
    assert marker.exists()  # the check ran and said it happened: the action is not run again
    assert not action.exists()


def test_a_check_given_here_and_a_local_check_run_as_before(
    shared: dict[str, object], tmp_path: Path
) -> None:
    task, marker = str(shared["task"]), shared["marker"]
    given = tmp_path / "given-ran"
    with Engine(shared["b"]) as b:  # type: ignore[arg-type]
        # --check CMD is the operator's own command: no confirmation needed
        outcome = b.check_effect(task, "deploy-1", f"touch {given}")
        assert outcome.effect.state is EffectState.CONFIRMED and given.exists()
        assert not marker.exists()  # type: ignore[union-attr]
        local = tmp_path / "local-ran"
        b.propose_effect(task, "migrate-1", "migration", check=f"touch {local}; exit 1")
        b.move_effect(task, "migrate-1", EffectState.IN_PROGRESS)
        assert not b.get_effect(task, "migrate-1").check_foreign
        outcome = b.check_effect(task, "migrate-1")
        assert outcome.effect.state is EffectState.FAILED and local.exists()


def test_a_check_rewritten_by_a_sync_becomes_foreign(
    shared: dict[str, object], tmp_path: Path
) -> None:
    """B's own effect, whose check another store's fact rewrites, needs confirmation again."""
    task = str(shared["task"])
    mine = tmp_path / "mine-ran"
    theirs = tmp_path / "theirs-ran"
    with Engine(shared["b"], actor="bob") as b:  # type: ignore[arg-type]
        b.propose_effect(task, "notify-1", "email", check=f"touch {mine}")
        b.move_effect(task, "notify-1", EffectState.IN_PROGRESS)
        assert not b.get_effect(task, "notify-1").check_foreign
        b.sync([task])
    with Engine(shared["a"], actor="alice") as a:  # type: ignore[arg-type]
        a.sync([task])
        effect = a.get_effect(task, "notify-1")
        # Store A (or whoever can write its facts) changes the check and moves the effect on.
        store.move_effect(
            a.db, task, "notify-1", effect.state, EffectState.UNCERTAIN, keys=a.keys,
            check=f"touch {theirs}", updated_at=effect.updated_at,
        )  # fmt: skip
        a.sync([task])
    with Engine(shared["b"], actor="bob") as b:  # type: ignore[arg-type]
        b.sync([task])
        effect = b.get_effect(task, "notify-1")
        assert effect.check == f"touch {theirs}" and effect.check_foreign
        with pytest.raises(ForeignCheckError, match="came from another store"):
            b.check_effect(task, "notify-1")
        with pytest.raises(ForeignCheckError):
            b.guard_effect(GuardRequest(task_id=task, key="notify-1", argv=("true",)))
    assert not theirs.exists() and not mine.exists()


def test_validate_shows_the_foreign_check_in_its_fix_but_never_stores_it(
    shared: dict[str, object],
) -> None:
    task, check = str(shared["task"]), str(shared["check"])
    proc = cli(shared["b"], "validate", f"{task}@1")
    assert proc.returncode != 0
    fix = next(line for line in proc.stdout.splitlines() if "fix:" in line and "deploy-1" in line)
    assert "came from another store" in fix and "--yes-run-check" in fix
    assert shell_quoted(check) in fix
    assert not Path(str(shared["marker"])).exists()
    with Engine(shared["b"]) as b:  # type: ignore[arg-type]
        rows = list(b.db.query("SELECT findings FROM validations"))
        assert rows and all("touch" not in row["findings"] for row in rows)


def test_a_store_from_before_the_marker_counts_every_synced_check_as_foreign(
    tmp_path: Path, repo: Path
) -> None:
    """Migration 0015: an effect a sync ever touched is foreign; one made only here is not."""
    from core.store.db import open_database
    from core.store.migrations import migrations

    root = tmp_path / "old-store"
    root.mkdir(mode=0o700)
    db = open_database(root / "pitstop.db")
    migrations.apply(db, stop_before="0016_foreign_checks")
    db.execute(
        "INSERT INTO tasks (id, repo_root, store_repo, objective, status, created_at, updated_at)"
        " VALUES ('old', ?, 'r', 'from 0014', 'paused', '2026-01-01T00:00:00Z', "
        "'2026-01-01T00:00:00Z')",
        [str(repo)],
    )
    for key in ("synced", "local"):
        db.execute(
            "INSERT INTO effects (task_id, key, kind, check_command, state, created_at, "
            "updated_at) VALUES ('old', ?, 'deploy', 'true', 'uncertain', '2026-01-01T00:00:00Z',"
            " '2026-01-01T00:00:00Z')",
            [key],
        )
    for key, interface in (("synced", "sync"), ("local", "cli")):
        db.execute(
            "INSERT INTO events (at, actor, interface, task_id, entity, entity_id, action) "
            "VALUES ('2026-01-01T00:00:00Z', 'bob', ?, 'old', 'effect', ?, 'sync')",
            [interface, key],
        )
    db.close()
    with Engine(root) as engine:
        assert engine.get_effect("old", "synced").check_foreign
        assert not engine.get_effect("old", "local").check_foreign
        with pytest.raises(ForeignCheckError):
            engine.check_effect("old", "synced")
