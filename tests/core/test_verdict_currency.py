"""A verdict stays true or says it is out of date: the branch it was reached on moving counts.

A validation keeps the tip of the checkpoint's branch; the dashboard's summaries (the whole list
and the first screenful) compare it with where the repository's branch points now, read from
its ref files. Every layout git can leave those files in is compared with git's own answer.
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from corekit import git, init_repo

from core.engine import Engine
from core.engine.attention import attention
from core.git.branch_tips import branch_tip
from core.models import TaskStatus


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())


def advance(repo: Path, branch: str = "main", name: str = "later.txt") -> str:
    """A commit on `branch` made elsewhere (the work tree and index stay as they are)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(repo / ".git" / "side-index")}
    old = git(repo, "rev-parse", f"refs/heads/{branch}").strip()
    subprocess.run(["git", "read-tree", old], cwd=repo, env=env, check=True)
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"later\n").strip()
    subprocess.run(
        ["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},{name}"],
        cwd=repo,
        env=env,
        check=True,
    )
    tree = subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    (repo / ".git" / "side-index").unlink()
    new = git(repo, "commit-tree", tree, "-p", old, "-m", "moved on").strip()
    git(repo, "update-ref", f"refs/heads/{branch}", new, old)
    return new


@pytest.fixture
def validated(engine: Engine, repo: Path) -> Callable[[], str]:
    """A paused task with one checkpoint, validated on branch main: its id."""

    def factory() -> str:
        task = engine.start_task(repo=repo, objective="tidy the parser")
        (repo / "src/app.py").write_text("print('half done')\n")
        engine.checkpoint(task.id)
        engine.validate(f"{task.id}@1", offline=True)
        return task.id

    return factory


def summary_of(engine: Engine, task_id: str, first_screen: bool) -> object:
    if first_screen:
        found = engine.first_task_summaries(50, tuple(TaskStatus))
    else:
        found = engine.task_summaries()
    (summary,) = [s for s in found if s.task.id == task_id]
    return summary


@pytest.mark.parametrize("first_screen", [False, True], ids=["whole-list", "first-screen"])
def test_a_verdict_is_out_of_date_once_its_branch_moves(
    engine: Engine, repo: Path, validated: Callable[[], str], first_screen: bool
) -> None:
    task_id = validated()
    before = summary_of(engine, task_id, first_screen)
    assert before.last_verdict  # type: ignore[attr-defined]
    assert before.triage.validated_branch == "main"  # type: ignore[attr-defined]
    assert not before.triage.verdict_outdated  # type: ignore[attr-defined]
    assert not before.triage.branch_moved  # type: ignore[attr-defined]

    advance(repo)
    after = summary_of(engine, task_id, first_screen)
    assert after.triage.verdict_outdated  # type: ignore[attr-defined]
    assert after.triage.branch_moved  # type: ignore[attr-defined]
    reasons = attention(after).reasons  # type: ignore[arg-type]
    assert "verdict out of date: branch main moved since: validate again" in reasons

    engine.validate(f"{task_id}@1", offline=True)  # validated again: current once more
    again = summary_of(engine, task_id, first_screen)
    assert not again.triage.verdict_outdated  # type: ignore[attr-defined]


def test_a_deleted_branch_makes_the_verdict_out_of_date(
    engine: Engine, repo: Path, validated: Callable[[], str]
) -> None:
    task_id = validated()
    git(repo, "checkout", "-q", "-b", "elsewhere")
    git(repo, "branch", "-q", "-D", "main")
    assert summary_of(engine, task_id, False).triage.branch_moved  # type: ignore[attr-defined]


def test_packed_refs_and_a_linked_worktree_read_the_same_tip(
    engine: Engine, repo: Path, validated: Callable[[], str]
) -> None:
    task_id = validated()
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git/refs/heads/main").exists()
    assert not summary_of(engine, task_id, False).triage.verdict_outdated  # type: ignore[attr-defined]
    advance(repo)
    assert summary_of(engine, task_id, False).triage.branch_moved  # type: ignore[attr-defined]


def test_a_validation_that_kept_no_tip_is_not_judged_by_one(
    engine: Engine, repo: Path, validated: Callable[[], str]
) -> None:
    """An older Pitstop's findings (no `branch_head`), or damaged ones, never mark anything."""
    task_id = validated()
    engine.db.execute('UPDATE validations SET findings = \'[{"check": "branch"}]\'')
    advance(repo)
    summary = summary_of(engine, task_id, False)
    assert summary.triage.validated_branch is None  # type: ignore[attr-defined]
    assert not summary.triage.branch_moved  # type: ignore[attr-defined]
    engine.db.execute("UPDATE validations SET findings = 'not json ['")
    for first_screen in (False, True):
        assert not summary_of(engine, task_id, first_screen).triage.branch_moved  # type: ignore[attr-defined]


# --- the ref-file reader against git ---------------------------------------------------------


def git_tip(repo: Path, branch: str) -> str | None:
    proc = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", f"refs/heads/{branch}"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or None


def layouts(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Repositories whose branch tips sit in each place git keeps them."""
    loose = init_repo(tmp_path / "loose", {"a.txt": "a\n"})
    packed = init_repo(tmp_path / "packed", {"a.txt": "a\n"})
    git(packed, "branch", "feature/deep/name")
    git(packed, "pack-refs", "--all")
    both = init_repo(tmp_path / "both", {"a.txt": "a\n"})
    git(both, "pack-refs", "--all")
    advance(both)  # a loose ref newer than its packed line
    linked_from = init_repo(tmp_path / "main-of-linked", {"a.txt": "a\n"})
    git(linked_from, "branch", "side")
    git(linked_from, "worktree", "add", "-q", str(tmp_path / "linked"), "side")
    return {
        "loose": (loose, "main"),
        "packed": (packed, "feature/deep/name"),
        "loose-over-packed": (both, "main"),
        "linked-worktree": (tmp_path / "linked", "main"),
        "linked-worktree-own-branch": (tmp_path / "linked", "side"),
        "missing-branch": (loose, "no-such-branch"),
        "prefix-of-a-packed-name": (packed, "name"),
    }


def test_branch_tips_read_from_files_agree_with_git(tmp_path: Path) -> None:
    for name, (repo, branch) in layouts(tmp_path).items():
        assert branch_tip(repo, branch) == git_tip(repo, branch), name


def test_no_repository_and_a_damaged_git_file_have_no_tip(tmp_path: Path) -> None:
    assert branch_tip(tmp_path / "gone", "main") is None
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / ".git").write_text("not a gitdir line\n")
    assert branch_tip(odd, "main") is None


def test_a_ref_file_it_does_not_understand_is_left_to_git(tmp_path: Path) -> None:
    """A symbolic branch ref (`ref: …`) is not an id: git resolves it, the reader never guesses."""
    repo = init_repo(tmp_path / "repo", {"a.txt": "a\n"})
    (repo / ".git/refs/heads/alias").write_text("ref: refs/heads/main\n")
    assert branch_tip(repo, "alias") == git_tip(repo, "alias") == git_tip(repo, "main")
