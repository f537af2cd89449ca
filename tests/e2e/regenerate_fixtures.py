"""Rewrite the Claude Code hook fixtures from what the real, pinned client sends.

The hand-made fixtures in tests/fixtures/claude_code/ were written from the documentation and
drifted from real payloads (issue 15). This script runs the e2e sessions of
tests/e2e/test_claude_code.py and test_codex.py (the real clients, the scripted APIs) with
`PITSTOP_E2E_CAPTURE_TO` set, picks one payload per fixture, and writes it with the test's
paths replaced by the placeholders the hook tests substitute (`$CWD`, `$TRANSCRIPT`,
`$CONFIG`; also `$HOME`, `$TMP` (the test's directory), `$CLAUDE_TMP` (Claude Code's
per-project temporary directory) and `$PROJECT` (its name for the project)) and
the session's ids (and background task ids, agent ids, pushed commits) by fixed ones, so a
regeneration changes a fixture only where the client changed (and in `duration_ms`).

    .venv/bin/python tests/e2e/regenerate_fixtures.py   # into tests/fixtures/claude_code/real
    .venv/bin/python tests/e2e/regenerate_fixtures.py --out DIR

The pinned client must be installed (`python3 tests/e2e/clients.py install`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "claude_code" / "real"
SESSION = "7d3c5a1e-2b9f-4c61-8e0a-5f4b3c2d1e0f"  # the hand-made fixtures' session id
PROMPT_ID = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5"
TURN_ID = "01a2346a-0000-7000-8000-000000000001"
PUSH = "git push origin main"

# A background task id (b + 8) or an agent id (a + 16), and the `old..new` a push prints.
_VOLATILE_ID = re.compile(r"(?<![A-Za-z0-9])(?:b[a-z0-9]{8}|a[0-9a-f]{16})(?![A-Za-z0-9])")
_PUSHED_RANGE = re.compile(r"\b[0-9a-f]{7,12}\.\.[0-9a-f]{7,12}\b")

Pick = tuple[str, str, str, Callable[[dict[str, Any]], bool]]


def _command(payload: dict[str, Any]) -> str:
    return str(payload.get("tool_input", {}).get("command", ""))


def _any(payload: dict[str, Any]) -> bool:
    return True


# fixture name, the test (and run) it comes from, the event, which payload of that event.
PICKS: tuple[Pick, ...] = (
    (
        "session_start",
        "test_bash_success_is_evidence_and_the_session_checkpoints",
        "SessionStart",
        _any,
    ),
    (
        "user_prompt_submit",
        "test_bash_success_is_evidence_and_the_session_checkpoints",
        "UserPromptSubmit",
        _any,
    ),
    (
        "pre_tool_use_bash",
        "test_bash_success_is_evidence_and_the_session_checkpoints",
        "PreToolUse",
        _any,
    ),
    (
        "post_tool_use_bash",
        "test_bash_success_is_evidence_and_the_session_checkpoints",
        "PostToolUse",
        _any,
    ),
    ("stop", "test_bash_success_is_evidence_and_the_session_checkpoints", "Stop", _any),
    (
        "session_end",
        "test_bash_success_is_evidence_and_the_session_checkpoints",
        "SessionEnd",
        _any,
    ),
    (
        "post_tool_use_failure",
        "test_bash_failure_is_evidence_with_its_exit_status",
        "PostToolUseFailure",
        _any,
    ),
    (
        "pre_tool_use_git_push",
        "test_a_guarded_push_runs_once",
        "PreToolUse",
        lambda p: _command(p) == PUSH,
    ),
    (
        "post_tool_use_git_push",
        "test_a_guarded_push_runs_once",
        "PostToolUse",
        lambda p: _command(p) == PUSH,
    ),
    (
        "pre_tool_use_edit",
        "test_an_edit_is_checkpointed_and_writing_pitstop_config_is_refused",
        "PreToolUse",
        lambda p: p.get("tool_name") == "Edit",
    ),
    (
        "post_tool_use_edit",
        "test_an_edit_is_checkpointed_and_writing_pitstop_config_is_refused",
        "PostToolUse",
        lambda p: p.get("tool_name") == "Edit",
    ),
    (
        "pre_tool_use_write_config",
        "test_an_edit_is_checkpointed_and_writing_pitstop_config_is_refused",
        "PreToolUse",
        lambda p: p.get("tool_name") == "Write",
    ),
    (
        "post_tool_use_background_push",
        "test_a_background_push_is_confirmed_only_once_it_has_landed",
        "PostToolUse",
        lambda p: _command(p) == PUSH,
    ),
    (
        "stop_background_tasks",
        "test_a_push_past_its_timeout_is_not_confirmed_while_it_runs",
        "Stop",
        lambda p: bool(p.get("background_tasks")),
    ),
    (
        "user_prompt_submit_task_notification",
        "test_a_background_push_is_confirmed_only_once_it_has_landed",
        "UserPromptSubmit",
        lambda p: "<task-notification>" in str(p.get("prompt")),
    ),
    (
        "post_tool_use_timeout_backgrounded",
        "test_a_push_past_its_timeout_is_not_confirmed_while_it_runs",
        "PostToolUse",
        lambda p: _command(p) == PUSH,
    ),
    (
        "post_tool_use_failure_timeout",
        "test_a_push_killed_by_its_timeout_is_uncertain",
        "PostToolUseFailure",
        _any,
    ),
    (
        "session_start_resume",
        "test_a_turn_with_nothing_new_is_not_checkpointed-2",
        "SessionStart",
        _any,
    ),
    ("pre_compact", "test_compact_takes_a_milestone_checkpoint-2", "PreCompact", _any),
    (
        "session_start_compact",
        "test_compact_takes_a_milestone_checkpoint-2",
        "SessionStart",
        lambda p: p.get("source") == "compact",
    ),
    ("subagent_start", "test_a_subagents_bash_is_evidence", "SubagentStart", _any),
    (
        "post_tool_use_subagent_bash",
        "test_a_subagents_bash_is_evidence",
        "PostToolUse",
        lambda p: bool(p.get("agent_id")),
    ),
    (
        "subagent_stop",
        "test_a_subagents_bash_is_evidence",
        "SubagentStop",
        lambda p: p.get("agent_type") == "general-purpose",
    ),
    (
        "codex_session_start",
        "test_a_codex_shell_command_runs_and_every_hook_fires",
        "SessionStart",
        _any,
    ),
    (
        "codex_pre_tool_use",
        "test_a_codex_shell_command_runs_and_every_hook_fires",
        "PreToolUse",
        _any,
    ),
    (
        "codex_post_tool_use",
        "test_a_codex_shell_command_runs_and_every_hook_fires",
        "PostToolUse",
        _any,
    ),
    ("codex_stop", "test_a_codex_shell_command_runs_and_every_hook_fires", "Stop", _any),
    (
        "codex_pre_tool_use_git_push",
        "test_a_codex_guarded_push_runs_once",
        "PreToolUse",
        lambda p: _command(p) == PUSH,
    ),
    (
        "permission_request",
        "test_a_permission_prompt_is_answered_from_pitstop",
        "PermissionRequest",
        _any,
    ),
)


def capture(directory: Path) -> None:
    """Run the e2e sessions with their payloads copied into `directory`."""
    env = {**os.environ, "PITSTOP_E2E_CAPTURE_TO": str(directory), "PITSTOP_E2E_REQUIRE": "1"}
    env.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    tests = [
        str(ROOT / "tests" / "e2e" / name) for name in ("test_claude_code.py", "test_codex.py")
    ]
    # The xfail tests capture too; their outcome is not this script's business.
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=ROOT,
        env=env,
        check=False,
    )


def payloads(directory: Path) -> list[dict[str, Any]]:
    """The payloads one session sent, in order."""
    files = sorted(p for p in directory.glob("*.json") if not p.name.endswith(".env.json"))
    return [json.loads(p.read_bytes()) for p in files]


def redact(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with the test's paths and ids replaced by the fixtures' placeholders."""
    cwd = Path(payload["cwd"])
    test_root = cwd.parents[1]  # <tmp>/ws/demo: the conftest's _home and _config sit in <tmp>
    transcript = str(payload.get("transcript_path", ""))
    # Claude Code's transcripts live in ~/.claude/projects/<its name for the project>/.
    project = Path(transcript).parent.name if "/.claude/projects/" in transcript else None
    replacements = [(transcript, "$TRANSCRIPT")] if transcript else []
    if project:
        scratch = cwd.parent / "claude-tmp"  # CLAUDE_CODE_TMPDIR, as claude_session sets it
        replacements.append((f"{scratch}/claude-{os.getuid()}/{project}", "$CLAUDE_TMP"))
    replacements += [
        (str(cwd), "$CWD"),
        (str(test_root / "_config"), "$CONFIG"),
        (str(test_root / "_home"), "$HOME"),
        (str(test_root), "$TMP"),  # e.g. the bare remote a push names
        (str(payload["session_id"]), SESSION),
    ]
    if project:
        replacements.append((project, "$PROJECT"))  # Claude Code's name for the project's dir
    if payload.get("prompt_id"):
        replacements.append((str(payload["prompt_id"]), PROMPT_ID))
    if payload.get("turn_id"):  # Codex's
        replacements.append((str(payload["turn_id"]), TURN_ID))
    # Ids that change on every run: a background task's or subagent's, commits a push names.
    for index, found in enumerate(sorted(set(_VOLATILE_ID.findall(json.dumps(payload))))):
        replacements.append((found, f"{found[0]}{index + 1:0{len(found) - 1}d}"))
    for found in sorted(set(_PUSHED_RANGE.findall(json.dumps(payload)))):
        replacements.append((found, "1a2b3c4..5d6e7f8"))

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            for old, new in replacements:
                value = value.replace(old, new)
            return value
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        return value

    scrubbed: dict[str, Any] = scrub(payload)
    return scrubbed


def write_fixtures(captured: Path, out: Path) -> list[str]:
    """Write one fixture per pick found in `captured`; returns the picks that were missing."""
    out.mkdir(parents=True, exist_ok=True)
    missing = []
    for name, test, event, wanted in PICKS:
        session = captured / test
        found = (
            [p for p in payloads(session) if p.get("hook_event_name") == event and wanted(p)]
            if session.exists()
            else []
        )
        if not found:
            missing.append(f"{name} ({test}, {event})")
            continue
        text = json.dumps(redact(found[0]), indent=2, ensure_ascii=False) + "\n"
        (out / f"{name}.json").write_text(text, encoding="utf-8")
    return missing


def main() -> int:
    """Capture, pick, redact, write; exit 1 when a fixture could not be made."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the fixtures go")
    parser.add_argument("--from", dest="source", type=Path, help="reuse a capture directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pitstop-capture-") as scratch:
        source = args.source or Path(scratch)
        if args.source is None:
            capture(source)
        missing = write_fixtures(source, args.out)
    print(f"wrote {len(PICKS) - len(missing)} fixtures into {args.out}")
    for line in missing:
        print(f"missing: {line}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
