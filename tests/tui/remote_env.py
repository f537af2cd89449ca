"""A team's remote for the dashboard tests, snapshot and screenshots: real git, real stores.

A bare repository on disk plays the team's remote. A colleague's clone and store push a task to
it; the store under test names the remote, clones it, and lists it, so the dashboard shows that
task as remote-only. Nothing here stands in for a Pitstop component.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyrage

from core.engine import CheckpointRequest, Engine
from core.models import CheckpointReason

REMOTE_NAME = "team"
REMOTE_TASK = "port-search-to-tantivy"
REMOTE_OBJECTIVE = "Port the product search from Whoosh to tantivy, keeping the ranking tests green"
UNSHARED_TASK = "rotate-cdn-signing-keys"
UNSHARED_OBJECTIVE = "Rotate the CDN signing keys and update the edge config"
# Git needs an identity for commits; the test environments leave the global config empty.
_IDENTITY = ("-c", "user.name=Pitstop Tests", "-c", "user.email=tests@pitstop.invalid")


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; a failure fails loudly with git's own message."""
    proc = subprocess.run(["git", *_IDENTITY, *args], cwd=cwd, capture_output=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.decode()}")
    return proc.stdout.decode()


@dataclass(frozen=True)
class TeamRemote:
    """The bare remote, the colleague's clone and store, and the clone of the store under test."""

    remote: Path
    colleague_repo: Path
    colleague_store: Path
    clone: Path


def make_team_remote(base: Path, clone_name: str = "shopfront") -> TeamRemote:
    """A bare remote holding a small project, a colleague's clone of it, and our clone."""
    remote = base / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    colleague = base / "colleague" / clone_name
    colleague.mkdir(parents=True)
    git(colleague, "init", "-q", "-b", "main")
    for number in range(5):
        (colleague / f"search_{number}.py").write_text(f"RANK = {number}\n", encoding="utf-8")
    git(colleague, "add", "-A")
    git(colleague, "commit", "-q", "-m", "initial")
    git(colleague, "remote", "add", "origin", str(remote))
    git(colleague, "push", "-q", "origin", "HEAD:refs/heads/main")
    clone = base / "ours" / clone_name
    clone.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    return TeamRemote(remote, colleague, base / "colleague-store", clone)


def push_colleague_task(
    team: TeamRemote,
    task_id: str = REMOTE_TASK,
    objective: str = REMOTE_OBJECTIVE,
    reason: CheckpointReason = CheckpointReason.MILESTONE,
) -> str:
    """The colleague starts a task, checkpoints a change and pushes it to the remote; it is
    encrypted to whoever `PITSTOP_IDENTITY` is at that moment."""
    with Engine(team.colleague_store) as colleague:
        task = colleague.start_task(repo=team.colleague_repo, objective=objective, task_id=task_id)
        changed = team.colleague_repo / f"search_{len(colleague.list_tasks())}.py"
        changed.write_text(f"RANK = {task_id!r}\n", encoding="utf-8")
        colleague.checkpoint(task.id, CheckpointRequest(reason=reason))
        colleague.push([task.id], str(team.remote))
    return task_id


def list_team_remote(store: Path, team: TeamRemote) -> None:
    """Name the remote in `store` (`pitstop remote add`) and list it (`pitstop remote list`)."""
    with Engine(store) as engine:
        engine.add_remote(REMOTE_NAME, str(team.remote), team.clone)
        engine.list_remote(REMOTE_NAME, team.clone)


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set environment variables for the block, then put back what was there."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def build_remote_scene(store: Path, base: Path, now: str) -> TeamRemote:
    """A team remote holding two tasks `store` does not: one the operator's own sandbox pushed
    (paused at 14:22 on `now`'s day) and one a colleague pushed at 11:04 without sharing it with
    them (`no key`). The store has named the remote and listed it at `now`."""
    team = make_team_remote(base)
    ours = os.environ.get("PITSTOP_IDENTITY") or str(pyrage.x25519.Identity.generate())
    day = now[:10]
    with environment(PITSTOP_IDENTITY=ours, PITSTOP_FROZEN_NOW=f"{day}T14:22:05Z"):
        push_colleague_task(team, reason=CheckpointReason.INTERRUPT)
    stranger = str(pyrage.x25519.Identity.generate())
    with environment(PITSTOP_IDENTITY=stranger, PITSTOP_FROZEN_NOW=f"{day}T11:04:05Z"):
        push_colleague_task(team, UNSHARED_TASK, UNSHARED_OBJECTIVE)
    with environment(PITSTOP_IDENTITY=ours, PITSTOP_FROZEN_NOW=now):
        list_team_remote(store, team)
    return team
