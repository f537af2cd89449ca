"""The Diff tab: changed files with their line counts, and the unified diff coloured by theme.

The diff is coloured line by line with the theme's `diff-*` variables (what a `diff` lexer would
do), so a theme switch recolours it without reloading. A very long diff is cut visibly, never
silently (invariant 4): the cut says how much is hidden and how to see all of it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer, Vertical
from textual.content import Content
from textual.widgets import DataTable, Static

from core.models import ChangedFile
from core.terminal_text import printable
from tui.widgets.formatting import counted, short_sha, shown
from tui.widgets.search_bar import Matches, SearchBar, find_matches

MAX_DIFF_LINES = 5000

_HEADER_PREFIXES = (
    "index ",
    "--- ",
    "+++ ",
    "new file mode",
    "deleted file mode",
    "similarity index",
    "dissimilarity index",
    "rename from",
    "rename to",
    "copy from",
    "copy to",
    "old mode",
    "new mode",
    "Binary files",
)


def line_style(line: str) -> str:
    """The theme style of one unified-diff line."""
    if line.startswith("diff --git "):
        return "bold $diff-header"
    if line.startswith(_HEADER_PREFIXES):
        return "$diff-header"
    if line.startswith("@@"):
        return "$diff-hunk"
    if line.startswith("+"):
        return "$diff-added"
    if line.startswith("-"):
        return "$diff-removed"
    if line.startswith("\\"):
        return "dim"
    return ""


def diff_content(
    diff: str,
    max_lines: int = MAX_DIFF_LINES,
    matches: Collection[int] = (),
    current: int | None = None,
) -> tuple[Content, list[str]]:
    """Coloured content for at most `max_lines` lines of `diff`, and the lines it shows; lines
    in `matches` marked as search hits, `current` the one the search is on."""
    lines = [printable(line.expandtabs(4), single_line=True) for line in diff.splitlines()]
    shown_lines = lines[:max_lines]
    parts: list[tuple[str, str] | str] = []
    hits = set(matches)
    for number, line in enumerate(shown_lines):
        style = line_style(line)
        if number == current:
            style = f"{style} reverse".strip()
        elif number in hits:
            style = f"{style} underline".strip()
        parts.append((line + "\n", style) if style else line + "\n")
    if len(lines) > max_lines:
        parts.append(
            (
                f"… diff cut here: {len(lines) - max_lines:,} more lines not shown "
                f"({len(lines):,} in all); `pitstop diff` prints the whole diff\n",
                "bold $warning",
            )
        )
    return Content.assemble(*parts), shown_lines


def file_offsets(shown_lines: Sequence[str], files: Sequence[ChangedFile]) -> dict[str, int]:
    """Line number of each file's `diff --git` header within the shown diff."""
    offsets: dict[str, int] = {}
    wanted = {f" b/{change.path}": change.path for change in files}
    for number, line in enumerate(shown_lines):
        if line.startswith("diff --git "):
            for suffix, path in wanted.items():
                if line.endswith(suffix) and path not in offsets:
                    offsets[path] = number
                    break
    return offsets


class ChangedFilesTable(DataTable[Any]):
    """Changed files; moving the cursor scrolls the diff to that file."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="files.down"),
        Binding("k", "cursor_up", "Up", show=False, id="files.up"),
    ]


class DiffView(Vertical):
    """Heading, changed files and the diff of one checkpoint; `/` searches it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search", key_display="/", id="diff.search",
                tooltip="Find lines in the diff; n and N go to the next and previous"),
        Binding("n", "next_match(True)", "Next", show=False, id="diff.next"),
        Binding("N", "next_match(False)", "Previous", show=False, id="diff.previous"),
    ]  # fmt: skip

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.offsets: dict[str, int] = {}
        self.ref: str | None = None
        self.against = "base"
        self._files: list[ChangedFile] = []
        self._diff = ""
        self.shown_lines: list[str] = []
        self.matches = Matches()

    def compose(self) -> ComposeResult:
        yield Static(id="diff-heading")
        yield ChangedFilesTable(
            id="diff-files",
            cursor_type="row",
            zebra_stripes=True,
            cursor_foreground_priority="renderable",
        )
        yield SearchBar(id="diff-search")
        with ScrollableContainer(id="diff-scroll"):
            yield Static(id="diff-body")

    def on_mount(self) -> None:
        table = self.query_one(ChangedFilesTable)
        table.add_column("", key="status", width=1)
        table.add_column("File", key="path")
        table.add_column("+", key="added", width=6)
        table.add_column("−", key="deleted", width=6)
        self.show_message("[dim]Select a checkpoint to see its diff.[/]")
        # Rich cells hold concrete colours: refill them when the theme changes.
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._fill_files_table())

    def show_message(self, markup: str) -> None:
        """Empty the view and say why (loading, an incomplete checkpoint, an error)."""
        self.query_one("#diff-heading", Static).update(Content.from_markup(markup))
        self._files = []
        self.query_one(ChangedFilesTable).clear()
        self.query_one("#diff-body", Static).update("")
        self.query_one("#diff-files").display = False
        self.offsets = {}

    def show(
        self,
        ref: str,
        against: str,
        base_commit: str | None,
        files: Sequence[ChangedFile],
        diff: str,
    ) -> None:
        """Show `files` and `diff` of checkpoint `ref` compared with `against`."""
        self.ref, self.against = ref, against
        added = sum(change.added or 0 for change in files)
        deleted = sum(change.deleted or 0 for change in files)
        compared = "the previous checkpoint"
        if against == "base":
            compared = f"base commit {short_sha(base_commit)}"
        self.query_one("#diff-heading", Static).update(
            Content.from_markup(
                f"[b]{shown(ref)}[/] against {compared} · {counted(len(files), 'file')} · "
                f"[$diff-added]+{added}[/] [$diff-removed]−{deleted}[/]"
            )
        )
        self._files = list(files)
        self._fill_files_table()
        self._diff = diff
        content, self.shown_lines = diff_content(diff)
        self.offsets = file_offsets(self.shown_lines, files)
        body = self.query_one("#diff-body", Static)
        body.update(content if diff else Content.from_markup("[dim]No changes.[/]"))
        self.query_one("#diff-scroll").scroll_home(animate=False)
        if self.matches.needle:  # another checkpoint: the same words, found in its diff
            self._search(self.matches.needle)

    # --- search ----------------------------------------------------------------------------

    def action_search(self) -> None:
        """Open the search line."""
        self.query_one(SearchBar).open()

    @on(SearchBar.Search, "#diff-search")
    def _searched(self, event: SearchBar.Search) -> None:
        event.stop()
        self._search(event.needle)
        if event.needle:
            self.query_one("#diff-scroll").focus()

    def _search(self, needle: str) -> None:
        self.matches = Matches(needle, find_matches(self.shown_lines, needle))
        scroll = self.query_one("#diff-scroll")
        self.matches.start_at(int(scroll.scroll_y))
        self._show_matches()

    def action_next_match(self, forward: bool) -> None:
        """Go to the next (or previous) line the search found."""
        if self.matches.step(forward) is not None:
            self._show_matches()

    def _show_matches(self) -> None:
        """Redraw the diff with the hits marked and scroll the current one into view."""
        bar = self.query_one(SearchBar)
        bar.status(self.matches.label())
        if not self._diff:
            return
        current = self.matches.line
        content, _ = diff_content(self._diff, matches=self.matches.lines, current=current)
        self.query_one("#diff-body", Static).update(content)
        if current is not None:
            scroll = self.query_one("#diff-scroll")
            scroll.scroll_to(y=max(0, current - scroll.size.height // 2), animate=False)

    def _fill_files_table(self) -> None:
        colours = self.app.theme_variables
        added_style = colours.get("diff-added", "")
        removed_style = colours.get("diff-removed", "")
        table = self.query_one(ChangedFilesTable)
        table.clear()
        table.display = bool(self._files)
        for change in self._files:
            binary = change.added is None
            status_style = {"A": added_style, "D": removed_style}.get(change.status, "")
            table.add_row(
                Text(change.status, style=f"bold {status_style}".strip()),
                Text(
                    printable(
                        change.path if not change.old_path else f"{change.old_path} → {change.path}"
                    )
                ),
                Text(
                    "binary" if binary else f"+{change.added}", style=added_style, justify="right"
                ),
                Text("" if binary else f"−{change.deleted}", style=removed_style, justify="right"),
                key=change.path,
            )

    @on(DataTable.RowHighlighted, "#diff-files")
    @on(DataTable.RowSelected, "#diff-files")
    def _scroll_to_file(self, event: DataTable.RowHighlighted | DataTable.RowSelected) -> None:
        path = event.row_key.value
        if path in self.offsets:
            self.query_one("#diff-scroll").scroll_to(y=self.offsets[path], animate=False)
