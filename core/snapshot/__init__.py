"""The git side of checkpoints: write, verify and materialise exact worktree snapshots.

A snapshot is written into the store's *own* bare repository for the source repository, never
into the user's `.git` (invariant 8), and the store then holds every object it needs by itself,
so a `git gc` in the user's repository can never break a checkpoint (DESIGN §6).

This package's modules each own one step; the names the engine, restore, sharing and the demo
use are gathered here, so they keep calling `snapshot.X`:

- `source`: the user's repository located, and the facts a manifest records about it
- `store_repos`: the store's own repositories, and copying into them what a snapshot needs
- `selection`: what a snapshot keeps and leaves out (credentials, secrets, size limits, ignored)
- `secret_scan`: the redactor's rules applied to a file; `staged`: staged blobs judged too
- `sealed_files`: tracked files holding a secret, stored sealed, and put back on restore
- `take`: taking the snapshot itself; `checkpoint`: its commit and the task's ref
- `verify`: re-reading a checkpoint; `verified`: what the store held when last verified
- `checkout`: materialising a tree into a directory
- `diff`: changed files and unified diffs; `lockfiles`: dependency lockfiles in a tree
- `manifest`: the manifest and header built from all of it
- `gitpython_adapter`: the only module that uses GitPython; `patterns`, `scratch`: helpers

The names load on first use (PEP 562), each from its module: reading a checkpoint's manifest
(`core.snapshot.manifest`) or verifying one must not import how snapshots are taken (issue 22:
`pitstop show` starts like a git command).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

    from core.git.objects import EMPTY_TREE as EMPTY_TREE
    from core.git.reader import read_blob as read_blob
    from core.git.reader import tree_of_commit as tree_of_commit
    from core.git.version import git_version as git_version
    from core.snapshot.checkout import materialise as materialise
    from core.snapshot.checkpoint import MANIFEST_FILE as MANIFEST_FILE
    from core.snapshot.checkpoint import checkpoint_ref_seqs as checkpoint_ref_seqs
    from core.snapshot.checkpoint import update_checkpoint_ref as update_checkpoint_ref
    from core.snapshot.checkpoint import write_checkpoint_commit as write_checkpoint_commit
    from core.snapshot.diff import changed_files as changed_files
    from core.snapshot.diff import changed_files_after as changed_files_after
    from core.snapshot.diff import unified_diff as unified_diff
    from core.snapshot.lockfiles import LOCKFILE_PATTERNS as LOCKFILE_PATTERNS
    from core.snapshot.lockfiles import lockfiles_in as lockfiles_in
    from core.snapshot.sealed_files import AllowedSecret as AllowedSecret
    from core.snapshot.sealed_files import SealedFile as SealedFile
    from core.snapshot.sealed_files import Sealing as Sealing
    from core.snapshot.sealed_files import open_sealed as open_sealed
    from core.snapshot.sealed_files import sealed_files_of as sealed_files_of
    from core.snapshot.sealed_files import sealed_reuse_map as sealed_reuse_map
    from core.snapshot.secret_scan import SecretHit as SecretHit
    from core.snapshot.secret_scan import describe_secret as describe_secret
    from core.snapshot.secret_scan import first_secret as first_secret
    from core.snapshot.selection import SECRET_NAME_PATTERNS as SECRET_NAME_PATTERNS
    from core.snapshot.selection import SnapshotLimits as SnapshotLimits
    from core.snapshot.source import HeadFacts as HeadFacts
    from core.snapshot.source import Located as Located
    from core.snapshot.source import SourceRepo as SourceRepo
    from core.snapshot.source import locate as locate
    from core.snapshot.source import repo_facts as repo_facts
    from core.snapshot.source import resolve_source_repo as resolve_source_repo
    from core.snapshot.source import strip_url_credentials as strip_url_credentials
    from core.snapshot.store_repos import adopt_base_commit as adopt_base_commit
    from core.snapshot.store_repos import ensure_store_repo as ensure_store_repo
    from core.snapshot.take import Snapshot as Snapshot
    from core.snapshot.take import take_snapshot as take_snapshot
    from core.snapshot.verified import record_verified as record_verified
    from core.snapshot.verify import verify_checkpoint as verify_checkpoint
    from core.snapshot.verify import verify_previous as verify_previous

_EXPORTS = {
    "EMPTY_TREE": "core.git.objects",
    "read_blob": "core.git.reader",
    "tree_of_commit": "core.git.reader",
    "git_version": "core.git.version",
    "materialise": "core.snapshot.checkout",
    "MANIFEST_FILE": "core.snapshot.checkpoint",
    "checkpoint_ref_seqs": "core.snapshot.checkpoint",
    "update_checkpoint_ref": "core.snapshot.checkpoint",
    "write_checkpoint_commit": "core.snapshot.checkpoint",
    "changed_files": "core.snapshot.diff",
    "changed_files_after": "core.snapshot.diff",
    "unified_diff": "core.snapshot.diff",
    "LOCKFILE_PATTERNS": "core.snapshot.lockfiles",
    "lockfiles_in": "core.snapshot.lockfiles",
    "AllowedSecret": "core.snapshot.sealed_files",
    "SealedFile": "core.snapshot.sealed_files",
    "Sealing": "core.snapshot.sealed_files",
    "open_sealed": "core.snapshot.sealed_files",
    "sealed_files_of": "core.snapshot.sealed_files",
    "sealed_reuse_map": "core.snapshot.sealed_files",
    "SecretHit": "core.snapshot.secret_scan",
    "describe_secret": "core.snapshot.secret_scan",
    "first_secret": "core.snapshot.secret_scan",
    "SECRET_NAME_PATTERNS": "core.snapshot.selection",
    "SnapshotLimits": "core.snapshot.selection",
    "HeadFacts": "core.snapshot.source",
    "Located": "core.snapshot.source",
    "SourceRepo": "core.snapshot.source",
    "locate": "core.snapshot.source",
    "repo_facts": "core.snapshot.source",
    "resolve_source_repo": "core.snapshot.source",
    "strip_url_credentials": "core.snapshot.source",
    "adopt_base_commit": "core.snapshot.store_repos",
    "ensure_store_repo": "core.snapshot.store_repos",
    "Snapshot": "core.snapshot.take",
    "take_snapshot": "core.snapshot.take",
    "verify_checkpoint": "core.snapshot.verify",
    "verify_previous": "core.snapshot.verify",
    "record_verified": "core.snapshot.verified",
}
"""The names this package gathers, and the module each comes from."""


def __getattr__(name: str) -> Any:
    """A gathered name, its module imported on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'core.snapshot' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
