"""`pitstop locate`: where the store, its database, git repositories and config live."""

from __future__ import annotations

import click

from tui.cli.base import Context, emit, json_option, pass_ctx


@click.command()
@json_option
@pass_ctx
def locate(ctx: Context, as_json: bool) -> None:
    """Print where the store, database, git repos and config live."""
    paths = ctx.engine().locate()
    emit(as_json, paths, lambda: "\n".join(f"{k:<9} {v}" for k, v in paths.items()))
