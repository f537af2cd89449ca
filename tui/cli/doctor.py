"""`pitstop doctor [--fix]`: what is wrong with the store, one line each; mend it with `--fix`.

The checks and fixes are `core.engine.doctor`'s; this module prints them. The exit code says
whether anything remains: 0 healthy, 1 when findings remain.
"""

from __future__ import annotations

import sys

import click

from tui.cli.base import Context, emit, json_option, pass_ctx


@click.command()
@click.option("--fix", is_flag=True, help="Mend what can be mended (each fix audited).")
@json_option
@pass_ctx
def doctor(ctx: Context, fix: bool, as_json: bool) -> None:
    """Check the store: the database's integrity and schema, checkpoint refs ahead of its rows
    and gaps in their numbers, objects and lock files left by failed or killed writers,
    temporary indexes, leftover resume worktrees and branches, and file modes.

    Without --fix nothing changes. Exits 0 when the store is healthy, 1 when findings remain.
    """
    from core.engine import Engine
    from core.models import Interface

    report = Engine.doctor(ctx.store, fix=fix, interface=Interface.CLI)
    emit(as_json, report.as_dict(), lambda: _text(report))
    if not report.healthy:
        sys.exit(1)


def _text(report: object) -> str:
    from core.engine.doctor import DoctorReport

    assert isinstance(report, DoctorReport)
    lines = [f"fixed: {line}" for line in report.fixed]
    lines += [f"{finding.kind}: {finding.line}" for finding in report.remaining]
    if report.healthy:
        lines.append("the store is healthy" if not report.fixed else "the store is healthy now")
    return "\n".join(lines)
