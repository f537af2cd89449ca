"""Agent-written text made safe for a terminal: every control character shown, never obeyed.

Objectives, notes, labels, effect names and command output are written by agents, and an agent
(or the tool output it copied) can hold escape sequences: OSC 52 writes the operator's
clipboard, CSI moves the cursor and repaints what was printed, a bare `\\r` or backspaces hide
the start of a line, bidirectional overrides reorder what is read. Every path that shows such
text on a terminal — the CLI's tables and reports, the dashboard's cells and panes — passes it
through `printable` first, so a sequence appears as the text `\\x1b]52;c;…\\x07`, in full, and
nothing of it reaches the terminal as a control. Kept in core (no UI package) so the CLI and
the TUI call the same function.
"""

from __future__ import annotations

import re
from functools import cache

# C0 controls but \t and \n, DEL, C1 (0x80-0x9f: a lone 0x9b is CSI on some terminals), lone
# surrogates (undecodable bytes kept by `surrogateescape`: printing one raises), the line and
# paragraph separators, and the bidirectional embeddings, overrides and isolates.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


@cache
def _unsafe(single_line: bool) -> re.Pattern[str]:
    """The pattern of what is written out, compiled on first need: compiling it costs every
    command ~1 ms at start-up, and most text holds nothing but printable characters."""
    return re.compile(f"[{_UNSAFE}\t\n]" if single_line else f"[{_UNSAFE}]")


def _all_printable(text: str, single_line: bool) -> bool:
    """Whether `text` holds none of `_UNSAFE` (nor a tab or newline when `single_line`).

    `str.isprintable` is false for every character of `_UNSAFE` (controls Cc, format Cf,
    separators Zl/Zp, surrogates Cs), so when it holds the pattern cannot match; it is also
    false for a few harmless characters (other spaces, unassigned ones), which then go to the
    pattern as before.
    """
    if single_line or ("\n" not in text and "\t" not in text):
        return text.isprintable()
    return text.replace("\n", "").replace("\t", "").isprintable()


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, single_line: bool = False) -> str:
    """`text` with every control character written out as `\\xNN` / `\\uNNNN` (`\\r`, `\\t`, `\\n`).

    Tabs and newlines are kept as they are unless `single_line` (a table cell, a one-line
    summary). Text without controls comes back unchanged; backslashes are left alone, so the
    rendering reads as the text did and is reversible wherever the text held none.
    """
    if _all_printable(text, single_line):
        return text
    pattern = _unsafe(single_line)
    return pattern.sub(_shown, text) if pattern.search(text) else text


def printable_json(document: str) -> str:
    """A JSON document with the controls JSON leaves raw (C1, separators, bidi) as `\\uNNNN`.

    `json.dumps(ensure_ascii=False)` escapes C0 controls only; the rest is valid JSON either
    way, and the escaped form decodes to the same strings.
    """
    if _all_printable(document, False):
        return document
    return _unsafe(False).sub(lambda m: f"\\u{ord(m.group()):04x}", document)
