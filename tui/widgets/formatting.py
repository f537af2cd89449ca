"""Small, pure formatters shared by the dashboard's widgets: sizes, budgets, bars, names."""

from __future__ import annotations

from pathlib import Path

from core import clock
from core.models import CheckpointState, Task, TaskStatus
from core.terminal_text import printable

STATUS_GLYPHS = {
    TaskStatus.RUNNING: "▶",
    TaskStatus.WAITING: "◐",
    TaskStatus.PAUSED: "‖",
    TaskStatus.RESUMING: "↻",
    TaskStatus.DONE: "✔",
    TaskStatus.CANCELLED: "✖",
    TaskStatus.EXPIRED: "◌",
}

# The order operators triage in: what needs a person first, finished work last.
STATUS_ATTENTION = {
    TaskStatus.WAITING: 0,
    TaskStatus.PAUSED: 1,
    TaskStatus.RESUMING: 2,
    TaskStatus.RUNNING: 3,
    TaskStatus.DONE: 4,
    TaskStatus.CANCELLED: 5,
    TaskStatus.EXPIRED: 6,
}

CHECKPOINT_GLYPHS = {
    CheckpointState.COMPLETE: "●",
    CheckpointState.WRITING: "◌",
    CheckpointState.INCOMPLETE: "✗",
}


def counted(count: int, noun: str) -> str:
    """`1 checkpoint`, `3 checkpoints`: a count with its noun in the right number."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def status_variable(status: TaskStatus) -> str:
    """The theme variable that colours a task status, e.g. `status-waiting`."""
    return f"status-{status.value}"


def status_markup(status: TaskStatus) -> str:
    """A coloured glyph and name for a status, as Textual content markup."""
    return f"[${status_variable(status)}]{STATUS_GLYPHS[status]} {status.value}[/]"


def checkpoint_markup(state: CheckpointState) -> str:
    """A coloured glyph and name for a checkpoint state."""
    return f"[$checkpoint-{state.value}]{CHECKPOINT_GLYPHS[state]} {state.value}[/]"


def human_bytes(count: int | None) -> str:
    """`2.7 KiB`, `14 MiB`; an em dash when unknown."""
    if count is None:
        return "—"
    if count < 1024:
        return f"{count} B"
    size, units = count / 1024, ["KiB", "MiB", "GiB"]
    while size >= 1024 and len(units) > 1:
        size, units = size / 1024, units[1:]
    return f"{size:.1f} {units[0]}" if size < 100 else f"{size:.0f} {units[0]}"


def human_count(value: float) -> str:
    """`1.3M`, `740k`, `96` for token counts in narrow columns."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.0f}"


def repo_name(task: Task) -> str:
    """The repository's directory name, which is how people name repos."""
    return Path(task.repo_root).name or task.repo_root


def minutes_used(task: Task, last_checkpoint_at: str | None) -> float | None:
    """Minutes from the task's start to its last checkpoint: what that checkpoint's manifest
    counts against a minutes budget (None before the first checkpoint)."""
    if last_checkpoint_at is None:
        return None
    elapsed = clock.parse(last_checkpoint_at) - clock.parse(task.created_at)
    return max(0.0, elapsed.total_seconds() / 60)


def _shares(task: Task, minutes: float | None) -> list[tuple[str, float]]:
    """Each budget set, with the share spent: dollars, then tokens, then minutes."""
    shares = []
    if task.budget.usd:
        shares.append(("usd", task.usd_used / task.budget.usd))
    if task.budget.tokens:
        shares.append(("tokens", task.tokens_used / task.budget.tokens))
    if task.budget.minutes and minutes is not None:
        shares.append(("minutes", minutes / task.budget.minutes))
    return shares


def budget_fraction(task: Task, minutes: float | None = None) -> float | None:
    """The largest share of any budget the task has spent, or None with no budget."""
    shares = _shares(task, minutes)
    return max(share for _, share in shares) if shares else None


def budget_summary(task: Task, minutes: float | None = None) -> str:
    """`$14.20/$25 57%` for the task table: the budget closest to its limit (dollars, then
    tokens, on a tie), so the share printed is the share of the amounts printed beside it."""
    shares = _shares(task, minutes)
    if not shares:
        return f"${task.usd_used:,.2f}" if task.usd_used else "—"
    kind, share = max(shares, key=lambda item: item[1])  # the first of equal shares
    if kind == "usd":
        spent = f"${task.usd_used:,.2f}/${task.budget.usd:,.0f}"
    elif kind == "tokens":
        spent = f"{human_count(task.tokens_used)}/{human_count(task.budget.tokens or 0)}"
    else:
        spent = f"{minutes or 0:,.0f}/{task.budget.minutes or 0:,.0f} min"
    return f"{spent} {share:.0%}"


def bar_markup(fraction: float | None, width: int = 20) -> str:
    """A horizontal bar in theme colours; over budget turns the whole bar `budget-over`."""
    if fraction is None:
        return "[dim]" + "╌" * width + "[/]"
    filled = max(0, min(width, round(fraction * width)))
    colour = "$budget-over" if fraction > 1 else "$budget-bar"
    return f"[{colour}]{'━' * filled}[/][dim]{'━' * (width - filled)}[/]"


def shown(text: str) -> str:
    """Agent-written `text` for Textual markup: controls written out (`core.terminal_text`) and
    every `[` escaped, so neither an escape sequence nor a `[tag]` in it takes effect.

    Textual's own `escape` leaves a `[` that does not look like a tag (`\\x1b[2J`), which a
    later `]` turns into one; a trailing backslash would escape the caller's closing tag, so it
    is written out as `\\x5c` like the controls.
    """
    text = printable(text).replace("[", "\\[")
    return text[:-1] + "\\x5c" if text.endswith("\\") else text


def truncate(text: str, width: int) -> str:
    """Cut `text` to `width` cells with an ellipsis, on one line, controls shown escaped."""
    flat = printable(" ".join(text.split()), single_line=True)
    return flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"


def short_sha(sha: str | None) -> str:
    """The first seven hex digits of an object id."""
    return sha[:7] if sha else "—"
