"""The user's repository as restore validation and resume see it: drift queries and restores.

Validation only reads the user's repository. Resume is the one place that writes to it, and only
because the operator asked: it adds a git worktree on a `pitstop/<task>` branch (or restores in
place onto a clean worktree at the base commit) and brings the checkpoint's objects in from the
store so the new worktree stands on its own. Files the snapshot stored sealed (they hold a
secret) are restored with their real bytes, in the work tree and, when staged, in the index.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.errors import GitError, UsageError
from core.git.run import run_git
from core.snapshot import SealedFile, SourceRepo
from core.snapshot.sealed_files import INDEX, WORKTREE, write_real_files

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple


class BranchDrift(NamedTuple):
    """How a branch moved since a checkpoint's base commit."""

    exists: bool
    head: str | None
    commits: tuple[str, ...]
    touched: tuple[str, ...]
    rewritten: bool


def has_commit(source: SourceRepo, commit: str) -> bool:
    """True when the user's repository holds `commit`."""
    return _git_ok(source, has_commit_args(commit))


def has_commit_args(commit: str) -> list[str]:
    """The git call `has_commit` makes (also started ahead by `core.restore.ahead`)."""
    return ["cat-file", "-e", f"{commit}^{{commit}}"]


def branch_head_args(branch: str) -> list[str]:
    """The git call that reads `branch`'s tip (`branch_drift`'s first; also started ahead)."""
    return ["rev-parse", "-q", "--verify", f"refs/heads/{branch}^{{commit}}"]


def _git_ok(source: SourceRepo, args: list[str]) -> bool:
    try:
        run_git(args, cwd=source.toplevel)
    except GitError:
        return False
    return True


def branch_drift(source: SourceRepo, branch: str, base: str, changed: set[str]) -> BranchDrift:
    """Commits on `branch` since `base` and which of the checkpoint's changed files they touch."""
    head = run_git(branch_head_args(branch), cwd=source.toplevel, ok_codes=(0, 1)).decode().strip()
    if not head:
        return BranchDrift(False, None, (), (), False)
    if head == base:
        return BranchDrift(True, head, (), (), False)
    if not _git_ok(source, ["merge-base", "--is-ancestor", base, head]):
        return BranchDrift(True, head, (), (), True)
    log = run_git(
        ["rev-list", "--format=%h %s", "--no-commit-header", f"{base}..{head}"],
        cwd=source.toplevel,
        ok_codes=(0, 128),
    )
    commits = tuple(line for line in log.decode(errors="replace").splitlines() if line.strip())
    names = run_git(["diff", "--name-only", "-z", base, head], cwd=source.toplevel)
    touched = tuple(
        sorted(
            name
            for name in names.decode("utf-8", errors="surrogateescape").split("\0")
            if name and name in changed
        )
    )
    return BranchDrift(True, head, commits, touched, False)


def worktree_blob_ids(source: SourceRepo, paths: list[str]) -> dict[str, str | None]:
    """Git blob ids of files as they are in the user's work tree now (None when absent)."""
    present = [p for p in paths if (source.toplevel / p).is_file()]
    ids: dict[str, str | None] = dict.fromkeys(paths)
    if present:
        out = run_git(
            ["hash-object", "--no-filters", "--stdin-paths"],
            cwd=source.toplevel,
            input=("\n".join(present) + "\n").encode(),
        )
        ids.update(zip(present, out.decode().split(), strict=True))
    return ids


def is_clean_at(source: SourceRepo, commit: str) -> tuple[bool, str]:
    """Whether the user's work tree is clean and at `commit`, and if not, why."""
    head = (
        run_git(
            ["rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd=source.toplevel, ok_codes=(0, 1)
        )
        .decode()
        .strip()
    )
    if head != commit:
        return False, f"HEAD is at {head[:12] or 'nothing'}, not the base commit {commit[:12]}"
    status = run_git(
        ["status", "--porcelain", "-z", "--untracked-files=normal"],
        cwd=source.toplevel,
        env={"GIT_OPTIONAL_LOCKS": "0"},
    )
    if status.strip(b"\0"):
        return False, "the work tree has uncommitted changes"
    return True, "clean at the base commit"


def tree_equals_directory(
    store_repo: Path,
    tree: str,
    directory: Path,
    scratch: Path,
    sealed: Sequence[SealedFile] = (),
) -> bool:
    """True when `directory` holds exactly the files of `tree` (content and mode); a `sealed`
    file is compared by its real bytes' id, never by its stand-in (nothing is opened)."""
    import tempfile

    scratch.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tempfile.TemporaryDirectory(dir=scratch, prefix="compare-") as temp:
        env = {
            "GIT_INDEX_FILE": str(Path(temp) / "index"),
            "GIT_WORK_TREE": str(directory),
            "GIT_OBJECT_DIRECTORY": str(Path(temp) / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(store_repo / "objects"),
        }
        (Path(temp) / "objects").mkdir()
        run_git(["read-tree", tree], git_dir=store_repo, env=env)
        _stage_real_ids(env, sealed, git_dir=store_repo)
        run_git(
            ["update-index", "-q", "--refresh"],
            git_dir=store_repo,
            env=env,
            cwd=directory,
            ok_codes=(0, 1),
        )
        changed = run_git(
            ["diff-files", "--name-only", "-z"], git_dir=store_repo, env=env, cwd=directory
        )
        extra = run_git(["ls-files", "--others", "-z"], git_dir=store_repo, env=env, cwd=directory)
        return not changed.strip(b"\0") and not extra.strip(b"\0")


def _stage_real_ids(
    env: Mapping[str, str],
    sealed: Sequence[SealedFile],
    *,
    git_dir: Path | None = None,
    cwd: Path | None = None,
    private: bool = True,
) -> None:
    """Point index entries at the real bytes' ids of sealed files (the objects need not exist:
    git compares the work tree's files with the ids); `private=False`: the user's index."""
    lines = b"".join(
        f"{entry.mode} {entry.plain_blob}\t".encode()
        + entry.path.encode("utf-8", errors="surrogateescape")
        + b"\0"
        for entry in sealed
    )
    if lines:
        run_git(
            ["update-index", "-z", "--index-info"],
            git_dir=git_dir,
            env=env,
            cwd=cwd,
            input=lines,
            private=private,
        )


def bring_objects(source: SourceRepo, store_repo: Path, commit: str) -> None:
    """Copy a checkpoint commit and everything it needs from the store into the user's repo.

    The store holds base commits shallowly (their tree, not their history). The user's
    repository normally holds the base commit with its history, and nothing changes there;
    when a `git gc` took it away, the base commit comes back as a shallow commit
    (`--update-shallow`), so the repository stays whole rather than holding a commit whose
    parent is missing.
    """
    run_git(
        [
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--update-shallow",
            str(store_repo),
            commit,
        ],
        cwd=source.toplevel,
        private=False,  # the user's repository: its objects as readable as the rest of it
    )


def add_worktree(source: SourceRepo, into: Path, branch: str, base: str) -> str:
    """Add a git worktree of the user's repo at `into` on a fresh `branch` starting at `base`."""
    name = branch
    existing = (
        run_git(
            ["for-each-ref", "--format=%(refname:short)", "refs/heads/pitstop/"],
            cwd=source.toplevel,
        )
        .decode()
        .split()
    )
    suffix = 1
    while name in existing:
        suffix += 1
        name = f"{branch}-{suffix}"
    run_git(
        ["worktree", "add", "--quiet", "-b", name, str(into), base],
        cwd=source.toplevel,
        private=False,
    )
    return name


def discard_worktree(source: SourceRepo, target: Path, task_id: str) -> str | None:
    """Remove the worktree a failed resume added at `target` and the `pitstop/<task>` branch it
    made; return the branch removed (None: no worktree of ours was there)."""
    listing = run_git(["worktree", "list", "--porcelain"], cwd=source.toplevel).decode()
    wanted = os.path.realpath(target)
    for block in listing.split("\n\n"):
        fields = dict(line.partition(" ")[::2] for line in block.splitlines() if line)
        if os.path.realpath(fields.get("worktree", "")) != wanted:
            continue
        branch = fields.get("branch", "").removeprefix("refs/heads/")
        ours = f"pitstop/{task_id}"
        if branch != ours and not re.fullmatch(re.escape(ours) + r"-\d+", branch):
            return None  # not a worktree a resume made: never touched
        run_git(["worktree", "remove", "--force", str(target)], cwd=source.toplevel)
        run_git(["branch", "-D", branch], cwd=source.toplevel)
        return branch
    return None


def restore_into(
    work_dir: Path,
    worktree_tree: str,
    index_tree: str,
    sealed: Sequence[SealedFile] = (),
    opened: Mapping[str, bytes] | None = None,
) -> None:
    """Make `work_dir`'s files the snapshot and its index the staged state (HEAD stays); a
    sealed file gets its real bytes (`opened`: stand-in → bytes) in the work tree, and a sealed
    staged one its real blob in the index (written into the repository, as `git add` had)."""
    env = {"GIT_OPTIONAL_LOCKS": "0"}
    # the user's files and index: written under the user's umask (0644 stays 0644)
    run_git(["read-tree", "--reset", "-u", worktree_tree], cwd=work_dir, env=env, private=False)
    run_git(["read-tree", index_tree], cwd=work_dir, env=env, private=False)
    write_real_files(work_dir, [e for e in sealed if e.tree == WORKTREE], opened or {})
    staged = [e for e in sealed if e.tree == INDEX]
    for entry in staged:
        written = run_git(
            ["hash-object", "-w", "--no-filters", "--stdin"],
            cwd=work_dir,
            input=(opened or {})[entry.blob],
            private=False,
        )
        if written.decode().strip() != entry.plain_blob:
            raise GitError(f"git stored {entry.path} under another id than its manifest names")
    _stage_real_ids(env, staged, cwd=work_dir, private=False)


def require_empty_target(into: Path) -> None:
    """Refuse a resume target that exists and is not empty, or cannot be looked up."""
    try:
        taken = into.exists() and (not into.is_dir() or any(into.iterdir()))
    except OSError as exc:  # a name too long, no permission…
        raise UsageError(
            f"cannot use {into}: {exc.strerror or exc}; choose another directory"
        ) from exc
    if taken:
        raise UsageError(f"{into} already exists and is not empty; choose a new directory")


def same_filesystem_path(a: Path, b: Path) -> bool:
    """True when two paths name the same directory."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
