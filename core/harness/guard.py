"""The guard's decision on a command a rule caught: run it now, wait for an approval, or refuse.

A caught command becomes a side effect keyed by the task and the normalised command, so the same
action runs once: after its approval when its rule asks for one, never again once confirmed (a
resumed agent that repeats it is told it already happened), and not while an earlier attempt's
outcome is unknown. Every refusal tells the agent what to do next, since the agent reads it.

Loaded only when a rule matched; the engine it is given is already open.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from core.harness.commands import RuleMatch
from core.harness.context import HookReply, deny, observed, subagent_words

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

if TYPE_CHECKING:
    from core.engine import Engine
    from core.models import SideEffect


def guard_command(
    engine: Engine,
    task_id: str,
    found: RuleMatch,
    tool_use_id: str | None = None,
    harness: str = "Claude Code",
    *,
    agent: Mapping[str, str] | None = None,
) -> HookReply:
    """Decide whether a matched command may run now; start its side effect when it may.

    A subagent's command is started with a note naming the subagent (`agent_id`, `agent_type`).
    """
    from core.models import EffectState
    from core.redaction.free_text import persistable

    one_line = re.sub(r"[\x00-\x1f\x7f]+", " ", persistable(found.command)).strip()
    shown = one_line if len(one_line) <= 300 else one_line[:297] + "..."
    effect = engine.propose_effect(
        task_id,
        found.key,
        found.rule.name,
        target=one_line[:2000],
        needs_approval=found.rule.approval,
    ).effect
    refusal = _refuse_started(effect, task_id, found, shown)
    if refusal is None and (found.rule.approval or effect.needs_approval):
        refusal = _await_approval(engine, task_id, found, shown)
    if refusal is not None:
        return refusal
    engine.move_effect(
        task_id,
        found.key,
        EffectState.IN_PROGRESS,
        note=_started_note(harness, tool_use_id, agent),
    )
    return observed(f"started {found.key}")


def _started_note(
    harness: str, tool_use_id: str | None, agent: Mapping[str, str] | None
) -> str | None:
    said = [f"{harness} tool call {tool_use_id}" if tool_use_id else "", subagent_words(agent)]
    note = " by ".join(part for part in said if part)
    return note or None


def _refuse_started(
    effect: SideEffect, task_id: str, found: RuleMatch, shown: str
) -> HookReply | None:
    """Deny a command whose side effect already happened or may be happening; else None."""
    from core.models import EffectState

    if effect.state is EffectState.CONFIRMED:
        return deny(
            f"already done at {effect.finished_at or effect.updated_at}: `{shown}` succeeded "
            f"before (side effect {found.key} of task {task_id} is confirmed); do not run it "
            "again — go on from its result. If this is a new action and not a repeat, spell "
            "out what is new (for a push: the commit, `git push origin <sha>:<branch>`)"
        )
    if effect.state in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN):
        settle = (
            f"`pitstop effect confirm --task {task_id} --key {found.key} --reason TEXT` if it "
            f"happened, `pitstop effect fail …` if it did not"
        )
        return deny(
            f"`{shown}` was started at {effect.started_at} and its outcome is unknown (side "
            f"effect {found.key} of task {task_id} is {effect.state.value}); check whether it "
            f"happened, then an operator settles it: {settle}"
        )
    return None


def _await_approval(engine: Engine, task_id: str, found: RuleMatch, shown: str) -> HookReply | None:
    """Deny until the command's latest approval is granted (asking for one if there is none)."""
    from core.models import ApprovalState, Risk

    requested = [a for a in engine.list_approvals(task_id) if a.effect_key == found.key]
    latest = requested[-1] if requested else None
    wait = engine.config.hooks.guard_wait_seconds
    if latest is None or latest.state is ApprovalState.EXPIRED:
        approval = engine.request_approval(
            task_id,
            f"run `{shown}` ({found.rule.name}), asked by the agent",
            effect_key=found.key,
            risk=Risk.HIGH,
            checkpoint=True,
        )
        # `[hooks] guard_wait_seconds`: the command is held while someone decides
        latest = engine.wait_for_decision(approval.id, wait) if wait > 0 else approval
        if latest.state is ApprovalState.PENDING:
            return deny(
                f"waiting for approval {approval.id}: `{shown}` acts outside the sandbox "
                f"({found.rule.name}). An approver runs `pitstop approval approve {approval.id} "
                "--reason TEXT`; then run the same command again. Meanwhile go on with other "
                "work or stop here"
            )
    elif latest.state is ApprovalState.PENDING and wait > 0:
        latest = engine.wait_for_decision(latest.id, wait)
    if latest.state is ApprovalState.PENDING:
        return deny(
            f"waiting for approval {latest.id} (requested at {latest.requested_at}); run "
            "the same command again once it is approved"
        )
    if latest.state is ApprovalState.REJECTED:
        return deny(
            f"`{shown}` was rejected by {latest.decided_by} ({latest.id}: {latest.reason}); "
            "do not run it"
        )
    if latest.state is not ApprovalState.APPROVED:  # expired while held: ask again next time
        return deny(
            f"approval {latest.id} for `{shown}` {latest.state.value}; run the same command "
            "again to ask for a new one"
        )
    return None
