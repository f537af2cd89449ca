"""What screens, widgets and the command palette may ask of the app, as a `Protocol`.

They reach the running app through `self.app`; typing that as `tui.app.PitstopApp` would make
every screen import the module that imports every screen (a cycle, even under TYPE_CHECKING).
This protocol names the few things they use instead, and `tui.app` checks that `PitstopApp`
provides them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from core.engine import Engine, TaskSummary
    from tui.remotes import RemoteSummary


class PitstopHost(Protocol):
    """The running Pitstop app, as its screens and widgets see it."""

    engine: Engine
    known_tasks: dict[str, str]
    known_remote_tasks: dict[str, str]
    pitstop_theme_names: list[str]

    def remember_tasks(
        self, summaries: Sequence[TaskSummary], remote: Sequence[RemoteSummary] = ()
    ) -> None:
        """Keep task ids and objectives (and remote-only tasks) for the command palette."""

    def known_checkpoints(self) -> dict[str, str]:
        """Checkpoints of the task on screen (ref -> reason and state), for the palette."""

    def open_task(self, task_id: str, checkpoint_ref: str | None = None) -> None:
        """Open a task's screen (at one checkpoint, if given)."""

    def reload_open_screens(self) -> None:
        """Read the store again for every screen that is open."""

    def command_theme(self, name: str) -> None:
        """Switch to a theme."""

    def command_filter(self) -> None:
        """Focus the dashboard's filter."""

    def command_set_filter(self, text: str) -> None:
        """Filter the dashboard's task list."""

    def command_sort(self, column: str) -> None:
        """Sort the dashboard's task list by a column (again to reverse)."""

    def command_fetch(self, task_id: str) -> None:
        """Fetch a remote-only task."""

    def command_sync(self) -> None:
        """Sync every shared task with its remote."""

    def command_refresh(self) -> None:
        """Read the task list from the store again."""

    def action_open_inbox(self) -> None:
        """Open the approvals inbox."""

    def action_toggle_help(self) -> None:
        """Show or hide the keys of the current screen."""

    async def action_quit(self) -> None:
        """Quit."""
