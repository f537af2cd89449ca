"""The real Claude Code CLI, driven through scripted sessions, with Pitstop's hooks installed.

Each test is one session a user could have: the pinned `claude` (tests/e2e/clients.py) runs in
print mode in a real repository with a real bare remote, against the scripted Messages API on
127.0.0.1 (mock_messages_api.py), with the hooks the real `pitstop hook install claude-code`
wrote. What the client sent is captured beside them; what Pitstop made of it is read back from
the store. Skipped, with one line, when the client is not installed; `.ci/run` installs it and
makes a missing client a failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.engine import Engine
from core.models import CheckpointReason, EffectState, TaskStatus
from tests.e2e.claude_session import Session, Workspace, make_workspace, require_claude, run_claude
from tests.e2e.clients import CLAUDE_CODE_VERSION
from tests.e2e.mock_messages_api import Text, ToolUse

pytestmark = [pytest.mark.e2e, pytest.mark.claude_code]

PUSH = "git push origin main"


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """A repository with Pitstop's hooks installed and a bare `origin`; skips without claude."""
    require_claude()
    return make_workspace(tmp_path / "ws")


def bash(command: str, **extra: object) -> ToolUse:
    """A Bash tool call as the model makes it."""
    return ToolUse("Bash", {"command": command, "description": f"run {command[:40]}", **extra})


def config(text: str) -> None:
    """Write Pitstop's config.toml in the test's config directory."""
    import os

    path = Path(os.environ["PITSTOP_CONFIG_DIR"]) / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def only_task(engine: Engine) -> str:
    """The id of the one task the session made."""
    tasks = engine.list_tasks()
    assert len(tasks) == 1, [t.id for t in tasks]
    return tasks[0].id


def assert_ran(session: Session) -> None:
    """The client ended normally and played the whole script."""
    assert session.returncode == 0, session.stderr[-2000:]
    assert session.result.get("is_error") is False, session.result
    assert session.result.get("result") == "done", session.result


def test_bash_success_is_evidence_and_the_session_checkpoints(workspace: Workspace) -> None:
    session = run_claude(workspace, [[Text("Checking."), bash("echo hello-from-e2e")]])
    assert_ran(session)
    assert session.tool_result_texts() == ["hello-from-e2e"]
    events = session.events()
    assert events[0] == "SessionStart" and events[-1] == "SessionEnd"
    assert {"UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"} <= set(events)
    start = session.payload("SessionStart")
    assert start["source"] == "startup" and start["cwd"] == str(workspace.repo)
    with Engine() as engine:
        task_id = only_task(engine)
        task = engine.get_task(task_id)
        assert task.harness is not None and task.harness.name == "claude-code"
        assert task.status is TaskStatus.PAUSED  # SessionEnd: paused, ready to resume
        linked = engine.harness_session(task_id)
        assert linked is not None and linked["session_id"] == start["session_id"]
        assert linked["transcript_path"] == start["transcript_path"]
        [item] = engine.list_evidence(task_id)
        shown = engine.get_evidence(item.id)
        assert item.exit_code == 0 and shown.command is not None
        assert "echo hello-from-e2e" in str(shown.command)
        assert b"hello-from-e2e" in b"".join(engine.evidence_output(item.id))
        reasons = [c.reason for c in engine.list_checkpoints(task_id)]
        assert reasons[-1] is CheckpointReason.INTERRUPT  # SessionEnd
        assert CheckpointReason.TURN in reasons  # Stop
