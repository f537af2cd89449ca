"""The command palette (`ctrl+p` or `:`): `"group: verb"` commands backed by app methods.

Tasks come from the list the dashboard last loaded, so opening the palette never waits on the
store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from tui.host import PitstopHost

# (label, callback, help)
Command = tuple[str, Callable[[], object], str]

# Commands come once per task (or checkpoint): an empty palette lists only the first few.
DISCOVERED_TASKS = 30

SORTABLE_COLUMNS = (
    *("status", "task", "objective", "repo", "age", "checkpoints"),
    *("approvals", "effects", "verdict", "budget"),
)


class PitstopCommands(Provider):
    """Open tasks, switch themes, filter, sort and refresh the dashboard."""

    @property
    def pitstop(self) -> PitstopHost:
        """The app, typed."""
        return cast("PitstopHost", self.app)

    def commands(self) -> list[Command]:
        """Every command the palette offers right now."""
        return [*self.per_task_commands(), *self.general_commands()]

    def per_task_commands(self) -> Iterator[Command]:
        """One command per known task, remote task and checkpoint on screen, built as asked
        for (an empty palette takes the first few of 10,000)."""
        app = self.pitstop
        for task_id, objective in app.known_tasks.items():
            yield (f"task: open {task_id}", partial(app.open_task, task_id), objective)
        for task_id, where in app.known_remote_tasks.items():
            yield (f"remote: fetch {task_id}", partial(app.command_fetch, task_id), where)
        for ref, state in app.known_checkpoints().items():
            task_id = ref.split("@", 1)[0]
            yield (f"checkpoint: open {ref}", partial(app.open_task, task_id, ref), state)

    def general_commands(self) -> list[Command]:
        """Themes, filter, sort, refresh, sync, inbox, help and quit."""
        app = self.pitstop
        found: list[Command] = []
        for name in app.pitstop_theme_names:
            found.append(
                (f"theme: {name}", partial(app.command_theme, name), f"Switch to the {name} theme")
            )
        found += [
            ("tasks: filter", app.command_filter, "Filter the task list (also `/`)"),
            ("tasks: clear filter", partial(app.command_set_filter, ""), "Show every task again"),
            ("tasks: refresh", app.command_refresh, "Read the task list from the store again"),
            (
                "remote: sync",
                app.command_sync,
                "Fetch, merge and push every shared task; list the remotes again (also `S`)",
            ),
        ]
        found += [
            (
                f"tasks: sort by {column}",
                partial(app.command_sort, column),
                f"Sort the task list by {column}; again to reverse",
            )
            for column in SORTABLE_COLUMNS
        ]
        found += [
            (
                "approvals: open inbox",
                app.action_open_inbox,
                "Every pending approval across tasks; y approve, n reject (also `a`)",
            ),
            ("help: keys", app.action_toggle_help, "Show or hide every key of this screen (`?`)"),
            ("app: quit", app.action_quit, "Quit Pitstop"),
        ]
        return found

    async def discover(self) -> Hits:
        """What an empty palette lists: every command but the per-task ones, then the first
        `DISCOVERED_TASKS` tasks (typing finds any of them); 10,000 rows would take seconds to
        lay out before the palette could show anything."""
        first_tasks = islice(self.per_task_commands(), DISCOVERED_TASKS)
        for label, callback, help_text in [*self.general_commands(), *first_tasks]:
            yield DiscoveryHit(label, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """Commands whose label fuzzily matches `query`."""
        matcher = self.matcher(query)
        for label, callback, help_text in self.commands():
            score = matcher.match(label)
            if score > 0:
                yield Hit(score, matcher.highlight(label), callback, help=help_text)
