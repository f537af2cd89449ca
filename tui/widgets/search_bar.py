"""`/` search in logs and diffs: the input line, the matches and which one is current.

The diff and the full log both answer `/` the way less and lazygit do: type words, enter, then
`n` and `N` walk the matching lines (wrapping at the ends), the current one highlighted and
scrolled into view. Matching is plain text, case-insensitive unless the words hold a capital
(smart case), on the lines as shown (escapes already written out).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static

MAX_MATCHES = 100_000  # a search past this many lines says so instead of holding them all


def line_matches(text: str, needle: str) -> bool:
    """True when `text` holds `needle` (smart case: case-sensitive only with a capital in it)."""
    if not needle:
        return False
    if needle == needle.lower():
        return needle in text.lower()
    return needle in text


def find_matches(lines: Iterable[str], needle: str) -> list[int]:
    """Indexes of the lines holding `needle`, in order, at most `MAX_MATCHES`."""
    found = []
    for number, line in enumerate(lines):
        if line_matches(line, needle):
            found.append(number)
            if len(found) >= MAX_MATCHES:
                break
    return found


class Matches:
    """Matching line numbers and the current one; `n`/`N` move it, wrapping at the ends."""

    def __init__(self, needle: str = "", lines: list[int] | None = None) -> None:
        self.needle = needle
        self.lines = lines or []
        self.current = 0

    def start_at(self, line: int) -> int | None:
        """Make the first match at or after `line` current (wrapping); its line, or None."""
        if not self.lines:
            return None
        self.current = next((i for i, at in enumerate(self.lines) if at >= line), 0)
        return self.lines[self.current]

    def step(self, forward: bool) -> int | None:
        """The next (or previous) match's line, wrapping; None when nothing matched."""
        if not self.lines:
            return None
        self.current = (self.current + (1 if forward else -1)) % len(self.lines)
        return self.lines[self.current]

    @property
    def line(self) -> int | None:
        """The current match's line."""
        return self.lines[self.current] if self.lines else None

    def label(self) -> str:
        """`match 3 of 17 for "timeout"`, or that nothing matched."""
        if not self.needle:
            return ""
        if not self.lines:
            return f"no line holds {self.needle!r}"
        more = "+" if len(self.lines) >= MAX_MATCHES else ""
        return f"match {self.current + 1} of {len(self.lines)}{more} for {self.needle!r} · n/N"


class SearchBar(Horizontal):
    """`search /` and an input; enter posts `Search`, escape posts `Search` with no words."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close search", id="search.close", tooltip="Stop searching"),
    ]

    DEFAULT_CSS = """
    SearchBar { height: 1; background: $panel; display: none; }
    SearchBar.open { display: block; }
    SearchBar .search-prompt { width: auto; padding: 0 1; color: $primary; }
    SearchBar Input { height: 1; border: none; padding: 0; width: 1fr; }
    SearchBar .search-status { width: auto; padding: 0 1; color: $foreground-muted; }
    """

    class Search(Message):
        """The words to look for (empty: the search was closed)."""

        def __init__(self, bar: SearchBar, needle: str) -> None:
            super().__init__()
            self.bar = bar
            self.needle = needle

        @property
        def control(self) -> SearchBar:
            return self.bar

    def compose(self) -> ComposeResult:
        yield Static("search /", classes="search-prompt")
        yield Input(placeholder="words; enter finds, n/N next/previous, esc closes")
        yield Static("", classes="search-status")

    def open(self) -> None:
        """Show the bar and type into it."""
        self.add_class("open")
        self.query_one(Input).focus()

    def close(self) -> None:
        """Hide the bar and forget the words."""
        self.remove_class("open")
        self.query_one(Input).value = ""
        self.status("")
        self.post_message(self.Search(self, ""))

    def status(self, text: str) -> None:
        """Say how the search went (`match 3 of 17`)."""
        self.query_one(".search-status", Static).update(text)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Search(self, event.value.strip()))

    def action_close(self) -> None:
        """Close the search (escape)."""
        self.close()
