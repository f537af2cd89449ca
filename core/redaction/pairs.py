"""A bare AWS secret access key next to its access key id.

An AWS secret key is 40 random base64 characters with no prefix: alone it cannot be told from
other random text, but printed next to an access key id (``AKIA…,wJalr…`` from a credentials
CSV, ``aws configure list``, a key pair pasted on two lines) it is unmistakable. After every
access key id the redactor looks for such a key on the same line before the id and up to
:data:`AWS_PAIR_REACH` characters after it, the following lines included. The reach after an id
is carried from one region to the next, and to a rescan of the rest of a region after a PEM
block (as absolute offsets), so where a stream was cut does not matter.
"""

from __future__ import annotations

import re

from core.redaction.buffer import RedactionBuffer, find_terminator, rfind_terminator
from core.redaction.checks import lazy_pattern, shannon_entropy
from core.redaction.ruleset import RULES
from core.redaction.scanning import Raw

AWS_PAIR_REACH = 256
"""Characters after an access key id in which a bare secret key is looked for."""
AWS_PAIR_BEFORE = 120
"""Characters before an id, on its line, in which one is looked for (within the context the
machine keeps before its position)."""

_NAMES = [rule.name for rule in RULES]
KEY_ID = _NAMES.index("aws-access-key-id")
SECRET = len(RULES)
"""The index bare secret keys are reported under: after every rule, so that where another rule
also matched (an Authorization header near a key id) its name is the one shown. The machine
names it ``aws-secret-access-key``."""
_BARE_SECRET = lazy_pattern(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", re.ASCII)


def secret_key_shaped(value: str) -> bool:
    """Random base64 of a secret key: lower and upper case letters and digits, high entropy
    (a git object id, hex, or a word run is not)."""
    if not (any(c.islower() for c in value) and any(c.isupper() for c in value)):
        return False
    return any(c.isdigit() for c in value) and shannon_entropy(value) >= 4.2


def aws_pairs(machine: RedactionBuffer, start: int, end: int, raw: Raw) -> None:
    """Add to ``raw`` the bare secret keys near access key ids in buf[start:end]."""
    buf = machine.buf
    base = machine.base
    # the reach of ids before this region, kept while it lasts (scans only move forward)
    machine.aws_after = [(lo, hi) for lo, hi in machine.aws_after if hi > base + start]
    windows = [(max(start, lo - base), min(end, hi - base)) for lo, hi in machine.aws_after]
    for s, e, index in raw:
        if index != KEY_ID or s >= end:
            continue
        line = rfind_terminator(buf, max(0, s - AWS_PAIR_BEFORE), s) + 1
        windows.append((max(line, s - AWS_PAIR_BEFORE), s))
        windows.append((e, min(end, e + AWS_PAIR_REACH)))
        # kept even when the reach ends inside this region: a PEM block entered from the
        # region has the rest of it scanned again, and that scan must still see the id
        machine.aws_after.append((base + e, base + e + AWS_PAIR_REACH))
    for lo, hi in windows:
        if lo >= hi:
            continue
        # the line holding the window's end is searched to its end, so that a key cut by the
        # window is judged whole (its right boundary), then only keys starting inside count
        stop = find_terminator(buf, hi - 1, len(buf))
        stop = len(buf) if stop < 0 else stop
        for m in _BARE_SECRET().finditer(buf, lo, stop):
            if m.start() >= hi:
                break
            if secret_key_shaped(m.group()):
                raw.append((m.start(), m.end(), SECRET))


def remember_key_ids(machine: RedactionBuffer, start: int, end: int) -> None:
    """Keep the reach of the access key ids inside buf[start:end], a PEM block redacted whole.

    The block is decided line by line before the rules see its lines, so an id printed inside
    an unterminated block would otherwise never open its reach: the bare secret key on the
    line after the block would depend on how the stream was cut (whole input: the rules saw
    the id first). Kept here, the key after the block is found either way.
    """
    rule = RULES[KEY_ID]
    for m in rule.pattern.finditer(machine.buf, start, end):
        if rule.select(m):
            at = machine.base + m.end()
            machine.aws_after.append((at, at + AWS_PAIR_REACH))
