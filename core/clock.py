"""Time as Pitstop records it: UTC, ISO 8601, sortable as text; frozen for snapshot tests.

`PITSTOP_FROZEN_NOW` (an ISO time) pins "now" so screenshots and snapshot tests show stable
ages; nothing else in the engine reads the wall clock directly.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

FROZEN_NOW_ENV = "PITSTOP_FROZEN_NOW"


def now() -> datetime:
    """The current time in UTC (or the frozen time, when one is set)."""
    frozen = os.environ.get(FROZEN_NOW_ENV)
    if frozen:
        return parse(frozen)
    return datetime.now(UTC)


def now_iso() -> str:
    """The current time as stored: `2026-11-29T23:59:01.123456Z`."""
    return to_iso(now())


def to_iso(moment: datetime) -> str:
    """Format a datetime the way the store keeps it."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse(text: str) -> datetime:
    """Parse a stored time back into an aware UTC datetime."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def git_timestamp(text: str) -> str:
    """A stored time as git's `@<epoch> +0000` date format."""
    return f"@{int(parse(text).timestamp())} +0000"


def humanize_age(text: str, reference: datetime | None = None) -> str:
    """A short age like `3m`, `5h`, `2d` for lists."""
    seconds = max(0, int(((reference or now()) - parse(text)).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
