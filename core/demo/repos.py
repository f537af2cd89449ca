"""Git in the demo repositories: origins with a fixed history, agents' clones, and their edits.

Every git call runs with a clean environment, a fixed identity and a fixed date, which is what
makes the demo's commits (and so the store's snapshots) the same on every run and every machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path

from core.errors import GitError
from core.git.run import REPO_LOCATION_VARS

_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Dana Demo",
    "GIT_AUTHOR_EMAIL": "dana@shopfront.example",
    "GIT_COMMITTER_NAME": "Dana Demo",
    "GIT_COMMITTER_EMAIL": "dana@shopfront.example",
}


def _git_env(repo: Path, when: datetime) -> dict[str, str]:
    """A clean environment: no user or system config, a fixed identity and date.

    The global config is a file of the demo's own that does not exist (git reads it as empty),
    never /dev/null: as root, any `git config --global` would replace /dev/null with a file.
    """
    env = {k: v for k, v in os.environ.items() if k not in REPO_LOCATION_VARS}
    stamp = f"@{int(when.timestamp())} +0000"
    env.update(_GIT_IDENTITY)
    env.update(
        {
            "GIT_CONFIG_GLOBAL": str(repo.parent / ".demo-gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
            "LC_ALL": "C",
        }
    )
    return env


def git(repo: Path, *args: str, when: datetime, extra_env: Mapping[str, str] | None = None) -> str:
    """Run git in `repo` as the demo's author at `when`; its output, or a GitError saying why."""
    env = _git_env(repo, when)
    env.update(extra_env or {})
    try:
        result = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=True)
    except subprocess.CalledProcessError as exc:
        detail = exc.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(
            f"building the demo failed: git {' '.join(args)} in {repo}: "
            f"{detail[-1] if detail else exc.returncode}"
        ) from exc
    return result.stdout.decode()


def write_file(repo: Path, path: str, text: str) -> None:
    """Write a whole file of the repository (its folders made as needed)."""
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def replace_passage(repo: Path, path: str, old: str, new: str) -> None:
    """Edit a file the way an agent does: replace one exact passage."""
    target = repo / path
    text = target.read_text(encoding="utf-8")
    if old not in text:
        raise ValueError(f"demo edit of {path} expected to find {old!r}")
    target.write_text(text.replace(old, new, 1), encoding="utf-8")


def commit_behind_the_agents_back(
    repo: Path, branch: str, path: str, text: str, message: str, when: datetime
) -> None:
    """A teammate's commit lands on `branch` while the task is paused; the work tree is untouched.

    Plumbing only (a private index, commit-tree, update-ref), exactly what a push to the branch
    followed by a fetch into the agent's clone would leave: the branch moved, the files did not.
    """
    scratch = repo.parent / ".teammate"
    scratch.mkdir(exist_ok=True)
    content = scratch / "blob"
    content.write_text(text, encoding="utf-8")
    index = {"GIT_INDEX_FILE": str(scratch / "index")}
    blob = git(repo, "hash-object", "-w", str(content), when=when).strip()
    git(repo, "read-tree", branch, when=when, extra_env=index)
    git(
        repo,
        "update-index",
        "--add",
        "--cacheinfo",
        f"100644,{blob},{path}",
        when=when,
        extra_env=index,
    )
    tree = git(repo, "write-tree", when=when, extra_env=index).strip()
    parent = git(repo, "rev-parse", branch, when=when).strip()
    commit = git(repo, "commit-tree", tree, "-p", parent, "-m", message, when=when).strip()
    git(repo, "update-ref", f"refs/heads/{branch}", commit, parent, when=when)
    shutil.rmtree(scratch)


def make_origin(
    root: Path,
    name: str,
    files: Mapping[str, str],
    history: tuple[tuple[str, tuple[str, ...]], ...],
    first_commit_at: datetime,
) -> Path:
    """Create a repository whose history is the same on every run."""
    repo = root / name
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main", when=first_commit_at)
    for step, (message, paths) in enumerate(history):
        when = first_commit_at + timedelta(days=step, hours=step * 3)
        for path in paths:
            write_file(repo, path, files[path])
        git(repo, "add", "--", *paths, when=when)
        git(repo, "commit", "--quiet", "-m", message, when=when)
    return repo


def clone_for_task(origin: Path, root: Path, task_id: str, branch: str, when: datetime) -> Path:
    """The agent's own clone of the repository, on its own branch."""
    clone = root / "agents" / task_id / origin.name
    clone.parent.mkdir(parents=True)
    git(root, "clone", "--quiet", str(origin), str(clone), when=when)
    git(clone, "checkout", "--quiet", "-b", branch, when=when)
    return clone
