"""Codex's notify program, turned into Pitstop records: evidence of each turn and a checkpoint.

Codex runs its `notify` program after each agent turn with one JSON argument (`type`,
`thread-id`, `turn-id`, `cwd`, `input-messages`, `last-assistant-message`). It exposes no event
before a command runs, so nothing is guarded, and a notification that cannot be recorded is
reported on stderr and never breaks the agent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.errors import PitstopError
from core.harness.context import (
    CODEX,
    HookContext,
    HookInputError,
    HookReply,
    event_text,
    fail_open,
    observed,
    parse_event,
)
from core.harness.sessions import task_for


def codex_notify(payload: str, context: HookContext) -> HookReply:
    """Codex's notify program: after each agent turn, evidence of the turn and a checkpoint."""
    try:
        event = parse_event(payload.encode("utf-8", "surrogateescape"))
    except HookInputError as exc:
        return fail_open("Codex notification", exc.message)
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


def codex_transcript(thread_id: str, env: Mapping[str, str]) -> str | None:
    """Codex keeps each thread in `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<thread>.jsonl`."""
    home = Path(env.get("CODEX_HOME") or Path.home() / ".codex")
    if not re.fullmatch(r"[A-Za-z0-9-]{1,80}", thread_id):
        return None
    found = sorted((home / "sessions").glob(f"*/*/*/rollout-*{thread_id}.jsonl"))
    return str(found[-1]) if found else None


def _codex_turn(event: Mapping[str, Any], context: HookContext) -> HookReply:
    """One finished turn: the assistant's last message as evidence, then a `turn` checkpoint."""
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
    result = engine.checkpoint(
        task.id, CheckpointRequest(reason=CheckpointReason.TURN, note="Codex finished a turn")
    )
    recorded.append(f"checkpoint {result.checkpoint.ref}" if result.checkpoint else "skipped")
    return observed(*recorded)
