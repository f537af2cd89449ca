"""The work tree's tree written in Python is the tree git writes, and the Python way is refused
wherever git would store something other than the bytes and stat mode on disk.

Each example edits a real repository (contents, deletions, exec bits, symbolic links, new
nested directories, whole directories gone, names that sort around `dir/`, staged changes,
a directory turned into a link) and writes its work-tree tree both ways: through
`plain_tree` where it models the change, by `update-index` + `write-tree` always. The ids must
be equal; where `plain_tree` refuses (`NotPlain`), the snapshot's fallback gives git's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from corekit import blob_at, git, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import snapshot
from core.engine import CheckpointRequest, Engine
from core.git import plumbing
from core.git.reader import session_reader
from core.snapshot import plain_tree, take
from core.snapshot.selection import STATUS_ARGS, parse_status

FILES = {
    "a.txt": "alpha\n",
    "dir/b.txt": "bravo\n",
    "dir/sub/c.txt": "charlie\n",
    "dir/sub/d.sh": "#!/bin/sh\necho delta\n",
    "other/e.txt": "echo\n",
    "other/f.txt": "foxtrot\n",
    "ü-name.txt": "unicode\n",
}
NEW_PATHS = (
    "new.txt",
    "dir/new.txt",
    "fresh/deep/er/n.txt",
    "dir/sub/z.txt",
    "dir-x.txt",  # sorts before "dir/" as git sorts a tree's name: "dir/" > "dir-"
    "dir.txt",
    "dir0",
    "Z.txt",
)


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    """A committed repository and a store repository that holds its objects, deltified."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    for path, text in FILES.items():
        write(repo / path, text)
    (repo / "dir/sub/d.sh").chmod(0o755)
    os.symlink("a.txt", repo / "link")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    store = tmp_path / "store.git"
    git(tmp_path, "init", "-q", "--bare", str(store))
    git(store, "fetch", "-q", str(repo), "main:refs/heads/base")
    return repo, store


def _both_ways(tmp_path: Path, repo: Path, store: Path) -> tuple[str | None, str]:
    """(the Python tree, or None when it refused; git's tree) of the work tree as it is."""
    source = snapshot.resolve_source_repo(repo)
    index = tmp_path / "index"
    shutil.copy2(source.index_file, index)
    env = {
        "GIT_INDEX_FILE": str(index),
        "GIT_OBJECT_DIRECTORY": str(store / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(source.objects_dir),
    }
    status = subprocess.run(
        ["git", *STATUS_ARGS], cwd=repo, env={**os.environ, **env}, capture_output=True, check=True
    )
    scan = parse_status(status.stdout)
    include = [*scan.worktree_changed, *scan.untracked]
    written = subprocess.run(
        ["git", "write-tree"], cwd=repo, env={**os.environ, **env}, capture_output=True, check=True
    )
    index_tree = written.stdout.decode().strip()
    assert plain_tree.plain_repository(source, True, scan, index)
    python: str | None
    with plumbing.session(store):
        reader = session_reader(store)
        assert reader is not None
        try:
            python = plain_tree.worktree_tree(store, repo, index_tree, include, [], reader)
        except plain_tree.NotPlain:
            python = None
        fallback = take._write_worktree_tree(
            source, store, env, index_tree, include, [], plain=True
        )
    by_git = take._write_worktree_tree(source, store, env, index_tree, include, [], plain=False)
    assert fallback == by_git  # the snapshot's own choice, whichever way it went
    return python, by_git


EDITS = st.lists(
    st.one_of(
        st.tuples(st.just("edit"), st.sampled_from(sorted(FILES)), st.binary(max_size=40)),
        st.tuples(st.just("delete"), st.sampled_from([*FILES, "link"]), st.none()),
        st.tuples(st.just("chmod"), st.sampled_from(sorted(FILES)), st.none()),
        st.tuples(st.just("new"), st.sampled_from(NEW_PATHS), st.binary(max_size=40)),
        st.tuples(st.just("link"), st.sampled_from([*NEW_PATHS[:3], "a.txt"]), st.none()),
        st.tuples(st.just("drop-dir"), st.sampled_from(["other", "dir/sub"]), st.none()),
        st.tuples(st.just("file-for-dir"), st.sampled_from(["other", "dir/sub"]), st.binary()),
        st.tuples(st.just("link-for-dir"), st.sampled_from(["other", "dir/sub"]), st.none()),
        st.tuples(st.just("stage"), st.sampled_from([*FILES, *NEW_PATHS]), st.none()),
    ),
    max_size=8,
)


def _apply(repo: Path, edits: list[tuple[str, str, bytes | None]]) -> None:
    """Make each edit that still makes sense (one under a directory made a file is skipped)."""
    for kind, path, data in edits:
        try:
            _edit(repo, kind, path, data)
        except (NotADirectoryError, FileExistsError):
            continue


def _edit(repo: Path, kind: str, path: str, data: bytes | None) -> None:
    target = repo / path
    if kind in ("edit", "new"):
        if target.is_symlink() or target.is_file() or not target.exists():
            target.unlink(missing_ok=True)
            write(target, data or b"")
    elif kind == "delete" and (target.is_symlink() or target.is_file()):
        target.unlink()
    elif kind == "chmod" and target.is_file() and not target.is_symlink():
        target.chmod(target.stat().st_mode ^ 0o111)
    elif kind == "link" and not target.is_dir():
        target.unlink(missing_ok=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink("dir", target)
    elif kind == "drop-dir" and target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif kind in ("file-for-dir", "link-for-dir") and target.is_dir():
        if target.is_symlink():
            target.unlink()
        else:
            shutil.rmtree(target)
        if kind == "file-for-dir":
            write(target, data or b"")
        else:
            os.symlink("a.txt", target)
    elif kind == "stage":  # a path that matches nothing stages nothing
        subprocess.run(["git", "add", "-A", "--", path], cwd=repo, capture_output=True)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edits=EDITS)
def test_the_python_tree_is_the_tree_git_writes(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, str, bytes | None]]
) -> None:
    tmp_path = tmp_path_factory.mktemp("plain")
    repo, store = _repo(tmp_path)
    _apply(repo, edits)
    python, by_git = _both_ways(tmp_path, repo, store)
    assert python is None or python == by_git
    # every object of the tree is in the store by itself, readable by git
    git(store, "ls-tree", "-r", by_git)


def test_the_common_edits_are_written_in_python(tmp_path: Path) -> None:
    """The property above must not pass by refusing: ordinary edits take the Python way."""
    repo, store = _repo(tmp_path)
    _apply(
        repo,
        [
            ("edit", "dir/sub/c.txt", b"changed\n"),
            ("chmod", "a.txt", None),
            ("delete", "other/e.txt", None),
            ("delete", "other/f.txt", None),
            ("new", "fresh/deep/er/n.txt", b"new\n"),
            ("new", "dir-x.txt", b"x\n"),
            ("link", "new.txt", None),
            ("stage", "dir/sub/c.txt", None),
            ("edit", "dir/sub/c.txt", b"changed again\n"),
            ("file-for-dir", "dir/sub", b"a file where a directory was\n"),
        ],
    )
    python, by_git = _both_ways(tmp_path, repo, store)
    assert python == by_git


def test_a_directory_turned_into_a_link_is_a_link_both_ways(tmp_path: Path) -> None:
    """What was under the directory is gone, as `git add -A` sees it (git's `update-index
    --remove` refused such a path, and the checkpoint failed, until it was forced out)."""
    repo, store = _repo(tmp_path)
    shutil.rmtree(repo / "other")
    os.symlink("dir", repo / "other")
    python, by_git = _both_ways(tmp_path, repo, store)
    assert python == by_git
    entries = git(store, "ls-tree", "-r", by_git)
    assert "other/e.txt" not in entries and "120000 blob" in entries.split("\tother\n")[0]


def test_a_tree_the_store_does_not_hold_takes_gits_way(tmp_path: Path) -> None:
    repo, store = _repo(tmp_path)
    write(repo / "dir/sub/c.txt", "charlie, committed again\n")
    git(repo, "commit", "-q", "-am", "not in the store")  # HEAD's new trees: the user's only
    write(repo / "dir/sub/c.txt", "and edited\n")
    python, by_git = _both_ways(tmp_path, repo, store)
    assert python is None and by_git


# --- what makes a repository not plain --------------------------------------------------------


def _plain(repo: Path) -> bool:
    located = snapshot.locate(repo)
    source = located.source
    status = subprocess.run(["git", *STATUS_ARGS], cwd=repo, capture_output=True, check=True)
    return plain_tree.plain_repository(
        source, located.plain_config, parse_status(status.stdout), source.index_file
    )


def test_a_plain_repository_is_plain(tmp_path: Path) -> None:
    repo, _store = _repo(tmp_path)
    assert _plain(repo)


@pytest.mark.parametrize(
    "setup",
    [
        "tracked-attributes",
        "untracked-attributes",
        "ignored-attributes",
        "ignored-directory",
        "info-attributes",
        "global-attributes",
        "attr-source",
        "index-v4",
        "autocrlf",
        "autocrlf-input",
        "filemode-false",
        "symlinks-false",
        "ignorecase",
        "attributesfile",
        "global-autocrlf",
    ],
)
def test_what_git_would_convert_makes_a_repository_not_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setup: str
) -> None:
    repo, _store = _repo(tmp_path)
    if setup == "tracked-attributes":
        write(repo / "dir/.gitattributes", "*.txt text eol=crlf\n")
        git(repo, "add", "dir/.gitattributes")
        git(repo, "commit", "-q", "-m", "attributes")
    elif setup == "untracked-attributes":
        write(repo / "other/.gitattributes", "*.txt ident\n")
    elif setup in ("ignored-attributes", "ignored-directory"):
        write(repo / ".git/info/exclude", ".gitattributes\n" if "attr" in setup else "build/\n")
        where = "dir/.gitattributes" if "attr" in setup else "build/.gitattributes"
        write(repo / where, "* filter=lfs\n" if "attr" in setup else "*\n")
    elif setup == "info-attributes":
        write(repo / ".git/info/attributes", "*.txt text\n")
    elif setup == "global-attributes":
        write(tmp_path / "xdg/git/attributes", "* text=auto\n")
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    elif setup == "attr-source":
        monkeypatch.setenv("GIT_ATTR_SOURCE", "HEAD")
    elif setup == "index-v4":
        git(repo, "update-index", "--index-version", "4")
    elif setup == "global-autocrlf":
        config = tmp_path / "global-config"
        config.write_text("[core]\n\tautocrlf = true\n")
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    else:
        key, value = {
            "autocrlf": ("core.autocrlf", "true"),
            "autocrlf-input": ("core.autocrlf", "input"),
            "filemode-false": ("core.fileMode", "false"),
            "symlinks-false": ("core.symlinks", "false"),
            "ignorecase": ("core.ignoreCase", "true"),
            "attributesfile": ("core.attributesFile", str(tmp_path / "none")),
        }[setup]
        git(repo, "config", key, value)
    assert not _plain(repo)


def test_config_booleans_read_as_git_reads_them(tmp_path: Path) -> None:
    repo, _store = _repo(tmp_path)
    for value, plain in (("yes", True), ("on", True), ("1", True), ("0", False), ("", False)):
        git(repo, "config", "core.filemode", value)
        assert snapshot.locate(repo).plain_config is plain, value
    git(repo, "config", "core.filemode", "true")
    git(repo, "config", "--add", "core.autocrlf", "true")
    git(repo, "config", "--add", "core.autocrlf", "false")  # the last one wins
    assert snapshot.locate(repo).plain_config


def test_an_attributes_file_still_gets_gits_conversion_in_a_checkpoint(
    engine: Engine, tmp_path: Path
) -> None:
    """The refusal matters: with `eol=lf`, git stores a CRLF file as LF; a plain repository
    keeps the bytes as they are. Both through the real engine."""
    converted, _store = _repo(tmp_path / "converted")
    write(converted / ".gitattributes", "*.txt text eol=lf\n")
    git(converted, "add", ".gitattributes")
    git(converted, "commit", "-q", "-m", "attributes")
    plain, _other = _repo(tmp_path / "plain")
    for repo, task_id, expected in ((converted, "conv", b"one\ntwo\n"), (plain, "raw", None)):
        engine.start_task(repo=repo, objective="line endings", task_id=task_id)
        write(repo / "a.txt", b"one\r\ntwo\r\n")
        made = engine.checkpoint(task_id, CheckpointRequest(force=True)).checkpoint
        assert made is not None and made.worktree_tree
        store = engine.paths.repos / engine.get_task(task_id).store_repo
        assert blob_at(store, made.worktree_tree, "a.txt") == (expected or b"one\r\ntwo\r\n")


def test_raw_entries_are_the_trees_own_bytes_and_damage_is_not_plain(repo: Path) -> None:
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    body = subprocess.run(
        ["git", "cat-file", "tree", tree], cwd=repo, capture_output=True, check=True
    ).stdout
    entries = plain_tree._raw_entries(body)
    assert b"".join(entry for _mode, entry in entries.values()) == body  # in git's order
    listed = git(repo, "ls-tree", tree).splitlines()
    assert [name.decode() for name in entries] == [line.split("\t")[1] for line in listed]
    assert [mode.decode().rjust(6, "0") for mode, _ in entries.values()] == [
        line.split()[0] for line in listed
    ]
    for damaged in (body[:-1], body[:-21] + b"100644 no-nul", b"100644"):
        with pytest.raises(plain_tree.NotPlain):
            plain_tree._raw_entries(damaged)
