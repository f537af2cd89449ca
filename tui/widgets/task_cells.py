"""What one row of the dashboard's task table shows: its columns, cells, colours and badges.

`tui.widgets.task_table` is the widget (scrolling, the cursor, caching drawn lines); this module
is what it draws, as plain text and styles, so a cell's wording can be read without the widget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style

from core import clock
from core.models import TaskStatus
from core.terminal_text import printable
from tui.remotes import DashboardRow, RemoteSummary
from tui.widgets.formatting import (
    STATUS_GLYPHS,
    budget_fraction,
    budget_summary,
    minutes_used,
    repo_name,
    status_variable,
    truncate,
)

Colour = Callable[[str], Style]
"""A theme variable's name (`status-waiting`, `warning`) to a foreground style."""

MIN_OBJECTIVE_WIDTH = 12
CELL_PADDING = 1  # blank cells on each side of every column, as DataTable draws them


@dataclass(frozen=True)
class Column:
    """One column: its key (for sorting and clicks), header, width and alignment.

    `drop` orders what goes when the terminal is narrow: 0 never goes (what triage needs:
    status, task, approvals, uncertain effects, verdict), a higher number goes first.
    `least` is the width it may shrink to before anything is dropped.
    """

    key: str
    header: str
    width: int | None  # None: the objective, which takes whatever width the others leave
    right: bool = False
    drop: int = 0
    least: int | None = None

    @property
    def smallest(self) -> int:
        """The fewest cells the column is drawn in."""
        return self.least or self.width or MIN_OBJECTIVE_WIDTH


COLUMNS: tuple[Column, ...] = (
    Column("status", "Status", 11),
    Column("task", "Task", 24, least=14),
    Column("objective", "Objective", None, drop=3),
    Column("repo", "Repo", 9, drop=6),
    Column("age", "Age", 4, right=True, drop=2),
    Column("checkpoints", "Ckpt", 4, right=True, drop=5),
    Column("approvals", "Appr", 4, right=True),
    Column("effects", "Unc", 3, right=True),
    Column("verdict", "Verdict", 7),
    Column("budget", "Budget", 16, right=True, drop=4, least=5),  # narrow: the share alone
)
WIDEST_TASK = 40  # past this, extra width goes to the objective alone


def column_layout(width: int) -> tuple[tuple[int, int], ...]:
    """(index in `COLUMNS`, cells) of each column drawn in a table `width` cells wide.

    Columns go, least needed first, until the rest fit at their smallest; the width left
    then restores the shrunk ones, and what remains goes to the objective (or the task id,
    when the objective went too). The essential columns always stay.
    """
    shown = list(range(len(COLUMNS)))

    def need(indices: list[int]) -> int:
        return sum(COLUMNS[i].smallest + 2 * CELL_PADDING for i in indices)

    for index in sorted(shown, key=lambda i: COLUMNS[i].drop, reverse=True):
        if need(shown) <= width or COLUMNS[index].drop == 0:
            break
        shown.remove(index)
    cells = {i: COLUMNS[i].smallest for i in shown}
    spare = width - need(shown)
    for i in shown:  # back toward their own width, in column order
        grow = min(spare, (COLUMNS[i].width or cells[i]) - cells[i])
        if grow > 0:
            cells[i] += grow
            spare -= grow
    task = next(i for i, c in enumerate(COLUMNS) if c.key == "task")
    objective = next((i for i in shown if COLUMNS[i].width is None), None)
    if objective is None:
        cells[task] += max(0, spare)
    else:
        to_task = max(0, min(spare // 3, WIDEST_TASK - cells[task]))  # long ids show whole
        cells[task] += to_task
        cells[objective] += max(0, spare - to_task)
    return tuple((i, cells[i]) for i in shown)


# Short names for validation verdicts, and the theme variable that colours each.
VERDICT_LABELS = {
    "ready": ("ready", "success"),
    "ready_with_warnings": ("warn", "warning"),
    "stale": ("stale", "warning"),
    "blocked": ("blocked", "error"),
    "unsupported": ("unsup", "error"),
}
# A verdict whose inputs changed since (a decision, a settlement, a checkpoint, a moved branch):
# still shown, marked with `?` and in the muted colour, so nobody resumes on a stale "ready".
OUTDATED_LABELS = {
    "ready": "ready?",
    "ready_with_warnings": "warn?",
    "stale": "stale?",
    "blocked": "block?",
    "unsupported": "unsup?",
}


REMOTE_BADGE = "↓ remote"
NO_KEY_BADGE = "no key"
SHARED_MARK = "⇅"
REFUSED_MARK = "⚠"  # followed by how many facts from elsewhere were refused


def last_activity(summary: DashboardRow) -> str:
    """When the task last did something: its newest checkpoint, else its last update."""
    return summary.last_checkpoint_at or summary.task.updated_at


def minutes_spent(summary: DashboardRow) -> float | None:
    """The runtime the task has used, in minutes, when it is known."""
    return minutes_used(summary.task, summary.last_checkpoint_at)


def fit_budget(text: str, width: int) -> str:
    """A budget cell in `width` cells: `$14.20/$25 57%`, or just `57%` when that is too wide."""
    if cell_len(text) > width:
        text = text.rsplit(" ", 1)[-1]
    return fit(text, width, right=True)


def fit(text: str, width: int, right: bool = False) -> str:
    """`text` on one line in exactly `width` cells: cut with an ellipsis, padded to align;
    controls in it shown escaped."""
    text = printable(text, single_line=True)
    if cell_len(text) > width:
        return set_cell_size(truncate(text, width), width)
    return text.rjust(width) if right else set_cell_size(text, width)


def row_cells(summary: DashboardRow, colour: Colour) -> list[tuple[str, Style | None]]:
    """Each column's text and colour for one task (`colour` maps a theme variable to a style)."""
    task = summary.task
    status: TaskStatus = task.status
    dim = Style(dim=True)
    if isinstance(summary, RemoteSummary):
        # Only the plain header is known: no approvals, effects, verdict or budget yet.
        return [
            (f"{STATUS_GLYPHS[status]} {status.value}", colour(status_variable(status))),
            (task.id, None),
            (task.objective, dim),
            (repo_name(task), None),
            (clock.humanize_age(last_activity(summary)), None),
            (str(summary.checkpoint_count), None),
            *(("·", dim) for _ in range(3)),
            ("—", dim),
        ]
    verdict, verdict_colour = VERDICT_LABELS.get(summary.last_verdict or "", ("", ""))
    if summary.last_verdict and not verdict:
        verdict = summary.last_verdict
    if summary.last_verdict and summary.triage.verdict_outdated:
        verdict = OUTDATED_LABELS.get(summary.last_verdict, f"{verdict}?")
        verdict_colour = "foreground-muted"
    approvals = summary.pending_approvals
    uncertain = summary.uncertain_effects
    return [
        (f"{STATUS_GLYPHS[status]} {status.value}", colour(status_variable(status))),
        (task.id, None),
        (" ".join(task.objective.split()), None),
        (repo_name(task), None),
        (clock.humanize_age(last_activity(summary)), None),
        (str(summary.checkpoint_count), None),
        (str(approvals) if approvals else "·", colour("warning") if approvals else dim),
        (str(uncertain) if uncertain else "·", colour("error") if uncertain else dim),
        (verdict or "·", colour(verdict_colour) if verdict_colour else dim),
        budget_cell(summary, colour),
    ]


def budget_cell(summary: DashboardRow, colour: Colour) -> tuple[str, Style | None]:
    """The budget closest to its limit; over its limit, in the theme's over-budget colour."""
    minutes = minutes_spent(summary)
    fraction = budget_fraction(summary.task, minutes)
    over = fraction is not None and fraction > 1
    return budget_summary(summary.task, minutes), colour("budget-over") if over else None


def row_badges(
    summary: DashboardRow, on_cursor: bool, shared: bool, colour: Colour, refused: int = 0
) -> list[tuple[str, Style]]:
    """What a row's objective cell starts with: `↓ remote` (and `no key`), or `⇅` shared, and
    `⚠3` when facts from elsewhere were refused (`pitstop task refused` lists them).

    On the cursor row they keep the cursor's colours (an accent badge would vanish on an
    accent cursor) and stand out in bold.
    """
    bold = Style(bold=True)
    if isinstance(summary, RemoteSummary):
        badges = [(REMOTE_BADGE, bold if on_cursor else colour("accent") + bold)]
        if not summary.readable:
            badges.append((NO_KEY_BADGE, bold if on_cursor else colour("warning") + bold))
        return badges
    badges = []
    if refused:
        badges.append((f"{REFUSED_MARK}{refused}", bold if on_cursor else colour("error") + bold))
    if shared:
        badges.append((SHARED_MARK, bold if on_cursor else colour("accent")))
    return badges


def badged_cell(
    badges: list[tuple[str, Style]], text: str, cells: int, style: Style, text_style: Style
) -> list[Segment]:
    """An objective cell of `cells` width: the badges, then as much of `text` as fits."""
    pad = " " * CELL_PADDING
    segments = [Segment(pad, style)]
    left = cells
    for badge, badge_style in badges:
        if left <= 0:
            break
        shown = fit(badge, min(cell_len(badge), left))
        segments.append(Segment(shown, style + badge_style))
        left -= cell_len(shown)
        if left > 0:
            segments.append(Segment(" ", style))
            left -= 1
    if left > 0:
        segments.append(Segment(fit(text, left), text_style))
    segments.append(Segment(pad, style))
    return segments
