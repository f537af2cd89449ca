"""`pitstop validate` and `pitstop resume`: check a checkpoint, then restore it and go on.

`validate` prints each finding as its check finishes and exits with the verdict's code (0 ready
or ready with warnings, 3 stale, 4 blocked, 5 unsupported); `resume` refuses what validation
refuses, with the same codes.
"""

from __future__ import annotations

import sys

import click

from tui.cli.base import Context, emit, json_option, pass_ctx, say
from tui.quick_diffval import finding_line


@click.command()
@click.argument("ref", metavar="TASK@SEQ")
@click.option("--into", type=click.Path(), help="Check this resume target directory too.")
@click.option("--offline", is_flag=True, help="Skip checks that need the network (unknown).")
@json_option
@pass_ctx
def validate(ctx: Context, ref: str, into: str | None, offline: bool, as_json: bool) -> None:
    """Check whether a checkpoint can still be resumed safely.

    Exit codes: 0 ready or ready_with_warnings, 3 stale, 4 blocked, 5 unsupported.
    """
    progress = None if as_json else (lambda finding: say(finding_line(finding)))
    report = ctx.engine().validate(ref, into=into, offline=offline, progress=progress)
    if as_json:
        emit(True, report.as_dict(), "")
    else:
        if report.advice:
            say(f"\nadvice:  {report.advice}")
        say(f"\nverdict: {report.verdict.value}  ({report.duration_ms} ms)")
    sys.exit(report.verdict.exit_code)


@click.command()
@click.argument("ref", metavar="TASK@SEQ")
@click.option("--into", type=click.Path(), help="Restore into this new directory (a git worktree).")
@click.option("--in-place", is_flag=True, help="Restore into the repo itself (clean, at base).")
@click.option("--launch/--no-launch", default=False, help="Start the task's harness afterwards.")
@click.option("--yes", is_flag=True, help="Resume a stale checkpoint anyway.")
@click.option(
    "--keep-worktree",
    is_flag=True,
    help="Keep the worktree and pitstop/<task> branch when the restore or launch fails.",
)
@click.option("--offline", is_flag=True, help="Validate without the network.")
@json_option
@pass_ctx
def resume(
    ctx: Context,
    ref: str,
    into: str | None,
    in_place: bool,
    launch: bool,
    yes: bool,
    keep_worktree: bool,
    offline: bool,
    as_json: bool,
) -> None:
    """Validate, restore the checkpoint, write the resume brief, and optionally launch.

    Refused when validation says blocked (exit 4) or unsupported (5), and when stale (3) unless
    --yes. The harness command comes from `[harness.NAME] resume` in config.toml, or a built-in
    template for claude-code, codex and generic.
    """
    engine = ctx.engine()
    plan = engine.resume(
        ref,
        into=into,
        in_place=in_place,
        accept_stale=yes,
        offline=offline,
        keep_worktree=keep_worktree,
    )
    document = {
        "resume": plan.resume_id,
        "checkpoint": plan.ref,
        "verdict": plan.verdict,
        "workdir": str(plan.workdir),
        "branch": plan.branch,
        "brief": str(plan.brief_md),
        "brief_json": str(plan.brief_json),
        "restore_ms": plan.restore_ms,
        "warnings": list(plan.warnings),
        "command": list(plan.command),
    }
    if not launch:
        emit(
            as_json,
            document,
            lambda: "\n".join(
                [
                    f"restored {plan.ref} into {plan.workdir}"
                    + (f" on branch {plan.branch}" if plan.branch else "")
                    + f" in {plan.restore_ms} ms ({plan.verdict})",
                    f"brief: {plan.brief_md}",
                    *[f"warning: {w}" for w in plan.warnings],
                    f"launch: cd {plan.workdir} && {plan.command[-1]}",
                ]
            ),
        )
        return
    if not as_json:
        say(f"restored {plan.ref} into {plan.workdir}; launching: {plan.command[-1]}")
    code = engine.launch(plan, keep_worktree=keep_worktree)
    if as_json:
        emit(True, {**document, "exit_code": code}, "")
    sys.exit(code)
