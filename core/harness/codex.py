"""Codex's hooks, turned into Pitstop records and a guard.

Codex runs its `notify` program after each agent turn with one JSON argument (`type`,
`thread-id`, `turn-id`, `cwd`, `input-messages`, `last-assistant-message`): evidence of the turn
and a checkpoint; a notification that cannot be recorded is reported on stderr and never breaks
the agent. Codex (0.124 and later) also runs `PreToolUse` hooks from `hooks.json` or `[hooks]`
in `config.toml`, with Claude Code's event on stdin (`tool_name` `Bash` or `apply_patch`,
`tool_input.command`) and Claude Code's refusal (a JSON "deny" decision, or exit 2 with the
reason on stderr): the same guard answers it (`core.harness.pre_tool`), and fails closed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from core.errors import PitstopError
from core.harness.context import (
    CODEX,
    HookContext,
    HookInputError,
    HookReply,
    block,
    event_text,
    fail_open,
    observed,
    parse_event,
    sniff_event,
)
from core.harness.sessions import task_for

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def codex_notify(payload: str, context: HookContext, event_hint: str | None = None) -> HookReply:
    """Codex's hook: a PreToolUse event is guarded; a notification records the finished turn."""
    raw = payload.encode("utf-8", "surrogateescape")
    try:
        event = parse_event(raw)
    except HookInputError as exc:
        if (event_hint or sniff_event(raw)) == "PreToolUse":
            return block(f"{exc.message}; the tool call is blocked to be safe")
        return fail_open("Codex notification", exc.message)
    if event.get("hook_event_name") == "PreToolUse" or event_hint == "PreToolUse":
        return _codex_pre_tool_use(event, context)
    name = event_text(event, "hook_event_name")
    if name is not None:  # one of `hooks.json`'s events: Claude Code's protocol, as Codex
        from core.harness.claude_code import answer_event

        context.harness = CODEX
        return answer_event(name, event, context)
    if event.get("type") != "agent-turn-complete":
        return HookReply()
    try:
        return _codex_turn(event, context)
    except PitstopError as exc:
        return fail_open("Codex notification", exc.message)
    except Exception as exc:
        return fail_open("Codex notification", f"internal error ({type(exc).__name__}: {exc})")
    finally:
        context.close()


def _codex_pre_tool_use(event: Mapping[str, Any], context: HookContext) -> HookReply:
    """Guard one Codex tool call; a guard that cannot decide blocks it (exit 2)."""
    from core.harness.pre_tool import pre_tool_use

    try:
        return pre_tool_use(event, context, CODEX)
    except PitstopError as exc:
        reason = exc.message
    except Exception as exc:  # never let a guard's own failure pass the call
        reason = f"internal error ({type(exc).__name__}: {exc})"
    finally:
        context.close()
    return block(
        f"cannot decide whether this tool call may run ({reason}); it is blocked to be safe. "
        "Fix the cause, or run it yourself outside the agent"
    )


def codex_transcript(thread_id: str, env: Mapping[str, str]) -> str | None:
    """Codex keeps each thread in `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<thread>.jsonl`."""
    home = Path(env.get("CODEX_HOME") or Path.home() / ".codex")
    if not re.fullmatch(r"[A-Za-z0-9-]{1,80}", thread_id):
        return None
    found = sorted((home / "sessions").glob(f"*/*/*/rollout-*{thread_id}.jsonl"))
    return str(found[-1]) if found else None


def _codex_turn(event: Mapping[str, Any], context: HookContext) -> HookReply:
    """One finished turn: the assistant's last message as evidence, then a `turn` checkpoint
    when it pays."""
    from core.engine import CheckpointRequest
    from core.models import CheckpointReason

    thread = event_text(event, "thread-id")
    normalised = {
        "session_id": thread,
        "transcript_path": codex_transcript(thread, context.env) if thread else None,
        "cwd": event_text(event, "cwd"),
    }
    task = task_for(context, CODEX, normalised, link=True)
    if task is None:
        return HookReply()
    engine = context.engine(CODEX)
    message = event.get("last-assistant-message")
    inputs = event.get("input-messages")
    prompt = (
        inputs[-1] if isinstance(inputs, list) and inputs and isinstance(inputs[-1], str) else ""
    )
    recorded = []
    if isinstance(message, str) and message:
        item = engine.add_evidence_output(
            task.id,
            message.encode("utf-8", "replace"),
            argv=["codex", "turn", event_text(event, "turn-id") or "?"],
            cwd=event_text(event, "cwd"),
            label=f"Codex turn: {prompt[:80]}" if prompt else "Codex turn",
        )
        recorded.append(f"evidence {item.id}")
    request = CheckpointRequest(
        reason=CheckpointReason.TURN,
        note="Codex finished a turn",
        note_is_news=False,
        note_is_ours=True,
        workdir_hint=event_text(event, "cwd"),
    )
    # the break-even model decides (core.engine.pays): skipped when a restart is cheaper
    _, result = engine.decide_checkpoint(task.id, request, why="Codex finished a turn")
    taken = result.checkpoint if result is not None else None
    recorded.append(f"checkpoint {taken.ref}" if taken else "skipped")
    return observed(*recorded)
