"""When a checkpoint request is skipped: the every-turn policy of DESIGN §4.

An agent's every turn may ask for a checkpoint; below a minimum interval since the last one,
such a `turn` request is refused with the reason and when to try again. This is apart from
`core.economics.model` (the break-even model it comes from) because a harness hook asks it after
every turn: it needs no `Decimal` model, only the clock.
"""

from __future__ import annotations

from datetime import datetime


def turn_skip_reason(
    last_checkpoint_at: datetime | None, now: datetime, min_interval_seconds: float
) -> str | None:
    """Why an every-turn checkpoint is skipped now, or None when it may go through."""
    if last_checkpoint_at is None or min_interval_seconds <= 0:
        return None
    elapsed = (now - last_checkpoint_at).total_seconds()
    if elapsed >= min_interval_seconds:
        return None
    wait = max(1, int(min_interval_seconds - elapsed + 0.999))
    return (
        f"turn checkpoint skipped: the last checkpoint is {max(0, int(elapsed))}s old and the "
        f"policy's minimum interval is {min_interval_seconds:g}s (policy.min_interval_seconds); "
        f"try again in {wait}s, or use --reason milestone / before-wait, which always go through"
    )
