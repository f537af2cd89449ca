"""A repeat checkpoint's changed files against the base are the earlier checkpoint's list updated
for the paths that changed since (`diff.changed_files_after`), and always exactly what the whole
`diff-tree -M --numstat` against the base gives: through edits, additions, reverts, binaries,
mode changes, a file turned directory, and deletions and renames (which take the whole diff).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from corekit import git, only_store_repo, spy_git_starts, write

from core import snapshot
from core.engine import CheckpointRequest, Engine
from core.models import ChangedFile, Checkpoint


@pytest.fixture
def diff_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """The argument lists of the `diff-tree` processes this process starts."""
    yield spy_git_starts(monkeypatch, lambda argv: argv if "diff-tree" in argv else None)


def _take(engine: Engine) -> Checkpoint:
    made = engine.checkpoint("t1", CheckpointRequest(force=True)).checkpoint
    assert made is not None
    return made


def _recorded(made: Checkpoint) -> list[ChangedFile]:
    return [ChangedFile(**entry) for entry in (made.manifest or {})["snapshot"]["changed_files"]]


def _whole_diff(store_root: Path, made: Checkpoint) -> list[ChangedFile]:
    store_repo = only_store_repo(store_root)
    base_tree = snapshot.tree_of_commit(store_repo, made.base_commit or "")
    return snapshot.changed_files(store_repo, base_tree, made.worktree_tree or "")


def _pathspec_diffs(calls: list[list[str]]) -> list[list[str]]:
    return [call for call in calls if "--literal-pathspecs" in call]


STEPS: list[tuple[str, Callable[[Path], None]]] = [
    ("an edit", lambda repo: write(repo / "src/app.py", "print('one')\n")),
    ("another edit", lambda repo: write(repo / "src/app.py", "print('two')\nprint(2)\n")),
    ("a new file", lambda repo: write(repo / "notes/a.txt", "a\nb\nc\n")),
    ("a binary", lambda repo: write(repo / "blob.bin", b"\0\1\2" * 50)),
    ("an edit reverted", lambda repo: write(repo / "src/app.py", "print('hello')\n")),
    ("a mode change", lambda repo: os.chmod(repo / "src/util.py", 0o755)),
    ("names that sort oddly", lambda repo: write(repo / "src.py", "x\n")),
    ("a file made a directory", lambda repo: _file_to_directory(repo / "notes/a.txt")),
    ("an added file removed", lambda repo: (repo / "blob.bin").unlink()),
]


def _file_to_directory(path: Path) -> None:
    path.unlink()
    write(path / "inner.txt", "inside\n")


def test_each_repeat_checkpoint_lists_what_the_whole_diff_lists(
    engine: Engine, repo: Path, store_root: Path, diff_calls: list[list[str]]
) -> None:
    engine.start_task(repo=repo, objective="changes", task_id="t1")
    _take(engine)
    for name, step in STEPS:
        step(repo)
        diff_calls.clear()
        made = _take(engine)
        assert _recorded(made) == _whole_diff(store_root, made), name
        # no deletion or rename anywhere: only the paths changed since were diffed
        assert len(_pathspec_diffs(diff_calls)) == 1, (name, diff_calls)
        assert engine.verify(made) == []


def test_a_deletion_or_a_rename_takes_the_whole_diff(
    engine: Engine, repo: Path, store_root: Path, diff_calls: list[list[str]]
) -> None:
    engine.start_task(repo=repo, objective="changes", task_id="t1")
    write(repo / "src/app.py", "print('one')\n")
    _take(engine)
    for name, step in [
        ("a tracked file deleted", lambda: (repo / "delete_me.txt").unlink()),
        ("an edit beside the deletion", lambda: write(repo / "src/app.py", "print('x')\n")),
        ("the deletion undone", lambda: git(repo, "checkout", "--", "delete_me.txt")),
        ("a rename", lambda: git(repo, "mv", "old_name.txt", "new_name.txt")),
        ("an edit beside the rename", lambda: write(repo / "src/app.py", "print('y')\n")),
    ]:
        step()
        diff_calls.clear()
        made = _take(engine)
        assert _recorded(made) == _whole_diff(store_root, made), name
        # a deletion found among the paths diffed, or one (or a rename) listed before
        assert any("-M" in call for call in diff_calls), (name, diff_calls)
    assert any(change.status == "R" for change in _recorded(made))


def test_paths_that_look_like_pathspecs_are_diffed_as_names(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    engine.start_task(repo=repo, objective="changes", task_id="t1")
    write(repo / "plain.txt", "p\n")
    _take(engine)
    for name in ("*.txt", ":(glob)x", "[ab].md", "-dash"):
        write(repo / name, f"{name}\n")
        made = _take(engine)
        assert _recorded(made) == _whole_diff(store_root, made), name
    assert {"*.txt", ":(glob)x", "[ab].md", "-dash"} <= {c.path for c in _recorded(made)}
