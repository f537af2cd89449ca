"""One line of counts above the task table: what needs a person, and everything else."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from textual.content import Content
from textual.widgets import Static

from core import clock
from core.engine import TaskSummary
from core.engine.attention import attention
from core.models import TaskStatus
from tui.widgets.formatting import STATUS_GLYPHS, counted, status_variable


def needing_attention(summaries: Sequence[TaskSummary]) -> int:
    """How many tasks hold something only a person can clear (`core.engine.attention`)."""
    now = clock.now()
    return sum(1 for summary in summaries if attention(summary, now).needs_person)


class SummaryBar(Static):
    """`2 need attention · ⏸ 1 waiting · ⏸ 1 paused · ▶ 1 running …`, coloured by status;
    "need attention" counts tasks with a pending approval, an unsettled effect, a verdict to act
    on, a spent budget or a ready resume, whatever their status."""

    _counted: Sequence[TaskSummary] | None = None
    _counts: Counter[TaskStatus] | None = None
    _attention = 0

    def show(
        self,
        summaries: Sequence[TaskSummary],
        shown: int,
        filter_text: str,
        status_counts: Mapping[TaskStatus, int] | None = None,
        remote_count: int = 0,
    ) -> None:
        """Update the counts; `shown` is how many rows the filter lets through.

        `status_counts` (tasks per status, store-wide) replaces counting `summaries` while the
        table holds only its first screenful; `remote_count` rows are tasks seen only on
        remotes, counted apart (nobody can act on them here until they are fetched).
        """
        partial = status_counts is not None
        if status_counts is not None:
            counts = Counter(status_counts)
            attention_count = needing_attention(summaries)
        elif summaries is self._counted and self._counts is not None:
            counts = self._counts  # typing a filter: the same list, counted once
            attention_count = self._attention
        else:
            counts = Counter(summary.task.status for summary in summaries)
            attention_count = needing_attention(summaries)
            self._counted, self._counts, self._attention = summaries, counts, attention_count
        total_count = sum(counts.values())
        parts: list[Content | str] = []
        if attention_count:
            more = "+" if partial else ""  # only the first screenful is counted yet
            parts.append(
                Content.from_markup(f"[b $warning]{attention_count}{more} need attention[/]")
            )
        else:
            parts.append(Content.from_markup("[$success]nothing needs attention[/]"))
        for status in TaskStatus:
            if counts[status]:
                parts.append(
                    Content.from_markup(
                        f"[${status_variable(status)}]{STATUS_GLYPHS[status]} "
                        f"{counts[status]} {status.value}[/]"
                    )
                )
        if remote_count:
            parts.append(Content.from_markup(f"[$accent]↓ {remote_count} remote[/]"))
            total_count += remote_count
        total = counted(total_count, "task")
        if filter_text:
            total = f"{shown} of {total_count} tasks match “{filter_text}”"
        parts.append(Content(total).stylize("dim"))
        self.update(Content(" · ").join(parts))
