"""The `:` command line: one input line at the bottom, as in vim and k9s, that runs what it says.

It dismisses with the typed line (None when cancelled); the app parses and runs it
(`tui.command_line`), so what a line means is tested without a screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Static


class CommandLineScreen(ModalScreen[str | None]):
    """`:` and a line to type; enter runs it, escape closes without doing anything."""

    DEFAULT_CSS = """
    CommandLineScreen { align: left bottom; background: $background 0%; }
    CommandLineScreen #command-line { dock: bottom; height: 1; background: $panel; }
    CommandLineScreen #command-prompt { width: 2; padding: 0 0 0 1; color: $primary; }
    CommandLineScreen #command-input { height: 1; border: none; padding: 0; width: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="command_line.cancel", tooltip="Close it"),
    ]

    def __init__(self, completions: Sequence[str]) -> None:
        super().__init__()
        self.completions = list(completions)

    def compose(self) -> ComposeResult:
        with Horizontal(id="command-line"):
            yield Static(":", id="command-prompt")
            yield Input(
                placeholder="q · inbox · task ID · theme NAME · help",
                suggester=SuggestFromList(self.completions, case_sensitive=False),
                id="command-input",
            )

    def on_mount(self) -> None:
        self.query_one("#command-input", Input).focus()

    @on(Input.Submitted, "#command-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        """Close without running anything."""
        self.dismiss(None)
