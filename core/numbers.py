"""Numbers a caller hands the engine, checked where the engine takes them.

Click's ranges let `nan` and `inf` through (neither is below a minimum), SQLite stores NaN as
NULL and refuses integers past 64 bits, and timers refuse timeouts past `threading.TIMEOUT_MAX`;
each of those surfaced as an internal error after a row was half written. Every number the
engine accepts from outside passes one of these checks first, so a bad one is one clear line
before anything changes, whichever interface (CLI, TUI, hook, Python) sent it.
"""

from __future__ import annotations

import math

from core.errors import UsageError

SQLITE_INT_MAX = 2**63 - 1
# A century: longer than any timeout, wait or expiry means a typo, and stays below both
# `threading.TIMEOUT_MAX` and the year 9999 that datetime arithmetic stops at.
MAX_SECONDS = 100 * 366 * 86400


def finite(value: float, what: str) -> float:
    """`value` when it is a finite number; NaN and infinities are refused, naming `what`."""
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{what} must be a finite number (got {value})")
    return value


def storable_integer(value: int, what: str) -> int:
    """`value` when SQLite can store it (64-bit signed); a larger one is refused."""
    if not -SQLITE_INT_MAX - 1 <= value <= SQLITE_INT_MAX:
        raise UsageError(f"{what} is too large (at most {SQLITE_INT_MAX})")
    return value


def non_negative(value: float, what: str) -> float:
    """A finite, storable amount that is zero or more (a budget, a consumption, a duration)."""
    finite(value, what)
    if isinstance(value, int):
        storable_integer(value, what)
    if value < 0:
        raise UsageError(f"{what} must not be negative")
    return value


def seconds(value: float, what: str, *, positive: bool = False) -> float:
    """A finite span of seconds, at most a century; `positive` refuses zero too."""
    non_negative(value, what)
    if positive and value <= 0:
        raise UsageError(f"{what} must be longer than zero")
    if value > MAX_SECONDS:
        raise UsageError(f"{what} is too long (at most {MAX_SECONDS} seconds, a century)")
    return value
