"""Strict reading of values that came from a remote: each one checked before anything uses it.

Anyone who can push to a project's remote can write `refs/pitstop/*`: ref names, plain JSON
headers, evidence indexes, ledger facts. Nothing read from there is trusted to have the shape
Pitstop writes, so every value goes through one of these checks first: a task id of the
shape local ids have, a time in the store's own format, an enum member, a finite number in its
range (never a bool posing as a number), a bounded string without control characters, a list
or object of bounded size. JSON is parsed from a size-capped read and refuses `NaN`,
`Infinity`, numbers that overflow to them, and nesting too deep to parse. A refused value
raises `RemoteFormatError` with one line naming it; callers skip that task or fact and go on.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import shlex
import unicodedata
from collections.abc import Mapping
from enum import Enum
from typing import Any, TypeVar

from core import clock
from core.errors import PitstopError

# The shape of a task id on a remote: lowercase, safe inside a git ref name and a shell word.
TASK_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
# The largest integer a remote value may hold: what JSON carries exactly everywhere.
MAX_INT = 2**53
# A store id (`TaskKeys.scope`): lowercase hex as stores make them, with some room.
STORE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# Times as the store writes them (`clock.to_iso`), or with an explicit offset.
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})")
BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
HEX = re.compile(r"[0-9a-f]+")
# Categories of characters never accepted in a remote string: controls, format characters
# (bidi overrides, zero-width), lone surrogates (SQLite cannot store them), unassigned.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
_MULTILINE_ALLOWED = frozenset("\n\t")

E = TypeVar("E", bound=Enum)


class RemoteFormatError(PitstopError):
    """What a remote holds is not something this Pitstop can read."""


def parse_json(raw: bytes, what: str, cap: int) -> Any:
    """Parse a remote JSON document of at most `cap` bytes: finite numbers only."""
    if len(raw) > cap:
        raise RemoteFormatError(f"{what} is {len(raw)} bytes, over its {cap}-byte limit")
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "not valid JSON"
        raise RemoteFormatError(f"{what} is {reason}; the remote is damaged") from exc


def parse_object(raw: bytes, what: str, cap: int) -> dict[str, Any]:
    """Parse a remote JSON document that must be an object."""
    return mapping(parse_json(raw, what, cap), what)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is not a finite number")
    return value


def shown(value: object, limit: int = 80) -> str:
    """An untrusted value as one safe, quoted line: unprintable characters escaped, cut short."""
    text = value if isinstance(value, str) else repr(value)
    safe = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)
    if len(safe) > limit:
        safe = safe[: limit - 1] + "…"
    return f"'{safe}'"


def shell_word(task_id: str) -> str:
    """A task id as a shell word, for hints that print a command."""
    return shlex.quote(task_id)


def is_task_id(value: object) -> bool:
    """True when `value` is a task id a remote may carry."""
    return (
        isinstance(value, str)
        and TASK_ID.fullmatch(value) is not None
        and ".." not in value
        and not value.endswith((".", ".lock"))
    )


def task_id(value: object, what: str = "a task id") -> str:
    """A task id from a remote (ref name or field), or a RemoteFormatError."""
    if not is_task_id(value):
        raise RemoteFormatError(
            f"{what} {shown(value)} is not a valid task id (1-64 lowercase letters, digits, "
            "'.', '_' or '-'); it is ignored"
        )
    return str(value)


def text(value: object, what: str, *, limit: int = 200, multiline: bool = False) -> str:
    """A string of at most `limit` characters, without control or format characters."""
    if not isinstance(value, str):
        raise RemoteFormatError(f"{what} is not a string")
    if len(value) > limit:
        raise RemoteFormatError(f"{what} is {len(value)} characters, over its limit of {limit}")
    for char in value:
        if unicodedata.category(char) in _REFUSED_CATEGORIES and not (
            multiline and char in _MULTILINE_ALLOWED
        ):
            raise RemoteFormatError(f"{what} holds a control character (U+{ord(char):04X})")
    return value


def optional_text(value: object, what: str, *, limit: int = 200) -> str | None:
    """`text`, or None."""
    return None if value is None else text(value, what, limit=limit)


def pattern(value: object, what: str, regex: re.Pattern[str], limit: int = 128) -> str:
    """A string matching `regex` whole."""
    checked = text(value, what, limit=limit)
    if regex.fullmatch(checked) is None:
        raise RemoteFormatError(f"{what} {shown(checked)} is not in the expected form")
    return checked


def store_id(value: object, what: str) -> str:
    """The id of the store a task's content is bound to."""
    return pattern(value, what, STORE_ID)


def sealed(value: object, what: str, limit: int) -> str:
    """A sealed envelope as a remote carries it: base64 text of bounded length."""
    checked = pattern(value, what, BASE64, limit)
    try:
        base64.b64decode(checked, validate=True)
    except binascii.Error as exc:
        raise RemoteFormatError(f"{what} is not valid base64") from exc
    return checked


def hex_digest(value: object, what: str, lengths: tuple[int, ...] = (64,)) -> str:
    """A lowercase hex digest (a sha256 by default)."""
    checked = pattern(value, what, HEX, max(lengths))
    if len(checked) not in lengths:
        raise RemoteFormatError(f"{what} {shown(checked)} is not a digest of the expected length")
    return checked


def object_id(value: object, what: str) -> str:
    """A git object id (SHA-1 or SHA-256)."""
    return hex_digest(value, what, (40, 64))


def optional_object_id(value: object, what: str) -> str | None:
    """`object_id`, or None."""
    return None if value is None else object_id(value, what)


def integer(value: object, what: str, *, minimum: int = 0, maximum: int = MAX_INT) -> int:
    """An integer in [minimum, maximum]; a bool or a float is refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise RemoteFormatError(f"{what} is not an integer ({shown(value, 24)})")
    if not minimum <= value <= maximum:
        raise RemoteFormatError(f"{what} is {shown(value, 24)}, outside {minimum}..{maximum}")
    return value


def optional_integer(
    value: object, what: str, *, minimum: int = 0, maximum: int = MAX_INT
) -> int | None:
    """`integer`, or None."""
    return None if value is None else integer(value, what, minimum=minimum, maximum=maximum)


def number(value: object, what: str, *, minimum: float = 0.0, maximum: float = 1e15) -> float:
    """A finite number in [minimum, maximum] (an integer is taken too; a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RemoteFormatError(f"{what} is not a number ({shown(value, 24)})")
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise RemoteFormatError(f"{what} is too large")
    result = float(value)
    if not math.isfinite(result) or not minimum <= result <= maximum:
        raise RemoteFormatError(f"{what} is {shown(value, 24)}, outside {minimum:g}..{maximum:g}")
    return result


def optional_number(
    value: object, what: str, *, minimum: float = 0.0, maximum: float = 1e15
) -> float | None:
    """`number`, or None."""
    return None if value is None else number(value, what, minimum=minimum, maximum=maximum)


def flag(value: object, what: str) -> int:
    """A yes/no column as the store keeps it (0 or 1; true and false are taken)."""
    if value in (0, 1) and isinstance(value, int):  # True and False are ints 1 and 0
        return int(value)
    raise RemoteFormatError(f"{what} is {shown(value, 24)}, not 0 or 1")


def timestamp(value: object, what: str) -> str:
    """A time in the store's format (`2026-11-29T23:59:01.123456Z`), normalised to it."""
    checked = pattern(value, what, TIMESTAMP, 40)
    try:
        moment = clock.parse(checked)
    except ValueError as exc:
        raise RemoteFormatError(f"{what} {shown(checked)} is not a valid time") from exc
    if not 1970 <= moment.year <= 9999:
        raise RemoteFormatError(f"{what} {shown(checked)} is outside 1970..9999")
    return clock.to_iso(moment)


def optional_timestamp(value: object, what: str) -> str | None:
    """`timestamp`, or None."""
    return None if value is None else timestamp(value, what)


def choice(kind: type[E], value: object, what: str) -> E:
    """A member of the enum `kind`, by its value."""
    if isinstance(value, str):
        for member in kind:
            if member.value == value:
                return member
    allowed = ", ".join(str(m.value) for m in kind)
    raise RemoteFormatError(f"{what} is {shown(value, 32)}, not one of {allowed}")


def one_of(value: object, what: str, allowed: tuple[str, ...]) -> str:
    """One of a few fixed strings."""
    if isinstance(value, str) and value in allowed:
        return value
    raise RemoteFormatError(f"{what} is {shown(value, 32)}, not one of {', '.join(allowed)}")


def items(value: object, what: str, *, limit: int) -> list[Any]:
    """A JSON array of at most `limit` elements."""
    if not isinstance(value, list):
        raise RemoteFormatError(f"{what} is not a list")
    if len(value) > limit:
        raise RemoteFormatError(f"{what} has {len(value)} entries, over its limit of {limit}")
    return value


def mapping(value: object, what: str, *, limit: int = 64) -> dict[str, Any]:
    """A JSON object of at most `limit` keys."""
    if not isinstance(value, dict):
        raise RemoteFormatError(f"{what} is not a JSON object; the remote is damaged")
    if len(value) > limit:
        raise RemoteFormatError(f"{what} has {len(value)} keys, over its limit of {limit}")
    return value


def only_keys(value: Mapping[str, Any], what: str, allowed: frozenset[str]) -> None:
    """Refuse keys outside `allowed` (where a key becomes a column name)."""
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise RemoteFormatError(f"{what} has an unknown field {shown(unknown[0], 40)}")
