"""`pitstop doctor`'s search for what killed or failed processes left outside the database:
effect lock files, scratch directories (temporary indexes, checkouts), and resume worktrees
and `pitstop/<task>` branches in the users' repositories.

A leftover is only ever removed when nothing can still be using it: a lock no one holds, a
scratch directory whose process is gone, a worktree no resume records and whose branch holds
no commit of its own (its tip is still the checkpoint's base commit).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
from pathlib import Path

from core import store
from core.engine.doctor_finding import Finding
from core.engine.leases import pid_alive
from core.git.run import run_git
from core.ledger.locks import lock_file_held
from core.session import Session

# Scratch entries of the store's tmp directory that name their process: `snapshot-<pid>-<hex>`
# (core.snapshot.scratch) and `<name>.<pid>.tmp` files; others are judged by their age.
_WITH_PID = re.compile(r"^[a-z]+-(?P<pid>\d+)-[0-9a-f]{12}$|\.(?P<file_pid>\d+)\.tmp$")
_KEPT = {"locks", "git-version"}
_OLD_SECONDS = 3600


def leftover_findings(session: Session) -> list[Finding]:
    """Every leftover outside the database."""
    return [
        *_effect_lock_findings(session),
        *_scratch_findings(session),
        *_resume_findings(session),
    ]


def _effect_lock_findings(session: Session) -> list[Finding]:
    """Lock files of effect keys that no guard holds: one per key stays after its guard ends."""
    directory = session.paths.tmp / "locks" / "effects"
    unheld = [path for path in sorted(directory.glob("*.lock")) if not lock_file_held(path)]
    if not unheld:
        return []
    return [
        Finding(
            "lock-files",
            f"{len(unheld)} effect lock file(s) no guard holds, left in {directory}; --fix "
            "removes them",
            lambda: _remove_unheld(unheld),
        )
    ]


def _remove_unheld(paths: list[Path]) -> str:
    """Remove each lock file while holding it, so no guard holds it as it goes."""
    removed = 0
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink(missing_ok=True)
            removed += 1
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
    return f"removed {removed} unheld effect lock file(s)"


def _scratch_findings(session: Session) -> list[Finding]:
    """Scratch directories and temporary files in the store's tmp whose process is gone."""
    tmp = session.paths.tmp
    stale = [path for path in sorted(tmp.iterdir()) if _stale(path)] if tmp.is_dir() else []
    if not stale:
        return []
    names = ", ".join(path.name for path in stale[:3]) + (" …" if len(stale) > 3 else "")
    return [
        Finding(
            "temporary-files",
            f"{len(stale)} temporary index(es) or scratch directory(ies) left by killed "
            f"processes in {tmp} ({names}); --fix removes them",
            lambda: _remove_paths(stale),
        )
    ]


def _stale(path: Path) -> bool:
    if path.name in _KEPT:
        return False
    match = _WITH_PID.search(path.name)
    if match:
        return not pid_alive(int(match.group("pid") or match.group("file_pid")))
    try:
        return time.time() - path.lstat().st_mtime > _OLD_SECONDS
    except OSError:
        return False


def _remove_paths(paths: list[Path]) -> str:
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return f"removed {len(paths)} temporary file(s) or directory(ies)"


def _resume_findings(session: Session) -> list[Finding]:
    """Worktrees and `pitstop/<task>` branches of failed resumes in the users' repositories."""
    tasks = store.list_tasks(session.db)
    findings: list[Finding] = []
    for repo_root in sorted({task.repo_root for task in tasks}):
        if not Path(repo_root, ".git").exists():
            continue
        mine = {task.id for task in tasks if task.repo_root == repo_root}
        findings += _repo_resume_findings(session, Path(repo_root), mine)
    return findings


def _repo_resume_findings(session: Session, repo: Path, task_ids: set[str]) -> list[Finding]:
    recorded = {
        os.path.realpath(workdir)
        for task_id in task_ids
        for _id, workdir in store.resume_workdirs(session.db, task_id)
    }
    bases = {
        row["base_commit"]
        for task_id in task_ids
        for row in session.db.query(
            "SELECT base_commit FROM checkpoints WHERE task_id = ? AND base_commit IS NOT NULL",
            [task_id],
        )
    }
    branches = _pitstop_branches(repo, task_ids)
    checked_out = _worktrees_on(repo, set(branches))
    findings = []
    for branch, tip in sorted(branches.items()):
        path = checked_out.get(branch)
        if tip not in bases or (path is not None and os.path.realpath(path) in recorded):
            continue  # work of its own, or a resume that went on there: the user's now
        where = f"a worktree at {path} on branch {branch}" if path else f"branch {branch}"
        findings.append(
            Finding(
                "resume-leftover",
                f"{where} in {repo} is left from a failed resume; --fix removes it",
                lambda branch=branch, path=path: _remove_resume(repo, branch, path),  # type: ignore[misc]
            )
        )
    return findings


def _pitstop_branches(repo: Path, task_ids: set[str]) -> dict[str, str]:
    """`pitstop/<task>` (or `-N`) branches of these tasks: branch → tip."""
    out = run_git(
        ["for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/pitstop/"],
        cwd=repo,
    )
    found = {}
    for line in out.decode().splitlines():
        branch, _, tip = line.partition(" ")
        name = branch.removeprefix("pitstop/")
        if name in task_ids or re.sub(r"-\d+$", "", name) in task_ids:
            found[branch] = tip
    return found


def _worktrees_on(repo: Path, branches: set[str]) -> dict[str, str]:
    """Branch → path of the worktrees that have these branches checked out."""
    out = run_git(["worktree", "list", "--porcelain"], cwd=repo).decode()
    found = {}
    for block in out.split("\n\n"):
        fields = dict(line.partition(" ")[::2] for line in block.splitlines() if line)
        branch = fields.get("branch", "").removeprefix("refs/heads/")
        if branch in branches:
            found[branch] = fields["worktree"]
    return found


def _remove_resume(repo: Path, branch: str, path: str | None) -> str:
    if path is not None:
        run_git(["worktree", "remove", "--force", path], cwd=repo)
    run_git(["worktree", "prune"], cwd=repo)
    run_git(["branch", "-D", branch], cwd=repo)
    where = f"worktree {path} and " if path else ""
    return f"removed {where}branch {branch} from {repo}"
