"""Values read back from rows, checked: a hand-edited or damaged row is one clear refusal.

Every state and kind column holds one of its enum's values only because Pitstop wrote it; a row
edited by hand (or a page the disk damaged) would otherwise surface as a `ValueError` deep inside
whichever command first read it.
"""

from __future__ import annotations

from enum import Enum

from core.errors import StoreError

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    E = TypeVar("E", bound=Enum)

DAMAGED_ROW_HINT = (
    "it was edited by hand or damaged; run `pitstop doctor`, or restore the store from a backup"
)


def stored_enum(kind: type[E], value: Any, what: str, where: str) -> E:
    """`value` as a member of `kind`; an unknown one names the column (`what`) and row (`where`)."""
    try:
        return kind(value)
    except ValueError:
        raise StoreError(
            f"the database holds an unknown {what} {value!r} ({where}): {DAMAGED_ROW_HINT}"
        ) from None
