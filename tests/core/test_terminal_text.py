"""The one sanitizer for agent-written text on a terminal (`core.terminal_text`), by property."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from core.terminal_text import printable, printable_json

# What must never reach a terminal raw: C0 (but \t \n), DEL, C1, separators, bidi, surrogates.
UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_SPELLED = re.compile(r"\\x([0-9a-f]{2})|\\u([0-9a-f]{4})|\\([tnr])")

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=200)
TERMINAL_TEXT = st.lists(
    st.sampled_from(
        ["\x1b]52;c;SGVsbG8=\x07", "\x1b[2J", "\x1bP1$r\x1b\\", "\x9b31m", "\x1b", "\x07",
         "\x08", "\r", "\t", "\n", "\u202e", "plain", "é", "[b]", " "]
    ),
    max_size=30,
).map("".join)  # fmt: skip


def unspell(text: str) -> str:
    def back(match: re.Match[str]) -> str:
        hex_code = match.group(1) or match.group(2)
        return chr(int(hex_code, 16)) if hex_code else {"t": "\t", "n": "\n", "r": "\r"}[match[3]]

    return _SPELLED.sub(back, text)


@given(st.one_of(ANY_TEXT, TERMINAL_TEXT))
def test_nothing_unsafe_survives_and_the_rendering_reads_back(text: str) -> None:
    for single_line in (False, True):
        out = printable(text, single_line=single_line)
        assert not UNSAFE.search(out)
        if single_line:
            assert "\n" not in out and "\t" not in out
        if "\\" not in text:  # backslashes are kept as typed, so only then is it exact
            assert unspell(out) == text
    assert printable(printable(text)) == printable(text)


@given(ANY_TEXT.filter(lambda t: not UNSAFE.search(t)))
def test_text_without_controls_is_unchanged(text: str) -> None:
    assert printable(text) == text


def test_an_osc_52_sequence_is_shown_whole_as_text() -> None:
    assert printable("a\x1b]52;c;SGVsbG8=\x07b") == "a\\x1b]52;c;SGVsbG8=\\x07b"
    assert printable("one\ntwo\tx\r") == "one\ntwo\tx\\r"
    assert printable("one\ntwo", single_line=True) == "one\\ntwo"
    assert printable("\x9b\u202e") == "\\x9b\\u202e"


@given(ANY_TEXT)
def test_json_keeps_every_string_exact(text: str) -> None:
    document = printable_json(json.dumps({"t": text}, ensure_ascii=False))
    assert not UNSAFE.search(document)
    assert json.loads(document) == {"t": text}
