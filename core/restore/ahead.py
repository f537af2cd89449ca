"""The git calls a validation will make, started together before the checks run.

`pitstop validate` asks git a handful of short questions, one check after another: where the
task's repository is, the checkpoint's paths against its base (`checks/tree_paths.py`), whether
the repository still holds the base commit and where the branch is now (`checks/repository.py`).
Each costs a process start (~2-4 ms); asked one after another they were a fifth of a
validation. Started here, as soon as what they ask about is known, they run beside each other
and beside the reading of effects, approvals and leases; each check then takes its answer over
through `run_git` (`core.git.run.start_ahead`), unchanged. They only read.
"""

from __future__ import annotations

from pathlib import Path

from core.git.run import start_ahead
from core.models import Checkpoint
from core.restore import worktree
from core.restore.checks.tree_paths import diff_call
from core.snapshot.source import RESOLVE_ARGS, SourceRepo, resolve_directory


def locate_ahead(repo_root: str) -> None:
    """Start the call that finds the task's repository (`resolve_source_repo`)."""
    try:
        directory = resolve_directory(repo_root)
    except Exception:  # resolving says why, in its own words
        return
    if directory is not None:
        start_ahead(RESOLVE_ARGS, cwd=directory)


def checks_ahead(
    checkpoint: Checkpoint | None, source: SourceRepo | None, store_repo: Path
) -> None:
    """Start the calls the tree-path, base-commit and branch checks make for `checkpoint`."""
    if checkpoint is None or not checkpoint.worktree_tree or not checkpoint.index_tree:
        return
    try:
        args, given = diff_call(
            store_repo, checkpoint.base_commit, checkpoint.worktree_tree, checkpoint.index_tree
        )
    except Exception:  # the check itself reports what it cannot read
        return
    start_ahead(args, git_dir=store_repo, input=given)
    repository = (checkpoint.manifest or {}).get("repository", {})
    base, branch = repository.get("base_commit"), repository.get("branch")
    if source is None or not isinstance(base, str) or not base:
        return
    start_ahead(worktree.has_commit_args(base), cwd=source.toplevel)
    if isinstance(branch, str) and branch:
        start_ahead(worktree.branch_head_args(branch), cwd=source.toplevel)
