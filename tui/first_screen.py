"""The dashboard's first screen of tasks, read on the UI thread as the dashboard mounts.

Read by the dashboard's thread worker, the first screen (triage order, the store-wide counts
per status, the remote view) landed after Textual's first frame on a big store, so the table
was painted twice: an empty frame, then the tasks. Nor could a thread started with the app win
the race: the UI thread keeps the interpreter busy while Textual starts, and each SQLite call
of the read hands the interpreter back and waits up to a switch interval (5 ms) to get it
again — 8 ms of work took 50 ms. The read is bounded (one screenful of rows, however big the
store), so it runs on the UI thread before the first frame, which then shows tasks (issue 18:
first paint on 10,000 tasks within 1.5× an empty store); the whole list follows from a worker.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.errors import PitstopError
from tui import remotes

if TYPE_CHECKING:
    from core.engine import Engine, TaskSummary
    from core.models import TaskStatus


def rows_on_screen(limit: int) -> int:
    """How many tasks a first screen reads: no more than the terminal has lines (a table row
    is one line), and never more than `limit`. Without a terminal to ask, `limit`."""
    lines = shutil.get_terminal_size((0, limit)).lines
    return max(1, min(limit, lines))


@dataclass(frozen=True)
class FirstScreen:
    """The first screenful in triage order, and whether it holds every task of the store."""

    summaries: list[TaskSummary]
    status_counts: dict[TaskStatus, int]
    remote: remotes.RemoteView

    @property
    def complete(self) -> bool:
        return sum(self.status_counts.values()) <= len(self.summaries)


def read_first_screen(
    engine: Engine, limit: int, statuses: Sequence[TaskStatus]
) -> FirstScreen | None:
    """The first screen, or None when it cannot be read (the dashboard's worker then reads
    again, meets the same problem and reports it)."""
    try:
        remote = remotes.read_remote_view(engine)
        first = engine.first_task_summaries(rows_on_screen(limit), tuple(statuses))
        counts = engine.task_status_counts()
    except PitstopError:
        return None
    return FirstScreen(first, counts, remote)
