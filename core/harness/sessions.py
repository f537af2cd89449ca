"""Which task a harness session feeds: found by its session id, resumed, or started here.

Every recording event of every harness first needs its task. A session already linked feeds
its task; a session `pitstop resume` launched (`PITSTOP_TASK`) feeds the task it resumes; a new
session on a repository where exactly one open task has no live session (one registered with
`pitstop task start`, or whose session ended) feeds that task; any other session in a git
repository starts a task of its own. Outside a git repository there is
nothing to checkpoint, so the session is not tracked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from core.agent_env import harness_version
from core.errors import NotAGitRepoError
from core.harness.context import CLAUDE_CODE, HookContext, event_text

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.engine import Engine
    from core.models import Task, TaskStatus


def task_status(value: str) -> TaskStatus:
    """The `TaskStatus` named `value` (core.models loads only when a hook records)."""
    from core.models import TaskStatus

    return TaskStatus(value)


def task_for(
    context: HookContext, harness: str, event: Mapping[str, Any], *, link: bool = False
) -> Task | None:
    """Find or create the task this session feeds; None outside a git repository."""
    engine = context.engine(harness)
    session = event_text(event, "session_id")
    transcript = event_text(event, "transcript_path")
    cwd = event_text(event, "cwd") or os.getcwd()
    task = engine.session_task(harness, session) if session else None
    if task is not None and task.status.is_final:
        task = None
    if task is None:
        task = _resumed_task(context, engine)
        link = link or task is not None
    if task is None:  # a task registered here (`pitstop task start`) that no session feeds
        task = engine.free_task_on_repo(cwd)
        link = link or task is not None
    if task is None:
        task = _start_task(engine, harness, event, cwd, session, context.env)
        if task is None:
            return None
        link = True
    if session and link:
        engine.link_harness_session(
            task.id,
            harness,
            session,
            transcript_path=transcript,
            cwd=cwd,
            harness_version=harness_version(harness, context.env),
        )
    return task


def _resumed_task(context: HookContext, engine: Engine) -> Task | None:
    """The task a session launched by `pitstop resume` feeds (`PITSTOP_TASK`), if still open."""
    if not context.env.get("PITSTOP_TASK"):
        return None
    from core.errors import NotFoundError

    try:
        resumed = engine.get_task(context.env["PITSTOP_TASK"])
    except NotFoundError:
        return None
    return None if resumed.status.is_final else resumed


def _start_task(
    engine: Engine,
    harness: str,
    event: Mapping[str, Any],
    cwd: str,
    session: str | None,
    env: Mapping[str, str],
) -> Task | None:
    """A new task for an untracked session in the repository at `cwd`; None outside git.

    The model is the event's (`SessionStart` rarely says, `-p` never), else `ANTHROPIC_MODEL`
    when the user chose one that way; the harness version is the config's, else the hook's
    environment's (`AI_AGENT`).
    """
    from core.models import NamedVersion

    label = "Claude Code" if harness == CLAUDE_CODE else "Codex"
    model = event_text(event, "model") or (
        env.get("ANTHROPIC_MODEL") if harness == CLAUDE_CODE else None
    )
    version = engine.config.harness(harness).get("version") or harness_version(harness, env)
    try:
        return engine.start_task(
            repo=cwd,
            objective=f"{Path(cwd).name}: {label} session {(session or 'unknown')[:8]}",
            harness=NamedVersion(harness, version),
            model=NamedVersion(model) if model else None,
        )
    except NotAGitRepoError:
        return None
