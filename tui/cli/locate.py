"""`pitstop locate`: where the store, its database, git repositories and config live."""

from __future__ import annotations

import click

from tui.cli.base import Context, json_option, pass_ctx


@click.command()
@json_option
@pass_ctx
def locate(ctx: Context, as_json: bool) -> None:
    """Print where the store, database, git repos and config live."""
    from tui.quick import locate_text

    click.echo(locate_text(ctx.engine(), as_json))
