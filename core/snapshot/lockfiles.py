"""Dependency lockfiles in a snapshot: which paths they are, and their blob ids.

A lockfile whose blob id changed between checkpoints is dependency drift, which validation
reports before a resume. A chain of checkpoints carries the previous list forward through the
snapshot's own diff instead of walking every new tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from core.git.run import run_git
from core.snapshot.patterns import matches_any

LOCKFILE_NAMES = (
    "uv.lock",
    "poetry.lock",
    "Pipfile.lock",
    "pdm.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lockb",
    "Cargo.lock",
    "go.sum",
    "Gemfile.lock",
    "composer.lock",
    "mix.lock",
    "flake.lock",
    "Package.resolved",
)
LOCKFILE_PATTERNS = ("requirements*.txt", "constraints*.txt")


def is_lockfile(path: str) -> bool:
    """True for a dependency lockfile (by its name, in any directory)."""
    name = path.rsplit("/", 1)[-1]
    return name in LOCKFILE_NAMES or matches_any(LOCKFILE_PATTERNS, name)


def lockfiles_in(store_repo: Path, tree: str) -> dict[str, str]:
    """Lockfiles anywhere in `tree` mapped to their blob ids (a change of id is drift)."""
    raw = run_git(["ls-tree", "-r", "-z", tree], git_dir=store_repo)
    found = {}
    for entry in raw.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.decode("utf-8", errors="surrogateescape").partition("\t")
        if is_lockfile(path):
            found[path] = meta.split()[2]
    return found


def lockfiles_after(
    previous: Mapping[str, str], changes: Iterable[tuple[str, str | None]]
) -> tuple[tuple[str, str], ...]:
    """The lockfiles of a tree, from its predecessor's and the files that changed since
    (path, new blob id or None when gone), sorted by path."""
    # Entries a newer rule set no longer counts are dropped; a file that only a newer rule
    # counts is picked up when it changes (or when a chain starts afresh).
    found = {path: oid for path, oid in previous.items() if is_lockfile(path)}
    for path, oid in changes:
        if is_lockfile(path):
            if oid is None:
                found.pop(path, None)
            else:
                found[path] = oid
    return tuple(sorted(found.items()))
