"""Free text is sealed at rest: reasons, notes, actions, targets and checks (DESIGN §6, inv. 2).

Every test writes distinctive marker strings through the engine, then reads the raw bytes of
the store's database (and its WAL) for them, and reads them back through the engine's API.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from pathlib import Path

import pytest
from corekit import init_repo, raw_bytes_under, write

from core import store
from core.engine import Engine
from core.models import EffectState, TaskStatus
from core.store.db import open_database, write_txn
from core.store.migrations import migrations

ACTION = "MARK-ACTION deploy the preview to staging"
APPROVE_WHY = "MARK-APPROVE-WHY diff reviewed with the team"
REJECT_WHY = "MARK-REJECT-WHY not before the freeze"
TARGET = "MARK-TARGET https://staging.example.invalid"
CHECK = "test -n MARK-CHECK"
NOTE = "MARK-NOTE the deploy timed out at 30 s"
SETTLE_WHY = "MARK-SETTLE-WHY the dashboard shows the preview"
JUDGE_WHY = "MARK-JUDGE-WHY the resumed agent finished the fix"
CANCEL_WHY = "MARK-CANCEL-WHY the customer withdrew the request"
MARKERS = (ACTION, APPROVE_WHY, REJECT_WHY, TARGET, CHECK, NOTE, SETTLE_WHY, JUDGE_WHY, CANCEL_WHY)


def database_bytes(store_root: Path) -> bytes:
    """The database, its WAL and shared memory, as they lie on disk."""
    return b"".join(
        path.read_bytes()
        for path in (
            store_root / name for name in ("pitstop.db", "pitstop.db-wal", "pitstop.db-shm")
        )
        if path.exists()
    )


def found_markers(store_root: Path) -> list[str]:
    """Markers (or any distinctive part of them) readable anywhere under the store."""
    everything = b"".join(data for _, data in raw_bytes_under(store_root))
    everything += database_bytes(store_root)
    tokens = {m: next(word for word in m.split() if word.startswith("MARK-")) for m in MARKERS}
    return [m for m, token in tokens.items() if token.encode() in everything]


def test_every_reason_note_and_action_is_sealed_and_reads_back(
    engine: Engine, tmp_path: Path, store_root: Path
) -> None:
    repo = init_repo(tmp_path / "repo", {"app.py": "print('v1')\n"})
    task = engine.start_task(repo=repo, objective="ship the preview")
    write(repo / "app.py", "print('v2')\n")
    checkpoint = engine.checkpoint(task.id).checkpoint
    assert checkpoint is not None
    engine.resume(checkpoint.ref, into=tmp_path / "resumed")
    engine.judge_resume(task.id, True, JUDGE_WHY)

    engine.propose_effect(task.id, "deploy-1", "deploy", target=TARGET, check=CHECK)
    engine.move_effect(task.id, "deploy-1", EffectState.IN_PROGRESS)
    engine.move_effect(task.id, "deploy-1", EffectState.UNCERTAIN, note=NOTE)
    engine.move_effect(task.id, "deploy-1", EffectState.CONFIRMED, reason=SETTLE_WHY)
    approved = engine.request_approval(task.id, ACTION, checkpoint=True)
    engine.decide_approval(approved.id, True, APPROVE_WHY)
    rejected = engine.request_approval(task.id, "MARK-ACTION again")
    report = engine.validate(checkpoint.ref, offline=True)  # its findings are stored plain
    assert f"approval {rejected.id} is pending (medium risk)" in [
        f.message for f in report.findings
    ]
    engine.decide_approval(rejected.id, False, REJECT_WHY)
    engine.finish_task(task.id, TaskStatus.CANCELLED, CANCEL_WHY)

    assert found_markers(store_root) == []

    # Read back through the API, in clear, exactly as before sealing.
    reasons = [e.reason for e in engine.events(task.id)]
    for expected in (APPROVE_WHY, REJECT_WHY, SETTLE_WHY, JUDGE_WHY, CANCEL_WHY):
        assert expected in reasons
    effect = engine.get_effect(task.id, "deploy-1")
    assert (effect.target, effect.check, effect.note) == (TARGET, CHECK, NOTE)
    assert engine.list_effects(task.id) == [effect]
    decided = engine.get_approval(approved.id)
    assert (decided.action, decided.reason) == (ACTION, APPROVE_WHY)
    assert [(a.action, a.reason) for a in engine.list_approvals(task.id)] == [
        (ACTION, APPROVE_WHY),
        ("MARK-ACTION again", REJECT_WHY),
    ]
    assert [r["accept_reason"] for r in engine.resume_records(task.id)] == [JUDGE_WHY]
    assert engine.get_checkpoint(f"{task.id}@2").note == f"waiting for approval: {ACTION}"


def test_events_without_text_or_task_need_no_key(
    engine: Engine, tmp_path: Path, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes that carry no text load no master key. A task's objective and an effect's kind
    are text (sealed as they are written, `test_field_secrets.py`); a move without a note or a
    reason is not, and goes through with the key gone."""
    repo = init_repo(tmp_path / "repo", {"app.py": "print('v1')\n"})
    task = engine.start_task(repo=repo, objective="no text yet")
    engine.propose_effect(task.id, "pr-1", "pr")
    engine.close()
    monkeypatch.delenv("PITSTOP_KEY")
    with Engine(store_root) as keyless:
        keyless.move_effect(task.id, "pr-1", EffectState.IN_PROGRESS)
        assert [e.action for e in keyless.events(task.id)][-2:] == ["propose", "start"]
        assert keyless.list_effects(task.id)[0].state is EffectState.IN_PROGRESS


def test_a_missing_or_wrong_key_shows_a_marker_in_lists(
    engine: Engine, tmp_path: Path, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = init_repo(tmp_path / "repo", {"app.py": "print('v1')\n"})
    task = engine.start_task(repo=repo, objective="ship the preview")
    engine.propose_effect(task.id, "deploy-1", "deploy", target=TARGET, check=CHECK)
    approval = engine.request_approval(task.id, ACTION)
    engine.decide_approval(approval.id, False, REJECT_WHY)
    engine.close()

    for key in (None, base64.b64encode(os.urandom(32)).decode()):
        if key is None:
            monkeypatch.delenv("PITSTOP_KEY")
        else:
            monkeypatch.setenv("PITSTOP_KEY", key)
        with Engine(store_root) as other:
            (effect,) = other.list_effects(task.id)
            assert (effect.target, effect.check) == (store.UNREADABLE, store.UNREADABLE)
            (listed,) = other.list_approvals()
            assert (listed.action, listed.reason, listed.state.value) == (
                store.UNREADABLE,
                store.UNREADABLE,
                "rejected",
            )
            reasons = {e.action: e.reason for e in other.events(task.id)}
            assert reasons["reject"] == store.UNREADABLE
            assert reasons["start"] is None  # plain facts stay as they were
            assert other.get_approval(approval.id).action == store.UNREADABLE


def _older_store(store_root: Path) -> None:
    """A store as Pitstop wrote it before `0011_sealed_text`: every free text in clear."""
    store_root.mkdir(mode=0o700)
    db = open_database(store_root / "pitstop.db")
    with write_txn(db):
        migrations.apply(db, stop_before="0011_sealed_text")
    at = "2026-01-01T00:00:00.000000Z"
    with write_txn(db):
        for task_id in ("old-task", "gone-task"):
            db.execute(
                "INSERT INTO tasks (id, repo_root, store_repo, objective, status, created_at, "
                "updated_at) VALUES (?, '/nowhere', 'nowhere.git', 'an old task', ?, ?, ?)",
                [task_id, "expired" if task_id == "gone-task" else "paused", at, at],
            )
        events = [
            ("old-task", "approval", "old-task:1", "approve", APPROVE_WHY),
            ("old-task", "effect", "deploy-1", "confirm", "precondition check: already happened"),
            ("gone-task", "task", "gone-task", "cancel", CANCEL_WHY),
            (None, "resume", "1", "fail", "the harness could not start"),
        ]
        for task_id, entity, entity_id, action, reason in events:
            db.execute(
                "INSERT INTO events (at, actor, interface, task_id, entity, entity_id, action, "
                "reason) VALUES (?, 'ann', 'cli', ?, ?, ?, ?, ?)",
                [at, task_id, entity, entity_id, action, reason],
            )
        db.execute(
            "INSERT INTO approvals (id, task_id, seq, action, risk, state, requested_by, "
            "requested_at, decided_by, decided_at, reason) VALUES "
            "('old-task:1', 'old-task', 1, ?, 'medium', 'approved', 'agent', ?, 'ann', ?, ?)",
            [ACTION, at, at, APPROVE_WHY],
        )
        db.execute(
            "INSERT INTO effects (task_id, key, kind, target, check_command, state, note, "
            "created_at, updated_at) VALUES ('old-task', 'deploy-1', 'deploy', ?, ?, "
            "'confirmed', ?, ?, ?)",
            [TARGET, CHECK, NOTE, at, at],
        )
        db.execute(
            "INSERT INTO resumes (task_id, seq, state, verdict, holder_pid, holder_host, "
            "lease_until, accepted, accept_reason, started_at, actor) "
            "VALUES ('old-task', 1, 'done', 'ready', 1, 'here', ?, 1, ?, ?, 'ann')",
            [at, JUDGE_WHY, at],
        )
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def _reads_back(engine: Engine) -> None:
    effect = engine.get_effect("old-task", "deploy-1")
    assert (effect.target, effect.check, effect.note) == (TARGET, CHECK, NOTE)
    approval = engine.get_approval("old-task:1")
    assert (approval.action, approval.reason) == (ACTION, APPROVE_WHY)
    assert [e.reason for e in engine.events("old-task")] == [
        APPROVE_WHY,
        "precondition check: already happened",
    ]
    assert [r["accept_reason"] for r in engine.resume_records("old-task")] == [JUDGE_WHY]
    assert engine.metrics("old-task").duplicate_effects_detected == 1


def test_migration_seals_the_clear_text_of_an_older_store(store_root: Path) -> None:
    _older_store(store_root)
    with Engine(store_root) as engine:
        _reads_back(engine)
        # A task gc retired (expired, no key left) is not given a fresh key to seal its text.
        assert not store.has_wrapped_key(engine.db, "gone-task")
        assert [e.reason for e in engine.events("gone-task")] == [CANCEL_WHY]
    raw = database_bytes(store_root)
    for marker in (ACTION, APPROVE_WHY, TARGET, CHECK, NOTE, JUDGE_WHY):
        assert marker.encode() not in raw
    assert b"the harness could not start" in raw  # a store-level event carries no user text
    with sqlite3.connect(store_root / "pitstop.db") as db:
        (trigger,) = db.execute(
            "SELECT COUNT(*) FROM sqlite_master "
            "WHERE type = 'trigger' AND name = 'events_no_update'"
        ).fetchone()
        assert trigger == 1
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute("UPDATE events SET reason = 'rewritten'")


def test_migration_without_a_key_keeps_old_text_readable_and_seals_new_text(
    store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _older_store(store_root)
    monkeypatch.delenv("PITSTOP_KEY")
    with Engine(store_root) as engine:
        _reads_back(engine)  # as it was: clear text reads as itself
        assert not store.has_wrapped_key(engine.db, "old-task")
    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())
    with Engine(store_root) as engine:
        engine.finish_task("old-task", TaskStatus.CANCELLED, "MARK-LATER-WHY a new reason")
        assert engine.events("old-task")[-1].reason == "MARK-LATER-WHY a new reason"
    assert b"MARK-LATER-WHY" not in database_bytes(store_root)
    assert ACTION.encode() in database_bytes(store_root)  # old rows stay as they were


def test_check_findings_stay_countable_once_reasons_are_sealed(
    engine: Engine, tmp_path: Path
) -> None:
    repo = init_repo(tmp_path / "repo", {"app.py": "print('v1')\n"})
    task = engine.start_task(repo=repo, objective="ship")
    engine.propose_effect(task.id, "deploy-1", "deploy", check="true")
    engine.move_effect(task.id, "deploy-1", EffectState.IN_PROGRESS)
    engine.move_effect(task.id, "deploy-1", EffectState.UNCERTAIN)
    engine.check_effect(task.id, "deploy-1")
    assert engine.metrics(task.id).duplicate_effects_detected == 1
    (detail,) = engine.db.execute(
        "SELECT detail FROM events WHERE task_id = ? AND action = 'confirm'", [task.id]
    ).fetchone()
    assert json.loads(detail) == {"check": "already happened"}


def test_a_sealed_text_moved_to_another_row_reads_as_the_marker(
    engine: Engine, tmp_path: Path
) -> None:
    """Each text is bound to its task and item: copied elsewhere it does not open."""
    repo = init_repo(tmp_path / "repo", {"app.py": "print('v1')\n"})
    task = engine.start_task(repo=repo, objective="ship")
    first = engine.request_approval(task.id, "MARK-ACTION first")
    second = engine.request_approval(task.id, "MARK-ACTION second")
    with write_txn(engine.db):
        engine.db.execute(
            "UPDATE approvals SET action = (SELECT action FROM approvals WHERE id = ?) "
            "WHERE id = ?",
            [first.id, second.id],
        )
    assert engine.get_approval(first.id).action == "MARK-ACTION first"
    assert engine.get_approval(second.id).action == store.UNREADABLE


def test_a_key_made_inside_a_write_that_rolls_back_is_not_kept(
    engine: Engine, tmp_path: Path, store_root: Path
) -> None:
    """Sealing inside a transaction creates the task's key there; a rollback takes both away."""
    repo = init_repo(tmp_path / "repo", {"app.py": "print('v1')\n"})
    task = engine.start_task(repo=repo, objective="ship")  # its objective is sealed: a key
    with write_txn(engine.db):  # a task with no key yet, as an older store has one
        store.delete_wrapped_key(engine.db, task.id)
    engine.close()
    engine = Engine(store_root)
    with pytest.raises(RuntimeError, match="changed my mind"), write_txn(engine.db):
        engine.keys.seal_text(task.id, "probe/1", "first")
        engine.keys.seal_text(task.id, "probe/2", "second")  # reads the uncommitted key
        raise RuntimeError("changed my mind")
    assert not store.has_wrapped_key(engine.db, task.id)
    sealed = engine.keys.seal_text(task.id, "probe/3", "kept")
    assert store.has_wrapped_key(engine.db, task.id)
    with Engine(engine.paths.root) as other:  # a fresh process reads it with the stored key
        assert other.keys.open_text(task.id, "probe/3", sealed) == "kept"
    engine.close()
