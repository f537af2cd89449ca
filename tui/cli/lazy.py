"""A click group that imports a subcommand's module only when that subcommand is asked for.

Every `pitstop` command would otherwise pay for importing every other command's module before it
does anything (issue #22 wants a command line that starts like git's). The root group names each
command's module in a table instead; `--help`, which shows every command's one-line help, is the
one path that imports them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click


class LazyGroup(click.Group):
    """A group whose commands are `"module:attribute"` names, imported on first use."""

    def __init__(self, *args: Any, lazy_commands: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, the imported and the not yet imported, in click's sorted order."""
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command called `cmd_name`, importing its module if it is not loaded yet."""
        target = self.lazy_commands.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        return load_command(target, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, but a mistyped name is matched against every command, loaded or not."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            # click >= 8.4 suggests close names, from the commands it has loaded only.
            no_such_command = getattr(click.exceptions, "NoSuchCommand", None)
            if no_such_command is None or not isinstance(exc, no_such_command):
                raise
            raise no_such_command(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx
            ) from None


def load_command(target: str, expected_name: str) -> click.Command:
    """Import `"module:attribute"` and check that it is the click command it is listed as."""
    module_name, _, attribute = target.partition(":")
    command = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(command, click.Command) or command.name != expected_name:
        raise TypeError(f"{target} is not the click command {expected_name!r}")
    return command
