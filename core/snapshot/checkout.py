"""Materialising a snapshot tree: writing it, byte for byte, into a new directory.

A restore never touches the user's work tree; it writes into a directory of its own. git does
the writing (modes, symlinks and line endings exactly as stored) through a scratch index, and a
write that fails half-way (a missing blob) takes back what it wrote. Files stored sealed (they
hold a secret) are then given their real bytes, opened by the caller before anything is written.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.errors import DamagedCheckpointError, GitError, UsageError
from core.git.reader import held_objects
from core.git.run import run_git
from core.snapshot.scratch import scratch_directory
from core.snapshot.sealed_files import SealedFile, write_real_files

# Write the tree exactly as stored, whatever the user's git config says.
_EXACT_CHECKOUT = (
    "-c",
    "core.symlinks=true",
    "-c",
    "core.filemode=true",
    "-c",
    "core.autocrlf=false",
)


def materialise(
    store_repo: Path,
    tree: str,
    into: Path,
    scratch_dir: Path,
    sealed: Sequence[SealedFile] = (),
    opened: Mapping[str, bytes] | None = None,
) -> int:
    """Write `tree` into the new directory `into` byte for byte; return the number of files.

    `sealed`: the tree's sealed files, with `opened` their real bytes (stand-in → bytes, from
    `open_sealed`), written in place of their stand-ins.
    """
    _require_new_directory(into)
    if not held_objects(store_repo, [tree])[tree]:
        raise DamagedCheckpointError(
            f"snapshot tree {tree[:12]} is missing from the store; "
            "this checkpoint cannot be restored"
        )
    created = not into.exists()
    try:
        into.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file, no permission, a name too long…
        raise UsageError(
            f"cannot create {_shown(into)}: {exc.strerror or exc}; choose another directory "
            "for --into"
        ) from exc
    scratch_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        count = _checkout_tree(store_repo, tree, into, scratch_dir)
        write_real_files(into, sealed, opened or {})
    except GitError as exc:
        # A missing blob surfaces here, half-way: take back what was written.
        _take_back(into, created)
        raise DamagedCheckpointError(
            f"snapshot tree {tree[:12]} cannot be restored: {exc.message}"
        ) from exc
    except BaseException:
        _take_back(into, created)
        raise
    return count


def _shown(path: Path) -> str:
    """A path for a one-line message: a very long one cut, visibly."""
    text = str(path)
    return text if len(text) <= 120 else f"{text[:117]}..."


def _require_new_directory(into: Path) -> None:
    """Refuse a target that exists and is not an empty directory, or cannot be looked up."""
    try:
        taken = into.exists() and (not into.is_dir() or any(into.iterdir()))
    except OSError as exc:
        raise UsageError(
            f"cannot use {_shown(into)}: {exc.strerror or exc}; choose another directory for --into"
        ) from exc
    if taken:
        raise UsageError(
            f"{_shown(into)} already exists and is not empty; choose a new directory for --into"
        )


def _take_back(into: Path, created: bool) -> None:
    """Remove what a failed checkout wrote: the directory itself when it made it."""
    if created:
        shutil.rmtree(into, ignore_errors=True)
        return
    for child in into.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _checkout_tree(store_repo: Path, tree: str, into: Path, scratch_dir: Path) -> int:
    """`read-tree` into a scratch index, `checkout-index` into `into`; the index's entry
    count is the number of files written."""
    with scratch_directory(scratch_dir, "checkout-") as temp:
        env = {"GIT_INDEX_FILE": str(temp / "index"), "GIT_WORK_TREE": str(into)}
        run_git([*_EXACT_CHECKOUT, "read-tree", tree], git_dir=store_repo, env=env)
        # the scratch index stays private; the files are the user's, under the user's umask
        run_git(
            [*_EXACT_CHECKOUT, "checkout-index", "-a", "-f"],
            git_dir=store_repo,
            env=env,
            cwd=into,
            private=False,
        )
        with (temp / "index").open("rb") as index:
            header = index.read(12)  # "DIRC", version, entry count (big-endian)
    return int.from_bytes(header[8:12], "big")
