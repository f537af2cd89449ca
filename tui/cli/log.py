"""`pitstop log`: the audit log, who changed what, when, through which interface, and why."""

from __future__ import annotations

import click

from tui.cli.base import Context, emit, json_option, pass_ctx


@click.command()
@click.argument("task_id", required=False)
@json_option
@pass_ctx
def log(ctx: Context, task_id: str | None, as_json: bool) -> None:
    """Show the audit log: who changed what, when, through which interface, and why."""
    from tui.render import table

    events = ctx.engine().events(task_id)
    emit(
        as_json,
        events,
        lambda: table(
            ["at", "actor", "via", "entity", "action", "change", "reason"],
            [
                (
                    e.at[:19].replace("T", " "),
                    e.actor,
                    e.interface.value,
                    f"{e.entity} {e.entity_id}",
                    e.action,
                    f"{e.from_state or '-'} → {e.to_state or '-'}",
                    e.reason or "",
                )
                for e in events
            ],
        ),
    )
