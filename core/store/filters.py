"""WHERE clauses from optional filters, shared by the tables that list by task and state.

Side effects, approvals and ledger conflicts are all listed "of this task, in these states, or
all": one builder keeps their filtering (and its parameter order) the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.models import ApprovalState, EffectState

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def where_clause(
    equal: Mapping[str, Any], states: Sequence[EffectState] | Sequence[ApprovalState] = ()
) -> tuple[str, list[Any]]:
    """A WHERE clause for the columns given a value (None: no filter) and a set of states."""
    clauses = [f"{column} = ?" for column, value in equal.items() if value is not None]
    params: list[Any] = [value for value in equal.values() if value is not None]
    if states:
        clauses.append(f"state IN ({', '.join('?' for _ in states)})")
        params.extend(state.value for state in states)
    return (f" WHERE {' AND '.join(clauses)}" if clauses else "", params)
