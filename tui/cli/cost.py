"""`pitstop cost`: DESIGN §4's question (checkpoint or restart?) as a break-even table.

It answers for figures you give on the command line, or for a real task from what it recorded;
the arithmetic is `core.economics`, this module only reads options and lays out the table.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

import click

from tui.cli.base import Context, emit, json_option, pass_ctx

if TYPE_CHECKING:
    from core.economics.model import BreakEven, TaskEstimate


def _amount(ctx: click.Context, param: click.Parameter, value: str | None) -> Decimal | None:
    """A non-negative decimal number, kept exact (no float rounding)."""
    if value is None:
        return None
    try:
        amount = Decimal(value.strip().lstrip("$"))
    except InvalidOperation:
        raise click.BadParameter(f"{value!r} is not a number") from None
    if not amount.is_finite() or amount < 0:
        raise click.BadParameter(f"{value!r} must be a non-negative number")
    return amount


@click.command()
@click.argument("task_id", required=False)
@click.option(
    "--p-interrupt",
    metavar="NUMBER",
    callback=_amount,
    help="Probability of an interruption, 0 to 1.",
)
@click.option(
    "--replay-usd",
    metavar="NUMBER",
    callback=_amount,
    help="Money a replay spends again (tokens, calls).",
)
@click.option(
    "--replay-minutes",
    metavar="NUMBER",
    callback=_amount,
    help="Human re-orientation minutes of a replay.",
)
@click.option(
    "--rate-usd-per-hour",
    metavar="NUMBER",
    callback=_amount,
    help="Hourly rate of that human time.",
)
@click.option(
    "--machine-usd",
    metavar="NUMBER",
    callback=_amount,
    help="Machine cost of a replay (sandbox, CI).",
)
@click.option(
    "--create-usd", metavar="NUMBER", callback=_amount, help="Cost of creating the checkpoint."
)
@click.option(
    "--storage-usd", metavar="NUMBER", callback=_amount, help="Cost of storing it (default 0)."
)
@click.option("--restore-usd", metavar="NUMBER", callback=_amount, help="Cost of restoring it.")
@click.option(
    "--validate-usd", metavar="NUMBER", callback=_amount, help="Cost of validating it (default 0)."
)
@click.option(
    "--why",
    is_flag=True,
    help="With TASK: the timeline of its automatic checkpoint decisions and their numbers.",
)
@json_option
@pass_ctx
def cost(
    ctx: Context,
    task_id: str | None,
    p_interrupt: Decimal | None,
    replay_usd: Decimal | None,
    replay_minutes: Decimal | None,
    rate_usd_per_hour: Decimal | None,
    machine_usd: Decimal | None,
    create_usd: Decimal | None,
    storage_usd: Decimal | None,
    restore_usd: Decimal | None,
    validate_usd: Decimal | None,
    why: bool,
    as_json: bool,
) -> None:
    """Does a checkpoint pay, or is restarting cheaper? (the break-even model)

    \b
    With figures:  pitstop cost --p-interrupt 0.05 --machine-usd 7 --replay-minutes 20 \\
                     --rate-usd-per-hour 90 --create-usd 0.10 --restore-usd 0.20
    For a task:    pitstop cost TASK [--p-interrupt P] [--replay-minutes M] [--rate-usd-per-hour R]
    Its hooks' decisions:  pitstop cost TASK --why
    """
    if why:
        from tui.cli.cost_why import show_decisions

        if task_id is None:
            raise click.UsageError("--why needs a TASK: pitstop cost TASK --why")
        show_decisions(ctx, task_id, as_json)
        return
    if task_id is not None:
        manual_only = {
            "--replay-usd": replay_usd,
            "--machine-usd": machine_usd,
            "--create-usd": create_usd,
            "--storage-usd": storage_usd,
            "--restore-usd": restore_usd,
            "--validate-usd": validate_usd,
        }
        given = [option for option, value in manual_only.items() if value is not None]
        if given:
            raise click.UsageError(
                f"{given[0]} is for figures you give, not with TASK; "
                "a task's costs come from its record and [economics] in config.toml"
            )
        estimate = ctx.engine().estimate(
            task_id,
            p_interrupt=p_interrupt,
            reorientation_minutes=replay_minutes,
            human_usd_per_hour=rate_usd_per_hour,
        )
        emit(as_json, estimate.as_dict(), lambda: _estimate_text(estimate))
        return
    result = _manual(
        p_interrupt,
        replay_usd,
        replay_minutes,
        rate_usd_per_hour,
        machine_usd,
        create_usd,
        storage_usd,
        restore_usd,
        validate_usd,
    )
    emit(as_json, result.as_dict(), lambda: _break_even_text(result))


def _manual(
    p_interrupt: Decimal | None,
    replay_usd: Decimal | None,
    replay_minutes: Decimal | None,
    rate_usd_per_hour: Decimal | None,
    machine_usd: Decimal | None,
    create_usd: Decimal | None,
    storage_usd: Decimal | None,
    restore_usd: Decimal | None,
    validate_usd: Decimal | None,
) -> BreakEven:
    from core.economics.model import CheckpointCost, ReplayCost, Scenario, break_even

    if p_interrupt is None:
        raise click.UsageError("give --p-interrupt P (0 to 1), or a TASK to estimate")
    if p_interrupt > 1:
        raise click.UsageError(f"--p-interrupt is a probability from 0 to 1, not {p_interrupt}")
    if (replay_minutes is None) != (rate_usd_per_hour is None):
        raise click.UsageError("--replay-minutes and --rate-usd-per-hour go together")
    if replay_usd is None and replay_minutes is None and machine_usd is None:
        raise click.UsageError(
            "give the replay cost: --replay-usd X, or --replay-minutes M --rate-usd-per-hour R "
            "(and --machine-usd Y)"
        )
    for value, option in ((create_usd, "--create-usd"), (restore_usd, "--restore-usd")):
        if value is None:
            raise click.UsageError(f"give {option} (what the checkpoint costs)")
    zero = Decimal(0)
    return break_even(
        Scenario(
            p_interrupt=p_interrupt,
            replay=ReplayCost(
                spent_usd=replay_usd or zero,
                machine_usd=machine_usd or zero,
                reorientation_minutes=replay_minutes or zero,
                human_usd_per_hour=rate_usd_per_hour or zero,
            ),
            checkpoint=CheckpointCost(
                create_usd=create_usd or zero,
                storage_usd=storage_usd or zero,
                restore_usd=restore_usd or zero,
                validation_usd=validate_usd or zero,
            ),
        )
    )


def minutes_text(value: Decimal) -> str:
    """A number of minutes as `12.5 min` (two decimals at most, trailing zeros dropped)."""
    from core.economics.model import json_number

    return f"{json_number(value.quantize(Decimal('0.01')))} min"


def _break_even_text(result: BreakEven) -> str:
    from core.economics.model import money, percent

    p = percent(result.scenario.p_interrupt)
    replay = result.scenario.replay
    cost = result.scenario.checkpoint
    rows = [
        ("P(interruption)", p, ""),
        ("replay cost (exposure)", money(result.exposure_usd), ""),
        ("  spent again (tokens, calls)", money(replay.spent_usd), ""),
        ("  machine", money(replay.machine_usd), ""),
        (
            "  human re-orientation",
            money(replay.human_usd),
            f"= {minutes_text(replay.reorientation_minutes)} × "
            f"{money(replay.human_usd_per_hour)}/h",
        ),
        (
            "expected loss avoided",
            money(result.expected_loss_avoided_usd),
            f"= {p} × {money(result.exposure_usd)}",
        ),
        (
            "expected checkpoint cost",
            money(result.expected_checkpoint_cost_usd),
            f"= {money(result.fixed_cost_usd)} + {money(result.expected_use_cost_usd)}",
        ),
        (
            "  create + storage",
            money(result.fixed_cost_usd),
            f"= {money(cost.create_usd)} + {money(cost.storage_usd)}",
        ),
        (
            "  expected restore + validation",
            money(result.expected_use_cost_usd),
            f"= {p} × ({money(cost.restore_usd)} + {money(cost.validation_usd)})",
        ),
        ("net value", money(result.net_value_usd), "= avoided − cost"),
    ]
    if result.replay_minutes:
        rows.append(
            (
                "replay time at stake",
                minutes_text(result.replay_minutes),
                f"(expected {minutes_text(result.expected_minutes_avoided)} avoided)",
            )
        )
    rows.append(
        (
            "break-even P",
            percent(result.break_even_p) if result.break_even_p is not None else "never",
            "(a checkpoint pays above this chance of interruption)",
        )
    )
    label_width = max(len(label) for label, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    lines = [
        f"{label.ljust(label_width)}  {value.rjust(value_width)}   {how}".rstrip()
        for label, value, how in rows
    ]
    verdict = (
        "checkpoint: the expected loss avoided exceeds the checkpoint's cost"
        if result.decision.value == "checkpoint"
        else "restart: a checkpoint costs more than the replay it is expected to save"
    )
    lines.append(f"decision: {verdict}")
    return "\n".join(lines)


def _estimate_text(estimate: TaskEstimate) -> str:
    from core.economics.model import money

    lines = [f"task {estimate.task_id}: replay cost estimated from what it recorded"]
    basis = {
        "usd_used": "the money the task recorded with --usd-used",
        "tokens": "tokens the task recorded, at the configured rate",
        "nothing recorded": "nothing recorded",
    }[estimate.spent_basis]
    lines.append(f"  spent again: {money(estimate.result.scenario.replay.spent_usd)} ({basis})")
    for total in estimate.kinds:
        if total.runs:
            counted = "" if total.counted else " (not counted)"
            lines.append(
                f"  {total.kind.value} runs: {total.runs}, {minutes_text(total.minutes)}{counted}"
            )
    lines.extend(f"  note: {note}" for note in estimate.notes)
    lines.append("")
    lines.append(_break_even_text(estimate.result))
    return "\n".join(lines)
