"""`pitstop metrics`: the measures of resume quality of DESIGN §8, for a task or the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from tui.cli.base import Context, emit, json_option, pass_ctx

if TYPE_CHECKING:
    from core.economics.metrics import Latency, Metrics


@click.command()
@click.option("--task", "task_id", help="Only this task.")
@json_option
@pass_ctx
def metrics(ctx: Context, task_id: str | None, as_json: bool) -> None:
    """Print the measures of resume quality (DESIGN §8)."""
    measured = ctx.engine().metrics(task_id)
    emit(as_json, measured.as_dict(), lambda: _metrics_text(measured))


def _latency_text(value: Latency | None) -> str:
    if value is None or not value.count:
        return "none recorded"
    return f"p50 {value.p50_ms} ms, p95 {value.p95_ms} ms, max {value.max_ms} ms ({value.count})"


def _fidelity_text(measured: Metrics) -> str:
    drills = measured.fidelity
    if drills is None or not drills.drills:
        return "none recorded (`pitstop drill --all` drills live tasks)"
    share = drills.faithful_share
    faithful = drills.verdicts.get("faithful", 0)
    judged = drills.drills - drills.verdicts.get("not-replayable", 0)
    said = (
        f"{share:.0%} faithful ({faithful} of {judged})"
        if share is not None
        else "nothing replayable yet"
    )
    others = ", ".join(
        f"{count} {verdict}"
        for verdict, count in sorted(drills.verdicts.items())
        if verdict != "faithful"
    )
    mean = (
        f"; mean restore {drills.restore.mean_ms} ms" if drills.restore.mean_ms is not None else ""
    )
    stale = f"; {drills.stale} stale" if drills.stale else ""
    return f"{said}{'; ' + others if others else ''}{mean}{stale} over {drills.drills} drill(s)"


def _metrics_text(measured: Metrics) -> str:
    from core.economics.model import money
    from tui.cli.cost import minutes_text
    from tui.render import human_bytes

    def known(value: int | None) -> str:
        return "none recorded" if value is None else str(value)

    average = (
        f", {human_bytes(measured.checkpoint_bytes_avg)} average"
        if measured.checkpoint_bytes_avg is not None
        else ""
    )
    if measured.replay_avoided_usd is None or measured.replay_avoided_minutes is None:
        avoided = "none recorded"
    else:
        avoided = (
            f"{money(measured.replay_avoided_usd)}, "
            f"{minutes_text(measured.replay_avoided_minutes)} over {measured.resumes} resume(s)"
        )
    decided = measured.accepted + measured.rejected
    rate = measured.acceptance_rate
    acceptance = (
        f"{measured.accepted} of {decided} accepted ({rate:.0%})"
        if rate is not None
        else "none recorded"
    )
    rows = [
        (
            "checkpoint bytes",
            f"{human_bytes(measured.checkpoint_bytes)} in {measured.checkpoints} checkpoint(s)"
            f"{average}; {measured.expired_checkpoints} expired",
        ),
        ("creation latency", _latency_text(measured.creation)),
        ("restore latency", _latency_text(measured.restore)),
        ("validation latency", _latency_text(measured.validation)),
        ("replay avoided", avoided),
        (
            "checkpoint overhead avoided",
            f"{money(measured.overhead_avoided_usd)} over {measured.skipped_checkpoints} "
            "checkpoint(s) skipped as cheaper to restart",
        ),
        ("stale restores", known(measured.stale_restores)),
        ("duplicate side effects detected", str(measured.duplicate_effects_detected)),
        ("resumed-task acceptance", acceptance),
        ("restore fidelity", _fidelity_text(measured)),
    ]
    width = max(len(label) for label, _ in rows)
    scope = f"task {measured.task_id}" if measured.task_id else "whole store"
    return "\n".join(
        [f"measures of resume quality ({scope})"]
        + [f"  {label.ljust(width)}  {value}" for label, value in rows]
    )
