"""What a finished Bash call leaves behind: its output as evidence, and its side effect's outcome.

Claude Code reports a Bash call's result in `PostToolUse` (or `PostToolUseFailure`) in several
shapes across versions; the output and exit status are read from any of them and kept as
evidence (redacted and encrypted by the engine). When the command was one the guard started as
a side effect, its exit status settles it: confirmed on exit 0, failed on a plain failure. A
command that may have acted before it ended — interrupted, killed by Claude Code's Bash timeout
(exit 143, "Command timed out"), killed by a signal (exit 128+N), or with no exit status at all
(a plain-text response) — is uncertain, never failed: a failed effect may be run again
unguarded, and this one may already have happened. A command started in the background
(`run_in_background`, or one Claude Code moved there at its timeout: the response names its
`backgroundTaskId`) has only started: its effect stays in progress until the harness reports
its end (`core.harness.background`), and is uncertain if the session ends first.

Loaded only for a Bash result; the engine opens when the task is looked up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from core.harness.commands import RuleMatch, match_command
from core.harness.context import (
    HookContext,
    HookInputError,
    HookReply,
    bash_command,
    event_text,
    observed,
    subagent,
)
from core.harness.sessions import task_for, task_status

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    from core.engine import Engine


class ToolOutcome(NamedTuple):
    """What a tool response says about how a command ended."""

    output: bytes
    exit_code: int | None  # None: no exit status was reported
    unknown: str | None = None  # why whether it took effect is unknown; None: the status settles it
    timed_out: bool = False
    background: str | None = None  # the harness's id of a command still running in the background


# Claude Code's Bash tool reports a command its timeout killed as "Command timed out".
_TIMED_OUT = re.compile(r"\bcommand timed out\b", re.I)
# 128+N: killed by signal N (128 itself is git's "fatal", a real failure; 255 is ssh's).
_SIGNALLED = range(129, 128 + 65)


def _unknown_because(
    exit_code: int | None, *, interrupted: bool = False, timed_out: bool = False
) -> str | None:
    """Why an ended command's outcome is unknown (it may or may not have taken effect)."""
    if interrupted:
        return "interrupted"
    if timed_out:
        return f"timed out (exit {exit_code})" if exit_code is not None else "timed out"
    if exit_code is None:
        return "exit unknown"
    if exit_code in _SIGNALLED:
        return f"exit {exit_code}: killed by signal {exit_code - 128}"
    return None


def tool_output(event: Mapping[str, Any], failed: bool) -> ToolOutcome:
    """How a command ended, from a `PostToolUse(Failure)` event's response or error."""
    if failed:
        error = event.get("error")
        text = error if isinstance(error, str) else json.dumps(error)
        said = re.search(r"[Ee]xit code:? (\d+)", text)
        code = int(said.group(1)) if said else None
        timed_out = bool(_TIMED_OUT.search(text))
        unknown = _unknown_because(
            code, interrupted=event.get("is_interrupt") is True, timed_out=timed_out
        )
        return ToolOutcome(text.encode("utf-8", "replace"), code, unknown, timed_out)
    response = event.get("tool_response")
    if isinstance(response, str):  # a plain string (Codex): no exit status
        return ToolOutcome(response.encode("utf-8", "replace"), None, "exit unknown")
    if not isinstance(response, dict):
        return ToolOutcome(b"", None, "exit unknown")
    parts = [response.get(k) for k in ("stdout", "stderr", "output")]
    output = "\n".join(p for p in parts if isinstance(p, str) and p).encode("utf-8", "replace")
    if response.get("interrupted") is True:
        return ToolOutcome(output, None, "interrupted")
    background = response.get("backgroundTaskId")
    if isinstance(background, str | int) and not isinstance(background, bool) and background != "":
        # `run_in_background`: the command has only started; its end is reported later.
        return ToolOutcome(output, None, "running in the background", background=str(background))
    code = _reported_exit(response)
    return ToolOutcome(output, code, _unknown_because(code))


def _reported_exit(response: Mapping[str, Any]) -> int | None:
    """The exit status a response reports, or None.

    Claude Code's Bash response has no exit status: its `PostToolUse` comes only when the tool
    succeeded (a non-zero exit is a `PostToolUseFailure`, "Exit code N"), so a response of that
    shape (`stdout`/`stderr`) says exit 0 — unless Claude Code judged a non-zero exit not to be
    an error (`returnCodeInterpretation`, as for `grep`), when the status is unknown.
    """
    for key in ("exit_code", "exitCode", "returncode", "return_code"):
        value = response.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    if response.get("returnCodeInterpretation"):
        return None
    bash_shaped = any(isinstance(response.get(k), str) for k in ("stdout", "stderr"))
    return 0 if bash_shaped else None


def record_tool_result(
    event: Mapping[str, Any], context: HookContext, *, failed: bool
) -> HookReply:
    """A Bash `PostToolUse(Failure)`: evidence of the call, and the outcome of its side effect."""
    command = bash_command(event)
    if command is None:
        raise HookInputError("a Bash PostToolUse event without tool_input.command")
    task = task_for(context, context.harness, event)
    if task is None:
        return HookReply()
    engine = context.engine(context.harness)
    if task.status.value in ("waiting", "paused"):  # the user let it go on: it works again
        engine.set_task_activity(task.id, task_status("running"), "the agent ran a command")
    outcome = tool_output(event, failed)
    tool_input = event.get("tool_input")
    description = tool_input.get("description") if isinstance(tool_input, dict) else None
    duration = tool_duration_ms(event)
    item = engine.add_evidence_output(
        task.id,
        outcome.output,
        argv=[command],
        cwd=event_text(event, "cwd"),
        exit_code=outcome.exit_code,
        timed_out=outcome.timed_out,
        duration_s=duration / 1000 if duration is not None else None,
        label=description if isinstance(description, str) and description else None,
        agent=subagent(event),
    )
    recorded = [f"evidence {item.id}"]
    found = match_command(command, context.rule_list())
    if found is not None:
        tool_use = event_text(event, "tool_use_id")
        settled = _settle_effect(engine, task.id, found, outcome, item.id, tool_use)
        if settled is not None:
            recorded.append(settled)
    if not failed and outcome.exit_code == 0 and outcome.background is None:
        # a green install, build or test run: a milestone when it pays (core.engine.pays)
        said = engine.milestone_if_it_pays(task.id, [command], item.id, event_text(event, "cwd"))
        if said is not None:
            recorded.append(said)
    return observed(*recorded)


# A week: longer than any tool call; anything above (or negative, or not a number) is nonsense.
_MAX_DURATION_MS = 7 * 24 * 3600 * 1000


def tool_duration_ms(event: Mapping[str, Any]) -> float | None:
    """How long the tool call took: Claude Code sends `duration_ms` top-level (older payloads
    kept it in `tool_response`); None when neither holds a plausible number of milliseconds."""
    response = event.get("tool_response")
    for value in (
        event.get("duration_ms"),
        response.get("duration_ms") if isinstance(response, dict) else None,
    ):
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and 0 <= value <= _MAX_DURATION_MS  # also refuses NaN
        ):
            return float(value)
    return None


def _settle_effect(
    engine: Engine,
    task_id: str,
    found: RuleMatch,
    outcome: ToolOutcome,
    evidence_id: int,
    tool_use_id: str | None = None,
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
    if outcome.background is not None:  # still running: in progress until its end is reported
        engine.note_background(task_id, found.key, outcome.background, tool_use_id)
        return f"{found.key} in_progress (background {outcome.background[:80]})"
    if outcome.unknown is not None:  # it may have taken effect: never "failed" (a free retry)
        state, said = EffectState.UNCERTAIN, outcome.unknown
    else:
        state = EffectState.CONFIRMED if outcome.exit_code == 0 else EffectState.FAILED
        said = f"exit {outcome.exit_code}"
    engine.move_effect(task_id, found.key, state, note=f"{said}; output in evidence {evidence_id}")
    return f"{found.key} {state.value}"
