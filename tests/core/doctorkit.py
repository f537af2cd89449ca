"""Damage made for real, the way a crash or a full disk leaves a store: for the doctor tests."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import sqlite3
from pathlib import Path

from corekit import write

from core.engine import CheckpointRequest, Engine
from core.models import EffectState


def lose_wal(
    store_root: Path, repo: Path, task_id: str = "t1", *, effects_in_manifests: bool = False
) -> None:
    """A store whose WAL was lost: checkpoints 2 and 3 and an effect committed, then dropped.

    Checkpoint 1 is checkpointed into the main database file; 2, 3 and the effect live only in
    the WAL when the main file is copied aside, and the copy (without its WAL) replaces the
    store's database. The store repository's ref still names checkpoint 3.
    `effects_in_manifests`: before checkpoint 2, effect `pay-1` is confirmed and `mail-1` left
    in progress, so checkpoints 2 and 3's manifests name them; their rows are lost too.
    """
    database = store_root / "pitstop.db"
    with Engine() as engine:
        engine.start_task(repo=repo, objective="integrity", task_id=task_id)
        engine.checkpoint(task_id, CheckpointRequest(force=True))
        engine.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if effects_in_manifests:
            engine.propose_effect(task_id, "pay-1", "payment", target="invoice 7")
            engine.move_effect(task_id, "pay-1", EffectState.IN_PROGRESS)
            engine.move_effect(task_id, "pay-1", EffectState.CONFIRMED, reason="paid")
            engine.propose_effect(task_id, "mail-1", "email")
            engine.move_effect(task_id, "mail-1", EffectState.IN_PROGRESS)
        for number in (2, 3):
            write(repo / "src/app.py", f"print({number})\n")
            engine.checkpoint(task_id, CheckpointRequest(force=True))
        engine.propose_effect(task_id, "deploy-1", "deploy")
        shutil.copy(database, store_root / "lost.db")
    shutil.copy(store_root / "lost.db", database)
    (store_root / "lost.db").unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)


def store_digest(store_root: Path) -> str:
    """A digest of every file's path, mode and bytes in the store (the database's WAL folded in)."""
    # fold the WAL into the main file, so the digest sees one state (no Engine: it migrates)
    with contextlib.closing(sqlite3.connect(store_root / "pitstop.db")) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    digest = hashlib.sha256()
    for path in sorted(store_root.rglob("*")):
        if path.name.endswith(("-wal", "-shm")):
            continue
        stat = path.lstat()
        digest.update(f"{path.relative_to(store_root)} {stat.st_mode:o}\n".encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()
