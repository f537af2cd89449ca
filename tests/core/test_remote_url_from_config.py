"""A git remote's URL read from the config file answers exactly what `git remote get-url` does,
or not at all (issue 22: a fetch no longer starts a process to learn its remote's URL)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from core.git.remote_config import configured_remote_url
from tests.core.corekit import git, init_repo

PLAIN = [
    '[remote "origin"]\n\turl = ../remote.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n',
    '[remote "origin"]\nurl=git@host.example:team/app.git\n',
    '[Remote "origin"]\n  URL =   https://host.example/app.git   \n',
    '[remote "other"]\n\turl = /elsewhere\n[remote "origin"]\n\turl = /srv/app.git\n',
    '[remote "origin"]\n\t# url = /commented\n\tpushurl = /push-only\n\turl = /srv/app.git\n',
]
# Configs where the file alone cannot say what git answers: git is asked instead.
DOUBTFUL = [
    '[remote "origin"]\n\turl = "/quoted path"\n',
    '[remote "origin"]\n\turl = /srv/a.git\n\turl = /srv/b.git\n',
    '[remote "origin"]\n\turl = /srv/a.git ; a comment\n',
    '[remote "origin"]\n\turl = /srv/\\\na.git\n',
    "[remote.origin]\n\turl = /old/style\n",
    '[url "/rewritten/"]\n\tinsteadOf = /srv/\n[remote "origin"]\n\turl = /srv/app.git\n',
    '[include]\n\tpath = other.config\n[remote "origin"]\n\turl = /srv/app.git\n',
    '[remote "origin"] url = /same/line\n',
    '[remote "origin"]\n\turl\n',
    '[remote "upstream"]\n\turl = /srv/app.git\n',
]


def _repo(tmp_path: Path, config: str) -> Path:
    repo = init_repo(tmp_path / "repo", {"a.txt": "a\n"})
    with open(repo / ".git" / "config", "a", encoding="utf-8") as handle:
        handle.write(config)
    return repo


def _git_says(repo: Path) -> str | None:
    proc = subprocess.run(
        ["git", "remote", "get-url", "origin"], cwd=repo, capture_output=True, check=False
    )
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


@pytest.mark.parametrize("config", PLAIN)
def test_a_plain_config_gives_what_git_gives(tmp_path: Path, config: str) -> None:
    repo = _repo(tmp_path, config)
    expected = _git_says(repo)
    assert expected is not None
    assert configured_remote_url(repo, "origin") == expected


@pytest.mark.parametrize("config", DOUBTFUL)
def test_any_doubt_leaves_the_answer_to_git(tmp_path: Path, config: str) -> None:
    assert configured_remote_url(_repo(tmp_path, config), "origin") is None


def test_global_config_and_environment_that_could_change_the_url_leave_it_to_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path, '[remote "origin"]\n\turl = /srv/app.git\n')
    assert configured_remote_url(repo, "origin") == "/srv/app.git"
    rewriting = tmp_path / "global.config"
    rewriting.write_text('[url "/mirror/"]\n\tinsteadOf = /srv/\n', encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(rewriting))
    assert _git_says(repo) == "/mirror/app.git"  # what git answers, and we would have missed
    assert configured_remote_url(repo, "origin") is None
    monkeypatch.delenv("GIT_CONFIG_GLOBAL")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".gitconfig").write_text('[remote "origin"]\n\turl = /home/wins\n')
    assert configured_remote_url(repo, "origin") is None
    empty = tmp_path / "empty.config"
    empty.write_text("", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    assert configured_remote_url(repo, "origin") == "/srv/app.git"
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "remote.origin.url")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "/from/env")
    assert configured_remote_url(repo, "origin") is None


def test_a_worktree_or_a_missing_repository_is_left_to_git(tmp_path: Path) -> None:
    repo = _repo(tmp_path, '[remote "origin"]\n\turl = /srv/app.git\n')
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    assert _git_says(tmp_path / "wt") == "/srv/app.git"
    assert configured_remote_url(tmp_path / "wt", "origin") is None
    assert configured_remote_url(tmp_path / "nowhere", "origin") is None
