"""Refs written as files (core.git.refs.set_refs) read back by git exactly as `update-ref` would
have left them; and everything the files cannot say safely is left to git, which refuses or
records it as it always does."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import GitError
from core.git import plumbing
from tests.core.corekit import git, init_repo


def _commits(repo: Path, count: int) -> list[str]:
    ids = [git(repo, "rev-parse", "HEAD").strip()]
    for n in range(count - 1):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"c{n}")
        ids.append(git(repo, "rev-parse", "HEAD").strip())
    return ids


def _git_refs(repo: Path, prefix: str = "refs/pitstop/") -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    return dict(line.split(" ", 1) for line in out.splitlines())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "r", {"a.txt": "a\n"})


def test_refs_written_as_files_are_what_git_reads(repo: Path) -> None:
    one, two = _commits(repo, 2)
    git_dir = repo / ".git"
    refs = {
        "refs/pitstop/ledger/t1": one,
        "refs/pitstop/remotes/0123456789ab/ledger/t1": two,
        "refs/pitstop/remotes/0123456789ab/checkpoints/t1": one,
    }
    plumbing.set_refs(git_dir, refs)
    assert _git_refs(repo) == refs
    assert not list(git_dir.rglob("*.lock"))
    assert git(repo, "fsck", "--no-progress").strip() == ""


def test_a_loose_ref_written_over_a_packed_one_wins_as_in_git(repo: Path) -> None:
    one, two = _commits(repo, 2)
    git(repo, "update-ref", "refs/pitstop/ledger/t1", one)
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git/refs/pitstop/ledger/t1").exists()
    plumbing.set_refs(repo / ".git", {"refs/pitstop/ledger/t1": two})
    assert git(repo, "rev-parse", "refs/pitstop/ledger/t1").strip() == two
    git(repo, "pack-refs", "--all")  # and git packs it again as the new value
    assert git(repo, "rev-parse", "refs/pitstop/ledger/t1").strip() == two


def test_a_lock_left_by_a_killed_writer_is_cleared(repo: Path) -> None:
    (one,) = _commits(repo, 1)
    lock = repo / ".git/refs/pitstop/ledger/t1.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("garbage\n")
    plumbing.set_refs(repo / ".git", {"refs/pitstop/ledger/t1": one})
    assert git(repo, "rev-parse", "refs/pitstop/ledger/t1").strip() == one
    assert not lock.exists()


def test_a_ref_outside_pitstops_namespace_is_left_to_git(repo: Path) -> None:
    one, two = _commits(repo, 2)
    git(repo, "update-ref", "refs/heads/side", one)
    git(repo, "pack-refs", "--all")
    plumbing.set_refs(repo / ".git", {"refs/heads/side": two, "refs/pitstop/ledger/t": two})
    assert git(repo, "rev-parse", "refs/heads/side").strip() == two
    # git itself moved it: it logged the move in the (non-bare) repository's reflog
    last = (repo / ".git/logs/refs/heads/side").read_text().splitlines()[-1]
    assert last.startswith(f"{one} {two} ")


def test_a_ref_with_a_reflog_keeps_its_reflog(repo: Path) -> None:
    one, two = _commits(repo, 2)
    git(repo, "update-ref", "--create-reflog", "refs/pitstop/ledger/t1", one)
    log = repo / ".git/logs/refs/pitstop/ledger/t1"
    before = log.read_text().count("\n")
    plumbing.set_refs(repo / ".git", {"refs/pitstop/ledger/t1": two})
    assert git(repo, "rev-parse", "refs/pitstop/ledger/t1").strip() == two
    assert log.read_text().count("\n") == before + 1  # git appended, as update-ref does


@pytest.mark.parametrize(
    "bad",
    [
        "refs/pitstop/../../hooks/pre-push",
        "refs/pitstop/ledger/../../../config",
        "refs/pitstop/ledger/t..x",
        "refs/pitstop/ledger/t.lock",
        "refs/pitstop//ledger",
    ],
)
def test_a_hostile_ref_name_writes_nothing_anywhere(repo: Path, bad: str) -> None:
    one, two = _commits(repo, 2)
    git(repo, "update-ref", "refs/pitstop/ledger/ok", one)
    git_dir = repo / ".git"
    config = (git_dir / "config").read_bytes()
    with pytest.raises(GitError):
        plumbing.set_refs(git_dir, {"refs/pitstop/ledger/ok": two, bad: two})
    assert (git_dir / "config").read_bytes() == config
    assert not (git_dir / "hooks/pre-push").exists()
    # one transaction: the good ref beside the bad one did not move either
    assert git(repo, "rev-parse", "refs/pitstop/ledger/ok").strip() == one


def test_a_ref_where_a_directory_of_refs_is_fails_whole(repo: Path) -> None:
    one, two = _commits(repo, 2)
    git(repo, "update-ref", "refs/pitstop/ledger/t/inner", one)
    git(repo, "update-ref", "refs/pitstop/ledger/ok", one)
    with pytest.raises(GitError):
        plumbing.set_refs(
            repo / ".git", {"refs/pitstop/ledger/ok": two, "refs/pitstop/ledger/t": two}
        )
    assert git(repo, "rev-parse", "refs/pitstop/ledger/ok").strip() == one
    with pytest.raises(GitError):  # and a file where a directory must be
        plumbing.set_refs(repo / ".git", {"refs/pitstop/ledger/ok/deeper": two})
    assert git(repo, "rev-parse", "refs/pitstop/ledger/ok").strip() == one
    assert not list((repo / ".git").rglob("*.lock"))


_NAME = st.text(string.ascii_lowercase + string.digits + "-_", min_size=1, max_size=8)
_REF = st.tuples(
    st.sampled_from(["ledger/", "checkpoints/", "remotes/0123456789ab/ledger/"]), _NAME
).map(lambda pair: "refs/pitstop/" + pair[0] + pair[1])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(st.dictionaries(_REF, st.integers(0, 2), max_size=4), st.booleans()), max_size=6
    )
)
def test_any_sequence_of_writes_reads_back_as_git_would_hold_it(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[dict[str, int], bool]]
) -> None:
    repo = init_repo(tmp_path_factory.mktemp("p") / "r", {"a.txt": "a\n"})
    ids = _commits(repo, 3)
    expected: dict[str, str] = {}
    for updates, pack in steps:
        refs = {ref: ids[n] for ref, n in updates.items()}
        plumbing.set_refs(repo / ".git", refs)
        expected.update(refs)
        if pack:
            git(repo, "pack-refs", "--all")
    assert _git_refs(repo) == dict(sorted(expected.items()))
    assert plumbing.refs_under(repo / ".git", "refs/pitstop/") == dict(sorted(expected.items()))
