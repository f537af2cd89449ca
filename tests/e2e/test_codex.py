"""The real Codex CLI (`codex exec`) in scripted sessions, configured as the README says.

Skipped, with one line, when the pinned client is not installed; `.ci/run` installs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.engine import Engine
from core.models import EffectState
from tests.e2e.claude_session import Workspace, make_repository
from tests.e2e.codex_session import require_codex, run_codex
from tests.e2e.mock_responses_api import Shell

pytestmark = [pytest.mark.e2e, pytest.mark.codex]

PUSH = "git push origin main"


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """A repository with a bare `origin`; skips without codex."""
    require_codex()
    return make_repository(tmp_path / "ws")


def config(text: str) -> None:
    """Write Pitstop's config.toml in the test's config directory."""
    import os

    path = Path(os.environ["PITSTOP_CONFIG_DIR"]) / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_codex_shell_command_runs_and_every_hook_fires(workspace: Workspace) -> None:
    session = run_codex(workspace, [[Shell("echo hello-codex")]])
    assert session.returncode == 0, session.stderr[-2000:]
    assert any("hello-codex" in output for output in session.script.outputs())
    events = session.events()
    assert events[0] == "SessionStart" and events[-1] == "Stop"
    assert {"UserPromptSubmit", "PreToolUse", "PostToolUse"} <= set(events)
    pre = session.payload("PreToolUse")
    assert pre["tool_name"] == "Bash" and pre["tool_input"] == {"command": "echo hello-codex"}
    post = session.payload("PostToolUse")
    # What the issue says: a plain string, no exit status.
    assert post["tool_response"] == "hello-codex\n"
    start = session.payload("SessionStart")
    assert start["model"] == "gpt-5-codex" and start["cwd"] == str(workspace.repo)


def test_a_codex_guarded_push_runs_once(workspace: Workspace) -> None:
    config("[hooks.rules.git-push]\napproval = false\n")
    session = run_codex(
        workspace,
        [
            [Shell("git commit -q --allow-empty -m one")],
            [Shell(PUSH)],
            [Shell("git commit -q --allow-empty -m two")],
            [Shell(PUSH)],
        ],
    )
    assert session.returncode == 0, session.stderr[-2000:]
    assert len(workspace.pushes()) == 1, workspace.pushes()
    pushes = [p for p in session.payloads if p["hook_event_name"] == "PreToolUse"]
    assert [p["tool_input"]["command"] for p in pushes].count(PUSH) == 2
    with Engine() as engine:
        [task] = engine.list_tasks()
        [effect] = engine.list_effects(task.id)
    assert effect.kind == "git-push"
    # Codex's PostToolUse carries no exit status, so the push that ran is never taken as
    # done: it is uncertain until someone settles it, and that is what stops the second one.
    assert effect.state is EffectState.UNCERTAIN


def test_a_finished_codex_turn_is_checkpointed(workspace: Workspace) -> None:
    session = run_codex(workspace, [[Shell("echo hello-codex")]])
    assert session.returncode == 0, session.stderr[-2000:]
    assert "Stop" in session.events()
    with Engine() as engine:
        tasks = engine.list_tasks()
        assert len(tasks) == 1, [t.id for t in tasks]
        assert engine.list_checkpoints(tasks[0].id)
