"""The real Claude Code CLI, driven through scripted sessions, with Pitstop's hooks installed.

Each test is one session a user could have: the pinned `claude` (tests/e2e/clients.py) runs in
print mode in a real repository with a real bare remote, against the scripted Messages API on
127.0.0.1 (mock_messages_api.py), with the hooks the real `pitstop hook install claude-code`
wrote. What the client sent is captured beside them; what Pitstop made of it is read back from
the store. Skipped, with one line, when the client is not installed; `.ci/run` installs it and
makes a missing client a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.engine import Engine
from core.models import CheckpointReason, EffectState, TaskStatus
from tests.e2e.claude_session import (
    Session,
    Workspace,
    git,
    make_workspace,
    pitstop,
    require_claude,
    run_claude,
)
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


# These sessions last seconds, where the break-even model (core.engine.pays) would skip a
# turn's checkpoint as cheaper to restart: here checkpoints cost nothing, so every turn's pays.
TURNS_PAY = (
    "[policy]\np_interrupt_per_hour = 1\nmachine_usd_per_hour = 0\n{policy}[economics]\n"
    "create_usd = 0\nrestore_usd = 0\nvalidation_usd = 0\nstorage_usd_per_gib_month = 0\n"
)


@pytest.fixture(autouse=True)
def turns_pay(request: pytest.FixtureRequest) -> None:
    if "no_config_file" not in request.keywords:
        config("")


def config(text: str) -> None:
    """Write Pitstop's config.toml in the test's config directory (turns' checkpoints pay)."""
    policy = text.removeprefix("[policy]\n") if text.startswith("[policy]\n") else ""
    path = Path(os.environ["PITSTOP_CONFIG_DIR"]) / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TURNS_PAY.format(policy=policy) + ("" if policy else text))


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


def test_bash_failure_is_evidence_with_its_exit_status(workspace: Workspace) -> None:
    session = run_claude(workspace, [[bash("echo boom >&2; exit 3")]])
    assert_ran(session)
    failure = session.payload("PostToolUseFailure")
    assert failure["tool_name"] == "Bash" and "Exit code 3" in failure["error"]
    with Engine() as engine:
        task_id = only_task(engine)
        [item] = engine.list_evidence(task_id)
        assert item.exit_code == 3
        assert b"boom" in b"".join(engine.evidence_output(item.id))


def test_a_guarded_push_runs_once(workspace: Workspace) -> None:
    config("[hooks.rules.git-push]\napproval = false\n")
    session = run_claude(
        workspace,
        [
            [bash("git commit -q --allow-empty -m one")],
            [bash(PUSH)],
            [bash("git commit -q --allow-empty -m two")],
            [bash(PUSH)],
        ],
    )
    assert_ran(session)
    assert len(workspace.pushes()) == 1, workspace.pushes()
    # The remote has "one"; "two" was never pushed.
    assert workspace.remote_head() == git(workspace.repo, "rev-parse", "HEAD~1").strip()
    results = session.tool_result_texts()
    assert "already done" in results[3], results
    pushes = [p for p in session.payloads if p["hook_event_name"] == "PreToolUse"]
    assert [p["tool_input"]["command"] for p in pushes].count(PUSH) == 2  # both were asked
    with Engine() as engine:
        [effect] = engine.list_effects(only_task(engine))
        assert effect.kind == "git-push" and effect.state is EffectState.CONFIRMED


@pytest.mark.no_config_file  # the agent tries to create it; default policy
def test_an_edit_is_checkpointed_and_writing_pitstop_config_is_refused(
    workspace: Workspace,
) -> None:
    readme = workspace.repo / "README.md"
    target = Path(os.environ["PITSTOP_CONFIG_DIR"]) / "config.toml"
    session = run_claude(
        workspace,
        [
            [ToolUse("Read", {"file_path": str(readme)})],
            [
                ToolUse(
                    "Edit", {"file_path": str(readme), "old_string": "hello", "new_string": "hi"}
                )
            ],
            [ToolUse("Write", {"file_path": str(target), "content": "[hooks]\n"})],
        ],
    )
    assert_ran(session)
    assert readme.read_text() == "# demo\n\nhi\n"
    assert not target.exists()
    results = session.tool_result_texts()
    assert "pitstop" in results[2].lower(), results
    edit = session.payload("PreToolUse", tool_name="Edit")
    assert edit["tool_input"]["file_path"] == str(readme)
    with Engine() as engine:
        task_id = only_task(engine)
        # seconds of work: the turn's checkpoint is skipped as cheaper to restart, the
        # session's end takes the edit (core.engine.pays)
        reasons = [c.reason for c in engine.list_checkpoints(task_id)]
        assert reasons == [CheckpointReason.INTERRUPT], reasons
        end = engine.list_checkpoints(task_id)[-1]
    diff = pitstop(workspace, "diff", f"{task_id}@{end.seq}")
    assert diff.returncode == 0, diff.stderr
    assert "-hello" in diff.stdout and "+hi" in diff.stdout  # the end's checkpoint has the edit


# --- what the real client shows of the bugs of issue 15 -------------------------------------
# Each test states what must hold; it fails today, so it is marked xfail(strict=True): the fix
# makes it pass, and then the mark must go (strict turns an unexpected pass into a failure).


def slow_remote(workspace: Workspace, seconds: float) -> Path:
    """Make every push take `seconds` on the remote; returns the file its end time lands in."""
    landed = workspace.root / "push-landed"
    hook = workspace.remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nsleep {seconds}\ndate -u +%Y-%m-%dT%H:%M:%S.%6NZ > '{landed}'\n")
    hook.chmod(0o755)
    return landed


def test_the_guard_holds_when_pitstop_is_not_on_the_agents_path(workspace: Workspace) -> None:
    import shutil

    from tests.e2e.claude_session import user_path

    if shutil.which("pitstop", path=user_path(with_pitstop=False)):
        pytest.skip("another `pitstop` is on PATH outside this venv")
    config("[hooks.rules.git-push]\napproval = false\n")
    session = run_claude(
        workspace,
        [
            [bash("git commit -q --allow-empty -m one")],
            [bash(PUSH)],
            [bash("git commit -q --allow-empty -m two")],
            [bash(PUSH)],
        ],
        with_pitstop_on_path=False,
    )
    assert_ran(session)
    assert len(workspace.pushes()) == 1, workspace.pushes()


def test_a_session_resumed_into_another_directory_checkpoints_that_directory(
    workspace: Workspace, tmp_path: Path
) -> None:
    first = run_claude(workspace, [[bash("echo draft > notes.txt")]])
    assert_ran(first)
    session_id = first.payload("SessionStart")["session_id"]
    with Engine() as engine:
        task_id = only_task(engine)
        last = engine.list_checkpoints(task_id)[-1]
    into = tmp_path / "resumed"
    resumed = pitstop(
        workspace, "resume", f"{task_id}@{last.seq}", "--into", str(into), "--no-launch", "--yes"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert (into / "notes.txt").read_text() == "draft\n"
    # What `--launch` runs: `claude --resume SESSION "<brief>"`, in DIR, with PITSTOP_TASK set.
    second = run_claude(
        workspace,
        [[bash("echo resumed > resumed.txt")]],
        args=("--resume", session_id, "--allowedTools", "Bash"),
        cwd=into,
        env={"PITSTOP_TASK": task_id},
    )
    assert_ran(second)
    assert second.payload("PostToolUse")["cwd"] == str(into)
    assert (into / "resumed.txt").exists()
    with Engine() as engine:
        assert [t.id for t in engine.list_tasks()] == [task_id]
        assert len(engine.list_evidence(task_id)) == 2
        latest = engine.list_checkpoints(task_id)[-1]
    stat = pitstop(workspace, "diff", f"{task_id}@{latest.seq}", "--stat")
    assert stat.returncode == 0, stat.stderr
    assert "resumed.txt" in stat.stdout, stat.stdout


def test_a_background_push_is_confirmed_only_once_it_has_landed(workspace: Workspace) -> None:
    config("[hooks.rules.git-push]\napproval = false\n")
    landed = slow_remote(workspace, 2)
    session = run_claude(
        workspace,
        [
            [bash("git commit -q --allow-empty -m one")],
            [bash(PUSH, run_in_background=True)],
            [bash("sleep 4; echo waited")],
        ],
    )
    assert_ran(session)
    response = session.payload(
        "PostToolUse", tool_input={**session.payload("PreToolUse", 1)["tool_input"]}
    )
    assert (
        "backgroundTaskId" in response["tool_response"]
        and "exit" not in str(response["tool_response"]).lower()
    )
    assert len(workspace.pushes()) == 1
    with Engine() as engine:
        [effect] = engine.list_effects(only_task(engine))
    assert effect.state is EffectState.CONFIRMED
    assert effect.updated_at >= landed.read_text().strip(), (effect.updated_at, landed.read_text())


def test_a_push_past_its_timeout_is_not_confirmed_while_it_runs(workspace: Workspace) -> None:
    config("[hooks.rules.git-push]\napproval = false\n")
    landed = slow_remote(workspace, 3)
    session = run_claude(
        workspace, [[bash("git commit -q --allow-empty -m one")], [bash(PUSH, timeout=1000)]]
    )
    assert_ran(session)
    response = session.payload("PostToolUse", 1)["tool_response"]
    assert response.get("timedOutAfterMs") == 1000 and response.get("backgroundTaskId")
    with Engine() as engine:
        [effect] = engine.list_effects(only_task(engine))
    assert effect.updated_at >= landed.read_text().strip(), (effect.updated_at, landed.read_text())


def test_a_push_killed_by_its_timeout_is_uncertain(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tests.e2e.claude_session as claude_session

    config("[hooks.rules.git-push]\napproval = false\n")
    slow_remote(workspace, 4)
    # Without background tasks, Claude Code kills a command at its timeout (SIGTERM, 143).
    monkeypatch.setitem(claude_session.OFFLINE, "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS", "1")
    session = run_claude(
        workspace, [[bash("git commit -q --allow-empty -m one")], [bash(PUSH, timeout=1000)]]
    )
    assert_ran(session)
    failure = session.payload("PostToolUseFailure")
    assert failure["error"].startswith("Exit code 143") and "timed out" in failure["error"]
    with Engine() as engine:
        [effect] = engine.list_effects(only_task(engine))
    assert effect.state is EffectState.UNCERTAIN, effect


def test_hook_evidence_has_the_duration_the_client_measured(workspace: Workspace) -> None:
    session = run_claude(workspace, [[bash("sleep 0.3; echo slept")]])
    assert_ran(session)
    measured = session.payload("PostToolUse")["duration_ms"]
    assert measured >= 300
    with Engine() as engine:
        [item] = engine.list_evidence(only_task(engine))
    assert item.duration_ms == measured


def test_a_turn_with_nothing_new_is_not_checkpointed(workspace: Workspace) -> None:
    config("[policy]\nmin_interval_seconds = 0\n")
    first = run_claude(workspace, [[Text("done")]], prompt="Look around.")
    assert_ran(first)
    session_id = first.payload("SessionStart")["session_id"]
    again = run_claude(
        workspace,
        [[Text("done")]],
        prompt="Look again.",
        args=("--resume", session_id, "--allowedTools", "Bash"),
    )
    assert_ran(again)
    assert again.payload("SessionStart")["source"] == "resume"
    with Engine() as engine:
        reasons = [c.reason for c in engine.list_checkpoints(only_task(engine))]
    # The resumed session's Stop comes after the first one's SessionEnd checkpoint, unchanged.
    assert reasons.count(CheckpointReason.TURN) == 1, reasons


def test_a_session_joins_the_task_registered_on_its_repository(workspace: Workspace) -> None:
    started = pitstop(
        workspace, "task", "start", "--repo", ".", "--objective", "fix the app", "--json"
    )
    assert started.returncode == 0, started.stderr
    assert_ran(run_claude(workspace, [[bash("echo working")]]))
    with Engine() as engine:
        tasks = engine.list_tasks()
        assert len(tasks) == 1, [t.id for t in tasks]
        assert len(engine.list_evidence(tasks[0].id)) == 1


def test_the_harness_version_is_recorded(workspace: Workspace) -> None:
    session = run_claude(workspace, [[bash("echo hi")]])
    assert_ran(session)
    assert "model" not in session.payload("SessionStart")  # the common case, as the issue says
    agent = session.environments[0].get("AI_AGENT", "")
    assert CLAUDE_CODE_VERSION.replace(".", "-") in agent, agent
    with Engine() as engine:
        task = engine.get_task(only_task(engine))
    assert task.harness is not None and task.harness.version == CLAUDE_CODE_VERSION, task.harness


# --- more of what a session does: compaction, subagents, permission prompts ------------------


def test_compact_takes_a_milestone_checkpoint(workspace: Workspace) -> None:
    first = run_claude(workspace, [[bash("echo before-compact")]])
    assert_ran(first)
    session_id = first.payload("SessionStart")["session_id"]
    # something new since the turn's checkpoint (a hook checkpoint with nothing new is skipped)
    (workspace.repo / "notes.txt").write_text("written between the turn and the compaction\n")
    compact = run_claude(workspace, [], prompt="/compact", args=("--resume", session_id))
    assert compact.returncode == 0 and compact.result.get("local_command") == "compact"
    assert compact.payload("PreCompact")["trigger"] == "manual"
    assert compact.payload("SessionStart", source="compact")["session_id"] == session_id
    with Engine() as engine:
        checkpoints = engine.list_checkpoints(only_task(engine))
    milestones = [c for c in checkpoints if c.reason is CheckpointReason.MILESTONE]
    assert len(milestones) == 1 and "compacted (manual)" in (milestones[0].note or "")


SUBAGENT = "SUBAGENT-E2E: echo from the subagent"


def run_subagent(workspace: Workspace) -> Session:
    """A session whose model hands a Bash call to a (background) general-purpose subagent."""
    agent = ToolUse(
        "Agent",
        {"description": "echo task", "prompt": SUBAGENT, "subagent_type": "general-purpose"},
    )
    session = run_claude(
        workspace,
        [[agent]],
        others={SUBAGENT: [[bash("echo from-subagent")]]},
        args=("--allowedTools", "Bash,Agent"),
    )
    assert_ran(session)
    return session


def test_a_subagents_bash_is_evidence(workspace: Workspace) -> None:
    session = run_subagent(workspace)
    start = session.payload("SubagentStart")
    used = session.payload("PostToolUse", tool_name="Bash")
    assert used["agent_id"] == start["agent_id"] and used["agent_type"] == "general-purpose"
    with Engine() as engine:
        [item] = engine.list_evidence(only_task(engine))
        assert b"from-subagent" in b"".join(engine.evidence_output(item.id))


def test_a_subagents_evidence_names_the_subagent(workspace: Workspace) -> None:
    session = run_subagent(workspace)
    agent_id = session.payload("SubagentStart")["agent_id"]
    with Engine() as engine:
        [item] = engine.list_evidence(only_task(engine))
    shown = pitstop(workspace, "evidence", "show", str(item.id), "--json")
    assert shown.returncode == 0, shown.stderr
    assert agent_id in shown.stdout and "general-purpose" in shown.stdout


def test_a_permission_prompt_is_answered_from_pitstop(workspace: Workspace) -> None:
    import threading

    decided: list[str] = []
    done = threading.Event()

    def operator() -> None:
        """Approve the first pending approval, as someone at the dashboard or CLI would."""
        while not done.wait(0.2):
            with Engine() as engine:
                pending = engine.list_approvals(None, True)
            if pending:
                answer = pitstop(workspace, "approval", "approve", pending[0].id, "--reason", "ok")
                decided.append(answer.stdout + answer.stderr)
                return

    thread = threading.Thread(target=operator, daemon=True)
    thread.start()
    try:
        # No --allowedTools: `touch` in the repository needs the user's permission.
        session = run_claude(workspace, [[bash("touch made-it")]], args=())
    finally:
        done.set()
        thread.join(timeout=10)
    assert_ran(session)
    request = session.payload("PermissionRequest")
    assert request["tool_input"]["command"] == "touch made-it"
    assert request["permission_suggestions"]  # what Claude Code would offer the user
    assert decided, "no approval was asked while Claude Code waited for permission"
    assert (workspace.repo / "made-it").exists()
    assert session.result.get("permission_denials") == []
