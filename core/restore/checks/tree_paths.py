"""The checkpoint's trees hold only paths git will check out: the check git's own `verify_path`
makes at restore, made before anything is written.

A tree that arrived from elsewhere (a teammate's push, a hand-made commit) may name `.git/…`
(in any case, or as NTFS spells it: `.git.`, `git~1`, `.git::$INDEX_ALLOCATION`), `.` or `..`,
a symlinked `.gitmodules`, or one name twice (a file and a directory): `git read-tree` refuses
the first kinds halfway through a resume and silently drops one of a duplicate. Paths that
differ only in case clash on a case-insensitive filesystem (macOS's and Windows's).
Only what differs from the base commit's tree is listed (`diff-tree`), so a small change in a
large tree stays cheap; both trees are listed by one `diff-tree --stdin`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from core.git.objects import EMPTY_TREE
from core.git.run import run_git
from core.restore.findings import Finding, Status, ValidationInputs

_SYMLINK = "120000"


def check_tree_paths(inputs: ValidationInputs) -> list[Finding]:
    """Every path of the worktree and index trees is one git checks out as it is."""
    cp = inputs.checkpoint
    if cp is None or not cp.worktree_tree or not cp.index_tree:
        return []
    base, trees = _pairs(inputs.store_repo, cp.base_commit, cp.worktree_tree, cp.index_tree)
    folding = _case_insensitive()
    changed = _changed_entries(inputs.store_repo, base, trees)
    for tree in trees:
        problem = refused_path(changed[tree], folding)
        if problem:
            return [
                Finding(
                    "tree-paths",
                    Status.FAIL,
                    f"the checkpoint's tree {problem}, which git refuses to check out",
                    "do not resume it; resume an earlier checkpoint or ask who made this one",
                )
            ]
    return [Finding("tree-paths", Status.PASS, "every path is one git checks out")]


def _pairs(
    store_repo: Path, base_commit: str | None, worktree_tree: str, index_tree: str
) -> tuple[str, list[str]]:
    """The base tree and the checkpoint's trees (each once) the check diffs against it."""
    base = _base_tree(store_repo, base_commit) if base_commit else EMPTY_TREE
    return base, list(dict.fromkeys((worktree_tree, index_tree)))


def diff_call(
    store_repo: Path, base_commit: str | None, worktree_tree: str, index_tree: str
) -> tuple[list[str], bytes]:
    """The `diff-tree` the check runs (arguments, input): also started ahead
    (`core.restore.ahead`)."""
    base, trees = _pairs(store_repo, base_commit, worktree_tree, index_tree)
    return list(_DIFF_ARGS), _diff_input(base, trees)


def _diff_input(base: str, trees: list[str]) -> bytes:
    return "".join(f"{base} {tree}\n" for tree in trees).encode()


_DIFF_ARGS = ("diff-tree", "--stdin", "-r", "-t", "-z", "--no-renames", "--diff-filter=AMT")


def _base_tree(store_repo: Path, commit: str) -> str:
    """The base commit's tree id: read from the store's files when they hold the commit whole,
    else asked of git (`diff-tree --stdin` takes object ids only)."""
    from core.git.reader import read_objects, tree_of_commit

    body = read_objects(store_repo, [commit]).get(commit) or b""
    if body[:5] == b"tree " and body[45:46] == b"\n":
        return body[5:45].decode("ascii")
    return tree_of_commit(store_repo, commit)


_PAIR = re.compile(rb"([0-9a-f]{40,64}) ([0-9a-f]{40,64})\n")


def _changed_entries(
    store_repo: Path, base: str, trees: list[str]
) -> dict[str, list[tuple[str, str]]]:
    """For each of `trees`, (mode, path) of every entry (trees too) that `base` does not have
    as it is. One `diff-tree --stdin`: each pair's records follow a `BASE TREE` line."""
    out = run_git(list(_DIFF_ARGS), git_dir=store_repo, input=_diff_input(base, trees))
    entries: dict[str, list[tuple[str, str]]] = {tree: [] for tree in trees}
    current: list[tuple[str, str]] = entries[trees[0]]
    fields = out.split(b"\0")
    position = 0
    while position < len(fields):
        field = fields[position]
        pair = _PAIR.match(field)
        if pair:
            current = entries.setdefault(pair.group(2).decode(), [])
            field = field[pair.end() :]
        if field.startswith(b":") and position + 1 < len(fields):
            path = fields[position + 1].decode("utf-8", "surrogateescape")
            current.append((field.split()[1].decode(), path))
            position += 1
        position += 1
    return entries


def refused_path(entries: list[tuple[str, str]], case_insensitive: bool = False) -> str | None:
    """What git would refuse among (mode, path) entries, in words; None when nothing."""
    seen: dict[str, str] = {}
    for mode, path in entries:
        for name in path.split("/"):
            if name in ("", ".", ".."):
                return f"names a path {path!r} with a {name or 'empty'!r} part"
            if _is_dot_git(name):
                return f"writes into git's own directory ({path!r})"
        if mode == _SYMLINK and _is_dot_git(path.rsplit("/", 1)[-1], "gitmodules"):
            return f"makes {path!r} a symbolic link"
        key = path.casefold() if case_insensitive else path
        if key in seen:
            other = seen[key]
            kind = "twice" if other == path else f"and {other!r}, one name on this filesystem"
            return f"names {path!r} {kind}"
        seen[key] = path
    return None


def _is_dot_git(name: str, what: str = "git") -> bool:
    """`.git` (or `.gitmodules`) however NTFS and case may spell it, as git's checks do."""
    plain = name.split(":", 1)[0].rstrip(". ").casefold()
    short = {"git": "git~1", "gitmodules": "gitmod~1"}[what]
    return plain in (f".{what}", short)


def _case_insensitive() -> bool:
    """Whether restore targets fold case: macOS's and Windows's default filesystems do. Nothing
    is written to find out (validation only reads); a case-folding mount on Linux is not seen."""
    return sys.platform in ("darwin", "win32")
