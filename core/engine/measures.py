"""What checkpointing a task is worth (DESIGN §4) and how well resumes go (DESIGN §8).

Both read the store's record through `core.economics`; they live apart from the use-cases that
change state because they only ever read, and validation asks the estimate for its stale advice.
"""

from __future__ import annotations

from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

if TYPE_CHECKING:  # the economics model is loaded only when a figure is asked for
    from core.economics import model as economics
    from core.economics.metrics import Metrics
    from core.economics.model import TaskEstimate


def estimate(session: Session, task_id: str, **overrides: economics.Amount | None) -> TaskEstimate:
    """Whether checkpointing a task pays: its replay cost from its record, DESIGN §4."""
    from core.economics import metrics as economics_metrics

    return economics_metrics.task_estimate(
        session.db, session.keys, session.config, task_id, **overrides
    )


def metrics(session: Session, task_id: str | None = None) -> Metrics:
    """The measures of resume quality (DESIGN §8) for the store or one task."""
    from core.economics import metrics as economics_metrics

    return economics_metrics.collect_metrics(session.db, session.keys, session.config, task_id)
