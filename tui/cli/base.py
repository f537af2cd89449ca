"""What every `pitstop` subcommand module shares: the store context, `--json`, and output.

Each command module under `tui/cli/` imports from here; the root group in `tui/cli/__init__.py`
names those modules and loads one only when its command runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from core.engine import Engine

F = TypeVar("F", bound=Callable[..., Any])


class Context:
    """What the group passes to every subcommand."""

    def __init__(self, store: str | None, *, create: bool = True) -> None:
        self.store = store
        self.create = create  # off for a typed `--store DIR` without `--init`
        self._engine: Engine | None = None

    def engine(self) -> Engine:
        """Open the store on first use (so `--help` and usage errors never touch it)."""
        if self._engine is None:
            from tui.quick import engine  # the click-free paths open it the same way

            self._engine = engine(self.store, create=self.create)
        return self._engine

    def checked_store(self) -> str | None:
        """The store directory for a command that opens it itself (the dashboard)."""
        if not self.create:
            from tui.quick import require_store

            require_store(self.store)
        return self.store


pass_ctx = click.make_pass_decorator(Context)


def json_option(func: F) -> F:
    """Add `--json`: print one JSON document to stdout instead of human text."""
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(func)


def say(text: str = "", *, nl: bool = True) -> None:
    """Print human text on stdout with any control character shown, never obeyed.

    Objectives, notes, labels and command output are agent-written; `core.terminal_text`
    writes an escape sequence in them out as text, so none reaches the operator's terminal.
    """
    from core.terminal_text import printable

    click.echo(printable(text), nl=nl)


def emit(as_json: bool, document: Any, human: str | Callable[[], str]) -> None:
    """Print the JSON document or the human text."""
    if as_json:
        from tui.render import dumps

        click.echo(dumps(document))
    else:
        say(human() if callable(human) else human)
