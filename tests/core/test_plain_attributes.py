"""Attributes files that leave the stored bytes alone keep a repository plain; every way of
setting a converting attribute (`core.snapshot.plain_attributes`) still takes git's way.

git itself is the oracle: `git check-attr` says which attributes a file sets, `git ls-files`
which attributes files an index tracks, and `update-index` + `write-tree` which tree git writes
(`test_plain_tree._both_ways`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from corekit import blob_at, git, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_plain_tree import _both_ways, _plain, _repo

from core.engine import CheckpointRequest, Engine
from core.snapshot import plain_attributes
from core.snapshot.plain_attributes import CONVERTING, leaves_bytes_alone, tracked_attributes

# A file git would change on its way in under almost any converting attribute.
CONVERTIBLE = b"one\r\ntwo $Id$\r\n"


@pytest.mark.parametrize(
    ("where", "text"),
    [
        (".gitattributes", ".github/ export-ignore\n"),  # ansible's, whole
        ("dir/.gitattributes", "*.txt diff=python linguist-vendored -merge\n# text\n\n"),
        ("other/.gitattributes", "* export-subst whitespace=-trailing delta\r\n"),
        (".git/info/attributes", "*.bin binary\n"),
    ],
)
def test_attributes_that_leave_bytes_alone_keep_a_repository_plain(
    tmp_path: Path, where: str, text: str
) -> None:
    repo, store = _repo(tmp_path)
    write(repo / where, text)
    if not where.startswith(".git/") and where != "other/.gitattributes":
        git(repo, "add", where)
        git(repo, "commit", "-q", "-m", "attributes")
        git(store, "fetch", "-q", str(repo), "main:refs/heads/base")
    write(repo / "dir/b.txt", CONVERTIBLE)
    write(repo / "a.txt", CONVERTIBLE)
    write(repo / "other/new.txt", CONVERTIBLE)
    assert _plain(repo)
    python, by_git = _both_ways(tmp_path, repo, store)
    assert python == by_git  # the bytes as they are, as git stores them here


@pytest.mark.parametrize(
    "text",
    [
        "*.txt -text\n",
        "*.txt !eol\n",
        "*.txt Text\n",  # another attribute to git; refused all the same
        "a.txt\rtext\n",  # a CR is a blank inside git's line
        '"a b.txt" filter=lfs\n',
        "*.txt\tworking-tree-encoding=UTF-16\n",
        "[attr]mine text eol=crlf\n*.txt mine\n",
        '"[attr]mine" diff\n',
        "*.txt ident\n",
        "*.txt crlf\n",
    ],
)
def test_converting_attributes_are_found_however_written(tmp_path: Path, text: str) -> None:
    repo, _store = _repo(tmp_path)
    write(repo / ".gitattributes", text)
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-q", "-m", "attributes")
    assert not leaves_bytes_alone(text.encode())
    assert not _plain(repo)


def test_a_converting_file_among_harmless_ones_is_not_plain(tmp_path: Path) -> None:
    repo, _store = _repo(tmp_path)
    write(repo / ".gitattributes", ".github/ export-ignore\n")
    write(repo / "dir/sub/.gitattributes", "*.txt eol=crlf\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "attributes")
    assert not _plain(repo)


@pytest.mark.parametrize("change", ["edited-on-disk", "gone-from-disk", "link", "too-large"])
def test_a_tracked_attributes_file_is_read_as_git_reads_it(tmp_path: Path, change: str) -> None:
    """git reads a tracked attributes file from the work tree (the index only when it is gone
    from there): harmless in the index and converting on disk is not plain, and what cannot
    be read as git reads it (gone, a link git does not follow, too large) is not either."""
    repo, _store = _repo(tmp_path)
    write(repo / "dir/.gitattributes", "*.txt diff\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "attributes")
    assert _plain(repo)
    attributes = repo / "dir/.gitattributes"
    if change == "edited-on-disk":
        write(attributes, "*.txt text eol=crlf\n")
    elif change == "gone-from-disk":
        attributes.unlink()
    elif change == "link":
        write(repo / "harmless", "*.txt diff\n")
        attributes.unlink()
        os.symlink("../harmless", attributes)
    else:
        write(attributes, "# harmless\n" * (plain_attributes.MAX_BYTES // 10))
    assert not _plain(repo)


def test_a_converting_attribute_on_disk_still_converts_in_a_checkpoint(
    engine: Engine, tmp_path: Path
) -> None:
    """The committed file leaves bytes alone; the one on disk says `eol=lf`: git stores the
    CRLF file as LF, and so must the checkpoint (through the real engine)."""
    repo, _store = _repo(tmp_path)
    write(repo / ".gitattributes", "*.txt diff\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "attributes")
    engine.start_task(repo=repo, objective="line endings", task_id="t1")
    write(repo / ".gitattributes", "*.txt text eol=lf\n")
    write(repo / "a.txt", b"one\r\ntwo\r\n")
    made = engine.checkpoint("t1", CheckpointRequest(force=True)).checkpoint
    assert made is not None and made.worktree_tree
    store = engine.paths.repos / engine.get_task("t1").store_repo
    assert blob_at(store, made.worktree_tree, "a.txt") == b"one\ntwo\n"


def test_tracked_attributes_are_the_index_entries_git_lists(tmp_path: Path) -> None:
    repo, _store = _repo(tmp_path)
    for where in (".gitattributes", "dir/.gitattributes", "dir/x.gitattributes", "ü/.x"):
        write(repo / where, "* diff\n")  # x.gitattributes is not an attributes file
    write(repo / "ü/.gitattributes", "* diff\n")
    git(repo, "add", "-A")
    # A path longer than the index's 12-bit name length (and than the file system allows):
    # an entry only, as `update-index --cacheinfo` makes it.
    blob = git(repo, "hash-object", "-w", "a.txt").strip()
    deep = "/".join(["d" * 200] * 22)
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{deep}/.gitattributes")
    write(repo / "intent.txt", "added with -N: an extended entry (index version 3)\n")
    git(repo, "add", "-N", "intent.txt")
    index = (repo / ".git/index").read_bytes()
    assert index[4:8] == b"\0\0\0\3"
    listed = subprocess.run(
        ["git", "-c", "core.quotePath=false", "ls-files", "-z"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout.decode()
    expected = [p for p in listed.split("\0") if p.rpartition("/")[2] == ".gitattributes"]
    assert len(expected) == 4
    assert tracked_attributes(index) == expected
    assert tracked_attributes(index[:-200]) is None or len(index) < 200  # cut short
    assert tracked_attributes(index[: len(index) // 2]) is None


def test_a_sparse_index_is_not_read(tmp_path: Path) -> None:
    repo, _store = _repo(tmp_path)
    git(repo, "sparse-checkout", "init", "--cone", "--sparse-index")
    git(repo, "sparse-checkout", "set", "dir")
    index = (repo / ".git/index").read_bytes()
    assert tracked_attributes(index) is None


# --- against git's own reading of attributes files ---------------------------------------------

PATHS = ["a.txt", "a b.txt", "dir/b.txt", "x.bin"]
NAMES = [*CONVERTING, "Text", "EOL", "binary", "diff", "merge", "export-ignore", "mine", "x"]
WORD = st.builds(
    lambda prefix, name, value: f"{prefix}{name}{value}",
    st.sampled_from(["", "-", "!"]),
    st.sampled_from(NAMES),
    st.sampled_from(["", "=lf", "=crlf", "=auto", "=UTF-16", "=lfs"]),
)
LINE = st.one_of(
    st.builds(
        lambda pattern, words, blank: pattern + blank + blank.join(words),
        st.sampled_from(["*", "*.txt", '"a b.txt"', "dir/", "dir/*", "#", "[attr]mine"]),
        st.lists(WORD, max_size=3),
        st.sampled_from([" ", "\t", "\r", " \t"]),
    ),
    st.just(""),
)


@pytest.fixture(scope="module")
def attr_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("attrs") / "repo"
    git(repo.parent, "init", "-q", str(repo))
    return repo


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(LINE, max_size=5), ending=st.sampled_from(["\n", "\r\n"]))
def test_what_is_called_harmless_sets_nothing_git_converts_by(
    attr_repo: Path, lines: list[str], ending: str
) -> None:
    text = ending.join(lines) + ending
    (attr_repo / ".gitattributes").write_bytes(text.encode())
    if not leaves_bytes_alone(text.encode()):
        return
    shown = subprocess.run(
        ["git", "check-attr", "-z", *sorted(CONVERTING), "--", *PATHS],
        cwd=attr_repo,
        capture_output=True,
        check=True,
    ).stdout.decode()
    fields = shown.split("\0")[:-1]
    for path, name, value in zip(fields[::3], fields[1::3], fields[2::3], strict=True):
        allowed = ("unspecified", "unset") if name in ("text", "crlf") else ("unspecified",)
        assert value in allowed, (text, path, name, value)
