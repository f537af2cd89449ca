"""How a drill's replay compares with what was recorded before the checkpoint, and its verdict.

A replay is faithful when it ends as the recorded run did (same exit status), reports the same
counts (the structured summary, e.g. "pytest: 412 passed, 3 failed") and names the same failing
tests. Anything else is drift, said in words a person acts on: "2 tests that passed now fail:
…". Counts that say nothing about the code (warnings, durations) are not compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from enum import StrEnum

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple


class DrillVerdict(StrEnum):
    """What a drill found."""

    FAITHFUL = "faithful"  # the restored tree behaves as the checkpoint recorded
    DRIFTED = "drifted"  # it behaves differently; the differences say how
    NOT_REPLAYABLE = "not-replayable"  # nothing safe to replay: nothing was run
    FAILED_TO_RESTORE = "failed-to-restore"  # the checkpoint could not be restored at all

    @property
    def exit_code(self) -> int:
        """`pitstop drill`'s exit code: 0 faithful, 1 drifted or failed to restore, 3 not
        replayable (something to settle first)."""
        return {"faithful": 0, "not-replayable": 3}.get(self.value, 1)


# Counts that vary from run to run without the code changing.
IGNORED_COUNTS = frozenset({"warnings", "deselected"})
NAMED_LIMIT = 5


class Observed(NamedTuple):
    """How one run of the verification command ended."""

    exit_code: int | None
    timed_out: bool
    summary: Mapping[str, Any] | None  # `Summary.as_dict()`: tool, counts, text
    failing: frozenset[str] | None  # None: the output is no longer readable
    duration_ms: int | None = None
    signal: int | None = None

    @property
    def status(self) -> str:
        """`exit 0`, `signal 9`, `timed out`."""
        if self.timed_out:
            return "timed out"
        if self.signal:
            return f"signal {self.signal}"
        return f"exit {self.exit_code}" if self.exit_code is not None else "exit unknown"


def _counts(summary: Mapping[str, Any] | None) -> dict[str, int]:
    if not summary:
        return {}
    counts = summary.get("counts") or {}
    return {name: int(value) for name, value in counts.items() if name not in IGNORED_COUNTS}


def _summary_text(summary: Mapping[str, Any] | None) -> str:
    if not summary:
        return "no summary"
    counts = _counts(summary)
    parts = ", ".join(f"{value} {name}" for name, value in counts.items())
    return f"{summary.get('tool')}: {parts}" if parts else str(summary.get("tool"))


def named(tests: Set[str], limit: int = NAMED_LIMIT) -> str:
    """Test ids as one line: the first few in order, then how many more."""
    ordered = sorted(tests)
    shown = ", ".join(ordered[:limit])
    return shown + (f" and {len(ordered) - limit} more" if len(ordered) > limit else "")


def _tests(tests: Set[str], change: str) -> str:
    """`1 test that passed now fails`, `2 tests that passed now fail`."""
    if len(tests) == 1:
        return f"1 test that {change}{'es' if change.endswith('s') else 's'}"
    return f"{len(tests)} tests that {change}"


def differences(recorded: Observed, replayed: Observed, timeout: float | None = None) -> list[str]:
    """What differs between the recorded run and the replay, one sentence each (empty: none)."""
    if replayed.timed_out:
        took = (
            f"; it took {recorded.duration_ms / 1000:.1f} s when recorded"
            if recorded.duration_ms is not None
            else ""
        )
        limit = f" within {timeout:g} s" if timeout is not None else ""
        return [f"the replay did not finish{limit}{took}"]
    found: list[str] = []
    if replayed.status != recorded.status:
        found.append(f"it ended with {replayed.status}, recorded {recorded.status}")
    known = recorded.failing is not None and replayed.failing is not None
    newly_failing = (replayed.failing or frozenset()) - (recorded.failing or frozenset())
    now_passing = (recorded.failing or frozenset()) - (replayed.failing or frozenset())
    if not known:
        newly_failing = now_passing = frozenset()
    if newly_failing:
        found.append(f"{_tests(newly_failing, 'passed now fail')}: {named(newly_failing)}")
    if now_passing:
        found.append(f"{_tests(now_passing, 'failed now pass')}: {named(now_passing)}")
    if recorded.summary is not None and _counts(replayed.summary) != _counts(recorded.summary):
        found.append(
            f"the summary reads {_summary_text(replayed.summary)!r}, "
            f"recorded {_summary_text(recorded.summary)!r}"
        )
    return found


def verdict_of(found: list[str]) -> DrillVerdict:
    """Faithful when nothing differs, drifted otherwise."""
    return DrillVerdict.DRIFTED if found else DrillVerdict.FAITHFUL
