"""Where a user's branches point now, read from the repository's ref files.

The dashboard asks this for every validated task on every refresh, to mark a verdict out of
date once the branch it was reached on moves; a git process per task would cost more than the
whole refresh. So the tips are read as git's "files" ref storage holds them (a loose ref over
`packed-refs`, in the common directory a linked worktree shares), and only a repository that
stores its refs another way (reftable), or a ref file this reader does not understand, is asked
through git.
"""

from __future__ import annotations

import re
from pathlib import Path

from core.errors import GitError

_OID = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_UNKNOWN = object()


def common_dir(toplevel: Path) -> Path | None:
    """The directory holding the repository's shared refs (`.git`, or a linked worktree's
    common directory), or None when `toplevel` is not a repository's top level."""
    dot_git = toplevel / ".git"
    try:
        if dot_git.is_dir():
            git_dir = dot_git
        else:
            line = dot_git.read_bytes().split(b"\n", 1)[0]
            if not line.startswith(b"gitdir: "):
                return None
            git_dir = toplevel / line[len(b"gitdir: ") :].decode("utf-8", "surrogateescape")
        commondir = git_dir / "commondir"
        if commondir.is_file():
            shared = commondir.read_text("utf-8", "surrogateescape").strip()
            return (git_dir / shared).resolve()
        return git_dir
    except (OSError, UnicodeError):
        return None


def branch_tip(toplevel: Path, branch: str) -> str | None:
    """The commit `refs/heads/<branch>` of the repository at `toplevel` points at, or None
    when the branch (or the repository) is gone."""
    shared = common_dir(toplevel)
    if shared is None:
        return None
    found = _from_files(shared, f"refs/heads/{branch}")
    if found is _UNKNOWN:
        return _from_git(toplevel, branch)
    return found  # type: ignore[return-value]


def _from_files(shared: Path, ref: str) -> str | object | None:
    """The ref's id from its loose file or `packed-refs`; `_UNKNOWN` when git must be asked."""
    if (shared / "reftable").exists() or ".." in ref.split("/"):
        return _UNKNOWN
    try:
        loose = (shared / ref).read_bytes().strip()
    except FileNotFoundError:
        loose = None
    except OSError:  # a directory in the way, or no permission: git knows better
        return _UNKNOWN
    if loose is not None:
        return loose.decode() if _OID.fullmatch(loose) else _UNKNOWN
    try:
        packed = (shared / "packed-refs").read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        return _UNKNOWN
    wanted = b" " + ref.encode("utf-8", "surrogateescape")
    for line in packed.splitlines():
        if line.endswith(wanted):
            oid = line[: -len(wanted)]
            return oid.decode() if _OID.fullmatch(oid) else _UNKNOWN
    return None


def _from_git(toplevel: Path, branch: str) -> str | None:
    """The branch's tip as git resolves it (a repository with another ref storage)."""
    from core.git.run import run_git  # only here: a listing reading ref files starts no git

    try:
        out = run_git(
            ["rev-parse", "-q", "--verify", f"refs/heads/{branch}^{{commit}}"],
            cwd=toplevel,
            ok_codes=(0, 1),
        )
    except GitError:
        return None
    return out.decode().strip() or None
