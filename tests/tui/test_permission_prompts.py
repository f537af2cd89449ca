"""Claude Code's permission prompts answered from Pitstop, through the real `pitstop` process.

The hook process holds the prompt open (as Claude Code waits for it) while the test, as an
approver in another process's place, decides in the store; the hook's answer is what Claude
Code would read. Nobody deciding hands the prompt back; the approval shows as expired.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from core.engine import Engine
from core.errors import PitstopError
from core.models import ApprovalState, Risk

ROOT = Path(__file__).resolve().parents[2]
SESSION = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "demo"
    path.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


def _config(wait: float) -> None:
    config = Path(os.environ["PITSTOP_CONFIG_DIR"]) / "config.toml"
    config.write_text(f"[hooks]\npermission_wait_seconds = {wait}\n")


def _event(repo: Path, tool: str, tool_input: dict[str, Any], **extra: Any) -> bytes:
    event = {
        "session_id": SESSION,
        "transcript_path": str(repo / "t.jsonl"),
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": tool,
        "tool_input": tool_input,
        "permission_suggestions": [
            {
                "type": "addRules",
                "rules": [{"toolName": tool}],
                "behavior": "allow",
                "destination": "localSettings",
            }
        ],
        **extra,
    }
    return json.dumps(event).encode()


def _start(repo: Path, data: bytes, event: str = "PermissionRequest") -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tui.launch", "hook", "claude-code", "--event", event],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdin is not None
    process.stdin.write(data.decode())
    process.stdin.close()
    process.stdin = None  # written whole: `communicate` only reads
    return process


def _pending(timeout: float = 30.0) -> str:
    """The id of the approval the hook asked for, once it is in the store."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with Engine() as engine:
            pending = engine.list_approvals(pending_only=True)
        if pending:
            return pending[0].id
        time.sleep(0.1)
    raise AssertionError("the hook asked for no approval")


def _answer(process: subprocess.Popen[str]) -> tuple[int, dict[str, Any] | None, str]:
    out, err = process.communicate(timeout=60)
    document = json.loads(out)["hookSpecificOutput"] if out.strip() else None
    return process.returncode, document, err


def test_an_approval_made_in_pitstop_answers_the_prompt(repo: Path) -> None:
    _config(60)
    hook = _start(repo, _event(repo, "Bash", {"command": "git push origin main"}))
    approval_id = _pending()
    with Engine() as engine:
        asked = engine.get_approval(approval_id)
        assert asked.risk is Risk.HIGH  # a guard rule catches `git push`
        assert asked.action == "allow Bash: git push origin main, asked by the agent"
        assert asked.checkpoint_seq is not None  # a before-wait checkpoint for a high risk
        engine.decide_approval(approval_id, True, "release day")
    code, document, _err = _answer(hook)
    assert code == 0
    assert document == {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}


def test_a_rejection_denies_the_tool_and_tells_the_agent_why(repo: Path) -> None:
    _config(60)
    hook = _start(repo, _event(repo, "Write", {"file_path": str(repo / "deploy.sh")}))
    approval_id = _pending()
    with Engine() as engine:
        assert engine.get_approval(approval_id).risk is Risk.MEDIUM
        engine.decide_approval(approval_id, False, "not from this branch")
    code, document, _err = _answer(hook)
    assert code == 0 and document is not None
    assert document["decision"]["behavior"] == "deny"
    assert "not from this branch" in document["decision"]["message"]


def test_nobody_deciding_hands_the_prompt_back_and_the_approval_expires(repo: Path) -> None:
    _config(2)
    hook = _start(repo, _event(repo, "Bash", {"command": "rm -rf build"}, agent_type="Explore"))
    approval_id = _pending()
    code, document, err = _answer(hook)
    assert code == 0
    assert document is None  # no decision: Claude Code shows its own dialog
    assert "Claude Code asks you instead" in err
    with Engine() as engine:
        expired = engine.get_approval(approval_id)
        assert expired.state is ApprovalState.EXPIRED
        assert "the Explore subagent" in expired.action
        with pytest.raises(PitstopError, match=r"expired|not pending|already"):
            engine.decide_approval(approval_id, True, "too late")


def test_a_secret_in_the_prompt_is_never_stored_in_clear(repo: Path) -> None:
    _config(1)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    command = f"curl -H 'Authorization: token {token}' -X POST https://api.github.com/repos/x/y"
    hook = _start(repo, _event(repo, "Bash", {"command": command}))
    approval_id = _pending()
    _answer(hook)
    with Engine() as engine:
        assert token not in engine.get_approval(approval_id).action
    store = Path(os.environ["PITSTOP_HOME"])
    for path in store.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path


def test_switched_off_the_prompt_is_claude_codes_alone(repo: Path) -> None:
    _config(0)
    code, document, _err = _answer(_start(repo, _event(repo, "Bash", {"command": "ls"})))
    assert code == 0 and document is None
    with Engine() as engine:
        assert engine.list_approvals() == []


def test_waiting_costs_no_cpu_worth_measuring(repo: Path) -> None:
    """The hook's CPU time does not grow with the wait: it sleeps on the store's WAL."""

    def cpu_of_a_wait(seconds: float) -> float:
        _config(seconds)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        process = _start(repo, _event(repo, "Bash", {"command": f"make deploy-{seconds}"}))
        _answer(process)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    short = cpu_of_a_wait(1)
    long = cpu_of_a_wait(5)
    assert long - short < 0.25, (short, long)  # a busy loop would burn seconds in 4 s more


def _guard_event(repo: Path, command: str) -> bytes:
    event = {
        "session_id": SESSION,
        "transcript_path": str(repo / "t.jsonl"),
        "cwd": str(repo),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "toolu_01guard",
    }
    return json.dumps(event).encode()


@pytest.mark.parametrize("approve", [True, False])
def test_a_held_guard_lets_the_command_run_once_approved(repo: Path, approve: bool) -> None:
    """`[hooks] guard_wait_seconds`: the guarded push waits for its approval instead of being
    denied and retried; approved, it runs (its effect starts); rejected, it is denied."""
    config = Path(os.environ["PITSTOP_CONFIG_DIR"]) / "config.toml"
    config.write_text("[hooks]\nguard_wait_seconds = 60\n")
    hook = _start(repo, _guard_event(repo, "git push origin main"), "PreToolUse")
    approval_id = _pending()
    with Engine() as engine:
        engine.decide_approval(approval_id, approve, "checked the diff")
    code, document, _err = _answer(hook)
    assert code == 0
    with Engine() as engine:
        [effect] = engine.list_effects(approval_id.split(":")[0])
        if approve:
            assert document is None  # no deny: Claude Code runs the command
            assert effect.state.value == "in_progress"
        else:
            assert document is not None and document["permissionDecision"] == "deny"
            assert "checked the diff" in document["permissionDecisionReason"]
            assert effect.state.value != "in_progress"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[hooks]\npermission_wait_seconds = 900\n", "at most 540 seconds"),
        ("[hooks]\nguard_wait_seconds = -1\n", "non-negative number"),
        ("[hooks]\npermision_wait_seconds = 5\n", "unknown key hooks.permision_wait_seconds"),
        ("hooks = 3\n", "[hooks] must be a table"),
    ],
)
def test_a_bad_hooks_setting_is_one_clear_line(tmp_path: Path, text: str, error: str) -> None:
    from core.config import load_config
    from core.errors import UsageError

    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=re.escape(error)):
        load_config(path)


def test_hooks_settings_sit_beside_the_guard_rules(tmp_path: Path) -> None:
    from core.config import load_config
    from core.harness.rules import load_rules

    path = tmp_path / "config.toml"
    path.write_text(
        '[hooks]\npermission_wait_seconds = 15\n\n[hooks.rules.deploy]\nmatch = ["make deploy"]\n'
    )
    assert load_config(path).hooks.permission_wait_seconds == 15
    assert load_config(path).hooks.guard_wait_seconds == 0
    assert any(rule.name == "deploy" for rule in load_rules(path))
