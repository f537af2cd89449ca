"""The side-effect ledger: the one object the engine opens for effects, moves and the guard.

DESIGN invariant 3: a side effect never runs twice because of a resume. The parts live apart,
each with its own reasons: the states and what may name an effect (`core.ledger.states`), the
records and moves (`core.ledger.moves`), the per-key locks (`core.ledger.locks`), precondition
checks (`core.ledger.checks`), running the action (`core.ledger.action`) and the guard that
brings them together (`core.ledger.guard`).
"""

from __future__ import annotations

from core.ledger import guard as guarding
from core.ledger.guard import GuardOutcome, GuardRequest
from core.ledger.locks import Notice
from core.ledger.moves import LedgerMoves


class Ledger(LedgerMoves):
    """The side effects of every task in one store, on one connection."""

    def guard(self, request: GuardRequest, notice: Notice | None = None) -> GuardOutcome:
        """Run `request.argv` as the effect's action at most once (`core.ledger.guard`)."""
        return guarding.guard(self, request, notice)
