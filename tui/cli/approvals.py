"""`pitstop approval …`: ask for human decisions and decide them, the approvals inbox.

An agent requests an approval (its task then waits); an approver approves or rejects it with a
reason. Every change goes through the engine, which writes its audit event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from tui.cli.base import Context, emit, json_option, pass_ctx, say
from tui.cli.ledger import EXIT_CODES_HELP, conflict_lines, conflicted_ids

if TYPE_CHECKING:
    from collections.abc import Set

    from core.models import Approval


@click.group(epilog=EXIT_CODES_HELP)
def approval() -> None:
    """Ask for human decisions and decide them: the approvals inbox."""


def _approval_table(items: list[Approval], conflicted: Set[tuple[str, str]] = frozenset()) -> str:
    from core import clock
    from tui.render import table

    return table(
        ["id", "state", "risk", "effect", "age", "expires", "by", "action"],
        [
            (
                item.id,
                item.state.value + (" (conflict)" if (item.task_id, item.id) in conflicted else ""),
                item.risk.value,
                item.effect_key or "-",
                clock.humanize_age(item.requested_at),
                (item.expires_at or "-")[:19].replace("T", " "),
                item.decided_by or item.requested_by,
                item.action[:60],
            )
            for item in items
        ],
    )


def _approval_detail(item: Approval, conflicts: list[str]) -> str:
    lines = [
        f"approval    {item.id}",
        f"state       {item.state.value}",
        f"task        {item.task_id}",
        f"action      {item.action}",
        f"risk        {item.risk.value}",
        f"effect      {item.effect_key or '-'}",
        f"requested   {item.requested_at} by {item.requested_by}",
    ]
    if item.checkpoint_seq is not None:
        lines.append(f"checkpoint  {item.task_id}@{item.checkpoint_seq}")
    if item.expires_at:
        lines.append(f"expires     {item.expires_at}")
    if item.decided_at and item.decided_by:
        lines.append(f"decided     {item.decided_at} by {item.decided_by}")
    if item.reason:
        lines.append(f"reason      {item.reason}")
    lines.extend(f"CONFLICT    {line}" for line in conflicts)
    return "\n".join(lines)


@approval.command("request", epilog=EXIT_CODES_HELP)
@click.option("--task", "task_id", required=True, help="The task that waits.")
@click.option("--action", required=True, help="What the agent wants to do, for the approver.")
@click.option("--effect", "effect_key", help="The side effect (key) this approval gates.")
@click.option(
    "--risk",
    type=click.Choice(["low", "medium", "high"]),
    default="medium",
    show_default=True,
    help="How risky the action is.",
)
@click.option("--checkpoint", is_flag=True, help="Take a before-wait checkpoint first.")
@click.option("--expires-in", help="Expire undecided after this long: 90s, 30m, 2h, 1d.")
@json_option
@pass_ctx
def approval_request(
    ctx: Context,
    task_id: str,
    action: str,
    effect_key: str | None,
    risk: str,
    checkpoint: bool,
    expires_in: str | None,
    as_json: bool,
) -> None:
    """Ask for a human decision; the task becomes waiting."""
    from core.models import Risk

    made = ctx.engine().request_approval(
        task_id,
        action,
        effect_key=effect_key,
        risk=Risk(risk),
        expires_in=expires_in,
        checkpoint=checkpoint,
    )
    taken = f" after checkpoint {task_id}@{made.checkpoint_seq}" if made.checkpoint_seq else ""
    emit(
        as_json,
        made,
        f"approval {made.id} requested ({made.risk.value} risk){taken}; task {task_id} is waiting",
    )


def _decide(ctx: Context, approval_id: str, approve: bool, reason: str, as_json: bool) -> None:
    decided = ctx.engine().decide_approval(approval_id, approve, reason)
    emit(
        as_json,
        decided,
        f"approval {decided.id} {decided.state.value} by {decided.decided_by}",
    )


@approval.command("approve", epilog=EXIT_CODES_HELP)
@click.argument("approval_id", metavar="ID")
@click.option("--reason", required=True, help="Why (kept in the audit log).")
@json_option
@pass_ctx
def approval_approve(ctx: Context, approval_id: str, reason: str, as_json: bool) -> None:
    """Approve a pending approval (ID is TASK:N)."""
    _decide(ctx, approval_id, True, reason, as_json)


@approval.command("reject", epilog=EXIT_CODES_HELP)
@click.argument("approval_id", metavar="ID")
@click.option("--reason", required=True, help="Why (kept in the audit log).")
@json_option
@pass_ctx
def approval_reject(ctx: Context, approval_id: str, reason: str, as_json: bool) -> None:
    """Reject a pending approval (ID is TASK:N)."""
    _decide(ctx, approval_id, False, reason, as_json)


@approval.command("list")
@click.option("--pending", "pending_only", is_flag=True, help="Only those still undecided.")
@click.option("--task", "task_id", help="Only this task's approvals.")
@json_option
@pass_ctx
def approval_list(ctx: Context, pending_only: bool, task_id: str | None, as_json: bool) -> None:
    """List approvals across tasks (the inbox), oldest first."""
    engine = ctx.engine()
    items = engine.list_approvals(task_id, pending_only)
    if as_json:
        from tui.render import jsonable

        # Which door each decision came through (cli, tui, hook, api), from the audit log.
        decided_via = {
            event.entity_id: event.interface.value
            for event in engine.events(task_id)
            if event.entity == "approval" and event.action in ("approve", "reject")
        }
        emit(True, [{**jsonable(a), "decided_via": decided_via.get(a.id)} for a in items], "")
        return
    if not items:
        say("no pending approvals" if pending_only else "no approvals recorded")
        return
    say(_approval_table(items, conflicted_ids(engine, task_id, "approval")))


@approval.command("show")
@click.argument("approval_id", metavar="ID")
@json_option
@pass_ctx
def approval_show(ctx: Context, approval_id: str, as_json: bool) -> None:
    """Show one approval (ID is TASK:N)."""
    from tui.render import jsonable

    engine = ctx.engine()
    item = engine.get_approval(approval_id)
    conflicts = conflict_lines(engine, item.task_id, "approval", item.id)
    emit(
        as_json,
        {**jsonable(item), "conflicts": conflicts},
        lambda: _approval_detail(item, conflicts),
    )
