"""How a guarded command's end settles its side effect, and what its evidence keeps (issue #15,
bugs 4 and 5).

A `failed` effect may be run again without a question, so only a command known not to have
acted may become `failed`: a timeout, an interrupt or a signal leaves it `uncertain`, and so does
a response that carries no exit status at all. The events are shaped like Claude Code's
(the Bash response carries no exit status; `duration_ms` is top-level).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.engine import Engine
from core.harness.claude_code import claude_code
from core.harness.context import HookContext, HookReply
from core.harness.rules import DEFAULT_RULES, Rule
from core.models import EffectState

SESSION = "5c4b3a29-1807-4f6e-9d8c-7b6a59483726"
PUSH = "git push origin main"
# No approval asked, so the guard starts the effect at once.
RULES = (
    *(r for r in DEFAULT_RULES if r.name != "git-push"),
    Rule("git-push", (("git", "push"),), approval=False),
)


def event(name: str, cwd: Path, **fields: Any) -> bytes:
    body: dict[str, Any] = {
        "session_id": SESSION,
        "transcript_path": str(cwd / "transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": name,
        "tool_name": "Bash",
        "tool_input": {"command": PUSH, "description": "Push the fix"},
        "tool_use_id": "toolu_01ABCDEFGHJKLMNPQRSTUVWX",
    }
    body.update(fields)
    return json.dumps(body).encode()


def run(raw: bytes) -> HookReply:
    return claude_code(raw, HookContext(rules=RULES))


def push_then(repo: Path, name: str, **fields: Any) -> tuple[EffectState, Any]:
    """Start the guarded push, report its end; the effect's state and the evidence item."""
    run(event("SessionStart", repo, source="startup"))
    started = run(event("PreToolUse", repo))
    assert started.exit_code == 0 and started.stdout == "", started
    reply = run(event(name, repo, **fields))
    assert reply.exit_code == 0, reply
    with Engine() as engine:
        [task] = engine.list_tasks()
        [effect] = engine.list_effects(task.id)
        [item] = engine.list_evidence(task.id)
        return effect.state, item


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        # Claude Code's Bash timeout: SIGTERM, "Command timed out".
        ("Exit code 143\nCommand timed out after 2m 0.0s", "timed out"),
        ("Command timed out after 10s", "timed out"),
        ("Exit code 137\nKilled", "exit 137"),  # SIGKILL (the OOM killer, a kill -9)
        ("Exit code 130\n^C", "exit 130"),  # SIGINT
        ("Exit code 129", "exit 129"),  # SIGHUP: the terminal went away
        ("Error: the command was aborted", "exit unknown"),  # no exit status at all
    ],
)
def test_a_killed_or_unreported_push_is_uncertain(repo: Path, error: str, outcome: str) -> None:
    state, item = push_then(repo, "PostToolUseFailure", error=error, is_interrupt=False)
    assert state is EffectState.UNCERTAIN
    assert item.outcome == outcome
    # ... and it is not run again unasked: its outcome is unknown.
    again = json.loads(run(event("PreToolUse", repo)).stdout)["hookSpecificOutput"]
    assert again["permissionDecision"] == "deny"
    assert "outcome is unknown" in again["permissionDecisionReason"]


def test_an_interrupted_push_is_uncertain(repo: Path) -> None:
    state, _ = push_then(
        repo,
        "PostToolUseFailure",
        error="Exit code 1\nThe user doesn't want to proceed with this tool use.",
        is_interrupt=True,
    )
    assert state is EffectState.UNCERTAIN


@pytest.mark.parametrize(
    "response",
    [
        "Everything up-to-date",  # Codex's PostToolUse: a plain string
        {},  # no output, no status
        {"content": [{"type": "text", "text": "pushed"}]},  # not the Bash tool's shape
        # Claude Code judged a non-zero exit not to be an error (as for grep).
        {"stdout": "", "stderr": "", "returnCodeInterpretation": "No matches found"},
        {"stdout": "pushing", "stderr": "", "interrupted": True},
    ],
)
def test_a_response_without_an_exit_status_is_never_success(
    repo: Path, response: dict[str, Any] | str
) -> None:
    state, item = push_then(repo, "PostToolUse", tool_response=response)
    assert state is EffectState.UNCERTAIN
    assert item.exit_code is None and item.outcome == "exit unknown"


@pytest.mark.parametrize(
    ("error", "state", "code"),
    [
        ("Exit code 1\nremote: Permission denied", EffectState.FAILED, 1),
        # git's own "fatal" (an unreachable remote) is 128: a failure, not a signal.
        ("Exit code 128\nfatal: Could not read from remote repository.", EffectState.FAILED, 128),
        ("Exit code 255\nssh: connect to host: Connection refused", EffectState.FAILED, 255),
    ],
)
def test_a_plain_failure_still_fails(repo: Path, error: str, state: EffectState, code: int) -> None:
    found, item = push_then(repo, "PostToolUseFailure", error=error, is_interrupt=False)
    assert found is state and item.exit_code == code


def test_claude_codes_bash_success_confirms(repo: Path) -> None:
    """A real PostToolUse: the push's output on stderr, no exit status (Claude Code sends
    PostToolUse only for a command that succeeded)."""
    state, item = push_then(
        repo,
        "PostToolUse",
        tool_response={
            "stdout": "",
            "stderr": "To /srv/git/demo.git\n   1a2b3c4..5d6e7f8  main -> main\n",
            "interrupted": False,
            "isImage": False,
        },
    )
    assert state is EffectState.CONFIRMED and item.exit_code == 0


def test_the_top_level_duration_is_kept(repo: Path) -> None:
    _, item = push_then(
        repo,
        "PostToolUse",
        tool_response={"stdout": "", "stderr": "To /srv/git/demo.git\n", "interrupted": False},
        duration_ms=1840,
    )
    assert item.duration_ms == 1840


def test_duration_is_still_read_inside_the_response(repo: Path) -> None:
    """Older payloads kept `duration_ms` in `tool_response`: still read; top-level wins."""
    _, item = push_then(
        repo, "PostToolUse", tool_response={"stdout": "ok", "stderr": "", "duration_ms": 75}
    )
    assert item.duration_ms == 75


def test_top_level_duration_wins_over_the_response(repo: Path) -> None:
    _, item = push_then(
        repo,
        "PostToolUse",
        tool_response={"stdout": "ok", "stderr": "", "duration_ms": 75},
        duration_ms=1200,
    )
    assert item.duration_ms == 1200


@pytest.mark.parametrize("duration", [-5, True, "12", float("nan"), 1e30])
def test_a_nonsense_duration_is_not_recorded(repo: Path, duration: Any) -> None:
    raw = json.loads(event("PostToolUse", repo, tool_response={"stdout": "ok", "stderr": ""}))
    raw["duration_ms"] = raw["tool_response"]["duration_ms"] = duration
    run(event("SessionStart", repo))
    run(event("PreToolUse", repo))
    assert run(json.dumps(raw).encode()).exit_code == 0
    with Engine() as engine:
        [task] = engine.list_tasks()
        [item] = engine.list_evidence(task.id)
        assert item.duration_ms is None


# --- a guarded command run in the background (issue #15, bug 3) -------------------------------


def background_push(repo: Path) -> tuple[EffectState, Any]:
    return push_then(
        repo,
        "PostToolUse",
        tool_input={"command": PUSH, "description": "Push", "run_in_background": True},
        tool_response={
            "stdout": "",
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "backgroundTaskId": "bash_1",
        },
        duration_ms=48,
    )


def test_a_background_push_has_only_started(repo: Path) -> None:
    state, item = background_push(repo)
    assert state is EffectState.IN_PROGRESS  # not confirmed ~50 ms after it started
    assert item.exit_code is None and item.outcome == "exit unknown"
    again = json.loads(run(event("PreToolUse", repo)).stdout)["hookSpecificOutput"]
    assert "outcome is unknown" in again["permissionDecisionReason"]


def test_a_background_push_still_unknown_at_the_session_end_is_uncertain(repo: Path) -> None:
    background_push(repo)
    reply = run(event("SessionEnd", repo, reason="exit"))
    assert reply.exit_code == 0 and any(r.endswith(" uncertain") for r in reply.recorded), reply
    with Engine() as engine:
        [task] = engine.list_tasks()
        [effect] = engine.list_effects(task.id)
        assert effect.state is EffectState.UNCERTAIN
        assert engine.list_checkpoints(task.id)  # and the session's end is still checkpointed
