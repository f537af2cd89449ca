"""`pitstop effect …`: side effects under idempotency keys, performed at most once.

Agents propose, start and guard side effects; operators settle the uncertain ones. Every change
goes through the engine, which writes its audit event.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from tui.cli.base import Context, F, emit, json_option, pass_ctx, say
from tui.cli.ledger import EXIT_CODES_HELP, conflict_lines, conflicted_ids, warn

if TYPE_CHECKING:
    from collections.abc import Set

    from core.models import SideEffect

EFFECT_STATES = ["proposed", "in_progress", "confirmed", "failed", "uncertain"]


def _effect_state_text(item: SideEffect) -> str:
    if item.state.value == "in_progress" and not item.runner_alive:
        return "in_progress (no live guard)"
    return item.state.value


def _effect_json(item: SideEffect) -> dict[str, Any]:
    from tui.render import jsonable

    data: dict[str, Any] = jsonable(item)
    data["needs_settling"] = item.needs_settling
    return data


def _effect_table(items: list[SideEffect], conflicted: Set[tuple[str, str]] = frozenset()) -> str:
    from core import clock
    from tui.render import table

    return table(
        ["task", "key", "kind", "state", "attempts", "age", "target"],
        [
            (
                item.task_id,
                item.key,
                item.kind,
                _effect_state_text(item)
                + (" (conflict)" if (item.task_id, item.key) in conflicted else ""),
                item.attempts,
                clock.humanize_age(item.updated_at),
                (item.target or "")[:50],
            )
            for item in items
        ],
    )


def _effect_detail(item: SideEffect, history: list[Any], conflicts: list[str]) -> str:
    lines = [
        f"side effect {item.key}",
        f"task        {item.task_id}",
        f"kind        {item.kind}",
        f"state       {_effect_state_text(item)}",
        f"target      {item.target or '-'}",
        f"check       {item.check or '-'}",
        f"approval    {'required' if item.needs_approval else 'not required'}",
        f"attempts    {item.attempts}",
        f"proposed    {item.created_at}",
    ]
    if item.started_at:
        lines.append(f"started     {item.started_at}")
    if item.finished_at:
        lines.append(f"finished    {item.finished_at}")
    if item.exit_code is not None:
        lines.append(f"exit code   {item.exit_code}")
    if item.note:
        lines.append(f"note        {item.note}")
    if item.needs_settling:
        lines.append(
            "SETTLE      nobody knows whether this happened: run `pitstop effect check` or "
            "`pitstop effect confirm|fail … --reason TEXT`"
        )
    lines.extend(f"CONFLICT    {line}" for line in conflicts)
    lines.append("history:")
    for event in history:
        change = f"{event.from_state or '-'} → {event.to_state or '-'}"
        why = f"  ({event.reason})" if event.reason else ""
        lines.append(
            f"  {event.at[:19].replace('T', ' ')}  {event.actor} via {event.interface.value}  "
            f"{event.action}  {change}{why}"
        )
    return "\n".join(lines)


@click.group(epilog=EXIT_CODES_HELP)
def effect() -> None:
    """Record side effects under idempotency keys, and perform them at most once."""


def _task_key(func: Any) -> Any:
    func = click.option("--key", required=True, help="The idempotency key, unique in the task.")(
        func
    )
    return click.option("--task", "task_id", required=True, help="The task id.")(func)


@effect.command("propose", epilog=EXIT_CODES_HELP)
@_task_key
@click.option("--kind", required=True, help="What sort of action: deploy, pr, comment, payment…")
@click.option("--target", help="What it acts on: a URL, a PR number, an environment.")
@click.option(
    "--check",
    help="A precondition check run by /bin/sh: exit 0 = it already happened, 1 = it did not.",
)
@click.option("--needs-approval", is_flag=True, help="Run only after an approver said yes.")
@json_option
@pass_ctx
def effect_propose(
    ctx: Context,
    task_id: str,
    key: str,
    kind: str,
    target: str | None,
    check: str | None,
    needs_approval: bool,
    as_json: bool,
) -> None:
    """Record a side effect as proposed; an existing key returns the existing effect."""
    result = ctx.engine().propose_effect(
        task_id, key, kind, target=target, check=check, needs_approval=needs_approval
    )
    for warning in result.warnings:
        warn(f"warning: {warning}")
    item = result.effect
    emit(
        as_json,
        {"effect": _effect_json(item), "created": result.created, "warnings": result.warnings},
        f"proposed side effect {item.key} ({item.kind}) for task {item.task_id}"
        if result.created
        else f"side effect {item.key} already exists in task {item.task_id}: "
        f"{_effect_state_text(item)}",
    )


def _move_command(name: str, state: str, summary: str) -> None:
    @effect.command(name, help=summary, epilog=EXIT_CODES_HELP)
    @_task_key
    @click.option("--note", help="What happened (shown with the effect).")
    @click.option(
        "--reason",
        help="Why (kept in the audit log); required when settling an uncertain effect.",
    )
    @json_option
    @pass_ctx
    def command(
        ctx: Context,
        task_id: str,
        key: str,
        note: str | None,
        reason: str | None,
        as_json: bool,
    ) -> None:
        from core.models import EffectState

        moved = ctx.engine().move_effect(task_id, key, EffectState(state), note=note, reason=reason)
        emit(
            as_json,
            _effect_json(moved),
            f"side effect {moved.key} of task {moved.task_id} is now {moved.state.value}",
        )


_move_command("start", "in_progress", "Mark a side effect in_progress (the agent is doing it).")
_move_command("confirm", "confirmed", "Mark a side effect confirmed: it happened.")
_move_command("fail", "failed", "Mark a side effect failed: it did not happen.")
_move_command("uncertain", "uncertain", "Mark a side effect uncertain: nobody knows.")


@effect.command("list")
@click.option("--task", "task_id", help="Only this task's side effects.")
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice(EFFECT_STATES),
    help="Only side effects in this state. Repeatable.",
)
@json_option
@pass_ctx
def effect_list(ctx: Context, task_id: str | None, states: tuple[str, ...], as_json: bool) -> None:
    """List side effects in the order they were proposed."""
    from core.models import EffectState

    items = ctx.engine().list_effects(task_id, [EffectState(s) for s in states])
    if as_json:
        emit(True, [_effect_json(item) for item in items], "")
        return
    if not items:
        say("no side effects recorded")
        return
    say(_effect_table(items, conflicted_ids(ctx.engine(), task_id, "effect")))


@effect.command("show")
@_task_key
@json_option
@pass_ctx
def effect_show(ctx: Context, task_id: str, key: str, as_json: bool) -> None:
    """Show one side effect and its history."""
    engine = ctx.engine()
    item = engine.get_effect(task_id, key)
    history = [
        e for e in engine.events(task_id) if e.entity == "effect" and e.entity_id == item.key
    ]
    conflicts = conflict_lines(engine, task_id, "effect", item.key)
    emit(
        as_json,
        {"effect": _effect_json(item), "history": history, "conflicts": conflicts},
        lambda: _effect_detail(item, history, conflicts),
    )


def _yes_run_check_option(func: F) -> F:
    return click.option(
        "--yes-run-check",
        is_flag=True,
        help="Run the recorded check even though another store wrote it (read it first).",
    )(func)


@effect.command("check", epilog=EXIT_CODES_HELP)
@_task_key
@click.option("--check", "command", help="Use this check instead of the recorded one.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds the check may take (default 60).",
)
@_yes_run_check_option
@json_option
@pass_ctx
def effect_check(
    ctx: Context,
    task_id: str,
    key: str,
    command: str | None,
    timeout: float | None,
    yes_run_check: bool,
    as_json: bool,
) -> None:
    """Settle an in_progress or uncertain side effect by asking its precondition check.

    A recorded check that came from another store (a sync) runs only with --yes-run-check:
    without it, the command is printed and nothing runs.
    """
    outcome = ctx.engine().check_effect(task_id, key, command, timeout, yes_run_check)
    item = outcome.effect
    emit(
        as_json,
        {"effect": _effect_json(item), "check": outcome.result},
        f"side effect {item.key}: the check says it "
        f"{'already happened' if item.state.value == 'confirmed' else 'did not happen'}; "
        f"now {item.state.value}",
    )


@effect.command(
    "guard",
    epilog=EXIT_CODES_HELP,
    context_settings={"allow_interspersed_args": False},
)
@_task_key
@click.option("--kind", help="Propose the effect with this kind if the key is new.")
@click.option("--target", help="Its target, when proposing it here.")
@click.option(
    "--check",
    help="Precondition check (/bin/sh): exit 0 = already happened, 1 = did not, else unknown.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds the action may run; then it is stopped and the effect is uncertain.",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=300,
    show_default=True,
    help="Seconds to wait for another guard already running this key.",
)
@_yes_run_check_option
@json_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@pass_ctx
def effect_guard(
    ctx: Context,
    task_id: str,
    key: str,
    kind: str | None,
    target: str | None,
    check: str | None,
    timeout: float | None,
    wait: float,
    yes_run_check: bool,
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND as a side effect at most once: `pitstop effect guard --task T --key K -- CMD…`.

    \b
    confirmed              not run; exits 0
    in_progress, uncertain the check decides: happened → confirmed, not run;
                           did not happen → run; no check or no answer → exit 3
    proposed, failed       marked in_progress durably, then run: exit 0 → confirmed,
                           non-zero → failed (exit with its code), timeout or signal → uncertain

    The action's output passes through; Pitstop's own lines go to stderr. With --json the
    action's stdout is sent to stderr and stdout holds one JSON document about the outcome.
    The action sees PITSTOP_TASK, PITSTOP_EFFECT_KEY and PITSTOP_EFFECT_ATTEMPT. A recorded
    check that came from another store (a sync) runs only with --yes-run-check.
    """
    from core.ledger.guard import GuardRequest

    outcome = ctx.engine().guard_effect(
        GuardRequest(
            task_id=task_id,
            key=key,
            argv=command,
            kind=kind,
            target=target,
            check=check,
            timeout=timeout,
            wait=wait,
            stdout_to_stderr=as_json,
            yes_run_check=yes_run_check,
        ),
        notice=warn,
    )
    if as_json:
        emit(
            True,
            {
                "effect": _effect_json(outcome.effect),
                "ran": outcome.ran,
                "exit_code": outcome.exit_code,
                "action_exit": outcome.action_exit,
                "duration_s": outcome.duration_s,
                "check": outcome.check,
                "message": outcome.message,
            },
            "",
        )
    else:
        warn(outcome.message)
    sys.exit(outcome.exit_code)
