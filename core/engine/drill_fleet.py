"""Fleet drills: `pitstop drill --all` samples live tasks' newest checkpoints and drills each.

Which ones: every task that is not finished and whose newest complete checkpoint was taken
within `--since`; those never drilled first, then those drilled longest ago, at most `--max`.
Each drill is the same use-case as a single one (`core.engine.drill`), stored and audited; one
that fails with an error is reported as that task's failure and the others still run.
"""

from __future__ import annotations

from collections.abc import Callable

from core import clock, store
from core.engine.drill import DrillReport, drill
from core.engine.drill_plan import GuardScreen
from core.errors import PitstopError, UsageError
from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

DEFAULT_SINCE = "7d"
DEFAULT_MAX = 20


class FleetDrill(NamedTuple):
    """One sampled checkpoint: its drill, or the one-line error that stopped it."""

    ref: str
    report: DrillReport | None
    error: str | None = None


def sample(session: Session, since: str = DEFAULT_SINCE, max_count: int = DEFAULT_MAX) -> list[str]:
    """The checkpoints (`TASK@SEQ`) a fleet drill takes, in the order it takes them."""
    from core.ledger.approvals import parse_duration

    if max_count < 1:
        raise UsageError(f"invalid --max {max_count}: drill at least one checkpoint")
    oldest = clock.to_iso(clock.now() - parse_duration(since, "--since"))
    last_drilled: dict[str, str] = {}
    for row in store.list_drills(session.db, None):
        last_drilled[row["task_id"]] = row["at"]
    candidates: list[tuple[str, str]] = []
    for task in store.list_tasks(session.db):
        if task.status.is_final:
            continue
        newest = store.latest_complete(session.db, task.id)
        if newest is None or newest.created_at < oldest:
            continue
        candidates.append((last_drilled.get(task.id, ""), newest.ref))
    candidates.sort()
    return [ref for _, ref in candidates[:max_count]]


def drill_all(
    session: Session,
    *,
    screen: GuardScreen,
    since: str = DEFAULT_SINCE,
    max_count: int = DEFAULT_MAX,
    timeout: float | None = None,
    offline: bool = True,
    progress: Callable[[FleetDrill], None] | None = None,
) -> list[FleetDrill]:
    """Drill each sampled checkpoint (see `sample`); `progress` hears each as it ends."""
    done: list[FleetDrill] = []
    for ref in sample(session, since, max_count):
        try:
            result = FleetDrill(
                ref, drill(session, ref, screen=screen, timeout=timeout, offline=offline)
            )
        except PitstopError as exc:
            result = FleetDrill(ref, None, exc.message)
        done.append(result)
        if progress is not None:
            progress(result)
    return done
