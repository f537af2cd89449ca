"""Short texts (a hook's reason, a command line) find the rules' literals one by one instead of
building the automaton; both ways must find exactly the same occurrences: the same redaction."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.redaction import literal_gate, redact

LITERALS = st.sampled_from(literal_gate.LITERALS)


def overlapped(literal: str) -> str:
    """The literal twice, the second occurrence starting inside the first (`akia` -> `akiakia`)."""
    shift = next(k for k in range(1, len(literal)) if literal[k:] == literal[: len(literal) - k])
    return literal + literal[len(literal) - shift :]


SELF_OVERLAPPING = [
    lit
    for lit in literal_gate.LITERALS
    if any(lit[k:] == lit[: len(lit) - k] for k in range(1, len(lit)))
]
FILLER = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-=:/. \t\"'", max_size=12)


@st.composite
def short_texts(draw: st.DrawFn) -> bytes:
    """Lowercased bytes up to SHORT_TEXT, made of literals (overlapping ones too) and filler."""
    overlapping = st.sampled_from(SELF_OVERLAPPING).map(overlapped)
    parts = draw(st.lists(st.one_of(LITERALS, overlapping, FILLER), max_size=24))
    return "".join(parts).encode("latin-1")[: literal_gate.SHORT_TEXT]


def automaton_hits(low: bytes) -> set[tuple[int, int]]:
    return {
        (literal, at)
        for literal, at, _ in literal_gate.automaton().find_matches_as_indexes(
            low, overlapping=True
        )
    }


def one_by_one_hits(low: bytes) -> set[tuple[int, int]]:
    literal_gate.automaton.cache_clear()  # the short path is taken only before the automaton exists
    found = set(literal_gate.literal_hits(low))
    assert literal_gate.automaton.cache_info().currsize == 0, "the short path built the automaton"
    return found


@settings(max_examples=300, deadline=None)
@given(short_texts())
def test_short_texts_find_the_occurrences_the_automaton_finds(low: bytes) -> None:
    expected = automaton_hits(low)
    assert one_by_one_hits(low) == expected


def test_a_hooks_reason_is_redacted_alike_either_way() -> None:
    text = "deploy with token=ghp_R8x2Lq9ZkP4mT7vW1nB6cY3dF5gH0jK2sQ8e and password: hunter2hunter2"
    literal_gate.automaton.cache_clear()
    short = redact.redact_text(text)
    literal_gate.automaton()  # now built: the same call goes through it
    assert redact.redact_text(text) == short
    assert "ghp_" not in short[0] and short[1]


def test_every_rule_is_what_the_literal_gate_assumes() -> None:
    """Keywords and starts are lowercase ASCII (the gate lowers the text, ASCII only); a rule is
    anchored exactly when it has starts; only anchored rules have a locator."""
    for rule in redact.RULES:
        assert rule.keywords, rule.name
        assert all(kw == kw.lower() and kw.isascii() for kw in rule.keywords), rule.name
        assert all(lit == lit.lower() and lit.isascii() for lit, _ in rule.starts), rule.name
        assert rule.anchored == bool(rule.starts), rule.name
        assert rule.locator is None or rule.anchored, rule.name


def test_the_generic_rule_is_tried_after_every_key_name_its_regex_accepts() -> None:
    """The generic rule is anchored on its key names: the table lists them twice (in the regex's
    `kw` group and as its start words), and the two lists must be the same."""
    from core.redaction.rules import GENERIC_KEY_NAMES

    [generic] = [rule for rule in redact.RULES if rule.name == "generic-secret"]
    assert "(?P<kw>" + "|".join(GENERIC_KEY_NAMES) + ")" in generic.source
    assert {lit.strip("-") for lit, _ in generic.starts if lit.startswith("-")} == {
        name + blank for name in GENERIC_KEY_NAMES for blank in " \t"
    }


def _hits(gate: object, low: bytes) -> set[tuple[int, int]]:
    found = gate.find_matches_as_indexes(low, overlapping=True)  # type: ignore[attr-defined]
    return {(literal, at) for literal, at, _ in found}


@settings(max_examples=200, deadline=None)
@given(st.lists(short_texts(), min_size=1, max_size=8))
def test_the_nfa_and_the_dfa_find_the_same_occurrences(blocks: list[bytes]) -> None:
    """A snapshot's few kilobytes go through the quick-to-build NFA, a long stream through the
    DFA: the same literals at the same offsets either way."""
    low = b"\n".join(blocks)
    assert _hits(literal_gate.automaton(dfa=False), low) == _hits(literal_gate.automaton(), low)


def test_the_dfa_is_built_once_a_process_has_scanned_enough(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    literal_gate.automaton.cache_clear()
    monkeypatch.setattr(literal_gate, "_scanned", 0)
    block = b"x = 1  # password: hunter2hunter2 " * 40  # past SHORT_TEXT: the automaton
    first = set(literal_gate.literal_hits(block))
    assert first and literal_gate.automaton.cache_info().currsize == 1  # the NFA alone
    while literal_gate._scanned <= literal_gate.DFA_AFTER:
        assert set(literal_gate.literal_hits(block)) == first
    assert set(literal_gate.literal_hits(block)) == first
    assert literal_gate.automaton.cache_info().currsize == 2  # now the DFA as well
