"""Finding secrets in the files a snapshot is about to store, with the redactor's own rules.

A snapshot stores files git has never seen: changed tracked files and untracked ones. Each is
read once and given to `core.redaction.redact.redact_text`, the same detectors that redact
command output, so a file is judged as its text would be if an agent printed it. Two things the
redactor does not do for a file are done here first:

- **Binary files** (a NUL in the first 8,000 bytes, as git decides) are judged by their text
  runs: every stretch of at least `MIN_TEXT_RUN` printable characters, one per line, so a token
  embedded in an image or an archive's stored member is still seen.
- **Terminal escape sequences** are taken out before matching (a token coloured half-way, as a
  terminal log saves it, reads whole); none spans a line break, so line numbers stay those of
  the file.

The first finding is reported as a rule and a line number, never the value. The redaction module
loads only when a file is judged: a hook checkpoint with nothing changed never pays for it.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

# As git decides a file is binary: a NUL among its first 8,000 bytes.
BINARY_SNIFF_BYTES = 8000
MIN_TEXT_RUN = 8
# Text characters (BEL and ESC too: escape sequences run through text) stay, every other byte
# becomes a line break; a run is then a line of at least MIN_TEXT_RUN characters. Masking first
# (bytes.translate, C speed) lets the regex test one character class per byte.
_TEXT_BYTES = frozenset(b"\t\x07\x1b") | frozenset(range(0x20, 0x7F))
_MASK = bytes(byte if byte in _TEXT_BYTES else 0x0A for byte in range(256))
_TEXT_RUN = re.compile(rb"[^\n]{%d,}" % MIN_TEXT_RUN)
# CSI (colours, cursor moves), OSC (titles, links; ended by BEL or ST), character-set and
# other nF escapes (`ESC ( B`), and two-byte escapes; none spans a line break.
_ESCAPE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[ -/]+[0-~]|[@-Z\\-_])"
)


class SecretHit(NamedTuple):
    """Where a file holds a secret: the rule that matched and its line (1-based)."""

    rule: str
    line: int

    def describe(self) -> str:
        """The finding as the manifest and the CLI print it: never the value."""
        return describe_secret(self.rule, self.line)


def describe_secret(rule: str, line: int) -> str:
    """ "contains a github-token at line 1" (an before a vowel: "an aws-access-key-id")."""
    article = "an" if rule[:1].lower() in "aeiou" else "a"
    return f"contains {article} {rule} at line {line}"


def first_secret(data: bytes) -> SecretHit | None:
    """The first secret `data` holds (by position), or None; binary data by its text runs."""
    if not data:
        return None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return _first_in_binary(data)
    found = _first_finding(data.decode("latin-1"))  # one character per byte, as redaction does
    return None if found is None else SecretHit(found[0], found[1] + 1)


def _first_finding(text: str) -> tuple[str, int] | None:
    """The rule of `text`'s first finding and the number of line breaks before it (escape
    sequences are taken out first: none holds a line break, so the count is the file's)."""
    from core.redaction.redact import redact_text

    if "\x1b" in text:
        text = _ESCAPE.sub("", text)
    _redacted, findings = redact_text(text)
    if not findings:
        return None
    first = min(findings, key=lambda finding: finding.start)
    return first.rule, text.count("\n", 0, first.start)


def _first_in_binary(data: bytes) -> SecretHit | None:
    """Judge binary `data` by its printable runs, joined one per line; the line reported is
    that of the run's start in `data`."""
    runs = list(_TEXT_RUN.finditer(data.translate(_MASK)))
    if not runs:
        return None
    found = _first_finding("\n".join(run.group().decode("latin-1") for run in runs))
    if found is None:
        return None
    rule, run_index = found
    return SecretHit(rule, data.count(b"\n", 0, runs[run_index].start()) + 1)
