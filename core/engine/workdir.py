"""Where a task's agent works now, so its checkpoints snapshot that directory.

A task starts in its repository (`repo_root`). `pitstop resume --into DIR` restores a checkpoint
into a new worktree and the resumed agent works there from then on: its hooks report `cwd: DIR`,
and a checkpoint of the original repository would record none of its work while attaching DIR's
evidence (issue 15, bug 2). So a task's working directory is, in order:

1. the directory of the task's that holds the event's `cwd` (its repository, or the directory of
   one of its resumes), when a hook says where the agent is;
2. else the directory of the task's newest resume that still exists (a rejected resume's
   directory is not where the task goes on);
3. else its repository.

Only the task's own directories are candidates: an event's `cwd` elsewhere never makes Pitstop
snapshot another directory. A change of directory is audited (`task … workdir`, from and to as
`repository` / `resume N`, the path in the sealed reason).
"""

from __future__ import annotations

import os
from pathlib import Path

from core import clock, store
from core.models import Task
from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

REPOSITORY = "repository"


class Workdir(NamedTuple):
    """A task's working directory, and which of its directories it is (for the audit)."""

    path: Path
    name: str


def _resolved(path: str | os.PathLike[str]) -> Path:
    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):  # ValueError: a NUL byte in a hook's cwd
        return Path(path).expanduser().absolute()


def _candidates(session: Session, task: Task) -> list[Workdir]:
    """The task's resume directories (newest first), then its repository."""
    found = [
        Workdir(_resolved(path), f"resume {resume_id}")
        for resume_id, path in store.resume_workdirs(session.db, task.id)
    ]
    repository = _resolved(task.repo_root)
    found = [c if c.path != repository else Workdir(repository, REPOSITORY) for c in found]
    return [*found, Workdir(repository, REPOSITORY)]


def _holds(directory: Path, path: Path) -> bool:
    return path == directory or directory in path.parents


def task_workdir(session: Session, task: Task, hint: str | os.PathLike[str] | None) -> Workdir:
    """The directory the task's checkpoints snapshot now (see the module's rules)."""
    candidates = _candidates(session, task)
    if hint:
        where = _resolved(hint)
        holding = [c for c in candidates if _holds(c.path, where)]
        if holding:  # the deepest directory holding the cwd (a resume dir inside the repository)
            return max(holding, key=lambda c: len(c.path.parts))
    for candidate in candidates:
        if candidate.name == REPOSITORY or candidate.path.is_dir():
            return candidate
    return candidates[-1]


def is_task_directory(session: Session, task: Task, toplevel: str | os.PathLike[str]) -> bool:
    """Whether `toplevel` is one of the task's directories (its repository or a resume's)."""
    where = _resolved(toplevel)
    return any(c.path == where for c in _candidates(session, task))


def audit_move(session: Session, task: Task, workdir: Workdir) -> None:
    """Record that the task's checkpoints now snapshot another directory (call in a txn)."""
    before = store.latest_workdir_move(session.db, task.id) or REPOSITORY
    if before == workdir.name:
        return
    session.record_event(
        task.id,
        "task",
        task.id,
        "workdir",
        before,
        workdir.name,
        f"checkpoints now snapshot {workdir.path}",
        clock.now_iso(),
    )
