"""The Pitstop dashboard: the Textual app, its themes, keymap and command palette.

The app owns one `Engine` for the UI thread; screens read the store in thread workers that open
their own engine (`engine.for_thread()`) and post messages back, so the UI never waits on
SQLite or git.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen, Screen

from core.engine import Engine, TaskSummary
from core.errors import UsageError
from core.models import Interface
from core.terminal_text import printable
from tui import live
from tui.command_line import HELP_TEXT, CommandError, Verb, completions, parse, resolve
from tui.commands import SORTABLE_COLUMNS, PitstopCommands
from tui.remotes import RemoteSummary
from tui.screens.command_line import CommandLineScreen
from tui.screens.dashboard import DashboardScreen
from tui.screens.inbox import InboxScreen
from tui.screens.task import TaskScreen
from tui.themes import (
    DEFAULT_THEME,
    load_bundled_themes,
    load_user_themes,
    variable_defaults,
)

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel

    from tui.host import PitstopHost


class PitstopApp(App[None]):
    """Supervise paused agent tasks: triage them, read their checkpoints and diffs."""

    CSS_PATH = "app.tcss"
    TITLE = "Pitstop"
    COMMANDS = App.COMMANDS | {PitstopCommands}
    ENABLE_COMMAND_PALETTE = True
    # Screens get `-narrow` under 110 columns and `-short` under 32 rows (app.tcss tightens the
    # timeline and the preview), so 80×24 keeps what triage needs on screen.
    # (Textual declares them instance attributes, so no ClassVar here.)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]  # noqa: RUF012

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Quit Pitstop"),
        Binding(
            "a",
            "open_inbox",
            "Approvals",
            id="app.inbox",
            tooltip="Every pending approval across tasks, oldest first",
        ),
        Binding(
            "question_mark",
            "toggle_help",
            "Keys",
            key_display="?",
            id="app.help",
            tooltip="Show or hide every key for this screen",
        ),
        # Declared here (not left to Textual) so `:` can share the action and both can be remapped.
        Binding(
            "ctrl+p",
            "command_palette",
            "Palette",
            show=False,
            priority=True,
            id="app.palette",
            tooltip="Open the command palette: tasks, themes, sorting",
        ),
        Binding(
            "colon",
            "command_line",
            "Command",
            key_display=":",
            show=False,
            id="app.command_line",
            tooltip="Type a command: :q, :inbox, :task ID, :theme NAME, :help",
        ),
    ]

    def __init__(
        self,
        store_root: Path | None = None,
        theme: str | None = None,
        *,
        engine: Engine | None = None,
        live: bool = False,
    ) -> None:
        super().__init__()
        self.live = live
        self._stop_watching = threading.Event()
        self._owns_engine = engine is None
        self.engine = engine or Engine(store_root, interface=Interface.TUI)
        self.known_tasks: dict[str, str] = {}
        self.known_remote_tasks: dict[str, str] = {}  # remote-only task -> where it lives
        self.theme_problems: list[str] = []
        self.pitstop_theme_names: list[str] = []
        self._register_themes()
        self.theme = self._choose_theme(theme)
        keymap = dict(self.engine.config.keymap)
        if keymap:
            self.set_keymap(keymap)

    # --- themes ----------------------------------------------------------------------------

    def _register_themes(self) -> None:
        bundled = load_bundled_themes()
        user = load_user_themes()
        self.theme_problems = [*bundled.problems, *user.problems]
        themes = {**bundled.themes, **user.themes}  # a user theme may replace a bundled one
        for theme in themes.values():
            self.register_theme(theme)
        self.pitstop_theme_names = sorted(themes)

    def _choose_theme(self, requested: str | None) -> str:
        if requested:
            if requested not in self.available_themes:
                raise UsageError(
                    f"unknown theme {requested!r}; choose one of "
                    f"{', '.join(self.pitstop_theme_names or sorted(self.available_themes))}"
                )
            return requested
        configured = self.engine.config.theme
        if configured and configured in self.available_themes:
            return configured
        if configured:
            self.theme_problems.append(
                f"config.toml names theme {configured!r}, which is not installed; "
                f"using {DEFAULT_THEME}"
            )
        return DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """Pitstop's variables for themes that do not set them (Textual's own, say)."""
        return variable_defaults(self.current_theme)

    def command_theme(self, name: str) -> None:
        """Switch to theme `name`."""
        self.theme = name

    # --- screens ---------------------------------------------------------------------------

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast, from any screen or widget, with the controls in its text shown escaped
        (an error often quotes agent-written text)."""
        super().notify(
            printable(message),
            title=printable(title),
            severity=severity,
            timeout=timeout,
            markup=markup,
        )

    def get_default_screen(self) -> Screen[None]:
        return DashboardScreen()

    def on_mount(self) -> None:
        for problem in self.theme_problems:
            self.notify(
                problem, title="Theme problem", severity="warning", timeout=10, markup=False
            )
        if self.live:
            self.watch_store()

    def on_unmount(self) -> None:
        self._stop_watching.set()
        if self._owns_engine:
            self.engine.close()

    # --- live refresh --------------------------------------------------------------------

    @work(thread=True, exit_on_error=False, group="live", exclusive=True)
    def watch_store(self) -> None:
        """Post `StoreChanged` whenever another connection commits; runs until the app exits."""
        for _version in self.engine.watch_commits(self._stop_watching):
            self.post_message(live.StoreChanged())

    @on(live.StoreChanged)
    def _store_changed(self) -> None:
        self.reload_open_screens()

    def reload_open_screens(self) -> None:
        """Re-read what every open screen shows; each keeps its selection."""
        for screen in self.screen_stack:
            if isinstance(screen, DashboardScreen):
                screen.load_tasks()
            elif isinstance(screen, TaskScreen):
                screen.load_checkpoints()
            elif isinstance(screen, InboxScreen):
                screen.load_approvals()

    def remember_tasks(
        self, summaries: Sequence[TaskSummary], remote: Sequence[RemoteSummary] = ()
    ) -> None:
        """Keep task ids and objectives (and remote-only tasks) for the command palette."""
        self.known_tasks = {s.task.id: s.task.objective for s in summaries}
        self.known_remote_tasks = {
            r.task.id: f"on {r.where}" + ("" if r.readable else " · no key") for r in remote
        }

    def known_checkpoints(self) -> dict[str, str]:
        """Checkpoints of the task on screen (ref -> reason and state), for the palette."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, TaskScreen):
                return {
                    ref: f"{cp.reason.value} · {cp.state.value} · {cp.note or ''}"
                    for ref, cp in screen.checkpoints.items()
                }
        return {}

    def open_task(self, task_id: str, checkpoint_ref: str | None = None) -> None:
        """Show a task's checkpoints, on one of them if asked (replacing another task's screen)."""
        if isinstance(self.screen, TaskScreen):
            self.pop_screen()
        self.push_screen(TaskScreen(task_id, select=checkpoint_ref))

    def dashboard(self) -> DashboardScreen:
        """Return to the dashboard and return it."""
        while len(self.screen_stack) > 1 and not isinstance(self.screen, DashboardScreen):
            self.pop_screen()
        screen = self.screen
        assert isinstance(screen, DashboardScreen), "the dashboard is the default screen"
        return screen

    def action_open_inbox(self) -> None:
        """Show the approvals inbox (from any screen but a dialog)."""
        if isinstance(self.screen, InboxScreen | ModalScreen):
            return
        self.push_screen(InboxScreen())

    def command_filter(self) -> None:
        """Back to the dashboard, typing into its filter."""
        self.dashboard().action_filter()

    def command_set_filter(self, text: str) -> None:
        """Back to the dashboard, filtered to `text`."""
        self.dashboard().set_filter(text)

    def command_sort(self, column: str) -> None:
        """Back to the dashboard, sorted by `column`."""
        self.dashboard().sort_by(column)

    def command_fetch(self, task_id: str) -> None:
        """Back to the dashboard, fetching `task_id` from its remote."""
        self.dashboard().fetch_task(task_id)

    def command_sync(self) -> None:
        """Back to the dashboard, syncing every shared task."""
        self.dashboard().action_sync()

    def command_refresh(self) -> None:
        """Read the current screen's data from the store again."""
        screen = self.screen
        if isinstance(screen, DashboardScreen | TaskScreen | InboxScreen):
            screen.action_refresh()

    def action_command_line(self) -> None:
        """Open the `:` command line (not from a dialog, nor over another command line)."""
        if isinstance(self.screen, ModalScreen):
            return
        lines = completions(self.known_tasks, self.available_themes, SORTABLE_COLUMNS)
        self.push_screen(CommandLineScreen(lines), self.run_command_line)

    def run_command_line(self, line: str | None) -> None:
        """Do what a `:` line says, or say in one line why it means nothing."""
        parsed = parse(line or "")
        if parsed is None:
            return
        if isinstance(parsed, CommandError):
            self.notify(parsed.message, title="Command", severity="warning", markup=False)
            return
        verb, argument = parsed
        if verb is Verb.QUIT:
            self.exit()
        elif verb is Verb.INBOX:
            self.action_open_inbox()
        elif verb is Verb.DASHBOARD:
            self.dashboard()
        elif verb is Verb.REFRESH:
            self.command_refresh()
        elif verb is Verb.FILTER:
            self.command_set_filter(argument) if argument else self.command_filter()
        elif verb is Verb.PALETTE:
            self.action_command_palette()
        elif verb is Verb.HELP:
            self.notify(HELP_TEXT, title="Commands", markup=False)
        else:
            self._run_named(verb, argument)

    def _run_named(self, verb: Verb, argument: str) -> None:
        """`:task ID`, `:theme NAME`, `:sort COLUMN`: the name resolved exactly or by prefix."""
        names: dict[Verb, tuple[Iterable[str], str, Callable[[str], object]]] = {
            Verb.TASK: (self.known_tasks, "task", self.open_task),
            Verb.THEME: (self.available_themes, "theme", self.command_theme),
            Verb.SORT: (SORTABLE_COLUMNS, "column", self.command_sort),
        }
        known, what, run = names[verb]
        found = resolve(argument, known, what)
        if isinstance(found, CommandError):
            self.notify(found.message, title="Command", severity="warning", markup=False)
            return
        run(found)

    def action_toggle_help(self) -> None:
        """Show or hide the panel listing every key of the focused screen."""
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()


def run_dashboard(store_root: Path | None, theme: str | None = None) -> None:
    """Open the dashboard on the store at `store_root` (or the default one) until the user quits."""
    PitstopApp(store_root, theme=theme, live=True).run()


if TYPE_CHECKING:

    def _provides_host(app: PitstopApp) -> PitstopHost:
        """Type-checked only: the app gives screens and widgets everything `PitstopHost` names."""
        return app
