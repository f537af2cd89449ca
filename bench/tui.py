"""Benchmark the dashboard on 10,000 tasks and 100,000 checkpoints against an empty store.

Issue 6's targets: time to first paint at most 1.5x the empty store's, and a filter update that is
less than one frame's worth of work (16.7 ms at 60 fps) per keystroke.

    .venv/bin/python bench/tui.py                  # 10,000 tasks, 100,000 checkpoints, 7 runs
    .venv/bin/python bench/tui.py --quick          # 1,000 tasks, 10,000 checkpoints, 3 runs

The big store is FABRICATED: its rows are inserted straight into SQLite (the schema comes from
opening a real `Engine`, so migrations and indexes are Pitstop's own), with no git objects or
manifests behind them. Each task's objective, harness and model are then sealed under a data key
of its own, as the store keeps them (the very code the `0017_sealed_fields` migration runs), so
the dashboard opens 10,000 keys and their fields as it does on a real store. That is enough
here because the dashboard only reads the `tasks`, `checkpoints`, `approvals`, `effects` and
`validations` tables. Building it through the engine would take many minutes of git work.

What is timed, headless (`App.run_test`), runs interleaved (empty, big, big, empty, ...), medians:

- first paint: from constructing `PitstopApp` until the task table has drawn its first task line
  after the store was read (for the empty store: its first line after the empty list arrived);
- filter: after `/`, typing a query one key at a time until the table has drawn the filtered
  rows; reported per keystroke, with the dashboard's own work per keystroke (the table's filter,
  the summary bar, the preview, and the table lines drawn) measured inside the app.

Nothing here asserts a time; the numbers are for people.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Run as `python bench/tui.py`, this file's directory comes first on the path and this module
# would shadow the `tui` package: drop it, and put the project root first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.snapshot import isolate_environment, ms, verdict  # noqa: E402

STARTUP_TARGET = 1.5
PALETTE_MS = 200.0  # issue 18: the palette opens in 200 ms on 10,000 tasks
FRAME_MS = 1000 / 60
SIZE = (120, 34)
QUERY = "cache 042"  # matches a few dozen of the 10,000 fabricated tasks

WORDS = (
    *("add", "cache", "retry", "index", "rate", "limit", "checkout", "invoice", "currency"),
    *("migrate", "rounding", "cookie", "session", "token", "upgrade", "parser", "schema"),
    *("export", "import", "search", "queue", "worker", "flaky", "test", "build", "deploy"),
)
REPOS = ("shopfront", "invoicer", "payments", "search", "mobile", "infra", "docs", "billing")
STATUSES = ("running", "waiting", "paused", "resuming", "done", "cancelled", "expired")
VERDICTS = ("ready", "ready_with_warnings", "stale", "blocked")


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def fabricate_store(root: Path, tasks: int, checkpoints_per_task: int) -> dict[str, int]:
    """Create a store at `root` and insert rows directly (see the module docstring)."""
    from core.engine import Engine
    from core.store.db import write_txn

    rng = random.Random(6)
    now = datetime.now(UTC)
    counts = {"tasks": 0, "checkpoints": 0, "approvals": 0, "effects": 0, "validations": 0}
    with Engine(root) as engine:
        db = engine.db
        task_rows, checkpoint_rows, approval_rows, effect_rows, validation_rows = [], [], [], [], []
        for number in range(tasks):
            task_id = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{number:05d}"
            repo = rng.choice(REPOS)
            created = now - timedelta(hours=rng.uniform(1, 24 * 60))
            objective = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12))).capitalize()
            task_rows.append(
                (
                    task_id,
                    f"/work/{repo}",
                    f"/store/repos/{task_id}.git",
                    objective,
                    rng.choice(STATUSES),
                    "claude-code",
                    "2.0.14",
                    "claude-sonnet",
                    "4.5",
                    rng.choice((None, 2_000_000)),
                    rng.choice((None, 25.0)),
                    rng.randint(0, 1_500_000),
                    round(rng.uniform(0, 20), 2),
                    "[]",
                    "[]",
                    iso(created),
                    iso(created + timedelta(minutes=30)),
                )
            )
            for seq in range(1, checkpoints_per_task + 1):
                state = "incomplete" if rng.random() < 0.02 else "complete"
                at = iso(created + timedelta(minutes=3 * seq))
                checkpoint_rows.append((task_id, seq, state, "manual", at, at))
            if rng.random() < 0.1:
                approval_rows.append(
                    (
                        f"ap-{number:05d}",
                        task_id,
                        1,
                        "deploy to production",
                        "high",
                        "pending",
                        "agent",
                        iso(now - timedelta(minutes=rng.randint(1, 600))),
                    )
                )
            if rng.random() < 0.05:
                stamp = iso(now)
                effect_rows.append((task_id, "deploy", "deploy", "uncertain", stamp, stamp))
            if rng.random() < 0.5:
                validation_rows.append(
                    (
                        task_id,
                        checkpoints_per_task,
                        rng.choice(VERDICTS),
                        "[]",
                        120,
                        iso(now),
                        "bench",
                        "cli",
                    )
                )
        with write_txn(db):
            db.conn.executemany(
                "INSERT INTO tasks (id, repo_root, store_repo, objective, status, harness, "
                "harness_version, model, model_version, budget_tokens, budget_usd, tokens_used, "
                "usd_used, credentials, approvers, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                task_rows,
            )
            db.conn.executemany(
                "INSERT INTO checkpoints (task_id, seq, state, reason, created_at, completed_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                checkpoint_rows,
            )
            db.conn.executemany(
                "INSERT INTO approvals (id, task_id, seq, action, risk, state, requested_by, "
                "requested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                approval_rows,
            )
            db.conn.executemany(
                "INSERT INTO effects (task_id, key, kind, state, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                effect_rows,
            )
            db.conn.executemany(
                "INSERT INTO validations (task_id, seq, verdict, findings, duration_ms, at, actor, "
                "interface) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                validation_rows,
            )
        from core.store.sealed_text import FIELD_COLUMNS, seal_clear_text

        with write_txn(db):  # as the store holds them: sealed, one data key per task
            seal_clear_text(db, FIELD_COLUMNS, engine.keys)
        db.execute("ANALYZE")
        counts.update(
            tasks=len(task_rows),
            checkpoints=len(checkpoint_rows),
            approvals=len(approval_rows),
            effects=len(effect_rows),
            validations=len(validation_rows),
        )
    return counts


@dataclass
class Probe:
    """Instrumentation of the table and dashboard, installed once on their classes."""

    loaded_at: float | None = None
    painted_at: float | None = None
    filter_ms: list[float] = field(default_factory=list)  # work per keystroke, in the app
    lines_drawn: int = 0
    in_filter: bool = False

    def reset(self) -> None:
        self.loaded_at = self.painted_at = None
        self.filter_ms = []
        self.lines_drawn = 0
        self.in_filter = False


PROBE = Probe()


def install_probe() -> None:
    """Wrap the methods a paint or a filter goes through; every wrapper records then delegates."""
    from tui.screens.dashboard import DashboardScreen
    from tui.widgets.summary_bar import SummaryBar
    from tui.widgets.task_preview import TaskPreview
    from tui.widgets.task_table import TaskTable

    show = TaskTable.show
    render_line = TaskTable.render_line

    def timed_show(self: TaskTable, *args: Any) -> None:
        show(self, *args)
        PROBE.loaded_at = time.perf_counter()

    def timed_render_line(self: TaskTable, y: int) -> Any:
        started = time.perf_counter()
        strip = render_line(self, y)
        done = time.perf_counter()
        if PROBE.in_filter and PROBE.filter_ms:
            PROBE.filter_ms[-1] += (done - started) * 1000
        PROBE.lines_drawn += 1
        if PROBE.loaded_at is not None and PROBE.painted_at is None:
            first_row = y >= 1 and bool(self.shown)
            if first_row or not self.shown:
                PROBE.painted_at = done
        return strip

    def keystroke_work(method: Callable[..., Any], starts: bool) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = method(*args, **kwargs)
            if PROBE.in_filter:
                if starts:
                    PROBE.filter_ms.append(0.0)
                    PROBE.painted_at = None  # the next line drawn shows this filter's result
                PROBE.filter_ms[-1] += (time.perf_counter() - started) * 1000
            return result

        return wrapper

    TaskTable.show = timed_show  # type: ignore[method-assign]
    TaskTable.render_line = timed_render_line  # type: ignore[method-assign]
    TaskTable.set_filter = keystroke_work(TaskTable.set_filter, True)  # type: ignore[method-assign]
    SummaryBar.show = keystroke_work(SummaryBar.show, False)  # type: ignore[method-assign]
    TaskPreview.show = keystroke_work(TaskPreview.show, False)  # type: ignore[method-assign]
    assert DashboardScreen  # the screen calls the three wrapped methods per keystroke


@dataclass
class Run:
    first_paint: float
    all_listed: float
    filter_total: float
    keystrokes: int
    work_ms: list[float]
    shown: int
    lines_drawn: int
    palette_open: float = 0.0  # ctrl+p to the palette listing its first commands


async def wait_for(condition: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("the dashboard never got there")
        await asyncio.sleep(0.0005)


async def one_run(store: Path, tasks: int) -> Run:
    from tui.app import PitstopApp
    from tui.widgets.task_table import TaskTable, matches

    PROBE.reset()
    gc.collect()  # the previous run's 10,000 summaries are not this run's garbage to collect
    started = time.perf_counter()
    app = PitstopApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: PROBE.painted_at is not None)
        first_paint = (PROBE.painted_at or 0.0) - started
        table = app.screen.query_one(TaskTable)
        await wait_for(lambda: len(table.summaries) == tasks)  # the whole list, after the first
        all_listed = time.perf_counter() - started
        expected = [s.task.id for s in table.summaries if matches(s, QUERY)]
        await pilot.press("slash")
        await pilot.pause()
        PROBE.in_filter = True
        drawn_before = PROBE.lines_drawn
        typing = time.perf_counter()
        for key in QUERY:
            await pilot.press("space" if key == " " else key)
        await wait_for(
            lambda: (
                sorted(s.task.id for s in table.shown) == sorted(expected)
                and PROBE.painted_at is not None
            )
        )
        filter_total = (PROBE.painted_at or 0.0) - typing
        PROBE.in_filter = False
        shown = len(table.shown)
        await pilot.press("escape")
        await pilot.pause()
        palette_open = await time_palette(app, pilot)
        run = Run(
            first_paint,
            all_listed,
            filter_total,
            len(QUERY),
            list(PROBE.filter_ms),
            shown,
            PROBE.lines_drawn - drawn_before,
            palette_open,
        )
        await pilot.press("escape", "q")
    return run


async def time_palette(app: Any, pilot: Any) -> float:
    """Seconds from ctrl+p to the command palette showing its commands (every task among them)."""
    from textual.command import CommandList, CommandPalette

    opened = time.perf_counter()
    await pilot.press("ctrl+p")

    def listed() -> bool:
        screen = app.screen
        return isinstance(screen, CommandPalette) and screen.query_one(CommandList).option_count > 0

    await wait_for(listed)
    took = time.perf_counter() - opened
    await pilot.press("escape")
    await pilot.pause()
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--checkpoints", type=int, default=10, help="per task (default 10)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="1,000 tasks and 3 runs")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.quick:
        args.tasks, args.runs = 1000, 3

    workdir = Path(tempfile.mkdtemp(prefix="pitstop-bench-tui-"))
    try:
        isolate_environment(workdir)
        os.environ.setdefault("PITSTOP_KEY", "bnV0cy10by1hLWJlbmNoLW9ubHktbWFzdGVyLWtleSE=")
        # The size a real terminal of SIZE would report (the first screen reads as many tasks
        # as the terminal has lines); headless, there is no terminal to ask.
        os.environ["COLUMNS"], os.environ["LINES"] = str(SIZE[0]), str(SIZE[1])
        empty, big = workdir / "empty", workdir / "big"
        from core.engine import Engine

        Engine(empty).close()
        built = time.perf_counter()
        counts = fabricate_store(big, args.tasks, args.checkpoints)
        build_s = time.perf_counter() - built
        with Engine(big) as engine:
            loading = time.perf_counter()
            engine.task_summaries()
            load_s = time.perf_counter() - loading
        install_probe()

        runs: dict[str, list[Run]] = {"empty": [], "big": []}
        asyncio.run(one_run(empty, 0))  # warm-up: imports, CSS parsing, theme loading
        for index in range(args.runs):
            order = ("empty", "big") if index % 2 == 0 else ("big", "empty")
            for name in order:
                store, tasks = (empty, 0) if name == "empty" else (big, counts["tasks"])
                runs[name].append(asyncio.run(one_run(store, tasks)))

        def median(name: str, pick: Callable[[Run], float]) -> float:
            return statistics.median(pick(run) for run in runs[name])

        print(
            f"store: {counts['tasks']:,} tasks, {counts['checkpoints']:,} checkpoints, "
            f"{counts['approvals']:,} pending approvals, {counts['effects']:,} uncertain effects, "
            f"{counts['validations']:,} validations (rows fabricated in {build_s:.1f} s)"
        )
        print(f"engine.task_summaries() on it: {ms(load_s)}")
        print(f"runs: {args.runs} interleaved, medians; terminal {SIZE[0]}x{SIZE[1]}, headless")
        print()
        paint_empty = median("empty", lambda r: r.first_paint)
        paint_big = median("big", lambda r: r.first_paint)
        ratio = paint_big / paint_empty
        print(f"{'measure':<28}{'empty':>12}{'big store':>12}{'ratio':>8}  target")
        print(
            f"{'first paint':<28}{ms(paint_empty):>12}{ms(paint_big):>12}{ratio:>7.2f}x  "
            f"<= {STARTUP_TARGET}x: {verdict(ratio, STARTUP_TARGET)}"
        )
        listed = median("big", lambda r: r.all_listed)
        print(
            f"{'whole list in the table':<28}{'':>12}{ms(listed):>12}{'':>8}  "
            f"information: the first screen is read first, then all {counts['tasks']:,} tasks"
        )
        per_key_empty = median("empty", lambda r: r.filter_total / r.keystrokes)
        per_key_big = median("big", lambda r: r.filter_total / r.keystrokes)
        print(
            f"{'filter, per keystroke':<28}{ms(per_key_empty):>12}{ms(per_key_big):>12}"
            f"{per_key_big / per_key_empty:>7.2f}x  (typing {QUERY!r} through the pilot)"
        )
        work_empty = median("empty", lambda r: statistics.median(r.work_ms))
        work_big = median("big", lambda r: statistics.median(r.work_ms))
        worst_big = median("big", lambda r: max(r.work_ms))
        print(
            f"{'work per keystroke':<28}{work_empty:>9.2f} ms{work_big:>9.2f} ms"
            f"{work_big / work_empty:>7.2f}x  < {FRAME_MS:.1f} ms: "
            f"{verdict(work_big, FRAME_MS)} (worst key {worst_big:.2f} ms)"
        )
        palette_big = median("big", lambda r: r.palette_open)
        print(
            f"{'palette opens':<28}{ms(median('empty', lambda r: r.palette_open)):>12}"
            f"{ms(palette_big):>12}{'':>8}  <= {PALETTE_MS:.0f} ms on the big store: "
            f"{verdict(palette_big * 1000, PALETTE_MS)}"
        )
        for name in ("empty", "big"):
            each = ", ".join(f"{run.first_paint * 1000:.0f}" for run in runs[name])
            print(f"  first paint, every run, {name} store: {each} ms")
        lines = median("big", lambda r: r.lines_drawn / r.keystrokes)
        print(
            f"table lines drawn per keystroke on the 10k store: {lines:.0f} "
            f"(viewport {SIZE[1]} lines); rows matching {QUERY!r}: {runs['big'][0].shown}"
        )
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
