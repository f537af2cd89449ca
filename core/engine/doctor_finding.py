"""One thing `pitstop doctor` found: what it is, in one line, and how `--fix` mends it."""

from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple


class Finding(NamedTuple):
    """A problem in the store (or a leftover of Pitstop's in a user's repository).

    `fix` mends it and returns what it did, in Pitstop's own words (the audit event's reason);
    None when only a person can (a damaged database is restored from a backup).
    """

    kind: str
    line: str
    fix: Callable[[], str] | None = None
    task_id: str | None = None

    def as_dict(self) -> dict[str, object]:
        """The finding as `--json` shows it."""
        return {"kind": self.kind, "line": self.line, "fixable": self.fix is not None}
