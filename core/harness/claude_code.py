"""Claude Code's hook events, turned into Pitstop records (and, before a shell command, a guard).

Nobody types `pitstop checkpoint` in the middle of an agent run, so Claude Code tells Pitstop
what happens: a session starts (the task and the session are linked), a shell command ran
(evidence), a turn ended or the context is about to be compacted (a checkpoint), the agent waits
for its user (the task shows in the inbox), a permission prompt is about to show (it becomes
an approval, answered from anywhere: `core.harness.permission`). Before a shell command that
acts outside the sandbox (`git push`, `npm publish`, a deploy…), the hook is a **guard**
(`core.harness.guard`); before
any tool call that would decide, settle or share for the operator, or write Pitstop's own
files, it refuses (`core.harness.protect`), whatever the tool (Bash, Write, Edit…).

Two failure policies: an observation that cannot be recorded is reported on stderr and never
breaks the agent (exit 0); a guard that cannot decide blocks the command with its reason.

This module is on every tool call's path: it imports only the standard library at load time.
A `PreToolUse` for a command no rule matches is decided without opening the store; the engine
(SQLite, git, crypto) and the guard and evidence modules load only when something must be
recorded.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping

from core.errors import PitstopError
from core.harness.context import (
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
from core.harness.sessions import task_for, task_status

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.engine import CheckpointRequest, CheckpointResult, Engine

# What a checkpoint event's `trigger` / `reason` is (`auto`, `manual`, `exit`, `prompt_input_exit`).
_ONE_WORD = re.compile(r"[a-z][a-z_]{0,31}")

# Events whose answer decides whether a tool call runs: they fail closed.
GUARD_EVENTS = frozenset({"PreToolUse"})

# Notification types (and, for older versions, message texts) that mean "the agent waits for you".
_WAITING_TYPES = frozenset({"idle_prompt", "permission_prompt", "elicitation_dialog"})
_WAITING_TEXT = re.compile(
    r"waiting for your input|needs your permission|needs your attention", re.I
)

_CHECKPOINT_REASONS = {
    "Stop": ("turn", "the agent finished a turn"),
    "SubagentStop": ("turn", "a subagent finished"),
    "PreCompact": ("milestone", "before the context is compacted"),
    "SessionEnd": ("interrupt", "the session ended"),
}
# Events whose checkpoint is always taken (a turn's is taken only when it pays).
_ALWAYS_TAKEN = ("PreCompact", "SessionEnd")
_ASKED_BY = {
    "Stop": "a turn ended",
    "SubagentStop": "a subagent finished",
    "PreCompact": "the context is about to be compacted",
    "SessionEnd": "the session ended",
}


def claude_code(raw: bytes, context: HookContext, event_hint: str | None = None) -> HookReply:
    """Answer one Claude Code hook event (JSON on stdin) in Claude Code's hook protocol."""
    try:
        event = parse_event(raw)
    except HookInputError as exc:
        name = event_hint or sniff_event(raw)
        if name in GUARD_EVENTS:
            return block(f"{exc.message}; the tool call is blocked to be safe")
        return fail_open(name or "hook event", exc.message)
    return answer_event(event_text(event, "hook_event_name") or event_hint or "", event, context)


def answer_event(name: str, event: Mapping[str, Any], context: HookContext) -> HookReply:
    """Answer one parsed event of Claude Code's hook protocol (Codex's hooks speak it too): a
    guard that fails blocks, anything else that fails goes on with one line on stderr."""
    try:
        return _dispatch(name, event, context)
    except PitstopError as exc:
        return _failure(name, exc.message)
    except Exception as exc:  # an internal error never breaks the agent, nor lets a guard pass
        return _failure(name, f"internal error ({type(exc).__name__}: {exc})")
    finally:
        early = sys.modules.get("core.snapshot.early_scan")  # loaded only by a checkpoint
        if early is not None:
            early.discard()  # a scan the checkpoint did not take
        context.close()


def _failure(name: str, message: str) -> HookReply:
    """A guard that failed blocks its command; any other event fails open."""
    if name in GUARD_EVENTS:
        return block(
            f"cannot decide whether this command may run ({message}); it is blocked to be safe. "
            "Fix the cause, or run it yourself outside the agent"
        )
    return fail_open(name or "hook event", message)


def _dispatch(name: str, event: Mapping[str, Any], context: HookContext) -> HookReply:
    """The handler of one event; events Pitstop does not use get an empty reply."""
    tool = event_text(event, "tool_name")
    if name == "PreToolUse":
        from core.harness.pre_tool import pre_tool_use

        return pre_tool_use(event, context, context.harness)
    if name in ("PostToolUse", "PostToolUseFailure"):
        if tool != "Bash":
            return HookReply()
        from core.harness.tool_results import record_tool_result

        return record_tool_result(event, context, failed=name == "PostToolUseFailure")
    if name == "PermissionRequest":
        from core.harness.permission import permission_request

        return permission_request(event, context)
    if name == "SessionStart":
        return _session_start(event, context)
    if name in _CHECKPOINT_REASONS:
        return _checkpoint_event(name, event, context)
    if name == "Notification":
        return _notification(event, context)
    if name == "UserPromptSubmit":
        return _user_prompt_submit(event, context)
    return HookReply()  # an event Pitstop does not use: nothing to do


def _session_start(event: Mapping[str, Any], context: HookContext) -> HookReply:
    """Link the session to its task (starting one if needed); the task runs."""
    task = task_for(context, context.harness, event, link=True)
    if task is None:
        return HookReply(
            0, stderr="pitstop: not in a git repository; this session is not tracked\n"
        )
    context.engine(context.harness).set_task_activity(
        task.id,
        task_status("running"),
        f"session started ({event_text(event, 'source') or 'startup'})",
    )
    return observed(f"task {task.id}")


def _user_prompt_submit(event: Mapping[str, Any], context: HookContext) -> HookReply:
    """The user answered: the task runs again. A prompt Claude Code submits to say how a
    background command ended (`<task-notification>`) settles that command's effect."""
    task = task_for(context, context.harness, event)
    if task is None:
        return HookReply()
    engine = context.engine(context.harness)
    settled = _background_ends(engine, task.id, event, notified=True)
    engine.set_task_activity(task.id, task_status("running"), "the user answered the agent")
    return observed("running", *settled)


def _background_ends(
    engine: Engine, task_id: str, event: Mapping[str, Any], *, notified: bool
) -> list[str]:
    """Settle the effects of background commands this event says ended (`harness.background`)."""
    from core.harness import background

    if notified:
        prompt = event.get("prompt")
        ends = background.notifications(prompt) if isinstance(prompt, str) else []
    else:
        ends = background.stop_report(event)
    return background.settle_reported(engine, task_id, ends, event_text(event, "cwd"))


def _checkpoint_event(name: str, event: Mapping[str, Any], context: HookContext) -> HookReply:
    """A checkpoint at the end of a turn, before a compaction, or when the session ends."""
    if name in _ALWAYS_TAKEN:  # the work tree's scan starts while the engine loads
        _scan_early(event, context)
    from core.engine import CheckpointRequest
    from core.models import CheckpointReason

    task = task_for(context, context.harness, event)
    if task is None:
        return HookReply()
    reason, note = _CHECKPOINT_REASONS[name]
    engine = context.engine(context.harness)
    ended = _background_ends(engine, task.id, event, notified=False) if name == "Stop" else []
    unsettled = _unsettled_at_the_end(context, task.id) if name == "SessionEnd" else []
    unsettled = ended + unsettled
    detail = event_text(event, "trigger") or event_text(event, "reason")
    if detail is not None and not _ONE_WORD.fullmatch(detail):
        detail = None  # the note stays Pitstop's own wording: a word such as `auto` or `exit`
    if name == "Stop" and _background_running(event):
        reason, note = "before-wait", "the turn ended with background work still running"
    request = CheckpointRequest(
        reason=CheckpointReason(reason),
        note=f"{note} ({detail})" if detail else note,
        force=name == "SessionEnd",  # the task must show as paused, even with no change
        note_is_news=False,  # the note says when; with nothing new the checkpoint is skipped
        note_is_ours=True,
        workdir_hint=event_text(event, "cwd"),  # a resumed agent works in its resume's dir
    )
    result = _decided_checkpoint(engine, task.id, request, name)
    if result is None:
        return observed("skipped: restart is cheaper", *unsettled)
    if result.checkpoint is None:
        return observed(f"skipped: {result.skipped}", *unsettled)
    return observed(f"checkpoint {result.checkpoint.ref}", *unsettled)


def _scan_early(event: Mapping[str, Any], context: HookContext) -> None:
    """Start the snapshot's `git status` in the agent's directory now (`early_scan`)."""
    from core.paths import StorePaths, resolve_store_root
    from core.snapshot import early_scan

    early_scan.start(event_text(event, "cwd"), StorePaths(resolve_store_root(context.store)).tmp)


def _decided_checkpoint(
    engine: Engine, task_id: str, request: CheckpointRequest, name: str
) -> CheckpointResult | None:
    """Ask the break-even model (core.engine.pays): a turn's checkpoint only when it pays; a
    compaction, a wait or a session's end always (unless the policy calls the task trivially
    restartable at its end). None: skipped, the reason recorded."""
    always = request.reason.value != "turn"
    trivial = engine.config.policy.trivial_restart_usd if name == "SessionEnd" else 0.0
    _, result = engine.decide_checkpoint(
        task_id, request, why=_ASKED_BY[name], always=always, trivial_usd=trivial
    )
    if result is None and name == "SessionEnd":
        engine.set_task_activity(
            task_id, task_status("paused"), "the session ended; trivially restartable"
        )
    return result


def _background_running(event: Mapping[str, Any]) -> bool:
    """A turn ended while a command it started still runs in the background."""
    from core.harness import background

    return background.still_running(event)


def _unsettled_at_the_end(context: HookContext, task_id: str) -> list[str]:
    """The session ended: an effect still in progress (its end never reported, as for a
    command left running in the background) may or may not have happened: uncertain."""
    from core.models import EffectState

    engine = context.engine(context.harness)
    if not engine.has_effects_in(task_id, EffectState.IN_PROGRESS):
        return []  # the common end: nothing running, and the effect ledger need not load
    moved = []
    for effect in engine.list_effects(task_id, [EffectState.IN_PROGRESS]):
        engine.move_effect(
            task_id,
            effect.key,
            EffectState.UNCERTAIN,
            note="the session ended before the command's outcome was reported",
        )
        moved.append(f"{effect.key} uncertain")
    return moved


def _notification(event: Mapping[str, Any], context: HookContext) -> HookReply:
    """A notification that the agent waits for its user puts the task in the inbox."""
    kind = event_text(event, "notification_type")
    message = event_text(event, "message") or ""
    if kind not in _WAITING_TYPES and not _WAITING_TEXT.search(message):
        return HookReply()
    task = task_for(context, context.harness, event)
    if task is None:
        return HookReply()
    engine = context.engine(context.harness)
    taken = _before_wait(engine, task.id, event, kind or "a waiting message")
    engine.set_task_activity(
        task.id, task_status("waiting"), f"the agent waits for its user: {message[:120]}"
    )
    return observed("waiting", *taken)


def _before_wait(engine: Engine, task_id: str, event: Mapping[str, Any], kind: str) -> list[str]:
    """Before the agent waits: a `before-wait` checkpoint when anything changed (audited with
    the model's numbers either way)."""
    from core.engine import CheckpointRequest
    from core.models import CheckpointReason

    word = kind if _ONE_WORD.fullmatch(kind) else "a waiting message"
    request = CheckpointRequest(
        reason=CheckpointReason.BEFORE_WAIT,
        note=f"before the agent waits ({word})",
        note_is_news=False,
        note_is_ours=True,
        workdir_hint=event_text(event, "cwd"),
    )
    _, result = engine.decide_checkpoint(task_id, request, why=f"a wait ({word})", always=True)
    if result is None or result.checkpoint is None:
        return []
    return [f"checkpoint {result.checkpoint.ref}"]
