"""Claude Code's permission prompts, answered from Pitstop: the prompt becomes an approval.

When Claude Code is about to show its permission dialog ("Allow Bash: git push?"), its
`PermissionRequest` hook asks Pitstop first. The request becomes an approval of the task —
the tool and its input redacted, its risk from the guard's rules, a `before-wait` checkpoint
when the risk is high — and the hook holds the prompt open for `[hooks]
permission_wait_seconds` while an approver decides anywhere: the dashboard's inbox, the CLI, a
store that syncs the ledger. Approved: Claude Code runs the tool; rejected: it does not, and the
agent reads why. Nobody decided in time: the approval expires and the prompt goes back to Claude
Code's own dialog, so the person at the terminal still can — no decision is ever made for them.

Loaded only for a `PermissionRequest` event, never on the path of other tool calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from core.harness.context import HookContext, HookReply, event_text
from core.harness.sessions import task_for

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.models import Approval, Risk

# Tools that only read: a prompt for one of them is low risk.
_READING_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "WebSearch", "NotebookRead"})
_SHOWN_MAX = 300
# The field of a tool's input that names what it acts on, in this order.
_NAMED_FIELDS = ("command", "file_path", "notebook_path", "url", "path")


def permission_request(event: Mapping[str, Any], context: HookContext) -> HookReply:
    """Turn a permission prompt into an approval and wait for its decision (or hand it back)."""
    task = task_for(context, context.harness, event)
    if task is None:
        return HookReply()  # not a tracked session: Claude Code asks as it always does
    engine = context.engine(context.harness)
    wait = engine.config.hooks.permission_wait_seconds
    if wait <= 0:
        return HookReply()  # answering prompts from Pitstop is switched off
    tool = event_text(event, "tool_name") or "a tool"
    shown = describe(tool, event.get("tool_input"))
    risk = _risk(context, tool, event.get("tool_input"))
    action = f"allow {shown}, asked by {_asker(event)}"
    approval = _pending_for(engine, task.id, action) or engine.request_approval(
        task.id,
        action,
        risk=risk,
        expires_in=f"{wait:g}s",
        checkpoint=risk.value == "high",
    )
    decided = engine.wait_for_decision(approval.id, wait)
    return _answer(decided, shown)


def describe(tool: str, tool_input: Any) -> str:
    """One redacted line naming the tool call: the command, the file or the address it acts on."""
    from core.redaction.free_text import persistable

    fields = tool_input if isinstance(tool_input, Mapping) else {}
    named = [fields[key] for key in _NAMED_FIELDS if isinstance(fields.get(key), str)]
    detail = str(named[0]) if named else None
    if detail is None and fields:
        detail = json.dumps(fields, sort_keys=True, default=str)
    text = f"{tool}: {detail}" if detail else tool
    one_line = re.sub(r"[\x00-\x1f\x7f]+", " ", persistable(text)).strip()
    return one_line if len(one_line) <= _SHOWN_MAX else one_line[: _SHOWN_MAX - 3] + "..."


def _risk(context: HookContext, tool: str, tool_input: Any) -> Risk:
    """High for a shell command a guard rule catches, low for a tool that only reads."""
    from core.models import Risk

    if tool in _READING_TOOLS:
        return Risk.LOW
    command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
    if tool == "Bash" and isinstance(command, str):
        from core.harness.commands import match_command

        if match_command(command, context.rule_list()) is not None:
            return Risk.HIGH
    return Risk.MEDIUM


def _asker(event: Mapping[str, Any]) -> str:
    """Who asks: the agent, or the subagent by its type."""
    agent = event_text(event, "agent_type")
    return f"the {agent} subagent" if agent else "the agent"


def _pending_for(engine: Any, task_id: str, action: str) -> Approval | None:
    """The approval already pending for the same prompt (asked again), if any."""
    from core.models import ApprovalState

    pending = engine.list_approvals(task_id, pending_only=True)
    same = [a for a in pending if a.action == action and a.state is ApprovalState.PENDING]
    return same[-1] if same else None


def _answer(approval: Approval, shown: str) -> HookReply:
    """Claude Code's `PermissionRequest` decision for a decided approval; none otherwise."""
    from core.models import ApprovalState

    if approval.state is ApprovalState.APPROVED:
        return _decision("allow", None, f"{approval.id} approved by {approval.decided_by}")
    if approval.state is ApprovalState.REJECTED:
        message = (
            f"{shown} was rejected by {approval.decided_by} in Pitstop ({approval.id}: "
            f"{approval.reason}); do not try it another way"
        )
        return _decision("deny", message, f"{approval.id} rejected")
    return HookReply(
        0,
        stderr=f"pitstop: nobody answered {approval.id} in time; Claude Code asks you instead\n",
        recorded=(f"{approval.id} {approval.state.value}",),
    )


def _decision(behavior: str, message: str | None, recorded: str) -> HookReply:
    decision: dict[str, Any] = {"behavior": behavior}
    if message is not None:
        decision["message"] = message
    document = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
    return HookReply(0, stdout=json.dumps(document) + "\n", recorded=(recorded,))
