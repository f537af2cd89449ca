"""The pure formatters and the table's filter and order, without running the app."""

from __future__ import annotations

from core.engine import TaskSummary
from core.models import Budget, ChangedFile, Task, TaskStatus
from tui.widgets.diff_view import diff_content, file_offsets, line_style
from tui.widgets.formatting import (
    bar_markup,
    budget_fraction,
    budget_summary,
    human_bytes,
    minutes_used,
    truncate,
)
from tui.widgets.task_table import matches, triage_order


def summary(task_id: str, status: TaskStatus, last: str | None, **fields: object) -> TaskSummary:
    task = Task(
        id=task_id,
        repo_root=f"/work/{fields.pop('repo', 'shop')}",
        store_repo="shop-0.git",
        objective=str(fields.pop("objective", "Fix the [checkout] page")),
        status=status,
        created_at="2026-03-01T00:00:00.000000Z",
        updated_at="2026-03-01T00:00:00.000000Z",
        **fields,  # type: ignore[arg-type]
    )
    return TaskSummary(task, 1 if last else 0, last)


def test_human_bytes_picks_a_unit() -> None:
    assert [human_bytes(n) for n in (None, 0, 1023, 2724, 150 * 1024, 5 * 1024**2)] == [
        "—", "0 B", "1023 B", "2.7 KiB", "150 KiB", "5.0 MiB",
    ]  # fmt: skip


def test_budget_summary_shows_the_budget_closest_to_its_limit() -> None:
    usd = summary("a", TaskStatus.RUNNING, None, budget=Budget(usd=25.0, tokens=100), usd_used=14.2)
    assert budget_summary(usd.task) == "$14.20/$25 57%"
    tokens = summary("b", TaskStatus.RUNNING, None, budget=Budget(tokens=2_000_000),
                     tokens_used=1_310_000)  # fmt: skip
    assert budget_summary(tokens.task) == "1.3M/2.0M 66%"
    assert budget_summary(summary("c", TaskStatus.RUNNING, None).task) == "—"
    # Tokens nearer their limit than dollars: the share shown is of the amounts shown.
    both = summary("d", TaskStatus.RUNNING, None, budget=Budget(usd=40.0, tokens=3_000_000),
                   usd_used=19.1, tokens_used=1_530_000)  # fmt: skip
    assert budget_summary(both.task) == "1.5M/3.0M 51%"
    tied = summary("e", TaskStatus.RUNNING, None, budget=Budget(usd=10.0, tokens=1_000),
                   usd_used=5.0, tokens_used=500)  # fmt: skip
    assert budget_summary(tied.task) == "$5.00/$10 50%"


def test_a_minutes_budget_counts_to_the_last_checkpoint() -> None:
    """Minutes used are the task's start to its last checkpoint, as each manifest counts them;
    over its limit, that budget is the one the column shows."""
    row = summary("f", TaskStatus.PAUSED, "2026-03-01T04:48:00.000000Z",
                  budget=Budget(usd=25.0, minutes=240), usd_used=14.2)  # fmt: skip
    minutes = minutes_used(row.task, row.last_checkpoint_at)
    assert minutes == 288.0
    assert minutes_used(row.task, None) is None  # no checkpoint yet: nothing counted
    assert budget_summary(row.task, minutes) == "288/240 min 120%"
    assert budget_fraction(row.task, minutes) == 1.2
    assert budget_summary(row.task) == "$14.20/$25 57%"  # the minutes unknown: dollars


def test_bar_marks_overspending() -> None:
    assert "$budget-over" in bar_markup(1.2, 10)
    assert bar_markup(0.5, 10).count("━") == 10
    assert "╌" in bar_markup(None, 4)


def test_filter_needs_every_word_anywhere() -> None:
    item = summary("rate-limit", TaskStatus.WAITING, None, repo="shopfront")
    assert matches(item, "shop WAIT")
    assert matches(item, "[checkout]")
    assert not matches(item, "shop done")


def test_triage_puts_waiting_and_paused_first_then_newest() -> None:
    rows = [
        summary("old-running", TaskStatus.RUNNING, "2026-03-01T01:00:00.000000Z"),
        summary("done", TaskStatus.DONE, "2026-03-02T01:00:00.000000Z"),
        summary("paused", TaskStatus.PAUSED, "2026-03-01T00:30:00.000000Z"),
        summary("new-running", TaskStatus.RUNNING, "2026-03-01T05:00:00.000000Z"),
        summary("waiting", TaskStatus.WAITING, None),
    ]
    assert [s.task.id for s in triage_order(rows)] == [
        "waiting", "paused", "new-running", "old-running", "done",
    ]  # fmt: skip


def test_truncate_keeps_one_line() -> None:
    assert truncate("a\nlong   objective", 9) == "a long o…"
    assert truncate("short", 9) == "short"


def test_diff_lines_are_styled_and_cut_visibly() -> None:
    diff = (
        "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    assert [line_style(line) for line in diff.splitlines()] == [
        "bold $diff-header", "$diff-header", "$diff-header", "$diff-header",
        "$diff-hunk", "$diff-removed", "$diff-added",
    ]  # fmt: skip
    content, shown = diff_content(diff * 3, max_lines=10)
    assert len(shown) == 10
    assert file_offsets(shown, [ChangedFile("x.py", "M", 1, 1)]) == {"x.py": 0}
    assert "11 more lines not shown (21 in all)" in content.plain
