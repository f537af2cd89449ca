"""What a snapshot includes: every kind of change in a work tree, staged state kept apart."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from corekit import (
    SUBMODULE_ALLOW,
    blob_at,
    git,
    git_bytes,
    ls_tree,
    only_store_repo,
    write,
)

from core.engine import CheckpointRequest, Engine
from core.models import CheckpointState
from core.snapshot import materialise

BINARY = bytes(range(256)) * 8 + b"\0\0\xff\xfe"
SPACED = "dir with space/naïve café — 日本.txt"


def _checkpoint(engine: Engine, repo: Path, task_id: str = "t1", **request: object):
    engine.start_task(repo=repo, objective="test inclusion", task_id=task_id)
    result = engine.checkpoint(task_id, CheckpointRequest(**request))  # type: ignore[arg-type]
    assert result.checkpoint is not None, result.skipped
    assert result.checkpoint.state is CheckpointState.COMPLETE
    return result.checkpoint


def test_unstaged_and_staged_changes_are_kept_apart(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / "src/app.py", "print('staged')\n")
    git(repo, "add", "src/app.py")
    write(repo / "src/app.py", "print('worktree')\n")
    write(repo / "src/util.py", "# unstaged only\n")
    write(repo / "staged_new.txt", "added to the index\n")
    git(repo, "add", "staged_new.txt")

    cp = _checkpoint(engine, repo)
    store = only_store_repo(store_root)
    assert cp.worktree_tree and cp.index_tree and cp.worktree_tree != cp.index_tree

    assert blob_at(store, cp.worktree_tree, "src/app.py") == b"print('worktree')\n"
    assert blob_at(store, cp.index_tree, "src/app.py") == b"print('staged')\n"
    assert blob_at(store, cp.worktree_tree, "src/util.py") == b"# unstaged only\n"
    head_util = git(repo, "show", "HEAD:src/util.py").encode()
    assert blob_at(store, cp.index_tree, "src/util.py") == head_util
    assert blob_at(store, cp.index_tree, "staged_new.txt") == b"added to the index\n"
    assert blob_at(store, cp.worktree_tree, "staged_new.txt") == b"added to the index\n"

    commit_tree = ls_tree(store, cp.commit or "")
    assert commit_tree["index/src/app.py"][2] == ls_tree(store, cp.index_tree)["src/app.py"][2]


def test_index_tree_materialises_the_staged_state(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    write(repo / "src/app.py", "print('staged')\n")
    git(repo, "add", "src/app.py")
    write(repo / "src/app.py", "print('worktree')\n")
    write(repo / "untracked.txt", "not staged\n")

    cp = _checkpoint(engine, repo)
    target = tmp_path / "staged-view"
    materialise(only_store_repo(store_root), cp.index_tree or "", target, tmp_path / "scratch")

    assert (target / "src/app.py").read_bytes() == b"print('staged')\n"
    assert not (target / "untracked.txt").exists()
    assert (target / "README.md").read_bytes() == (repo / "README.md").read_bytes()


def test_deletions_staged_and_unstaged(engine: Engine, repo: Path, store_root: Path) -> None:
    (repo / "delete_me.txt").unlink()
    git(repo, "rm", "-q", "docs/guide.txt")

    cp = _checkpoint(engine, repo)
    store = only_store_repo(store_root)
    worktree = ls_tree(store, cp.worktree_tree or "")
    index = ls_tree(store, cp.index_tree or "")
    assert "delete_me.txt" not in worktree
    assert "delete_me.txt" in index  # the deletion was not staged
    assert "docs/guide.txt" not in worktree
    assert "docs/guide.txt" not in index
    statuses = {c["path"]: c["status"] for c in cp.manifest["snapshot"]["changed_files"]}
    assert statuses["delete_me.txt"] == "D"
    assert statuses["docs/guide.txt"] == "D"


def test_renames_staged_and_plain_mv(engine: Engine, repo: Path, store_root: Path) -> None:
    git(repo, "mv", "old_name.txt", "new_name.txt")
    os.rename(repo / "src/util.py", repo / "src/helpers.py")  # not told to git

    cp = _checkpoint(engine, repo)
    store = only_store_repo(store_root)
    worktree = ls_tree(store, cp.worktree_tree or "")
    index = ls_tree(store, cp.index_tree or "")
    assert "old_name.txt" not in worktree and "new_name.txt" in worktree
    assert "old_name.txt" not in index and "new_name.txt" in index
    assert "src/util.py" not in worktree and "src/helpers.py" in worktree
    assert "src/util.py" in index and "src/helpers.py" not in index
    assert blob_at(store, cp.worktree_tree or "", "new_name.txt") == b"rename me\n"
    changes = {c["path"]: c for c in cp.manifest["snapshot"]["changed_files"]}
    assert changes["new_name.txt"]["status"] == "R"
    assert changes["new_name.txt"]["old_path"] == "old_name.txt"


def test_untracked_files_in_new_subdirectories(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / "notes.txt", "untracked at the top\n")
    write(repo / "new/deep/nested/dir/leaf.txt", "deep\n")
    write(repo / "src/brand_new.py", "x = 1\n")

    cp = _checkpoint(engine, repo)
    store = only_store_repo(store_root)
    worktree = ls_tree(store, cp.worktree_tree or "")
    for path in ("notes.txt", "new/deep/nested/dir/leaf.txt", "src/brand_new.py"):
        assert worktree[path][0] == "100644"
        assert blob_at(store, cp.worktree_tree or "", path) == (repo / path).read_bytes()
    assert "notes.txt" not in ls_tree(store, cp.index_tree or "")


def test_symlinks_exec_bits_binary_and_odd_names(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    os.symlink("src/app.py", repo / "link_to_app")
    os.symlink("../nowhere/missing", repo / "dangling")
    os.symlink("docs", repo / "docs_link")
    write(repo / "run.sh", "#!/bin/sh\necho hi\n", mode=0o755)
    (repo / "src/app.py").chmod(0o755)  # tracked file gains the exec bit
    write(repo / "blob.bin", BINARY)
    write(repo / SPACED, "unicode and spaces\n")
    write(repo / "tab\tand\nnewline.txt", "control characters in the name\n")

    cp = _checkpoint(engine, repo)
    store = only_store_repo(store_root)
    tree = cp.worktree_tree or ""
    worktree = ls_tree(store, tree)
    assert worktree["link_to_app"][0] == "120000"
    assert blob_at(store, tree, "link_to_app") == b"src/app.py"
    assert worktree["dangling"][0] == "120000"
    assert blob_at(store, tree, "dangling") == b"../nowhere/missing"
    assert worktree["docs_link"][0] == "120000"
    assert worktree["run.sh"][0] == "100755"
    assert worktree["src/app.py"][0] == "100755"
    assert worktree["README.md"][0] == "100644"
    assert blob_at(store, tree, "blob.bin") == BINARY
    assert blob_at(store, tree, SPACED) == b"unicode and spaces\n"
    assert worktree["tab\tand\nnewline.txt"][0] == "100644"


def test_exec_bit_removed_is_recorded(
    make_repo: Callable[..., Path], engine: Engine, store_root: Path
) -> None:
    path = make_repo("execrepo", {"tool.sh": "#!/bin/sh\n"})
    (path / "tool.sh").chmod(0o755)
    git(path, "add", "tool.sh")
    git(path, "commit", "-q", "-m", "exec")
    (path / "tool.sh").chmod(0o644)

    cp = _checkpoint(engine, path)
    store = only_store_repo(store_root)
    assert ls_tree(store, cp.worktree_tree or "")["tool.sh"][0] == "100644"
    assert ls_tree(store, cp.index_tree or "")["tool.sh"][0] == "100755"


def test_file_replaced_by_symlink_and_dir_by_file(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    (repo / "README.md").unlink()
    os.symlink("docs/guide.txt", repo / "README.md")
    for child in (repo / "docs").iterdir():
        child.unlink()
    (repo / "docs").rmdir()
    write(repo / "docs", "now a file\n")

    cp = _checkpoint(engine, repo)
    store = only_store_repo(store_root)
    worktree = ls_tree(store, cp.worktree_tree or "")
    assert worktree["README.md"][0] == "120000"
    assert worktree["docs"][0] == "100644"
    assert "docs/guide.txt" not in worktree


def test_submodule_recorded_by_commit(
    make_repo: Callable[..., Path], engine: Engine, store_root: Path, tmp_path: Path
) -> None:
    library = make_repo("library", {"lib.py": "VERSION = 1\n"})
    main = make_repo("mainrepo", {"app.py": "import lib\n"})
    git(main, *SUBMODULE_ALLOW, "submodule", "add", "-q", str(library), "vendor/lib")
    git(main, "commit", "-q", "-m", "add submodule")
    pinned = git(main, "rev-parse", "HEAD:vendor/lib").strip()

    checkout = main / "vendor/lib"
    write(checkout / "lib.py", "VERSION = 2\n")
    git(checkout, "commit", "-q", "-am", "bump")
    moved = git(checkout, "rev-parse", "HEAD").strip()
    assert moved != pinned

    cp = _checkpoint(engine, main)
    store = only_store_repo(store_root)
    worktree = ls_tree(store, cp.worktree_tree or "")
    assert worktree["vendor/lib"] == ("160000", "commit", moved)
    assert ls_tree(store, cp.index_tree or "")["vendor/lib"] == ("160000", "commit", pinned)
    assert {"path": "vendor/lib", "commit": moved} in cp.manifest["snapshot"]["submodules"]
    assert not any(path.startswith("vendor/lib/") for path in worktree)
    assert engine.verify(cp) == []

    restored = tmp_path / "restored"
    engine.checkout(cp.ref, restored)
    assert (restored / "app.py").read_bytes() == b"import lib\n"
    assert (restored / ".gitmodules").exists()


def test_staged_state_and_worktree_both_checkout_exact_bytes(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / "src/app.py", BINARY)
    git(repo, "add", "src/app.py")
    cp = _checkpoint(engine, repo)
    store = only_store_repo(store_root)
    assert blob_at(store, cp.index_tree or "", "src/app.py") == BINARY
    assert cp.index_tree == cp.worktree_tree


def test_repo_without_any_commit(
    make_repo: Callable[..., Path], engine: Engine, store_root: Path, tmp_path: Path
) -> None:
    fresh = tmp_path / "unborn"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "main")
    write(fresh / "first.txt", "first\n")
    write(fresh / "staged.txt", "staged\n")
    git(fresh, "add", "staged.txt")

    cp = _checkpoint(engine, fresh)
    store = only_store_repo(store_root)
    assert cp.base_commit is None
    assert set(ls_tree(store, cp.worktree_tree or "")) == {"first.txt", "staged.txt"}
    assert set(ls_tree(store, cp.index_tree or "")) == {"staged.txt"}
    assert engine.verify(cp) == []


def test_checkpoint_commit_layout_and_parents(engine: Engine, repo: Path, store_root: Path) -> None:
    write(repo / "a.txt", "one\n")
    first = _checkpoint(engine, repo)
    write(repo / "a.txt", "two\n")
    second = engine.checkpoint("t1").checkpoint
    assert second is not None
    store = only_store_repo(store_root)

    top = git_bytes(store, "ls-tree", "--name-only", second.commit or "").decode().split()
    assert sorted(top) == ["index", "manifest.enc", "pitstop.json", "worktree"]
    parents = git_bytes(store, "rev-list", "--parents", "-n", "1", second.commit or "")
    _self, *parent_ids = parents.decode().split()
    base = git(repo, "rev-parse", "HEAD").strip()
    assert parent_ids == [first.commit, base]
    ref = git_bytes(store, "rev-parse", "refs/pitstop/checkpoints/t1").decode().strip()
    assert ref == second.commit
    header = git_bytes(store, "cat-file", "blob", f"{second.commit}:pitstop.json")
    assert b'"pitstop.checkpoint/1"' in header and b'"seq": 2' in header


@pytest.mark.parametrize("scenario", ["write-tree", "reset-soft"])
def test_trees_known_only_to_the_users_index_cache(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path, scenario: str
) -> None:
    """The user's index may cache trees that exist only in the user's objects.

    `git write-tree` (lint-staged and friends run it) or `git reset --soft HEAD~1` leaves the
    index's cache-tree pointing at trees that the base commit's history does not contain. The
    snapshot reuses them through the alternate; the store must still end up holding them.
    """
    write(repo / "src/new_module.py", "NEW = True\n")
    git(repo, "add", "src/new_module.py")
    if scenario == "write-tree":
        git(repo, "write-tree")
    else:
        git(repo, "commit", "-q", "-m", "to be undone")
        git(repo, "reset", "-q", "--soft", "HEAD~1")
    write(repo / "docs/guide.txt", "changed elsewhere\n")

    cp = _checkpoint(engine, repo)
    assert engine.verify(cp) == []
    store = only_store_repo(store_root)
    assert blob_at(store, cp.worktree_tree or "", "src/new_module.py") == b"NEW = True\n"
    engine.checkout(cp.ref, tmp_path / "restored")
    assert (tmp_path / "restored/src/new_module.py").read_bytes() == b"NEW = True\n"
