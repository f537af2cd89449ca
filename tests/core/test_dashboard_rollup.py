"""The dashboard's rollup: per-task figures from aggregate SQL, and the first screenful alone.

Rows are inserted directly (the rollup only reads them); what is checked is the arithmetic and
the order, against a plain Python recount of the same rows.
"""

from __future__ import annotations

import random
from pathlib import Path

from core import clock
from core.engine import Engine
from core.models import TaskStatus
from core.store.db import write_txn

ORDER = (
    TaskStatus.WAITING,
    TaskStatus.PAUSED,
    TaskStatus.RESUMING,
    TaskStatus.RUNNING,
    TaskStatus.DONE,
    TaskStatus.CANCELLED,
    TaskStatus.EXPIRED,
)


def at(minute: int) -> str:
    return f"2026-11-{1 + minute // 1440:02d}T{minute // 60 % 24:02d}:{minute % 60:02d}:00.000000Z"


def fabricate(engine: Engine, tasks: int) -> dict[str, dict[str, object]]:
    """Tasks with checkpoints, approvals, effects and validations; the expected figures."""
    rng = random.Random(6)
    expected: dict[str, dict[str, object]] = {}
    now = clock.now_iso()
    stamps = iter(rng.sample(range(20_000), 5000))  # distinct times: no ties to order
    with write_txn(engine.db):
        for number in range(tasks):
            task_id = f"task-{number:04d}"
            status = rng.choice(list(TaskStatus))
            updated = at(next(stamps))
            engine.db.execute(
                "INSERT INTO tasks (id, repo_root, store_repo, objective, status, created_at, "
                "updated_at) VALUES (?, '/work/repo', '/store/x.git', 'objective', ?, ?, ?)",
                [task_id, status.value, updated, updated],
            )
            complete, last = 0, None
            for seq in range(1, rng.randint(0, 6) + 1):
                state = rng.choice(("complete", "complete", "incomplete"))
                created = at(next(stamps))
                engine.db.execute(
                    "INSERT INTO checkpoints (task_id, seq, state, reason, created_at) "
                    "VALUES (?, ?, ?, 'manual', ?)",
                    [task_id, seq, state, created],
                )
                if state == "complete":
                    complete += 1
                    last = max(last or created, created)
            pending = 0
            for seq in range(rng.randint(0, 3)):
                state = rng.choice(("pending", "approved"))
                expires = rng.choice((None, "2000-01-01T00:00:00.000000Z"))
                engine.db.execute(
                    "INSERT INTO approvals (id, task_id, seq, action, risk, state, "
                    "requested_by, requested_at, expires_at) "
                    "VALUES (?, ?, ?, 'deploy', 'high', ?, 'agent', ?, ?)",
                    [f"{task_id}-{seq}", task_id, seq, state, now, expires],
                )
                pending += state == "pending" and expires is None  # an expired one does not count
            uncertain = 0
            for key in range(rng.randint(0, 3)):
                state = rng.choice(("uncertain", "confirmed"))
                engine.db.execute(
                    "INSERT INTO effects (task_id, key, kind, state, created_at, updated_at) "
                    "VALUES (?, ?, 'deploy', ?, ?, ?)",
                    [task_id, f"k{key}", state, now, now],
                )
                uncertain += state == "uncertain"
            verdict = None
            for _ in range(rng.randint(0, 3)):
                verdict = rng.choice(("ready", "stale", "blocked"))
                engine.db.execute(
                    "INSERT INTO validations (task_id, seq, verdict, findings, duration_ms, at, "
                    "actor, interface) VALUES (?, 1, ?, '[]', 1, ?, 'test', 'cli')",
                    [task_id, verdict, now],
                )
            expected[task_id] = {
                "status": status,
                "checkpoints": complete,
                "last": last,
                "updated": updated,
                "pending": pending,
                "uncertain": uncertain,
                "verdict": verdict,
            }
    return expected


def triage(expected: dict[str, dict[str, object]]) -> list[str]:
    """Open tasks with a pending approval or an uncertain effect first, then by status; each
    newest first."""
    ids = sorted(expected, key=lambda i: str(expected[i]["last"] or expected[i]["updated"]))
    ids.reverse()
    by_status = sorted(ids, key=lambda i: ORDER.index(expected[i]["status"]))  # type: ignore[arg-type]

    def hot(task_id: str) -> bool:
        want = expected[task_id]
        final = want["status"].is_final  # type: ignore[attr-defined]
        return not final and bool(want["pending"] or want["uncertain"])

    return [i for i in ids if hot(i)] + [i for i in by_status if not hot(i)]


def test_task_summaries_count_with_aggregates(tmp_path: Path) -> None:
    with Engine(tmp_path / "store") as engine:
        expected = fabricate(engine, 300)
        summaries = engine.task_summaries()
    assert len(summaries) == 300
    for summary in summaries:
        want = expected[summary.task.id]
        assert summary.task.status is want["status"]
        assert summary.checkpoint_count == want["checkpoints"]
        assert summary.last_checkpoint_at == want["last"]
        assert summary.pending_approvals == want["pending"]
        assert summary.uncertain_effects == want["uncertain"]
        assert summary.last_verdict == want["verdict"]


def test_first_screen_is_the_head_of_the_triage_order_with_the_same_figures(
    tmp_path: Path,
) -> None:
    with Engine(tmp_path / "store") as engine:
        expected = fabricate(engine, 300)
        everything = {s.task.id: s for s in engine.task_summaries()}
        for limit in (1, 25, 120, 500):
            first = engine.first_task_summaries(limit, ORDER)
            assert [s.task.id for s in first] == triage(expected)[:limit]
            assert all(s == everything[s.task.id] for s in first)
        counts = engine.task_status_counts()
    assert sum(counts.values()) == 300
    for status in TaskStatus:
        assert counts.get(status, 0) == sum(e["status"] is status for e in expected.values())


def test_an_empty_store_has_no_rollup(tmp_path: Path) -> None:
    with Engine(tmp_path / "store") as engine:
        assert engine.task_summaries() == []
        assert engine.first_task_summaries(50, ORDER) == []
        assert engine.task_status_counts() == {}


def test_the_last_verdict_is_the_newest_by_time_not_by_row(tmp_path: Path) -> None:
    """Sync brings in validations run elsewhere, possibly older than one run here."""
    with Engine(tmp_path / "store") as engine:
        with write_txn(engine.db):
            engine.db.execute(
                "INSERT INTO tasks (id, repo_root, store_repo, objective, status, created_at, "
                "updated_at) VALUES ('t', '/r', '/s.git', 'o', 'paused', ?, ?)",
                [at(1), at(1)],
            )
            for verdict, minute in (("ready", 50), ("stale", 10)):  # the older one arrives last
                engine.db.execute(
                    "INSERT INTO validations (task_id, seq, verdict, findings, duration_ms, at, "
                    "actor, interface) VALUES ('t', 1, ?, '[]', 1, ?, 'test', 'sync')",
                    [verdict, at(minute)],
                )
        (summary,) = engine.task_summaries()
        assert summary.last_verdict == "ready"
        (first,) = engine.first_task_summaries(10, ORDER)
        assert first.last_verdict == "ready"
