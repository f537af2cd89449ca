"""`pitstop hook …` end to end: recorded Claude Code payloads piped through real processes.

The fixtures in `tests/fixtures/claude_code/` follow Claude Code's documented hook input (common
fields `session_id`, `transcript_path`, `cwd`, `hook_event_name`; per event `tool_name`,
`tool_input`, `tool_response`, `tool_use_id`…). Each step of a session goes through the real
`pitstop` entry point, and the store is read back after every step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from core.engine import Engine
from core.models import ApprovalState, CheckpointReason, EffectState, TaskStatus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"
SESSION = "7d3c5a1e-2b9f-4c61-8e0a-5f4b3c2d1e0f"
ROOT = Path(__file__).resolve().parents[2]


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return proc.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "demo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "app.py").write_text("def main():\n    return 1\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "_home" / ".claude" / "projects" / "demo" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"type":"user","message":{"role":"user","content":"fix it"}}\n')
    return path


@pytest.fixture
def turns_pay(isolated_env: dict[str, Path]) -> None:
    """Checkpoints that cost nothing, so a turn's always pays (core.engine.pays): these
    sessions last seconds, where the break-even model would rather restart."""
    (isolated_env["config"] / "config.toml").write_text(
        "[policy]\np_interrupt_per_hour = 1\nmachine_usd_per_hour = 0\n[economics]\n"
        "create_usd = 0\nrestore_usd = 0\nvalidation_usd = 0\nstorage_usd_per_gib_month = 0\n"
    )


def payload(name: str, cwd: Path, transcript: Path) -> bytes:
    text = (FIXTURES / f"{name}.json").read_text()
    text = text.replace("$CWD", str(cwd)).replace("$TRANSCRIPT", str(transcript))
    json.loads(text)  # the fixture stays valid JSON after substitution
    return text.encode()


def hook(
    data: bytes, *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One hook call through the real entry point, as Claude Code makes it."""
    return subprocess.run(
        [sys.executable, "-m", "tui.launch", "hook", *args],
        input=data.decode(),
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        check=False,
    )


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.launch", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def decision(proc: subprocess.CompletedProcess[str]) -> dict[str, Any] | None:
    if not proc.stdout.strip():
        return None
    output: dict[str, Any] = json.loads(proc.stdout)["hookSpecificOutput"]
    return output


def test_recorded_session(
    repo: Path, transcript: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def at(minutes: int) -> None:
        """The session's clock (every process reads it): the break-even model weighs how long
        the work took (core.engine.pays)."""
        moment = datetime(2026, 12, 3, 8, 0, tzinfo=UTC) + timedelta(minutes=minutes)
        monkeypatch.setenv("PITSTOP_FROZEN_NOW", moment.isoformat())

    def step(name: str, event: str) -> subprocess.CompletedProcess[str]:
        proc = hook(payload(name, repo, transcript), "claude-code", "--event", event, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        return proc

    # 1. The session starts: a task for this repository, linked to the session and transcript.
    at(0)
    step("session_start", "SessionStart")
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.harness is not None and task.harness.name == "claude-code"
        assert task.model is not None and task.model.name == "claude-sonnet-4-5"
        assert task.status is TaskStatus.RUNNING
        session = engine.harness_session(task.id)
        assert session is not None
        assert session["session_id"] == SESSION
        assert session["transcript_path"] == str(transcript)

    # 2. A test run: evidence with its output, exit status and summary (a minute into the
    # session, a milestone would not pay: none is taken).
    at(1)
    step("post_tool_use_tests", "PostToolUse")
    with Engine() as engine:
        [item] = engine.list_evidence(task.id)
        assert item.exit_code == 0
        assert item.label == "Run the test suite"
        shown = engine.get_evidence(item.id)
        assert shown.command is not None and "pytest" in json.dumps(shown.command)
        assert b"4 passed" in b"".join(engine.evidence_output(item.id))

    # 3. Edits (Claude Code's Edit tool wrote the file; its PostToolUse records nothing).
    (repo / "app.py").write_text("def main():\n    return 2\n")
    assert decision(step("post_tool_use_edit", "PostToolUse")) is None
    with Engine() as engine:
        assert len(engine.list_evidence(task.id)) == 1

    # 4. Stop an hour in: a checkpoint with the edit, the evidence and the session in its
    # manifest (an hour's work is worth keeping).
    at(60)
    step("stop", "Stop")
    with Engine() as engine:
        [listed] = engine.list_checkpoints(task.id)
        first = engine.get_checkpoint(listed.ref)
        assert first.reason is CheckpointReason.TURN
        assert first.manifest is not None
        assert first.manifest["harness"]["session_id"] == SESSION
        assert first.manifest["harness"]["transcript_path"] == str(transcript)
        assert [e["label"] for e in first.manifest["evidence"]] == ["Run the test suite"]
        assert [c.path for c in engine.changed_files(first.ref)] == ["app.py"]

    # 5. `git push` is blocked for approval: request, before-wait checkpoint, task waiting.
    blocked = step("pre_tool_use_git_push", "PreToolUse")
    answer = decision(blocked)
    assert answer is not None and answer["permissionDecision"] == "deny"
    assert "waiting for approval" in answer["permissionDecisionReason"]
    with Engine() as engine:
        [approval] = engine.list_approvals(task.id)
        assert approval.state is ApprovalState.PENDING
        assert approval.id in answer["permissionDecisionReason"]
        [effect] = engine.list_effects(task.id)
        assert effect.kind == "git-push" and effect.state is EffectState.PROPOSED
        assert effect.target == "git push origin main"
        assert approval.effect_key == effect.key
        checkpoints = engine.list_checkpoints(task.id)
        assert checkpoints[-1].reason is CheckpointReason.BEFORE_WAIT
        assert approval.checkpoint_seq == checkpoints[-1].seq
        assert engine.get_task(task.id).status is TaskStatus.WAITING

    # Asking again while it waits does not pile up requests.
    again = decision(step("pre_tool_use_git_push", "PreToolUse"))
    assert again is not None and again["permissionDecision"] == "deny"
    with Engine() as engine:
        assert len(engine.list_approvals(task.id)) == 1

    # 6. An approver grants it through the CLI.
    granted = cli("approval", "approve", approval.id, "--reason", "release is due")
    assert granted.returncode == 0, granted.stderr

    # 7. The push is allowed now: no decision printed, the effect is in progress.
    allowed = step("pre_tool_use_git_push", "PreToolUse")
    assert decision(allowed) is None
    with Engine() as engine:
        assert engine.get_effect(task.id, effect.key).state is EffectState.IN_PROGRESS

    # 8. PostToolUse confirms it (and keeps the push's output as evidence).
    step("post_tool_use_git_push", "PostToolUse")
    with Engine() as engine:
        done = engine.get_effect(task.id, effect.key)
        assert done.state is EffectState.CONFIRMED
        assert len(engine.list_evidence(task.id)) == 2
    step("stop", "Stop")  # within the policy's minimum interval: skipped, no new checkpoint
    with Engine() as engine:
        assert len(engine.list_checkpoints(task.id)) == 2

    # The session ends before the work is done: an `interrupt` checkpoint, the task paused.
    step("session_end", "SessionEnd")
    with Engine() as engine:
        assert engine.get_checkpoint(task.id).reason is CheckpointReason.INTERRUPT
        assert engine.get_task(task.id).status is TaskStatus.PAUSED

    # 9. A simulated resume: restore the checkpoint elsewhere, the session resumes there.
    with Engine() as engine:
        latest = engine.get_checkpoint(task.id)
        assert latest.manifest is not None
        assert latest.manifest["side_effects"][0]["state"] == "confirmed"
        plan = engine.resume(latest.ref, into=tmp_path / "resumed", offline=True)
        assert SESSION in " ".join(plan.command)  # `claude --resume <session>`
    resumed = tmp_path / "resumed"
    resume_env = {"PITSTOP_TASK": task.id}
    start = hook(
        payload("session_start_resume", resumed, transcript),
        "claude-code",
        "--event",
        "SessionStart",
        cwd=resumed,
        env=resume_env,
    )
    assert start.returncode == 0, start.stderr
    with Engine() as engine:
        assert [t.id for t in engine.list_tasks()] == [task.id]

    # 10. The same push after the resume is blocked as already done; nothing runs again.
    repeat = hook(
        payload("pre_tool_use_git_push", resumed, transcript),
        "claude-code",
        "--event",
        "PreToolUse",
        cwd=resumed,
        env=resume_env,
    )
    assert repeat.returncode == 0, repeat.stderr
    answer = decision(repeat)
    assert answer is not None and answer["permissionDecision"] == "deny"
    assert answer["permissionDecisionReason"].startswith("already done at ")
    with Engine() as engine:
        effect_now = engine.get_effect(task.id, effect.key)
        assert effect_now.state is EffectState.CONFIRMED and effect_now.attempts == 1
        assert len(engine.list_approvals(task.id)) == 1


def test_harmless_command_is_decided_without_a_store(repo: Path, transcript: Path) -> None:
    proc = hook(payload("pre_tool_use_ls", repo, transcript), "claude-code", cwd=repo)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert not Path(os.environ["PITSTOP_HOME"]).exists()


def test_hook_process_leaves_the_wal_for_later_and_loses_nothing(
    repo: Path, transcript: Path
) -> None:
    """A hook ends without closing the store (no WAL checkpoint per call); every write is kept."""
    for name in ("session_start", "post_tool_use_tests", "notification_idle"):
        proc = hook(payload(name, repo, transcript), "claude-code", cwd=repo)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    database = Path(os.environ["PITSTOP_HOME"]) / "pitstop.db"
    wal = Path(f"{database}-wal")
    assert wal.exists() and wal.stat().st_size > 0  # not checkpointed into the database yet
    assert oct(wal.stat().st_mode & 0o777) == "0o600"
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.status is TaskStatus.WAITING
        [item] = engine.list_evidence(task.id)
        assert item.summary_text == "pytest: 4 passed" and item.state == "complete"
        assert engine.db.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b'{"hook_event_name": "PreToolUse", "tool_name": "Ba', b"[1, 2]", b"\xff\xfe"],
)
def test_malformed_guard_input_blocks(repo: Path, raw: bytes) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tui.launch", "hook", "claude-code", "--event", "PreToolUse"],
        input=raw,
        capture_output=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 2
    message = proc.stderr.decode()
    assert message.startswith("pitstop: ") and "blocked to be safe" in message
    assert "Traceback" not in message


@pytest.mark.parametrize("event", ["PostToolUse", "Stop", "SessionStart", "Notification"])
def test_malformed_observation_input_fails_open(repo: Path, event: str) -> None:
    proc = hook(
        b'{"session_id": "abc", "hook_event_name": "' + event.encode(),
        "claude-code",
        "--event",
        event,
        cwd=repo,
    )
    assert proc.returncode == 0
    assert proc.stderr.startswith("pitstop: ") and "not recorded" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not Path(os.environ["PITSTOP_HOME"]).exists()


def test_full_cli_path_answers_the_same(repo: Path, tmp_path: Path) -> None:
    store = tmp_path / "other-store"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "--store",
            str(store),
            "hook",
            "claude-code",
            "--event",
            "PreToolUse",
        ],
        input=b"{",
        capture_output=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 2 and b"blocked to be safe" in proc.stderr
    helped = cli("hook", "claude-code", "--help")
    assert helped.returncode == 0 and "Claude Code hook event" in helped.stdout


def test_truncated_input_sniffs_the_guard_event(repo: Path) -> None:
    raw = b'{"session_id": "abc", "hook_event_name": "PreToolUse", "tool_input": {"comm'
    proc = hook(raw, "claude-code", cwd=repo)  # no --event: the event name is still readable
    assert proc.returncode == 2 and "blocked to be safe" in proc.stderr


def test_guard_fails_closed_when_the_store_cannot_open(repo: Path, transcript: Path) -> None:
    env = {"PITSTOP_KEY": ""}
    proc = hook(
        payload("pre_tool_use_git_push", repo, transcript), "claude-code", cwd=repo, env=env
    )
    assert proc.returncode == 2
    assert "cannot decide whether this command may run" in proc.stderr
    observation = hook(
        payload("post_tool_use_tests", repo, transcript), "claude-code", cwd=repo, env=env
    )
    assert observation.returncode == 0 and "not recorded" in observation.stderr


@pytest.mark.usefixtures("turns_pay")
def test_codex_notify_records_turn(repo: Path, transcript: Path) -> None:
    text = payload("codex_turn_complete", repo, transcript).decode()
    proc = cli("hook", "codex", text)
    assert proc.returncode == 0, proc.stderr
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.harness is not None and task.harness.name == "codex"
        [item] = engine.list_evidence(task.id)
        assert item.label is not None and item.label.startswith("Codex turn: Rename")
        [listed] = engine.list_checkpoints(task.id)
        checkpoint = engine.get_checkpoint(listed.ref)
        assert checkpoint.manifest is not None
        assert checkpoint.manifest["harness"]["session_id"] == (
            "0199a213-81c0-7800-8aa1-bbab2a035a53"
        )
    assert cli("hook", "codex", "not json").returncode == 0


def test_codex_thread_transcript_is_found(repo: Path, transcript: Path, tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    rollout = (
        codex_home
        / "sessions"
        / "2026"
        / "11"
        / "30"
        / "rollout-2026-11-30T00-00-00-0199a213-81c0-7800-8aa1-bbab2a035a53.jsonl"
    )
    rollout.parent.mkdir(parents=True)
    rollout.write_text("{}\n")
    (codex_home / "config.toml").write_text('notify = ["pitstop", "hook", "codex"]\n')
    text = payload("codex_turn_complete", repo, transcript).decode()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CODEX_HOME": str(codex_home)}
    proc = subprocess.run(
        [sys.executable, "-m", "tui.launch", "hook", "codex", text],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    with Engine() as engine:
        [task] = engine.list_tasks()
        session = engine.harness_session(task.id)
        assert session is not None and session["transcript_path"] == str(rollout)
    status = subprocess.run(
        [sys.executable, "-m", "tui.launch", "hook", "status", "codex", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert json.loads(status.stdout)["codex_notify"] is True


# --- install / uninstall / status -------------------------------------------------------------

USER_HOOKS = {
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "~/.claude/hooks/no-rm-rf.sh"}],
            }
        ],
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [{"type": "command", "command": 'npx prettier --write "$FILE"'}],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
    },
}


def test_install_and_uninstall_keep_other_hooks(repo: Path) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = json.dumps(USER_HOOKS, indent=2) + "\n"
    settings.write_text(original)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tui.launch", "hook", *args, "--json"],
            capture_output=True,
            text=True,
            cwd=repo,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )

    installed = run("install", "claude-code", "--project")
    assert installed.returncode == 0, installed.stderr
    assert "PreToolUse" in json.loads(installed.stdout)["added"]
    data = json.loads(settings.read_text())
    assert data["permissions"] == USER_HOOKS["permissions"]
    for event, groups in USER_HOOKS["hooks"].items():  # theirs first, byte-identical
        mine = data["hooks"][event]
        assert json.dumps(mine[: len(groups)]) == json.dumps(groups)
    commands = [
        h["command"] for groups in data["hooks"].values() for g in groups for h in g["hooks"]
    ]
    program = Path(sys.executable).parent / "pitstop"  # absolute: the venv may not be on PATH
    assert f"{program} hook claude-code --event PreToolUse || exit 2" in commands
    assert f"{program} hook claude-code --event Stop" in commands
    after_install = settings.read_bytes()

    again = run("install", "claude-code")
    assert json.loads(again.stdout)["added"] == []
    assert settings.read_bytes() == after_install  # idempotent, not rewritten

    human = subprocess.run(
        [sys.executable, "-m", "tui.launch", "hook", "status"],
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert human.returncode == 0, human.stderr
    assert f"claude-code  project  installed      {settings}" in human.stdout
    assert "claude-code  user     not installed" in human.stdout
    assert "codex        notify   no Codex config" in human.stdout
    status = run("status", "claude-code")
    [project] = [p for p in json.loads(status.stdout)["claude_code"] if p["scope"] == "project"]
    assert "Stop" in project["events"] and project["missing"] == []

    removed = run("uninstall", "claude-code")
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text() == original  # exactly ours removed, theirs byte-identical
    assert json.loads(run("uninstall", "claude-code").stdout)["removed"] == []
    assert settings.read_text() == original


def test_install_user_scope_and_refuses_broken_settings(repo: Path) -> None:
    home = Path(os.environ["HOME"])
    done = cli("hook", "install", "claude-code", "--user")
    assert done.returncode == 0, done.stderr
    assert "PreToolUse" in json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    broken = repo / ".claude" / "settings.json"
    broken.parent.mkdir()
    broken.write_text('{"hooks": ')
    proc = subprocess.run(
        [sys.executable, "-m", "tui.launch", "hook", "install", "claude-code"],
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr
    assert broken.read_text() == '{"hooks": '


# --- self-approval closed: the agent may not decide, settle or write Pitstop's files ----------


def test_agent_cannot_approve_its_own_request(repo: Path, transcript: Path) -> None:
    """The attack of issue #14: the agent asks for a push, then approves it itself."""
    for name, event in (("session_start", "SessionStart"), ("pre_tool_use_git_push", "PreToolUse")):
        proc = hook(payload(name, repo, transcript), "claude-code", "--event", event, cwd=repo)
        assert proc.returncode == 0, proc.stderr
    with Engine() as engine:
        [task] = engine.list_tasks()
        [approval] = engine.list_approvals(task.id)
    raw = payload("pre_tool_use_approve_self", repo, transcript)
    raw = raw.replace(b"$APPROVAL", approval.id.encode())
    for args in (("claude-code", "--event", "PreToolUse"), ("claude-code",)):
        proc = hook(raw, *args, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        answer = decision(proc)
        assert answer is not None and answer["permissionDecision"] == "deny"
        reason = answer["permissionDecisionReason"]
        assert "deciding an approval" in reason and "Ask your operator" in reason
        assert f"pitstop approval approve {approval.id} --reason 'looks fine'" in reason
    with Engine() as engine:
        assert engine.get_approval(approval.id).state is ApprovalState.PENDING


def test_full_cli_path_refuses_the_same(repo: Path, transcript: Path) -> None:
    raw = payload("pre_tool_use_approve_self", repo, transcript).replace(b"$APPROVAL", b"x:1")
    proc = subprocess.run(
        [sys.executable, "-m", "tui.cli", "hook", "claude-code", "--event", "PreToolUse"],
        input=raw,
        capture_output=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_agent_cannot_write_pitstops_config(repo: Path, transcript: Path) -> None:
    config = Path(os.environ["PITSTOP_CONFIG_DIR"])
    raw = payload("pre_tool_use_write_config", repo, transcript)
    proc = hook(raw.replace(b"$CONFIG", str(config).encode()), "claude-code", cwd=repo)
    answer = decision(proc)
    assert proc.returncode == 0 and answer is not None
    assert answer["permissionDecision"] == "deny"
    assert "Pitstop's own directory" in answer["permissionDecisionReason"]
    assert not (config / "config.toml").exists()
    assert not Path(os.environ["PITSTOP_HOME"]).exists()  # decided without opening the store


def test_codex_pre_tool_use_is_guarded(repo: Path, transcript: Path) -> None:
    config = str(Path(os.environ["PITSTOP_CONFIG_DIR"])).encode()
    for name in ("codex_pre_tool_use_confirm", "codex_apply_patch_config"):
        raw = payload(name, repo, transcript).replace(b"$CONFIG", config)
        for args in (("codex", "--event", "PreToolUse"), ("codex",)):
            proc = hook(raw, *args, cwd=repo)
            answer = decision(proc)
            assert proc.returncode == 0 and answer is not None, (name, args, proc.stderr)
            assert answer["hookEventName"] == "PreToolUse"
            assert answer["permissionDecision"] == "deny"
            assert set(answer) == {
                "hookEventName",
                "permissionDecision",
                "permissionDecisionReason",
            }
    harmless = payload("codex_pre_tool_use_confirm", repo, transcript).replace(
        b'bash -lc \\"pitstop effect confirm --task demo --key deploy:1 --reason done\\"',
        b"git status",
    )
    proc = hook(harmless, "codex", "--event", "PreToolUse", cwd=repo)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    damaged = hook(b'{"hook_event_name": "PreToolUse", "tool', "codex", cwd=repo)
    assert damaged.returncode == 2 and "blocked to be safe" in damaged.stderr
