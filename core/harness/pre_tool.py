"""Before a tool call runs: the guard's answer, shared by Claude Code and Codex.

Both harnesses send the same `PreToolUse` event (`tool_name`, `tool_input`, `cwd`, `session_id`)
and honour the same refusal (a JSON `permissionDecision: "deny"` with its reason, exit 0; or exit
2 with the reason on stderr). Two questions are asked in turn: does the call touch what only the
operator may (`core.harness.protect`: deciding, settling, sharing, Pitstop's own files), and is a
shell command an action outside the sandbox that a rule guards (`core.harness.guard`)? The first
needs no store, so a harmless call is still decided without opening one.

Standard library only at load time: it runs on every tool call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from core.harness.commands import match_command
from core.harness.context import (
    HookContext,
    HookInputError,
    HookReply,
    bash_command,
    deny,
    event_text,
    subagent,
)
from core.harness.protect import refuse_tool_call
from core.harness.sessions import task_for

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

HARNESS_LABELS = {"claude-code": "Claude Code", "codex": "Codex"}


def pre_tool_use(event: Mapping[str, Any], context: HookContext, harness: str) -> HookReply:
    """Refuse what only the operator may do; guard a shell command a rule catches."""
    tool = event_text(event, "tool_name") or ""
    command = bash_command(event)
    if tool == "Bash" and command is None:
        raise HookInputError("a Bash PreToolUse event without tool_input.command")
    tool_input = event.get("tool_input")
    cwd = event_text(event, "cwd") or os.getcwd()
    refusal = refuse_tool_call(
        tool, tool_input if isinstance(tool_input, dict) else {}, cwd, context.store
    )
    if refusal is not None:
        return deny(refusal)
    if tool != "Bash" or command is None:
        return HookReply()  # a file tool outside Pitstop's directories: the harness's business
    found = match_command(command, context.rule_list())
    if found is None:
        return HookReply()  # not an action outside the sandbox: the harness's own rules apply
    task = task_for(context, harness, event)
    if task is None:
        return HookReply(
            0, stderr="pitstop: not in a git repository; this command is not guarded\n"
        )
    from core.harness.guard import guard_command

    engine = context.engine(harness)
    return guard_command(
        engine,
        task.id,
        found,
        event_text(event, "tool_use_id"),
        HARNESS_LABELS[harness],
        agent=subagent(event),
    )
