"""The harness version a hook records, from its environment (issue #15, bug 8).

`SessionStart` rarely names the model and `claude -p` never does, so every validation warned
that the harness version was unknown; yet Claude Code runs its hooks with
`AI_AGENT` — `claude-code_2-1-332_harness` today, `claude-code/<version>/…` before. The hook
reads it there, and validation inside a session too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.engine import Engine
from core.harness.claude_code import claude_code
from core.harness.context import HookContext
from core.models import NamedVersion
from core.restore.findings import Status

ROOT = Path(__file__).resolve().parents[2]
AGENT = "claude-code/2.1.122/agent"


def session_start(repo: Path, session: str = "s-one") -> bytes:
    """A real `-p` SessionStart: no model."""
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(repo / f"{session}.jsonl"),
            "cwd": str(repo),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    ).encode()


def hook(raw: bytes, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """One hook call through the real entry point, with the harness's environment."""
    return subprocess.run(
        [sys.executable, "-m", "tui.launch", "hook", "claude-code"],
        input=raw.decode(),
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        check=False,
    )


def test_the_version_comes_from_the_hooks_environment_and_validation_knows_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = hook(session_start(repo), repo, AI_AGENT=AGENT, CLAUDE_CODE_ENTRYPOINT="sdk-cli")
    assert done.returncode == 0, done.stderr
    (repo / "README.md").write_text("# changed\n")
    end = json.loads(session_start(repo))
    end.update(hook_event_name="SessionEnd", reason="exit")
    assert hook(json.dumps(end).encode(), repo, AI_AGENT=AGENT).returncode == 0
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.harness == NamedVersion("claude-code", "2.1.122")
        monkeypatch.setenv("AI_AGENT", AGENT)  # validation run inside a session of that version
        [harness] = [
            f for f in engine.validate(task.id, offline=True).findings if f.check == "harness"
        ]
        assert harness.status is Status.PASS, harness
        assert harness.message == "claude-code 2.1.122 as at the checkpoint"


def test_a_registered_task_learns_the_version_from_its_first_session(repo: Path) -> None:
    with Engine() as engine:
        task = engine.start_task(repo=repo, objective="fix the parser")
        assert task.harness is None
    claude_code(session_start(repo), HookContext(env={"AI_AGENT": AGENT}))
    with Engine() as engine:
        assert engine.get_task(task.id).harness == NamedVersion("claude-code", "2.1.122")


@pytest.mark.parametrize(
    ("agent", "version"),
    [
        ("claude-code_2-1-332_harness", "2.1.332"),  # what 2.1.332 sends
        ("claude-code_2-1-332", "2.1.332"),
        ("claude-code/2.1.122/agent", "2.1.122"),  # the earlier form
        ("claude-code/2.1.0-beta.3", "2.1.0-beta.3"),
    ],
)
def test_both_forms_of_ai_agent_name_the_version(repo: Path, agent: str, version: str) -> None:
    claude_code(session_start(repo), HookContext(env={"AI_AGENT": agent}))
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.harness == NamedVersion("claude-code", version)


def test_a_known_version_is_not_overwritten(repo: Path) -> None:
    with Engine() as engine:
        task = engine.start_task(
            repo=repo, objective="pinned", harness=NamedVersion("claude-code", "2.0.14")
        )
    claude_code(session_start(repo), HookContext(env={"AI_AGENT": AGENT}))
    with Engine() as engine:
        assert engine.get_task(task.id).harness == NamedVersion("claude-code", "2.0.14")


@pytest.mark.parametrize(
    "agent",
    [
        "codex/0.170.0",  # another harness's
        "claude-code",
        "claude-code/",
        "claude-code/latest",
        "claude-code/2.1.122; rm -rf ~",
        "claude-code/" + "9." * 80 + "9",  # absurdly long
        "claude-code_" + "9-" * 80 + "9_harness",
        "claude-code_latest_harness",
        "claude-code_2-1-x_harness",
        "claude-code_2_harness",
        "codex_0-170-0_harness",
        "claude-code-2-1-332",
    ],
)
def test_what_is_not_a_claude_code_version_is_not_recorded(repo: Path, agent: str) -> None:
    claude_code(session_start(repo), HookContext(env={"AI_AGENT": agent}))
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.harness == NamedVersion("claude-code", None)


def test_the_model_comes_from_anthropic_model_when_the_event_does_not_say(repo: Path) -> None:
    claude_code(session_start(repo), HookContext(env={"ANTHROPIC_MODEL": "claude-opus-4-1"}))
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.model == NamedVersion("claude-opus-4-1")
