"""A remote fetch starts as many git processes as git's own fetch: one (issue 22). A task this
store holds already is fetched into the store repository on its record, without a `rev-parse`
in the user's repository, from the URL its config file says plainly, without a `remote
get-url`; what comes in is the same as when git is asked."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.engine import CheckpointRequest, Engine
from core.errors import NotAGitRepoError
from core.models import CheckpointReason
from tests.core.corekit import git, init_repo, spy_git_starts, write


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """Every git command line this process starts, in order."""
    yield spy_git_starts(monkeypatch)


def _subcommands(calls: list[list[str]]) -> list[str]:
    """The subcommand of each call, past `-c key=value` and `--git-dir` style options."""
    names = []
    for args in calls:
        rest = args[1:]
        while rest and rest[0].startswith("-"):
            rest = rest[2:] if rest[0] in ("-c", "-C") else rest[1:]
        names.append(rest[0] if rest else "")
    return names


@pytest.fixture
def shared(tmp_path: Path) -> dict[str, Any]:
    """Store A pushed a task; store B fetched it once, then A pushed a second checkpoint."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    author = init_repo(tmp_path / "author", {"src/a.py": "a = 1\n", "README.md": "# p\n"})
    git(author, "remote", "add", "origin", str(remote))
    git(author, "push", "-q", "origin", "HEAD:refs/heads/main")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    with Engine(tmp_path / "store-a") as a:
        task = a.start_task(repo=author, objective="count fetch processes")
        write(author / "src/a.py", "a = 2\n")
        a.checkpoint(task.id, CheckpointRequest(reason=CheckpointReason.MILESTONE))
        a.push([task.id])
    with Engine(tmp_path / "store-b") as b:
        b.fetch([task.id], repo=other)
    with Engine(tmp_path / "store-a") as a:
        write(author / "src/a.py", "a = 3\n")
        a.checkpoint(task.id, CheckpointRequest(reason=CheckpointReason.MILESTONE))
        a.push([task.id])
    return {"task": task.id, "other": other, "remote": remote, "tmp": tmp_path}


@pytest.mark.parametrize("repo_given", [True, False])
def test_fetching_a_known_task_from_a_git_remote_starts_only_the_fetch(
    shared: dict[str, Any], git_calls: list[list[str]], repo_given: bool
) -> None:
    with Engine(shared["tmp"] / "store-b") as b:
        git_calls.clear()
        result = b.fetch([shared["task"]], repo=shared["other"] if repo_given else None)
        # no `remote get-url origin`: the clone's config file says the URL plainly; no
        # rev-parse: the task's repository and store repository are on its record
        assert _subcommands(git_calls) == ["fetch"], git_calls
        assert result.fetched[shared["task"]]["checkpoints"] == 1
        assert [c.seq for c in b.list_checkpoints(shared["task"])] == [1, 2]


def test_a_url_git_would_rewrite_is_asked_of_git(
    shared: dict[str, Any], git_calls: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An `insteadOf` in the global config: the file alone does not say the URL, so git does
    (`remote get-url`), and the fetch goes where git would send it."""
    mirror = shared["tmp"] / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(shared["remote"]), str(mirror)])
    config = shared["tmp"] / "rewriting.gitconfig"
    config.write_text(f'[url "{mirror}"]\n\tinsteadOf = {shared["remote"]}\n', encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    with Engine(shared["tmp"] / "store-b") as b:
        git_calls.clear()
        result = b.fetch([shared["task"]], repo=shared["other"])
        assert sorted(_subcommands(git_calls)) == ["fetch", "remote"], git_calls
        fetch_call = next(c for c in git_calls if "fetch" in c)
        assert str(mirror) in fetch_call and str(shared["remote"]) not in fetch_call
        assert result.fetched[shared["task"]]["checkpoints"] == 1


def test_fetching_a_known_task_from_a_named_remote_starts_only_the_fetch(
    shared: dict[str, Any], git_calls: list[list[str]]
) -> None:
    with Engine(shared["tmp"] / "store-b") as b:
        b.add_remote("team", str(shared["remote"]), repo=shared["other"])
        git_calls.clear()
        result = b.fetch([shared["task"]], remote="team", repo=shared["other"])
        assert _subcommands(git_calls) == ["fetch"], git_calls
        assert result.fetched[shared["task"]]["checkpoints"] == 1


def test_a_repository_that_is_not_the_one_on_record_is_asked_of_git(
    shared: dict[str, Any], git_calls: list[list[str]]
) -> None:
    """A subdirectory (or any other path) is not provably the task's repository: git says."""
    sub = shared["other"] / "deeper"
    sub.mkdir()
    with Engine(shared["tmp"] / "store-b") as b:
        git_calls.clear()
        result = b.fetch([shared["task"]], repo=sub)
        assert "rev-parse" in _subcommands(git_calls), git_calls
        assert result.fetched[shared["task"]]["checkpoints"] == 1


def test_a_repository_gone_from_its_record_is_refused_as_before(shared: dict[str, Any]) -> None:
    """No shortcut when the recorded repository is no longer a git work tree."""
    git_dir = shared["other"] / ".git"
    git_dir.rename(shared["tmp"] / "moved.git")
    with (
        Engine(shared["tmp"] / "store-b") as b,
        pytest.raises(NotAGitRepoError, match="git work tree"),
    ):
        b.fetch([shared["task"]])
