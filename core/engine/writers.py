"""One checkpoint writer per task: the lock that serialises them, and what a dead one leaves.

A checkpoint is written in steps (objects, commit, ref, row), so two writers of one task must not
interleave, and a reader must tell a writer still at work from one that died halfway. An OS file
lock answers both: the kernel drops it when its holder dies. `gc` takes the same locks before it
prunes a store repository's unreachable objects.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core import clock, store
from core.models import Checkpoint, CheckpointState
from core.paths import StorePaths
from core.session import Session
from core.store.db import disk_full, is_disk_full, write_txn

STOPPED_WRITER = "the process writing this checkpoint stopped before it completed"


def lock_path(paths: StorePaths, task_id: str) -> Path:
    """The lock file a task's checkpoint writers hold."""
    return paths.tmp / "locks" / f"{task_id}.lock"


@contextmanager
def task_lock(paths: StorePaths, task_id: str) -> Iterator[None]:
    """Serialise checkpoint writers of one task; the OS drops the lock if a writer dies."""
    path = lock_path(paths, task_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextmanager
def failed_writes_discarded(session: Session, task_id: str, store_repo: Path) -> Iterator[None]:
    """On a failed checkpoint, remove the objects it wrote at once, and say so on a full disk.

    The snapshot's objects are written before anything names them, so a failure (a full disk,
    a refusal) leaves them unreachable; `git prune` takes them, but only while no other task's
    writer is between writing its objects and pointing its ref at them: their locks are tried,
    never waited for (a busy repository is left to `pitstop gc` / `pitstop doctor --fix`).
    """
    from core.git.pack_writer import WRITTEN

    mark = len(WRITTEN)
    try:
        yield
    except BaseException as exc:
        packs = [idx for idx in WRITTEN[mark:] if idx.parent.parent.parent == store_repo]
        del WRITTEN[mark:]
        pruned = _prune_unreferenced(session, task_id, store_repo, packs)
        said = str(getattr(exc, "message", ""))  # git's words for ENOSPC, in a GitError
        if is_disk_full(exc) or "No space left on device" in said or "Out of diskspace" in said:
            removed = "the objects it wrote were removed" if pruned else "`pitstop gc` removes them"
            raise disk_full(f"the checkpoint was not taken and {removed}") from exc
        raise


def _prune_unreferenced(
    session: Session, task_id: str, store_repo: Path, packs: list[Path]
) -> bool:
    """Prune the store repository when no other writer of it is at work; True when done.

    The `packs` the failed checkpoint wrote (its snapshot's objects) go too, but only when no
    other task shares the repository: another task's checkpoint, finished meanwhile, may have
    found an object there and named it, and a pack is removed whole, not by reachability as
    `git prune` removes loose objects (`pitstop gc` repacks by reachability)."""
    from core.errors import GitError
    from core.git.pack_writer import remove_pack
    from core.git.run import run_git

    others = [
        task.id
        for task in store.list_tasks(session.db)
        if task.store_repo == store_repo.name and task.id != task_id
    ]
    descriptors: list[int] = []
    try:
        for other in others:
            path = lock_path(session.paths, other)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            descriptors.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        run_git(["prune", "--expire=now"], git_dir=store_repo)
        if packs and others:
            return False
        for idx in packs:
            remove_pack(idx)
        return True
    except (BlockingIOError, GitError, OSError):
        return False
    finally:
        for fd in descriptors:
            os.close(fd)


def writer_alive(paths: StorePaths, task_id: str) -> bool:
    """True while some process holds the task's checkpoint lock."""
    path = lock_path(paths, task_id)
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def expire_stale_writers(session: Session, task_id: str) -> None:
    """Durably mark `writing` checkpoints whose writer died as `incomplete` (lock held)."""
    stale = store.writing_seqs(session.db, task_id)
    if not stale:
        return
    now = clock.now_iso()
    with write_txn(session.db):
        for seq in stale:
            if store.mark_incomplete(session.db, task_id, seq, STOPPED_WRITER):
                session.record_event(
                    task_id,
                    "checkpoint",
                    f"{task_id}@{seq}",
                    "fail",
                    CheckpointState.WRITING.value,
                    CheckpointState.INCOMPLETE.value,
                    STOPPED_WRITER,
                    now,
                )


def displayed(paths: StorePaths, checkpoint: Checkpoint) -> Checkpoint:
    """A `writing` checkpoint whose writer is gone is shown as `incomplete`."""
    if checkpoint.state is CheckpointState.WRITING and not writer_alive(paths, checkpoint.task_id):
        return checkpoint._replace(state=CheckpointState.INCOMPLETE, failure=STOPPED_WRITER)
    return checkpoint
