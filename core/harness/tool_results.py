"""What a finished Bash call leaves behind: its output as evidence, and its side effect's outcome.

Claude Code reports a Bash call's result in `PostToolUse` (or `PostToolUseFailure`) in several
shapes across versions; the output and exit status are read from any of them and kept as
evidence (redacted and encrypted by the engine). When the command was one the guard started as
a side effect, its exit status settles it: confirmed, failed, or uncertain when it was
interrupted, so a resumed agent knows whether the action happened.

Loaded only for a Bash result; the engine opens when the task is looked up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from core.harness.commands import RuleMatch, match_command
from core.harness.context import (
    CLAUDE_CODE,
    HookContext,
    HookInputError,
    HookReply,
    bash_command,
    event_text,
    observed,
)
from core.harness.sessions import task_for, task_status

if TYPE_CHECKING:
    from core.engine import Engine


def tool_output(event: Mapping[str, Any], failed: bool) -> tuple[bytes, int | None, bool]:
    """The output, exit status and whether it was interrupted, from a (failed) tool response."""
    if failed:
        error = event.get("error")
        text = error if isinstance(error, str) else json.dumps(error)
        said = re.search(r"[Ee]xit code:? (\d+)", text)
        interrupted = bool(event.get("is_interrupt"))
        return text.encode("utf-8", "replace"), int(said.group(1)) if said else 1, interrupted
    response = event.get("tool_response")
    if isinstance(response, str):
        return response.encode("utf-8", "replace"), 0, False
    if not isinstance(response, dict):
        return b"", None, False
    parts = [response.get(k) for k in ("stdout", "stderr", "output")]
    output = "\n".join(p for p in parts if isinstance(p, str) and p)
    code: int | None = 0
    for key in ("exit_code", "exitCode", "returncode", "return_code"):
        value = response.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            code = value
            break
    interrupted = response.get("interrupted") is True
    return output.encode("utf-8", "replace"), None if interrupted else code, interrupted


def record_tool_result(
    event: Mapping[str, Any], context: HookContext, *, failed: bool
) -> HookReply:
    """A Bash `PostToolUse(Failure)`: evidence of the call, and the outcome of its side effect."""
    command = bash_command(event)
    if command is None:
        raise HookInputError("a Bash PostToolUse event without tool_input.command")
    task = task_for(context, CLAUDE_CODE, event)
    if task is None:
        return HookReply()
    engine = context.engine(CLAUDE_CODE)
    if task.status.value in ("waiting", "paused"):  # the user let it go on: it works again
        engine.set_task_activity(task.id, task_status("running"), "the agent ran a command")
    output, exit_code, interrupted = tool_output(event, failed)
    tool_input = event.get("tool_input")
    description = tool_input.get("description") if isinstance(tool_input, dict) else None
    response = event.get("tool_response")
    duration = response.get("duration_ms") if isinstance(response, dict) else None
    item = engine.add_evidence_output(
        task.id,
        output,
        argv=[command],
        cwd=event_text(event, "cwd"),
        exit_code=exit_code,
        duration_s=duration / 1000 if isinstance(duration, int | float) else None,
        label=description if isinstance(description, str) and description else None,
    )
    recorded = [f"evidence {item.id}"]
    found = match_command(command, context.rule_list())
    if found is not None:
        settled = _settle_effect(engine, task.id, found, exit_code, interrupted, item.id)
        if settled is not None:
            recorded.append(settled)
    return observed(*recorded)


def _settle_effect(
    engine: Engine,
    task_id: str,
    found: RuleMatch,
    exit_code: int | None,
    interrupted: bool,
    evidence_id: int,
) -> str | None:
    """Settle the side effect the guard started for this command; what was recorded, or None."""
    from core.errors import NotFoundError
    from core.models import EffectState

    try:
        effect = engine.get_effect(task_id, found.key)
    except NotFoundError:
        return None
    if effect.state is not EffectState.IN_PROGRESS:
        return None
    outcome = (
        EffectState.UNCERTAIN
        if interrupted
        else EffectState.CONFIRMED
        if exit_code == 0
        else EffectState.FAILED
    )
    engine.move_effect(
        task_id, found.key, outcome, note=f"exit {exit_code}; output in evidence {evidence_id}"
    )
    return f"{found.key} {outcome.value}"
