"""Invariant 8: checkpointing, diffing and checking out never write to the user's `.git`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from corekit import SUBMODULE_ALLOW, dir_state, git, write

from core.engine import CheckpointRequest, Engine


def _make_busy_repo(repo: Path) -> None:
    """A repository with history, packed refs, tags, a stash and changes of every kind."""
    write(repo / ".gitignore", "*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "second")
    git(repo, "tag", "v1")
    git(repo, "tag", "-a", "v1-annotated", "-m", "annotated")
    git(repo, "branch", "feature")
    git(repo, "pack-refs", "--all")
    git(repo, "remote", "add", "origin", "https://example.com/repo.git")
    write(repo / "src/app.py", "print('stashed change')\n")
    git(repo, "stash", "push", "-q", "-m", "work in progress")
    # changes of every kind, staged and not, including a loose staged-only blob
    write(repo / "src/app.py", "print('staged')\n")
    git(repo, "add", "src/app.py")
    write(repo / "src/app.py", "print('unstaged')\n")
    write(repo / "untracked dir/new file.txt", "new\n")
    write(repo / "debug.log", "ignored\n")
    write(repo / ".env", "SECRET=1\n")
    (repo / "delete_me.txt").unlink()
    os.symlink("README.md", repo / "readme_link")


def _user_git_state(repo: Path) -> dict[str, tuple]:
    state = dir_state(repo / ".git")
    # Name the pieces the brief lists, so a failure names what changed.
    for required in (
        "index",
        "HEAD",
        "config",
        "packed-refs",
        "refs/stash",
        "logs/HEAD",
        "logs/refs/stash",
        "objects",
    ):
        assert required in state, required
    return state


def _changed(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    keys = set(before) | set(after)
    return sorted(k for k in keys if before.get(k) != after.get(k))


def test_checkpoint_diff_and_checkout_leave_dot_git_byte_identical(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    _make_busy_repo(repo)
    engine.start_task(repo=repo, objective="do not touch", task_id="t1")
    before = _user_git_state(repo)

    first = engine.checkpoint("t1").checkpoint
    assert first is not None
    assert _changed(before, _user_git_state(repo)) == []

    write(repo / "src/util.py", "# more work\n")
    second = engine.checkpoint("t1", CheckpointRequest(note="again")).checkpoint
    assert second is not None
    engine.checkpoint("t1")  # a skipped no-op also must not write
    engine.diff(second.ref)
    engine.diff(second.ref, against="previous")
    engine.changed_files(second.ref)
    engine.checkout(second.ref, tmp_path / "restored")
    engine.verify(second)
    assert _changed(before, _user_git_state(repo)) == []


def test_linked_worktree_and_its_main_repo_are_untouched(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    _make_busy_repo(repo)
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "agent-branch", str(linked))
    write(linked / "src/app.py", "print('in the linked worktree')\n")
    git(linked, "add", "src/app.py")
    write(linked / "fresh.txt", "untracked in linked\n")
    linked_marker = (linked / ".git").read_bytes()

    engine.start_task(repo=linked, objective="linked", task_id="wt")
    before = _user_git_state(repo)
    assert any(key.startswith("worktrees/linked") for key in before)

    cp = engine.checkpoint("wt").checkpoint
    assert cp is not None
    assert cp.branch == "agent-branch"
    engine.diff(cp.ref)
    engine.checkout(cp.ref, tmp_path / "restored")
    assert (tmp_path / "restored/fresh.txt").read_bytes() == b"untracked in linked\n"
    assert (tmp_path / "restored/src/app.py").read_bytes() == b"print('in the linked worktree')\n"
    assert _changed(before, _user_git_state(repo)) == []
    assert (linked / ".git").read_bytes() == linked_marker


def test_submodule_git_dirs_are_untouched(
    make_repo: Callable[..., Path], engine: Engine, tmp_path: Path
) -> None:
    library = make_repo("library", {"lib.py": "V = 1\n"})
    main = make_repo("mainrepo", {"app.py": "x\n"})
    git(main, *SUBMODULE_ALLOW, "submodule", "add", "-q", str(library), "lib")
    git(main, "commit", "-q", "-m", "submodule")
    write(main / "lib/lib.py", "V = 2\n")  # dirty submodule
    engine.start_task(repo=main, objective="sub", task_id="t1")
    before = dir_state(main / ".git")

    assert engine.checkpoint("t1").checkpoint is not None
    assert _changed(before, dir_state(main / ".git")) == []


@pytest.mark.parametrize("index_present", [True, False])
def test_a_missing_or_present_index_is_never_created_or_changed(
    make_repo: Callable[..., Path], engine: Engine, index_present: bool
) -> None:
    path = make_repo("r", {"a.txt": "a\n"})
    if not index_present:
        (path / ".git/index").unlink()  # git treats this as everything staged for deletion
    write(path / "b.txt", "b\n")
    engine.start_task(repo=path, objective="index", task_id="t1")
    before = dir_state(path / ".git")
    assert engine.checkpoint("t1").checkpoint is not None
    assert _changed(before, dir_state(path / ".git")) == []
    assert (path / ".git/index").exists() is index_present
