"""The rule table made runnable: each record of :mod:`core.redaction.rules` as a :class:`Rule`.

The records are plain data; this module gives each its regex flags, its selector (a function
from a match to the spans to redact, built from the record's ``select``, ``parts`` and ``check``)
and its starts (the literals an anchored rule is tried at). Regexes compile on first use:
compiling all of them costs more than a harness hook's whole budget, and most outputs never reach
most rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from core.redaction import checks
from core.redaction.rules import RULE_TABLE, RULESET_VERSION

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    from core.redaction.rules import RuleRecord

__all__ = ["PEM_RULE", "RULES", "RULESET_VERSION", "Finding", "Rule", "Select", "rule_names"]

Span = tuple[int, int]
Select = Callable[[re.Match[str]], list[Span]]


class Finding(NamedTuple):
    """One redacted secret: the rule that found it and its span in the original text."""

    rule: str
    start: int
    end: int


class Rule(NamedTuple):
    """A keyword-gated rule.

    ``anchored`` rules are tried (``pattern.match``) only where one of their ``starts`` occurs,
    which is how case-insensitive rules, and rules whose keyword alone is everywhere, stay fast;
    the others are scanned (``pattern.finditer``) over a block in which a keyword occurs.
    ``select`` maps a match to the spans to redact (empty: the match was a placeholder or a
    look-alike).
    """

    name: str
    keywords: tuple[str, ...]
    """Lowercase literals: every match contains one of them (compared case-insensitively)."""
    source: str
    flags: int
    select: Select
    anchored: bool = False
    starts: tuple[tuple[str, int], ...] = ()
    """Anchored rules: ``(literal, offset)``: every match starts ``offset`` characters into an
    occurrence of one of these lowercase literals (a keyword with the characters that must
    surround it), so the literals alone say where to try the rule."""
    locator: tuple[str, int] | None = None
    """Anchored rules, optionally: ``(regex, width)``, a case-sensitive, fixed-width pattern that
    the first ``width`` characters of every match fullmatch (see :mod:`core.redaction.rules`)."""

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled regex (compiled once, on first use)."""
        key = (self.source, self.flags)
        compiled = _COMPILED.get(key)
        if compiled is None:
            compiled = _COMPILED[key] = re.compile(self.source, self.flags)
        return compiled


_COMPILED: dict[tuple[str, int], re.Pattern[str]] = {}
"""Each rule's regex once compiled, by source and flags (a rule, a record, keeps no state)."""

PEM_RULE = "private-key"
"""The name a PEM private key is redacted under, on one line or across lines."""

Check = Callable[[str], bool]


# --- selectors ------------------------------------------------------------------------------


def _whole(check: Check | None) -> Select:
    """Redact the whole match (when it passes ``check``)."""

    def select(m: re.Match[str]) -> list[Span]:
        if check is not None and not check(m.group(0)):
            return []
        return [m.span()]

    return select


def _group(names: tuple[str, ...], check: Check | None) -> Select:
    """Redact only the first named part that matched (when it passes ``check``)."""

    def select(m: re.Match[str]) -> list[Span]:
        for name in names:
            value = m.group(name)
            if value is not None:
                if check is not None and not check(value):
                    return []
                return [m.span(name)]
        return []

    return select


def _first_group(names: tuple[str, ...], check: Check) -> Select:
    """Redact the whole match when the first named part that matched passes ``check``."""

    def select(m: re.Match[str]) -> list[Span]:
        for name in names:
            value = m.group(name)
            if value is not None:
                return [m.span()] if check(value) else []
        return []

    return select


def _check(record: RuleRecord) -> Check | None:
    """The record's value check, with its threshold."""
    name = record.get("check")
    if name is None:
        return None
    if name == "random-enough":
        threshold = record.get("entropy")
        if threshold is None:
            return checks.random_enough
        return lambda value: checks.random_enough(value, threshold)
    return _CHECKS[name]


_CHECKS: dict[str, Check] = {
    "random-token": checks.random_token,
    "looks-like-secret": checks.looks_like_secret,
    "url-password": checks.url_password_ok,
    "pem-body": checks.pem_body_ok,
}

_CONTEXT_SELECTORS: dict[str, Select] = {
    "curl-credentials": checks.select_curl,
    "generic-secret": checks.select_generic,
    "named-value": checks.select_named_value,
    "xml-element": checks.select_xml_element,
}


def _selector(record: RuleRecord) -> Select:
    """How the record's matches become spans to redact."""
    check = _check(record)
    select = record.get("select", "match")
    parts = record.get("parts", ())
    if select == "group":
        return _group(parts, check)
    if select == "match":
        if not parts:
            return _whole(check)
        assert check is not None, record["name"]
        return _first_group(parts, check)
    return _CONTEXT_SELECTORS[select]


# --- starts ---------------------------------------------------------------------------------

_HEX_PAIRS = tuple(a + b for a in "0123456789abcdef" for b in "0123456789abcdef")
_BLANKS = " \t"
_AFTER_KEY_NAME = (
    *"\\\"',:=0123456789",  # a quote, a backslash, a separator, an index
    *(s + d for s in "_.-" for d in "0123456789"),  # a separated index
    *(b + c for b in _BLANKS for c in _BLANKS + ":=,"),  # blanks, then a separator or more
)


def _key_name_starts(names: tuple[str, ...]) -> list[tuple[str, int]]:
    """What the generic rule's match starts with: a key name and the characters after it.

    After the name the regex allows only an index (``[_.-]?[0-9]``), a quote or backslash, a
    separator (``:``, ``=``, ``,``, blanks then one of those), or, right after a ``-`` (as in
    ``--password VALUE``), a blank. Listing those pairs keeps prose such as "token refresh" or
    "PASSED" from ever reaching the regex.
    """
    starts: list[tuple[str, int]] = []
    for name in names:
        starts += [(name + after, 0) for after in _AFTER_KEY_NAME]
        starts += [("-" + name + blank, 1) for blank in _BLANKS]
    return starts


def _starts(record: RuleRecord) -> tuple[tuple[str, int], ...]:
    """The literals an anchored record is tried at (none for a scanned one)."""
    if not record.get("anchored", False):
        return ()
    words = record.get("start_words", record["keywords"])
    form = record.get("start_form", "word")
    if form == "word":
        offset = record.get("start_offset", 0)
        return tuple((word, offset) for word in words)
    if form == "word+hex-pair":
        return tuple((word + pair, 0) for word in words for pair in _HEX_PAIRS)
    if form == "key-name":
        return tuple(_key_name_starts(words))
    raise ValueError(f"rule {record['name']}: unknown start form {form!r}")


def _whole_token(select: Select, kind: str = "token") -> Select:
    """The spans ``select`` chose, each extended over the token characters right after it (or,
    for a header's value, ``kind="value"``, anything but blanks and quotes): a secret longer
    than its regex allows (a 2,000-character base64 key after ``PRIVATE_KEY=``) is redacted
    whole, not cut where a bound stopped the match."""
    tail = checks.token_tail_end if kind == "token" else checks.value_tail_end

    def extended(m: re.Match[str]) -> list[Span]:
        spans = select(m)
        if not spans:
            return spans
        text, limit = m.string, m.endpos
        return [(s, tail(text, e, limit)) for s, e in spans]

    return extended


def _rule(record: RuleRecord) -> Rule:
    """One record as a runnable rule."""
    flags = re.ASCII | re.IGNORECASE if record.get("ignore_case", False) else re.ASCII
    return Rule(
        record["name"],
        record["keywords"],
        record["pattern"],
        flags,
        _whole_token(_selector(record), record.get("tail", "token")),
        record.get("anchored", False),
        _starts(record),
        record.get("locator"),
    )


RULES: tuple[Rule, ...] = tuple(_rule(record) for record in RULE_TABLE)
"""Every rule, in priority order (an overlap is reported under the earlier-starting match)."""


def rule_names() -> list[str]:
    """Names of all rules, including the multi-line PEM handling (``private-key``)."""
    return [rule.name for rule in RULES]
