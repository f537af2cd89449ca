"""Harness sessions: which Claude Code or Codex session feeds which task.

Hooks arrive with only a harness's session id; this mapping lets them find their task, and the
newest session of a task is what a resume asks the harness to continue. A session never seen
before may be meant for a task someone registered on its repository (`pitstop task start`), or
for one whose session ended: when exactly one open task there has no live session, that is it.
"""

from __future__ import annotations

import os

from core import clock, store
from core.engine.workdir import is_task_directory
from core.errors import NotAGitRepoError, UsageError
from core.models import NamedVersion, Task, TaskStatus
from core.redaction.free_text import persistable
from core.session import Session
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def session_task(session: Session, harness: str, session_id: str) -> Task | None:
    """The task a harness session already feeds, or None for a session never seen."""
    task_id = store.session_task_id(session.db, harness, session_id)
    return store.get_task(session.db, task_id) if task_id else None


def link_harness_session(
    session: Session,
    task_id: str,
    harness: str,
    session_id: str,
    *,
    transcript_path: str | None = None,
    cwd: str | None = None,
    harness_version: str | None = None,
) -> None:
    """Record that a harness session feeds a task; the newest one is what a resume continues.

    A task that does not know its harness's version yet (registered without one, or started by
    a session that did not say) learns it from the session, when the session knows it.
    """
    if not session_id.strip() or len(session_id) > 200:
        raise UsageError("a harness session id is 1-200 characters")
    now = clock.now_iso()
    with write_txn(session.db):
        # the harness is sealed: opened (the key loaded) only when there is a version to learn
        task = store.get_task(session.db, task_id, session.keys if harness_version else None)
        if harness_version and (
            task.harness is None or (task.harness.name == harness and not task.harness.version)
        ):
            version = persistable(harness_version)[:100]
            store.set_task_harness(
                session.db, task_id, NamedVersion(harness, version), session.keys
            )
        known = store.session_task_id(session.db, harness, session_id)
        store.upsert_harness_session(
            session.db,
            harness=harness,
            session_id=session_id,
            task_id=task_id,
            transcript_path=transcript_path,
            cwd=cwd,
            at=now,
        )
        if known != task_id:
            session.record_event(task_id, "session", session_id, "link", known, harness, None, now)


def harness_session(session: Session, task_id: str) -> dict[str, Any] | None:
    """The task's newest harness session: harness, session_id, transcript_path, cwd."""
    store.get_task(session.db, task_id)
    return store.latest_harness_session(session.db, task_id)


def free_task_on_repo(session: Session, repo: str | os.PathLike[str]) -> Task | None:
    """The one open task on the repository at `repo` that no live session feeds, if exactly one.

    A task is on the repository when it is its repository or the worktree a resume of it was
    restored into (where the task goes on, `core/engine/workdir.py`). A session is live while
    it feeds a running or waiting task (a session's end pauses its task); a task being resumed
    is taken. Two or more free tasks are ambiguous: None.
    """
    from core import snapshot

    try:
        toplevel = str(snapshot.resolve_source_repo(repo).toplevel)
    except NotAGitRepoError:
        return None
    free = [
        task
        for task in store.list_tasks(session.db)
        if not task.status.is_final
        and (task.repo_root == toplevel or is_task_directory(session, task, toplevel))
        and not _fed_by_a_live_session(session, task, toplevel)
    ]
    return free[0] if len(free) == 1 else None


def _fed_by_a_live_session(session: Session, task: Task, toplevel: str) -> bool:
    if task.status is TaskStatus.RESUMING:
        # Taken, except by the session the resume is waiting for: the first one in the
        # directory it restored into (`resume --no-launch`, then the harness started by hand).
        return not _awaited_in(session, task, toplevel)
    if task.status not in (TaskStatus.RUNNING, TaskStatus.WAITING):
        return False
    return store.latest_harness_session(session.db, task.id) is not None


def _awaited_in(session: Session, task: Task, toplevel: str) -> bool:
    """Whether the task's live resume restored into `toplevel` and no session joined it since."""
    from pathlib import Path

    for lease in store.active_resumes(session.db, task.id):
        if lease["workdir"] and Path(lease["workdir"]).resolve() == Path(toplevel).resolve():
            joined = store.latest_harness_session(session.db, task.id)
            return joined is None or joined["seen_at"] < lease["started_at"]
    return False
