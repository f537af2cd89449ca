"""`pitstop drill`: a planned interruption — restore a checkpoint in scratch, replay, compare.

Exit codes: 0 faithful, 1 drifted or failed to restore, 3 not replayable (nothing was run: say
what to record or settle first). `--all` drills a sample of live tasks and exits with the worst
verdict's code. The replay's own output goes to stderr as it runs (not with --json), so stdout
carries only the report.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from tui.cli.base import Context, emit, json_option, pass_ctx, say

if TYPE_CHECKING:
    from core.engine.drill import DrillReport
    from core.engine.drill_fleet import FleetDrill

MARKS = {"faithful": "✓", "drifted": "✗", "not-replayable": "-", "failed-to-restore": "✗"}


@click.command()
@click.argument("ref", metavar="TASK[@SEQ]", required=False)
@click.option("--command", "command", metavar="CMD", help="Replay this command instead.")
@click.option("--keep", is_flag=True, help="Keep the restored tree under <store>/drills/.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Stop the replay after SECONDS.",
)
@click.option("--offline", is_flag=True, help="Validate without the network.")
@click.option("--all", "fleet", is_flag=True, help="Drill live tasks' newest checkpoints.")
@click.option(
    "--since", default=None, metavar="AGE", help="With --all: checkpoints this recent (7d)."
)
@click.option("--max", "max_count", type=int, default=None, help="With --all: at most N (20).")
@click.option("--list", "listing", is_flag=True, help="List the drills kept (of TASK, or all).")
@json_option
@pass_ctx
def drill(
    ctx: Context,
    ref: str | None,
    command: str | None,
    keep: bool,
    timeout: float | None,
    offline: bool,
    fleet: bool,
    since: str | None,
    max_count: int | None,
    listing: bool,
    as_json: bool,
) -> None:
    """Restore a checkpoint in a scratch directory, replay its tests or build, compare.

    Verdicts: faithful (the replay ended as recorded), drifted (what differs is listed),
    not-replayable (why: nothing was run), failed-to-restore.
    """
    from core.errors import UsageError
    from core.harness.drill_guard import guard_screen

    if listing:
        if fleet or command or keep or timeout or since or max_count is not None:
            raise UsageError("--list takes only TASK and --json, e.g. pitstop drill --list calc")
        _list(ctx, ref, as_json)
        return
    if fleet:
        if ref or command or keep:
            raise UsageError(
                "--all drills each task's own record: give no TASK, --command or --keep"
            )
        _drill_fleet(ctx, since, max_count, timeout, offline, as_json)
        return
    if since is not None or max_count is not None:
        raise UsageError("--since and --max go with --all, e.g. pitstop drill --all --since 7d")
    if not ref:
        raise UsageError(
            "give the checkpoint to drill, e.g. pitstop drill fix-login-3f2a@2, or --all"
        )
    report = ctx.engine().drill(
        ref,
        screen=guard_screen(),
        command=command,
        keep=keep,
        timeout=timeout,
        offline=offline,
        out_fd=None if as_json else 2,
    )
    emit(as_json, report.as_dict(), lambda: report_text(report))
    sys.exit(report.verdict.exit_code)


def _drill_fleet(
    ctx: Context,
    since: str | None,
    max_count: int | None,
    timeout: float | None,
    offline: bool,
    as_json: bool,
) -> None:
    from core.engine.drill_fleet import DEFAULT_MAX, DEFAULT_SINCE
    from core.harness.drill_guard import guard_screen

    def heard(result: FleetDrill) -> None:
        if not as_json:
            say(_fleet_line(result))

    done = ctx.engine().drill_all(
        screen=guard_screen(),
        since=since or DEFAULT_SINCE,
        max_count=DEFAULT_MAX if max_count is None else max_count,
        timeout=timeout,
        offline=offline,
        progress=heard,
    )
    codes = [r.report.verdict.exit_code if r.report else 1 for r in done]
    if as_json:
        emit(True, [_fleet_document(r) for r in done], "")
    else:
        faithful = sum(1 for r in done if r.report and r.report.verdict.value == "faithful")
        say(f"{faithful} of {len(done)} drill(s) faithful" if done else "no checkpoint to drill")
    sys.exit(max(codes, default=0))


def _list(ctx: Context, task_id: str | None, as_json: bool) -> None:
    from core.engine.checkpoints import parse_checkpoint_ref
    from core.errors import UsageError

    if task_id is not None:
        task_id, seq = parse_checkpoint_ref(task_id)
        if seq is not None:
            raise UsageError(
                f"--list takes a task, not a checkpoint: pitstop drill --list {task_id}"
            )
    drills = ctx.engine().list_drills(task_id)
    emit(
        as_json,
        [report.as_dict() for report in drills],
        lambda: (
            "\n".join(
                f"{report.at[:19].replace('T', ' ')}  {report.id}  {_verdict_line(report)}"
                for report in drills
            )
            or "no drills recorded; `pitstop drill TASK` runs one"
        ),
    )


def _fleet_line(result: FleetDrill) -> str:
    if result.report is None:
        return f"✗ {result.ref}: {result.error}"
    return _verdict_line(result.report)


def _verdict_line(report: DrillReport) -> str:
    said = report.reason or "; ".join(report.differences) or "as recorded"
    return f"{MARKS[report.verdict.value]} {report.ref}: {report.verdict.value} — {said}"


def _fleet_document(result: FleetDrill) -> dict[str, Any]:
    if result.report is None:
        return {"checkpoint": result.ref, "error": result.error}
    return result.report.as_dict()


def report_text(report: DrillReport) -> str:
    """The human report of one drill."""
    lines = [f"drill {report.ref}: {report.verdict.value}"]
    if report.restore_ms is not None:
        validation = (
            f"; validation {report.validation_verdict} in {report.validation_ms} ms"
            if report.validation_verdict
            else ""
        )
        lines.append(f"  restored in {report.restore_ms} ms{validation}")
    if report.command:
        where = "" if report.cwd in (None, ".") else f" in {report.cwd}/"
        took = f" in {report.replay_ms / 1000:.1f} s" if report.replay_ms is not None else ""
        ran = "replayed" if report.replay_evidence_id else "would replay"
        lines.append(f"  {ran} `{report.command}`{where}{took}")
    if report.recorded and report.replayed:
        lines.append(
            f"  recorded: {_observed(report.recorded)}"
            + (f" (evidence #{report.recorded_evidence_id})" if report.recorded_evidence_id else "")
        )
        lines.append(
            f"  replayed: {_observed(report.replayed)} (evidence #{report.replay_evidence_id})"
        )
    if report.reason:
        lines.append(f"  why: {report.reason}")
    lines.extend(f"  ✗ {difference}" for difference in report.differences)
    lines.extend(f"  · {finding}" for finding in report.findings)
    if report.avoided_usd is not None:
        lines.append(
            f"  replay avoided: ${report.avoided_usd}, {report.avoided_minutes} min "
            "(what an interruption would cost without this checkpoint)"
        )
    if report.kept:
        lines.append(f"  kept: {report.kept}")
    return "\n".join(lines)


def _observed(observed: Any) -> str:
    if observed.summary:
        return f"{observed.status}, {observed.summary['text']}"
    return str(observed.status)
