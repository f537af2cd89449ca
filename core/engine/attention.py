"""What needs a person, as a number: the dashboard's default order and its "need attention" count.

Status alone ranks a running task with an uncertain production deploy and a blocked verdict
below a paused task with nothing pending. The score instead adds up what only a human can
clear: pending approvals by risk and by how long they have waited, effects whose outcome
nobody knows (or that are still "in progress" in a task nobody runs), a blocked, stale or
out-of-date verdict, a spent budget, and a paused task whose checkpoint is ready to resume.
Every part adds and none subtracts, so something more that needs a person never lowers a
task's score (tests/core/test_attention.py checks it with hypothesis); the status only breaks
ties. A finished task needs nobody: its score is 0.
"""

from __future__ import annotations

from datetime import datetime

from core import clock
from core.models import Task, TaskStatus

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    from core.engine.tasks import TaskSummary

# Points per thing to clear; a high-risk approval outweighs everything but an uncertain effect.
PENDING_POINTS = {"high": 40.0, "medium": 20.0, "low": 10.0}
WAITED_POINTS_PER_HOUR = 1.0  # the oldest pending approval's wait, up to a day
MAX_WAITED_POINTS = 24.0
UNCERTAIN_POINTS = 45.0
ORPHANED_POINTS = 30.0  # in progress in a task that is not running: its runner is likely gone
VERDICT_POINTS = {"blocked": 30.0, "stale": 15.0, "unsupported": 15.0}
OUTDATED_POINTS = 10.0
OVER_BUDGET_POINTS = 15.0
READY_POINTS = 20.0  # paused (or waiting) with a checkpoint ready to resume
# Ties between tasks that need nobody: waiting before paused before running.
STATUS_TIEBREAK = {
    TaskStatus.WAITING: 0.3,
    TaskStatus.PAUSED: 0.2,
    TaskStatus.RUNNING: 0.1,
    TaskStatus.RESUMING: 0.05,
}
READY_VERDICTS = ("ready", "ready_with_warnings")


class Attention(NamedTuple):
    """A task's score and why, the weightiest reason first (empty: it needs nobody)."""

    score: float
    reasons: tuple[str, ...] = ()

    @property
    def needs_person(self) -> bool:
        """True when something in the task waits for a human."""
        return bool(self.reasons)

    @property
    def top_reason(self) -> str | None:
        """The reason that weighs most, for a one-line preview."""
        return self.reasons[0] if self.reasons else None


def minutes_used(task: Task, last_checkpoint_at: str | None) -> float | None:
    """Minutes from the task's start to its last checkpoint: what a minutes budget counts."""
    if last_checkpoint_at is None:
        return None
    elapsed = clock.parse(last_checkpoint_at) - clock.parse(task.created_at)
    return max(0.0, elapsed.total_seconds() / 60)


def budget_share(task: Task, last_checkpoint_at: str | None) -> float | None:
    """The largest share of any budget the task has spent (dollars, tokens or minutes)."""
    shares = []
    if task.budget.usd:
        shares.append(task.usd_used / task.budget.usd)
    if task.budget.tokens:
        shares.append(task.tokens_used / task.budget.tokens)
    if task.budget.minutes:
        minutes = minutes_used(task, last_checkpoint_at)
        if minutes is not None:
            shares.append(minutes / task.budget.minutes)
    return max(shares) if shares else None


def attention(summary: TaskSummary, now: datetime | None = None) -> Attention:
    """How much `summary`'s task needs a person now, and why."""
    task = summary.task
    if task.status.is_final:
        return Attention(0.0)
    parts = _parts(summary, now or clock.now())
    parts.sort(key=lambda part: part[0], reverse=True)
    score = sum(points for points, _ in parts) + STATUS_TIEBREAK.get(task.status, 0.0)
    return Attention(score, tuple(reason for _, reason in parts))


def _parts(summary: TaskSummary, now: datetime) -> list[tuple[float, str]]:
    """(points, reason) for each thing in the task that waits for a person."""
    task, facts = summary.task, summary.triage
    parts: list[tuple[float, str]] = []
    high, medium = facts.pending_high, facts.pending_medium
    low = max(0, summary.pending_approvals - high - medium)
    for risk, count in (("high", high), ("medium", medium), ("low", low)):
        if count:
            noun = "approval" if count == 1 else "approvals"
            parts.append((PENDING_POINTS[risk] * count, f"{count} {risk}-risk {noun} pending"))
    if summary.pending_approvals and facts.oldest_pending_at:
        hours = max(0.0, (now - clock.parse(facts.oldest_pending_at)).total_seconds() / 3600)
        waited = min(MAX_WAITED_POINTS, hours * WAITED_POINTS_PER_HOUR)
        if waited >= 1.0:
            age = clock.humanize_age(facts.oldest_pending_at, now)
            parts.append((waited, f"oldest approval waiting {age}"))
    if summary.uncertain_effects:
        count = summary.uncertain_effects
        noun = "effect" if count == 1 else "effects"
        parts.append((UNCERTAIN_POINTS * count, f"{count} uncertain {noun} to settle"))
    if facts.in_progress_effects and task.status is not TaskStatus.RUNNING:
        count = facts.in_progress_effects
        reason = f"{count} effect{'s' if count != 1 else ''} in progress, nobody running"
        parts.append((ORPHANED_POINTS * count, reason))
    verdict = summary.last_verdict
    if verdict in VERDICT_POINTS:
        parts.append((VERDICT_POINTS[verdict], f"verdict {verdict}"))
    if verdict and facts.verdict_outdated:
        moved = f"branch {facts.validated_branch} moved since: " if facts.branch_moved else ""
        parts.append((OUTDATED_POINTS, f"verdict out of date: {moved}validate again"))
    share = budget_share(task, summary.last_checkpoint_at)
    if share is not None and share >= 1.0:
        parts.append((OVER_BUDGET_POINTS, f"over budget ({share:.0%})"))
    ready = verdict in READY_VERDICTS and not facts.verdict_outdated
    if ready and task.status in (TaskStatus.PAUSED, TaskStatus.WAITING):
        parts.append((READY_POINTS, f"{task.status.value}, ready to resume"))
    return parts
