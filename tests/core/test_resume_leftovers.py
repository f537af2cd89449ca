"""Hostile trees are refused by validation as git would refuse them, a failed resume takes back
the worktree and branch it added, a harness that cannot start leaves the task as it was, and a
killed writer's temporary index is private."""

from __future__ import annotations

import dataclasses
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from corekit import git, only_store_repo, write

from core.engine import Engine
from core.errors import GitError, ResumeRefusedError, UsageError
from core.models import NamedVersion, TaskStatus
from core.restore.checks.tree_paths import refused_path


def _store_git(store_repo: Path, *args: str, data: bytes = b"") -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(store_repo), *args], input=data, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


def _hostile_checkpoint(store_root: Path, repo: Path, extra: str) -> str:
    """A checkpoint whose worktree tree also holds `extra` (`mktree` lines, `{blob}` and
    `{tree}` filled in), as a teammate holding the task's key could push: commit, ref and row
    all agree, so it verifies. Returns the hostile tree."""
    with Engine() as engine:
        engine.start_task(repo=repo, objective="hostile", task_id="t1")
        write(repo / "src/app.py", "print('changed')\n")
        cp = engine.checkpoint("t1").checkpoint
        assert cp is not None and cp.commit and cp.worktree_tree
    store_repo = only_store_repo(store_root)
    blob = _store_git(store_repo, "hash-object", "-w", "--stdin", data=b"#!/bin/sh\necho owned\n")
    tree = _store_git(store_repo, "mktree", data=f"100755 blob {blob}\tpost-checkout\n".encode())
    lines = _store_git(store_repo, "ls-tree", cp.worktree_tree)
    lines += "\n" + extra.format(blob=blob, tree=tree) + "\n"
    hostile = _store_git(store_repo, "mktree", data=lines.encode())
    root = _store_git(store_repo, "ls-tree", cp.commit).replace(cp.worktree_tree, hostile)
    root_tree = _store_git(store_repo, "mktree", data=(root + "\n").encode())
    parents = _store_git(store_repo, "log", "-1", "--format=%P", cp.commit).split()
    message = _store_git(store_repo, "log", "-1", "--format=%B", cp.commit)
    args = ["commit-tree", root_tree, "-m", message]
    for parent in parents:
        args += ["-p", parent]
    commit = _store_git(store_repo, *args)
    _store_git(store_repo, "update-ref", "refs/pitstop/checkpoints/t1", commit)
    with sqlite3.connect(store_root / "pitstop.db") as db:
        db.execute(
            "UPDATE checkpoints SET commit_sha = ?, worktree_tree = ? WHERE task_id = 't1'",
            [commit, hostile],
        )
    return hostile


def _git_checks_out(store_repo: Path, tree: str, into: Path) -> bool:
    """Whether git checks `tree` out whole (what a resume's `read-tree -u` does)."""
    into.mkdir()
    env = {**os.environ, "GIT_INDEX_FILE": str(into.parent / "probe-index")}
    done = subprocess.run(
        ["git", "--git-dir", str(store_repo), "--work-tree", str(into), "read-tree", "-u", tree],
        env=env,
        capture_output=True,
    )
    listed = _store_git(store_repo, "ls-tree", "-r", "--name-only", tree).splitlines()
    return done.returncode == 0 and all((into / path).exists() for path in listed)


def _leftovers(repo: Path) -> tuple[str, str]:
    return git(repo, "worktree", "list").count("\n"), git(repo, "branch", "--list", "pitstop/*")


HOSTILE = {
    "dot-git": ("040000 tree {tree}\t.git", "writes into git's own directory"),
    "dot-git-upper": ("040000 tree {tree}\t.GIT", "writes into git's own directory"),
    "dot-git-ntfs": ("100644 blob {blob}\t.git.", "writes into git's own directory"),
    "short-name": ("040000 tree {tree}\tgit~1", "writes into git's own directory"),
    "dot-dot": ("040000 tree {tree}\t..", "part"),
    "gitmodules-link": ("120000 blob {blob}\t.gitmodules", "a symbolic link"),
    "file-and-dir": ("100644 blob {blob}\tsrc", "names 'src' twice"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_validate_refuses_trees_git_refuses_to_check_out(
    name: str, store_root: Path, repo: Path, tmp_path: Path
) -> None:
    extra, words = HOSTILE[name]
    hostile = _hostile_checkpoint(store_root, repo, extra)
    assert not _git_checks_out(only_store_repo(store_root), hostile, tmp_path / "probe")
    before = _leftovers(repo)
    with Engine() as engine:
        report = engine.validate("t1@1")
        assert report.verdict.value == "blocked"
        (finding,) = [f for f in report.findings if f.check == "tree-paths"]
        assert words in finding.message and "\n" not in finding.message
        with pytest.raises(ResumeRefusedError, match="git refuses to check out"):
            engine.resume("t1@1")
    assert _leftovers(repo) == before  # nothing added to the user's repository


def test_a_sound_tree_passes(store_root: Path, repo: Path) -> None:
    with Engine() as engine:
        engine.start_task(repo=repo, objective="sound", task_id="t1")
        engine.checkpoint("t1")
        report = engine.validate("t1@1")
    (finding,) = [f for f in report.findings if f.check == "tree-paths"]
    assert finding.status.value == "pass"


def test_case_clash_refused_where_names_fold() -> None:
    entries = [("100644", "README.md"), ("100644", "readme.md")]
    assert refused_path(entries) is None
    assert "one name on this filesystem" in (refused_path(entries, case_insensitive=True) or "")


def test_failed_restore_takes_back_its_worktree_and_branch(store_root: Path, repo: Path) -> None:
    """A name too long for the filesystem: git takes it into an index, then cannot write it."""
    _hostile_checkpoint(store_root, repo, "100644 blob {blob}\t" + "n" * 300)
    before = _leftovers(repo)
    with Engine() as engine:
        assert engine.validate("t1@1").verdict.value == "ready"
        with pytest.raises(GitError):
            engine.resume("t1@1")
        (record,) = engine.resume_records("t1")
        assert record["state"] == "failed"
    assert _leftovers(repo) == before
    assert not (repo.parent / f"{repo.name}-pitstop-t1").exists()


@pytest.mark.parametrize("keep", [False, True])
def test_failed_launch_takes_back_its_worktree_unless_kept(
    keep: bool, store_root: Path, repo: Path
) -> None:
    before = _leftovers(repo)
    with Engine() as engine:
        engine.start_task(repo=repo, objective="launch", task_id="t1")
        engine.checkpoint("t1")
        plan = engine.resume("t1@1", keep_worktree=keep)
        assert plan.branch == "pitstop/t1" and plan.workdir.is_dir()
        broken = dataclasses.replace(plan, command=(str(repo / "no-such-harness"),))
        with pytest.raises(UsageError, match="cannot launch the harness") as failed:
            engine.launch(broken, keep_worktree=keep)
        assert engine.get_task("t1").status is TaskStatus.RUNNING  # as before the resume
    if keep:
        assert plan.workdir.is_dir() and "pitstop/t1" in git(repo, "branch", "--list")
    else:
        assert "removed" in failed.value.message
        assert _leftovers(repo) == before and not plan.workdir.exists()


def test_a_harness_that_is_not_installed_puts_the_task_back_and_keeps_the_plan(
    isolated_env: dict[str, Path], store_root: Path, repo: Path
) -> None:
    """The launch runs through `sh -c`, which says "not found" with exit 127."""
    (isolated_env["config"] / "config.toml").write_text(
        '[harness.absent]\nresume = "no-such-harness-for-pitstop --brief {brief}"\n'
    )
    with Engine() as engine:
        engine.start_task(
            repo=repo, objective="launch", task_id="t1", harness=NamedVersion("absent")
        )
        engine.checkpoint("t1")
        engine.set_task_activity("t1", TaskStatus.WAITING, "asked the operator")
        plan = engine.resume("t1@1")
        assert engine.get_task("t1").status is TaskStatus.RESUMING
        with pytest.raises(UsageError, match="cannot launch the harness") as failed:
            engine.launch(plan)
        message = failed.value.message
        assert "not installed" in message and "waiting again" in message, message
        assert engine.get_task("t1").status is TaskStatus.WAITING
        back = [e for e in engine.events("t1") if e.entity == "task" and e.to_state == "waiting"]
        assert back[-1].from_state == "resuming" and "harness" in (back[-1].reason or "")
        (record,) = engine.resume_records("t1")
        assert record["state"] == "failed"
        # the plan is kept: its brief and worktree, which a second resume takes up as they are
        assert plan.brief_md.is_file() and plan.workdir.is_dir()
        assert str(plan.workdir) in message
        again = engine.resume("t1@1", into=plan.workdir)
        assert again.workdir == plan.workdir and again.branch is None
        assert engine.get_task("t1").status is TaskStatus.RESUMING


def test_killed_writers_temporary_index_is_private(
    store_root: Path, repo: Path, tmp_path: Path
) -> None:
    """A checkpoint killed while git works on its copy of the user's (0644) index."""
    (repo / ".git/index").chmod(0o644)
    with Engine() as engine:
        engine.start_task(repo=repo, objective="killed", task_id="t1")
    real_git = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    slow = write(
        tmp_path / "bin/git",
        f'#!/bin/sh\ncase " $* " in *" write-tree "*) touch "{tmp_path}/in-git"; sleep 60;; esac\n'
        f'exec {real_git} "$@"\n',
        mode=0o755,
    )
    env = {**os.environ, "PATH": f"{slow.parent}:{os.environ['PATH']}"}
    child = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "checkpoint", "t1", "--force"],
        env=env,
        cwd=repo,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / "in-git").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGKILL)  # the writer and its git: nothing runs after it
    child.wait()
    (index,) = (store_root / "tmp").glob("snapshot-*/index")
    assert stat.S_IMODE(index.stat().st_mode) == 0o600
    report = Engine.doctor()
    assert any(f.kind == "temporary-files" for f in report.remaining)
    assert Engine.doctor(fix=True).healthy
