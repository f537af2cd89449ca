"""Differences between two snapshot trees: which files changed, and the unified diff.

The manifest records each checkpoint's changed files against its base commit; the dashboard and
`pitstop diff` show the text. Both come from git's own diff with rename detection, run on the
store's repository.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from core.git.run import finish_git, run_git, spawn_git
from core.models import ChangedFile

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from core.git.spawn import Spawned

# More changed paths than this: the whole diff is asked for (a command line stays short).
MAX_DELTA_PATHS = 200


def changed_files(store_repo: Path, old_tree: str, new_tree: str) -> list[ChangedFile]:
    """Per-path status and line counts between two trees (renames detected).

    One `diff-tree --raw --numstat`: every raw record (`:<modes> <ids> <status>`, then one path,
    or two for a rename or copy) comes first, then every numstat record.
    """
    raw = run_git(
        ["diff-tree", "-r", "-z", "-M", "--raw", "--numstat", old_tree, new_tree],
        git_dir=store_repo,
    )
    return _changes(raw)


def changed_files_after(
    store_repo: Path,
    base_tree: str,
    new_tree: str,
    before: Sequence[ChangedFile],
    paths: Sequence[str],
) -> list[ChangedFile] | None:
    """What `changed_files(base_tree, new_tree)` gives, from `before` (the changed files of an
    earlier tree against the same base) and the `paths` where `new_tree` differs from that
    tree: only those paths are diffed, so a repeat checkpoint costs what changed since the
    last one, not everything changed since the base.

    Exact only while no rename can pair: `-M` pairs a deleted file with an added one, so with
    a deletion on either side (or a rename before) the whole diff is asked for (None). Without
    one, each path's status and counts depend on that path's two blobs alone.
    """
    if len(paths) > MAX_DELTA_PATHS or any(entry.status in "DRC" for entry in before):
        return None
    fresh: list[ChangedFile] = []
    if paths:
        raw = run_git(
            [
                "--literal-pathspecs",
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--raw",
                "--numstat",
                base_tree,
                new_tree,
                "--",
                *paths,
            ],
            git_dir=store_repo,
            read_only=True,
        )
        fresh = _changes(raw)
    if any(entry.status == "D" for entry in fresh):
        return None
    asked = set(paths)
    merged = [entry for entry in before if entry.path not in asked] + fresh
    # git's order: paths by their bytes (a tree's entries sort as if its name ended in "/")
    merged.sort(key=lambda entry: entry.path.encode("utf-8", errors="surrogateescape"))
    return merged


def _changes(raw: bytes) -> list[ChangedFile]:
    """The changed files of one `diff-tree -z --raw --numstat` output."""
    fields = raw.decode("utf-8", errors="surrogateescape").split("\0")
    statuses, position = _raw_records(fields)
    counts = _numstat_records(fields, position)
    result = []
    for status, old_path, path in statuses:
        added, deleted = counts.get(path, (None, None))
        result.append(
            ChangedFile(
                path=path, status=status[0], added=added, deleted=deleted, old_path=old_path
            )
        )
    return result


def _raw_records(fields: list[str]) -> tuple[list[tuple[str, str | None, str]], int]:
    """The raw records at the start of `fields` as (status, old path, path), and where the
    numstat records begin."""
    statuses: list[tuple[str, str | None, str]] = []
    position = 0
    while position < len(fields) and fields[position].startswith(":"):
        status = fields[position].rsplit(" ", 1)[-1]
        if status[0] in "RC":
            statuses.append((status, fields[position + 1], fields[position + 2]))
            position += 3
        else:
            statuses.append((status, None, fields[position + 1]))
            position += 2
    return statuses, position


def _numstat_records(fields: list[str], position: int) -> dict[str, tuple[int | None, int | None]]:
    """Lines added and deleted by path from the numstat records (None for a binary file)."""
    counts: dict[str, tuple[int | None, int | None]] = {}
    while position < len(fields) and fields[position]:
        added_text, deleted_text, path = fields[position].split("\t", 2)
        if not path:  # a rename: old and new names follow as their own fields
            path = fields[position + 2]
            position += 3
        else:
            position += 1
        counts[path] = (
            None if added_text == "-" else int(added_text),
            None if deleted_text == "-" else int(deleted_text),
        )
    return counts


def unified_diff(store_repo: Path, old_tree: str, new_tree: str, paths: Sequence[str] = ()) -> str:
    """A unified diff between two trees; binary files are named, not dumped."""
    return finish_unified_diff(start_unified_diff(store_repo, old_tree, new_tree, paths))


def start_unified_diff(
    store_repo: Path, old_tree: str, new_tree: str, paths: Sequence[str] = ()
) -> Spawned:
    """`unified_diff` started in the background (`pitstop diff` checks the checkpoint while
    git writes the text); `finish_unified_diff` reads it, or the caller `stop`s it. Started
    without `subprocess` (`core.git.spawn`): the diff's quick path never loads it."""
    args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", old_tree, new_tree]
    return spawn_git([*args, "--", *paths], env={"GIT_DIR": str(store_repo)})


def finish_unified_diff(process: Spawned) -> str:
    """The text of a diff `start_unified_diff` started."""
    return finish_git(process, "diff").decode("utf-8", errors="replace")
