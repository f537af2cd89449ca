"""The states a side effect moves through, and what text may name or describe one.

Written once so that every move (by hand, by a check, by the guard) is refused by the same
rules: `TRANSITIONS` is the whole graph, and text is checked before anything is stored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from core.errors import UsageError
from core.models import EffectState, SideEffect
from core.redaction import free_text

# Every move the ledger accepts; anything else is refused. `failed -> in_progress` is a retry
# under the same key; `confirmed` is final.
TRANSITIONS: Mapping[EffectState, frozenset[EffectState]] = {
    EffectState.PROPOSED: frozenset({EffectState.IN_PROGRESS}),
    EffectState.IN_PROGRESS: frozenset(
        {EffectState.CONFIRMED, EffectState.FAILED, EffectState.UNCERTAIN}
    ),
    EffectState.UNCERTAIN: frozenset({EffectState.CONFIRMED, EffectState.FAILED}),
    EffectState.FAILED: frozenset({EffectState.IN_PROGRESS}),
    EffectState.CONFIRMED: frozenset(),
}

# The audit action recorded for a move into each state.
ACTION = {
    EffectState.IN_PROGRESS: "start",
    EffectState.CONFIRMED: "confirm",
    EffectState.FAILED: "fail",
    EffectState.UNCERTAIN: "uncertain",
}

# Why an effect in each unsettled state may or may not have happened, for refusals.
UNSETTLED_WHY = {
    EffectState.IN_PROGRESS: "it was started and never finished: a guard or agent stopped",
    EffectState.UNCERTAIN: "its outcome is unknown",
}

MAX_KEY_CHARS = 200
MAX_KIND_CHARS = 60
MAX_TEXT_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def allowed(from_state: EffectState, to_state: EffectState) -> bool:
    """True when the ledger accepts moving an effect from one state to the other."""
    return to_state in TRANSITIONS[from_state]


def illegal_move(effect: SideEffect, to_state: EffectState) -> str:
    """Why `effect` cannot become `to_state`, and what it can become instead."""
    nexts = sorted(state.value for state in TRANSITIONS[effect.state])
    options = f"it can only become {' or '.join(nexts)}" if nexts else "that is final"
    return (
        f"side effect {effect.key!r} of task {effect.task_id} is {effect.state.value}; "
        f"it cannot become {to_state.value} ({options})"
    )


def check_text(value: str, what: str, limit: int, *, single_line: bool = True) -> str:
    """Refuse empty, overlong or (for one-line values) control-character text."""
    if not value.strip():
        raise UsageError(f"the {what} is empty")
    if len(value) > limit:
        raise UsageError(f"the {what} is longer than {limit} characters")
    if _CONTROL.search(value) if single_line else "\x00" in value:
        raise UsageError(f"the {what} {value[:40]!r} contains control characters")
    return value


def persistable_or_none(text: str | None) -> str | None:
    """Free text as it may be stored (None for none or empty)."""
    return free_text.persistable(text) if text else None


def validate_key(key: str) -> str:
    """An idempotency key: 1-200 printable characters, taken exactly as given, no secrets."""
    return free_text.refuse_secrets(check_text(key, "--key", MAX_KEY_CHARS), "--key")
