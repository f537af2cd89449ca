"""What every harness hook shares: reading an event, the reply it gives, the store it records in.

Claude Code and Codex speak different protocols but a hook process does the same three things
for both: it reads one JSON event, opens the store only once something must be recorded, and
answers with an exit code and text. Those pieces live here so each harness module holds only
its own events.

This module is on every tool call's path: it imports only the standard library at load time;
the engine (SQLite, git, crypto) is loaded by `HookContext.engine` when it is first needed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from core.errors import UsageError
from core.harness.rules import Rule, load_rules

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    from core.engine import Engine

CLAUDE_CODE = "claude-code"
CODEX = "codex"
MAX_INPUT_BYTES = 64 * 1024 * 1024


# --- replies ----------------------------------------------------------------------------------


class HookReply(NamedTuple):
    """What the hook process prints and the code it exits with, in the harness's protocol."""

    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    recorded: tuple[str, ...] = ()


def deny(reason: str) -> HookReply:
    """Claude Code's PreToolUse decision that blocks the call and tells the agent why."""
    document = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    return HookReply(0, stdout=json.dumps(document) + "\n", stderr=f"pitstop: {reason}\n")


def block(reason: str) -> HookReply:
    """Fail closed: exit code 2 blocks the tool call; stderr is the reason Claude Code shows."""
    return HookReply(2, stderr=f"pitstop: {reason}\n")


def observed(*what: str) -> HookReply:
    """Go on; `what` names the records the hook made."""
    return HookReply(0, recorded=tuple(what))


def fail_open(event: str, message: str) -> HookReply:
    """Go on although nothing was recorded; the reason goes to stderr for people."""
    return HookReply(0, stderr=f"pitstop: {event} not recorded: {message}\n")


# --- reading events ---------------------------------------------------------------------------


class HookInputError(UsageError):
    """The hook input is not the JSON object a harness sends."""


def parse_event(raw: bytes) -> dict[str, Any]:
    """One hook event: a JSON object; anything else (empty, truncated, not an object) is refused."""
    if not raw.strip():
        raise HookInputError("the hook input is empty; expected one JSON object on stdin")
    if len(raw) > MAX_INPUT_BYTES:
        raise HookInputError(f"the hook input is larger than {MAX_INPUT_BYTES} bytes")
    try:
        event = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HookInputError(f"the hook input is not valid JSON ({exc})") from exc
    if not isinstance(event, dict):
        raise HookInputError("the hook input is not a JSON object")
    return event


def sniff_event(raw: bytes) -> str | None:
    """The event name of a damaged input, when it can still be read."""
    found = re.search(rb'"hook_event_name"\s*:\s*"([A-Za-z]+)"', raw[:4096])
    return found.group(1).decode() if found else None


def event_text(event: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string field of an event, or None."""
    value = event.get(key)
    return value if isinstance(value, str) and value else None


_AGENT_FIELD_MAX = 120


def subagent(event: Mapping[str, Any]) -> dict[str, str] | None:
    """The subagent a tool event comes from (`agent_id`, `agent_type`), or None (the main agent).

    Kept with the evidence and the side effect, so an operator sees which agent acted; one
    line each, bounded, as the harness names them.
    """
    found = {}
    for field, name in (("agent_id", "id"), ("agent_type", "type")):
        value = event_text(event, field)
        if value:
            found[name] = re.sub(r"[\x00-\x1f\x7f]+", " ", value).strip()[:_AGENT_FIELD_MAX]
    return found or None


def subagent_words(agent: Mapping[str, str] | None) -> str:
    """How an audit note names a subagent: `subagent general-purpose (a1b2…)`, or ""."""
    if not agent:
        return ""
    kind, ident = agent.get("type"), agent.get("id")
    return f"subagent {kind or 'unknown'}" + (f" ({ident})" if ident else "")


def bash_command(event: Mapping[str, Any]) -> str | None:
    """The command line of a Bash tool call (`tool_input.command`), or None."""
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command")
    return command if isinstance(command, str) else None


# --- the store --------------------------------------------------------------------------------


class HookContext:
    """Where a hook records: the store, the rules, the environment it runs in.

    A hook process that ends right after its answer (`tui.launch`) passes `keep_store_open`: it
    leaves the store open for the process exit, since closing SQLite's last connection
    checkpoints the WAL into the database (two more fsyncs) on every tool call; SQLite's
    auto-checkpoint and the next long-lived connection to close do it instead. Every write is
    committed before the answer.
    """

    def __init__(
        self,
        store: str | None = None,
        env: Mapping[str, str] | None = None,
        rules: tuple[Rule, ...] | None = None,
        config_path: Path | None = None,
        keep_store_open: bool = False,
        harness: str = CLAUDE_CODE,
    ) -> None:
        self.harness = harness  # whose events this hook answers (Codex's hooks speak Claude's)
        self.store = store
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        self.rules = rules
        self.config_path = config_path
        self.keep_store_open = keep_store_open
        self._engine: Engine | None = None

    def engine(self, harness: str) -> Engine:
        """Open the store on first use, as the harness through the hook interface."""
        if self._engine is None:
            from core.engine import Engine
            from core.models import Interface

            self._engine = Engine(self.store, interface=Interface.HOOK, actor=harness)
        return self._engine

    def rule_list(self) -> tuple[Rule, ...]:
        """The rules in force (loaded once)."""
        if self.rules is None:
            self.rules = load_rules(self.config_path)
        return self.rules

    def close(self) -> None:
        """Close the store if it was opened (unless it is kept open for the process exit)."""
        if self._engine is not None and not self.keep_store_open:
            self._engine.close()
            self._engine = None
