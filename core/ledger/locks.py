"""One guard at a time per side effect: an exclusive `flock` on a lock file per key.

The file exists only while held: its holder removes it before unlocking, and a process that
waited for it checks, once it holds it, that it is still the file at that path (else it opens
the new one), so no two ever hold "the" lock of one key and no file is left per key.

A guard holds the lock while it decides and runs, and hands the locked descriptor to the
action, so the lock outlives a guard killed mid-action for as long as the action itself still
runs. A second guard waits for that lock, then finds the effect settled. The database
compare-and-set makes the same guarantee without the lock (only one guard can move an effect
to `in_progress`); the lock adds the waiting, and tells whether a runner is still alive.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from core import store
from core.errors import EffectBusyError
from core.paths import ensure_private_dir
from core.store.db import Database

_POLL_S = 0.05

Notice = Callable[[str], None]


def quiet(_: str) -> None:
    """The default notice sink: say nothing."""


class KeyLocks:
    """The per-key lock files of one store's side effects."""

    def __init__(self, db: Database, lock_dir: Path, keys: store.TextKeys) -> None:
        self.db = db
        self.lock_dir = lock_dir
        self.keys = keys  # to read who holds a lock, for messages

    def path(self, task_id: str, key: str) -> Path:
        """The lock file of one effect key."""
        digest = hashlib.sha256(f"{task_id}\0{key}".encode()).hexdigest()[:32]
        return self.lock_dir / f"{digest}.lock"

    def held(self, task_id: str, key: str) -> bool:
        """True while a guard (or the action it started) holds the key's lock."""
        return lock_file_held(self.path(task_id, key))

    @contextmanager
    def hold(self, task_id: str, key: str, wait: float, notice: Notice = quiet) -> Iterator[int]:
        """Hold the key's lock, waiting up to `wait` seconds for a guard already running it."""
        ensure_private_dir(self.lock_dir)
        path = self.path(task_id, key)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                self._acquire(fd, task_id, key, wait, notice)
            except BaseException:
                os.close(fd)
                raise
            if _still_at(fd, path):
                break
            os.close(fd)  # its holder removed it as it finished: lock the file there now
        try:
            yield fd
        finally:
            # Removed while held, so no key leaves a file behind (a guard killed mid-action
            # leaves its file, still held by the action: that one `pitstop doctor` reports).
            # Unlocking releases the lock for every process sharing the descriptor, so an
            # action's leftover background children cannot keep the key locked after we finish.
            try:
                path.unlink(missing_ok=True)
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def _acquire(self, fd: int, task_id: str, key: str, wait: float, notice: Notice) -> None:
        deadline = time.monotonic() + wait
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                holder = self._holder(task_id, key)
                if time.monotonic() >= deadline:
                    raise EffectBusyError(
                        f"side effect {key!r} of task {task_id} is being run right now by "
                        f"{holder}; wait for it to finish, then look at `pitstop effect show "
                        f"--task {task_id} --key {key}`"
                    ) from None
                if not told:
                    notice(f"waiting for {holder}, which is running side effect {key!r}")
                    told = True
                time.sleep(_POLL_S)

    def _holder(self, task_id: str, key: str) -> str:
        effect = store.find_effect(self.db, task_id, key, self.keys)
        if effect and effect.runner_pid:
            return f"the guard started as pid {effect.runner_pid} on {effect.runner_host}"
        return "another pitstop process"


def _still_at(fd: int, path: Path) -> bool:
    """True when the locked file is still the one at `path` (not removed by its last holder
    while we waited for it, which would make this lock no one else's)."""
    try:
        current = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino)


def lock_file_held(path: Path) -> bool:
    """True while some process holds the lock file at `path` (never takes it for long)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
