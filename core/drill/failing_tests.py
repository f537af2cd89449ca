"""The tests a run says failed: pytest's `FAILED path::test` and `ERROR path::test` lines.

pytest's short test summary (printed by default, `-rfE`) names each failing test once, as
`FAILED tests/test_x.py::test_y - AssertionError…`; a verbose run prints `path::test FAILED`.
Both are read; colour codes are stripped first. The set is what a drill compares, so the order
and the messages after ` - ` do not count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TEST_ID = r"(?P<id>[^\s:]+(?:::[^\s\[:]+)+(?:\[[^\]\n]*\])?|[^\s:]+\.py)"
_SHORT = re.compile(r"^(?:FAILED|ERROR) " + _TEST_ID + r"(?: - .*)?$")
_VERBOSE = re.compile(r"^" + _TEST_ID + r" (?:FAILED|ERROR)(?: +\[ *\d+%\])?$")
MAX_LINE = 4096


def failing_test_id(line: str) -> str | None:
    """The test id a line names as failed or errored, or None."""
    text = _ANSI.sub("", line[:MAX_LINE]).rstrip("\r\n ")
    if "\r" in text:
        text = text.rsplit("\r", 1)[-1]
    match = _SHORT.match(text) or _VERBOSE.match(text)
    if match is None:
        return None
    return match.group("id")


class FailingTests:
    """Feed lines; read `found` at the end: every test id named as failed or errored."""

    def __init__(self) -> None:
        self.found: set[str] = set()
        self._partial = b""

    def feed_lines(self, lines: Iterable[str]) -> None:
        """Lines of text, without their newlines."""
        for line in lines:
            if "FAILED" in line or "ERROR" in line:
                test_id = failing_test_id(line)
                if test_id is not None:
                    self.found.add(test_id)

    def feed(self, block: bytes) -> None:
        """Raw output, in blocks that may end mid-line."""
        data = self._partial + block
        *complete, self._partial = data.split(b"\n")
        self.feed_lines(raw.decode("utf-8", "replace") for raw in complete)

    def finish(self) -> frozenset[str]:
        """The set, once the last (unterminated) line is read too."""
        if self._partial:
            self.feed_lines([self._partial.decode("utf-8", "replace")])
            self._partial = b""
        return frozenset(self.found)


def failing_tests(blocks: Iterable[bytes]) -> frozenset[str]:
    """Every test a run's output names as failed or errored."""
    scanner = FailingTests()
    for block in blocks:
        scanner.feed(block)
    return scanner.finish()
