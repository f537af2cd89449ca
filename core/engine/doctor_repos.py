"""`pitstop doctor`'s checks of the store's repositories against the database, and of what
killed writers leave in them: refs ahead of rows, sequence gaps, unreachable and temporary
objects, git lock files, and files that are not private.

Every fix that touches a repository holds the checkpoint locks of the tasks using it (as gc
does), so no checkpoint is between writing its objects and pointing its ref at them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from core import clock, store
from core.engine.doctor_finding import Finding
from core.engine.gc import repo_writers_locked
from core.engine.integrity import RefAhead
from core.git.run import run_git
from core.models import CheckpointReason
from core.session import Session
from core.store.db import write_txn

LOST = "lost from the database (a damaged or dropped WAL); its commit is kept under {ref}"


def repo_findings(session: Session) -> list[Finding]:
    """Every check of the store repositories, repository by repository."""
    findings: list[Finding] = []
    repos = sorted(session.paths.repos.glob("*.git")) if session.paths.repos.is_dir() else []
    for repo in repos:
        if (repo / "objects").is_dir():
            findings += _ref_findings(session, repo)
            findings += _garbage_findings(session, repo)
            findings += _git_lock_findings(session, repo)
    findings += _gap_findings(session)
    return findings


def _ref_findings(session: Session, repo: Path) -> list[Finding]:
    from core import snapshot

    rows = {
        row[0]: int(row[1])
        for row in session.db.execute("SELECT task_id, MAX(seq) FROM checkpoints GROUP BY task_id")
    }
    findings = []
    for task_id, (commit, seq) in snapshot.checkpoint_ref_seqs(repo).items():
        if task_id in rows and seq > rows[task_id]:
            ahead = RefAhead(task_id, repo, commit, seq, rows[task_id])
            findings.append(
                Finding(
                    "ref-ahead",
                    f"{ahead.line}; --fix records the lost numbers as incomplete and keeps "
                    "their commits",
                    lambda ahead=ahead: _record_lost(session, ahead),  # type: ignore[misc]
                    task_id,
                )
            )
    return findings


def _record_lost(session: Session, ahead: RefAhead) -> str:
    """Record the lost checkpoints as `incomplete` (so no number is reused) and keep the ref's
    commit reachable under `refs/pitstop/lost/<task>`, since the next checkpoint moves the ref."""
    from core.git.refs import set_ref

    keep = f"refs/pitstop/lost/{ahead.task_id}"
    set_ref(ahead.store_repo, keep, ahead.commit)
    seqs = range(ahead.row_seq + 1, ahead.ref_seq + 1)
    _record_missing(session, ahead.task_id, list(seqs), LOST.format(ref=keep))
    return f"recorded {ahead.task_id}@{ahead.row_seq + 1}..@{ahead.ref_seq} as lost; kept {keep}"


def _record_missing(session: Session, task_id: str, seqs: list[int], failure: str) -> None:
    now = clock.now_iso()
    with write_txn(session.db):
        for seq in seqs:
            store.insert_writing_checkpoint(
                session.db,
                task_id=task_id,
                seq=seq,
                reason=CheckpointReason.MANUAL,
                note=None,
                created_at=now,
                writer_pid=0,
                writer_host="pitstop doctor",
            )
            store.mark_incomplete(session.db, task_id, seq, failure)


def _gap_findings(session: Session) -> list[Finding]:
    """Checkpoint numbers missing below a task's newest (rows are never deleted here; a task
    fetched from a remote is left alone, since remotes carry only complete checkpoints)."""
    rows = session.db.execute(
        "SELECT c.task_id, group_concat(c.seq) FROM checkpoints c JOIN tasks t ON t.id = c.task_id "
        "WHERE t.origin_store IS NULL GROUP BY c.task_id"
    ).fetchall()
    findings = []
    for task_id, listed in rows:
        seqs = {int(seq) for seq in str(listed).split(",")}
        missing = sorted(set(range(1, max(seqs) + 1)) - seqs)
        if missing:
            numbers = ", ".join(f"@{seq}" for seq in missing)
            findings.append(
                Finding(
                    "sequence-gap",
                    f"the database lost checkpoint row(s) {task_id} {numbers}; --fix records "
                    "them as incomplete so their numbers are never reused",
                    lambda task_id=task_id, missing=missing: _record_gap(session, task_id, missing),  # type: ignore[misc]
                    task_id,
                )
            )
    return findings


def _record_gap(session: Session, task_id: str, missing: list[int]) -> str:
    _record_missing(session, task_id, missing, "lost from the database")
    return f"recorded {task_id} {', '.join(f'@{seq}' for seq in missing)} as lost"


def _garbage_findings(session: Session, repo: Path) -> list[Finding]:
    """Unreachable objects and git's temporary files: what a failed or killed checkpoint left."""
    listed = _prune(repo, dry_run=True)
    if not listed:
        return []
    size = sum(_size(repo / path) for path in listed)
    return [
        Finding(
            "temporary-objects",
            f"{repo.name}: {len(listed)} unreachable object(s) or temporary file(s) "
            f"({size} bytes) left by failed checkpoints; --fix prunes them",
            lambda: _prune_locked(session, repo),
        )
    ]


def _prune(repo: Path, *, dry_run: bool) -> list[str]:
    """What `git prune --expire=now` removes (or, dry, would): paths relative to `repo`."""
    out = run_git(["prune", "--expire=now", "-v", *(["-n"] if dry_run else [])], git_dir=repo)
    paths = []
    for line in out.decode(errors="replace").splitlines():
        if line.startswith("Removing stale temporary file "):
            paths.append(line.removeprefix("Removing stale temporary file ").removeprefix("./"))
        elif len(line.split()) == 2:
            oid = line.split()[0]
            paths.append(f"objects/{oid[:2]}/{oid[2:]}")
    return paths


def _prune_locked(session: Session, repo: Path) -> str:
    with repo_writers_locked(session.db, session.paths, repo.name):
        removed = _prune(repo, dry_run=False)
    return f"{repo.name}: pruned unreachable and temporary objects ({len(removed)})"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _git_lock_findings(session: Session, repo: Path) -> list[Finding]:
    """git `*.lock` files a killed git or writer left: they make the next ref update fail."""
    locks = sorted(
        path for path in [*repo.glob("*.lock"), *repo.glob("refs/**/*.lock")] if path.is_file()
    )
    if not locks:
        return []
    names = ", ".join(str(path.relative_to(repo)) for path in locks)
    return [
        Finding(
            "lock-files",
            f"{repo.name}: git lock file(s) left by a killed writer ({names}); --fix removes "
            "them while no checkpoint is being written",
            lambda: _remove_git_locks(session, repo),
        )
    ]


def _remove_git_locks(session: Session, repo: Path) -> str:
    with repo_writers_locked(session.db, session.paths, repo.name):
        locks = [*repo.glob("*.lock"), *repo.glob("refs/**/*.lock")]
        for path in locks:
            path.unlink(missing_ok=True)
    return f"{repo.name}: removed {len(locks)} git lock file(s)"


def mode_findings(root: Path) -> list[Finding]:
    """Store files or directories others may read or write (the store is 0700, its files 0600)."""
    loose = [path for path in [root, *root.rglob("*")] if _shared(path)]
    if not loose:
        return []
    shown = ", ".join(str(path.relative_to(root)) or "." for path in loose[:3])
    more = f" and {len(loose) - 3} more" if len(loose) > 3 else ""
    return [
        Finding(
            "file-modes",
            f"{len(loose)} store path(s) others can read or write ({shown}{more}); --fix "
            "makes them private",
            lambda: _make_private(loose),
        )
    ]


def _shared(path: Path) -> bool:
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    return not stat.S_ISLNK(mode) and bool(mode & 0o077)


def _make_private(paths: list[Path]) -> str:
    for path in paths:
        mode = path.lstat().st_mode
        os.chmod(path, stat.S_IMODE(mode) & 0o700)
    return f"made {len(paths)} store path(s) private (group and other bits cleared)"
