"""The text rows of a Textual SVG snapshot, and a row diff of a failed comparison, for CI logs.

pytest-textual-snapshot pickles (passed, expected SVG, actual SVG, ...) per test for its HTML
report; a CI run keeps only the log, so the failing test's report gets the rows that differ.
"""

from __future__ import annotations

import difflib
import html
import pickle
import re
from collections import defaultdict

import pytest

_TEXT = re.compile(r'<text class="([^"]*)" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', re.S)


def rows(svg: str) -> list[str]:
    """The screen's rows as plain text, top to bottom."""
    cells: dict[float, list[tuple[float, str]]] = defaultdict(list)
    for _style, x, y, text in _TEXT.findall(svg):
        cells[float(y)].append((float(x), html.unescape(text).replace("\xa0", " ")))
    return ["".join(text for _x, text in sorted(row)).rstrip() for _y, row in sorted(cells.items())]


def styled_rows(svg: str) -> list[str]:
    """The rows with each run's style class, for a difference of colours only."""
    cells: dict[float, list[tuple[float, str]]] = defaultdict(list)
    for style, x, y, text in _TEXT.findall(svg):
        cells[float(y)].append((float(x), f"[{style}]{html.unescape(text)}"))
    return ["".join(text for _x, text in sorted(row)) for _y, row in sorted(cells.items())]


def difference(expected: str, actual: str) -> str:
    """A unified diff of the rows; of the styled rows when the text is the same."""
    before, after = rows(expected), rows(actual)
    if before == after:
        before, after = styled_rows(expected), styled_rows(actual)
        heading = "the text is the same; these rows differ in style:\n"
    else:
        heading = ""
    lines = difflib.unified_diff(before, after, "snapshot", "this run", lineterm="", n=1)
    return heading + "\n".join(lines)


def difference_of_report(item: pytest.Item) -> str | None:
    """The difference the snapshot plugin recorded for `item`, if it compared one."""
    try:
        from pytest_textual_snapshot import node_to_report_path

        path = node_to_report_path(item)
        data = pickle.loads(path.read_bytes()) if path.exists() else None
    except Exception as error:  # a report of a failure must never fail itself
        return f"(no snapshot difference: {type(error).__name__}: {error})"
    if not data or data[0]:
        return None
    return difference(str(data[1]), str(data[2]))
