"""A checkpoint's `git status`, started before the checkpoint is sure to need it (issue 21).

Scanning the work tree is the slowest step of a repeat checkpoint (~25 ms of `git status` on a
7,000-file repository), and in a fresh `pitstop checkpoint` or hook process everything before
it (loading the engine, opening the store and the keys, reading the previous checkpoint) costs
as much again. So the entry points that are about to checkpoint call `start` first: it finds
the repository around the agent's directory the way git does, copies its index privately into
the store's scratch directory, as the snapshot would, and starts the same `git status` on that
copy, and beside it the config and `rev-parse` calls `source.locate` reads (taken by `locate`
when it asks about the very same directory; else stopped). The snapshot takes the running
scan over (`claim`) when it snapshots that very repository and index; a scan of anything else
is killed and its copy removed, and the snapshot scans for itself as before (`discard`, also
called by whoever started it once the checkpoint is done).

The scan changes nothing in the user's repository: git runs on the copied index, with optional
locks off (`core.git.run.clean_env`), and `status` writes no objects (invariant 8). The index
copy and the scan of it are one consistent state, exactly as when the snapshot copies and
scans itself; only the moment is a few tens of milliseconds earlier.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.snapshot.scratch import new_scratch_directory, remove_tree

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

if TYPE_CHECKING:
    from core.git.spawn import Spawned
    from core.snapshot.source import SourceRepo

# The prefix every snapshot's scratch directory has, so `pitstop doctor` knows a killed
# process's copy (core.snapshot.scratch, core.engine.doctor_leftovers).
SCRATCH_PREFIX = "snapshot-"

# The scan of the work tree: tracked changes, untracked and ignored files, submodules
# (parsed by `core.snapshot.selection.parse_status`).
STATUS_ARGS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--untracked-files=all",
    "--ignored=matching",
    "--no-renames",
    "--ignore-submodules=none",
)


class EarlyScan:
    """A `git status` running on a private index copy of one repository."""

    __slots__ = ("directory", "git_dir", "process", "toplevel")

    def __init__(self, toplevel: Path, git_dir: Path, directory: Path, process: Spawned) -> None:
        self.toplevel = toplevel
        self.git_dir = git_dir
        self.directory = directory  # the scratch directory; `index` in it is the copy
        self.process = process

    def close(self) -> None:
        """Stop the scan (and the locating calls nobody took) if still running; remove the
        copy."""
        from core.git.run import stop_git
        from core.snapshot.locate_calls import discard_early

        discard_early()
        stop_git(self.process)
        remove_tree(self.directory)


_pending: EarlyScan | None = None


def start(cwd: str | None, scratch_parent: Path) -> None:
    """Start scanning the repository around `cwd` for a checkpoint about to be taken.

    Does nothing where the snapshot's own way could differ or where there is nothing to gain:
    no such directory, no store yet (nothing is created for a guess), a `.git` file (linked
    worktrees and submodules), no index. Never raises: a scan that cannot start is simply
    not there, and the snapshot scans for itself.
    """
    global _pending
    discard()
    if not cwd or not scratch_parent.parent.is_dir():
        return
    try:
        found = _repository_of(Path(cwd))
        if found is None:
            return
        toplevel, git_dir = found
        index = git_dir / "index"
        if not index.is_file():
            return
        scratch_parent.mkdir(mode=0o700, exist_ok=True)
        directory = new_scratch_directory(scratch_parent, SCRATCH_PREFIX)
    except OSError:
        return
    try:
        copy = directory / "index"
        copy_index(index, copy)
        from core.git.run import spawn_git

        process = spawn_git(STATUS_ARGS, cwd=toplevel, env={"GIT_INDEX_FILE": str(copy)})
    except Exception:
        remove_tree(directory)
        return
    _pending = EarlyScan(toplevel, git_dir, directory, process)
    try:
        from core.snapshot.locate_calls import start_early

        start_early(Path(cwd))  # `source.locate` takes them when it asks about `cwd`
    except Exception:
        return  # `locate` starts its own


def copy_index(index: Path, copy: Path) -> None:
    """A private copy of a user's index, for git to read and refresh instead of the user's."""
    status = os.stat(index)
    with open(index, "rb") as source:
        data = source.read()
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private, not the user's 0644
    with os.fdopen(fd, "wb") as target:
        target.write(data)
    os.chmod(copy, 0o600)  # an existing copy keeps no other mode
    # its times too: git's racy-index checks compare entries' times with the index file's
    os.utime(copy, ns=(status.st_atime_ns, status.st_mtime_ns))


def claim(source: SourceRepo) -> EarlyScan | None:
    """The scan started for `source`'s work tree and index, handed over to the snapshot (which
    then owns its directory); any other scan is discarded and None returned."""
    global _pending
    scan, _pending = _pending, None
    if scan is None:
        return None
    same = (
        scan.toplevel == source.toplevel
        and scan.git_dir == source.git_dir
        and _resolved(source.index_file) == scan.git_dir / "index"
    )
    if same:
        return scan
    scan.close()
    return None


def discard() -> None:
    """Stop and remove a scan nobody claimed (a skipped checkpoint, another directory)."""
    global _pending
    scan, _pending = _pending, None
    if scan is not None:
        scan.close()


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def _repository_of(start: Path) -> tuple[Path, Path] | None:
    """(work tree top, git directory) of the repository `start` is in, found as git finds it
    (the nearest `.git` directory holding a HEAD); None for a `.git` file or none at all. A
    guess git would not make (a mount point in between, `core.worktree`) is caught by `claim`,
    which compares it with what `git rev-parse` found."""
    if "GIT_CEILING_DIRECTORIES" in os.environ:  # git's search differs: leave it to git
        return None
    try:
        directory = start.resolve()
    except OSError:
        return None
    if not directory.is_dir():
        return None
    for candidate in (directory, *directory.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir() and (dot_git / "HEAD").is_file():
            return candidate, dot_git
        if dot_git.exists():
            return None  # a `.git` file (a linked worktree, a submodule): the snapshot's own way
    return None
