"""The dashboard's rollups: every task with its counts, in one statement, and the first screenful.

The task list shows per task its checkpoints, pending approvals, uncertain effects and last
verdict; asking each table once per task would cost a query per row, so these statements
aggregate (or look up by covering index) for all the tasks they return at once.
"""

# String annotations cost nothing: `core.records.NamedTuple` keeps them as written (no
# `ForwardRef` compile as `typing.NamedTuple` does); `typing` is for type checkers only.
from __future__ import annotations

import json
from collections.abc import Mapping

from core.models import ApprovalState, CheckpointState, EffectState, Risk, Task, TaskStatus
from core.store.db import Database
from core.store.sealed_text import TASK_SEALED, TextKeys, prefetched
from core.store.tasks import task_from_row

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

# What the dashboard lists beside a task: `(task, complete checkpoints, newest checkpoint's time,
# pending approvals not yet expired, uncertain effects, verdict of the newest validation or None,
# and what triage weighs: `TriageFacts`)`.
TaskRollup = tuple[Task, int, str | None, int, int, str | None, "TriageFacts"]


class TriageFacts(NamedTuple):
    """What triage weighs beyond the listed counts: the pending approvals by risk and the oldest
    one's time, effects still in progress, when the newest verdict was reached, and whether its
    inputs changed since (a newer checkpoint, or an approval or effect that moved after it), and
    the branch the verdict was reached on with its tip then (the engine compares it with the
    repository's, `branch_moved`)."""

    pending_high: int = 0
    pending_medium: int = 0
    oldest_pending_at: str | None = None
    in_progress_effects: int = 0
    validated_at: str | None = None
    verdict_outdated: bool = False
    validated_branch: str | None = None
    validated_branch_head: str | None = None
    branch_moved: bool = False
    drill_verdict: str | None = None  # the newest restore drill's, and when it ran
    drilled_at: str | None = None


def _branch_seen(field: str) -> str:
    """SQL for what the newest validation's branch finding kept (`branch` or `branch_head`);
    NULL when it kept none (an older Pitstop's, a detached HEAD) or its findings are damaged."""
    return f"""CASE WHEN json_valid(v.findings) THEN (
        SELECT json_extract(f.value, '$.{field}') FROM json_each(v.findings) AS f
        WHERE json_extract(f.value, '$.check') = 'branch'
          AND json_type(f.value, '$.branch_head') = 'text' LIMIT 1) END"""


# One statement for the whole task list: each per-task figure is a GROUP BY over its table (never
# one query per task), joined to the tasks. The covering indexes of 0006_dashboard_indexes let
# each aggregate read an index alone, so 100,000 checkpoints cost one index scan.
_TASK_ROLLUP_SQL = """
SELECT t.*,
       COALESCE(c.n, 0) AS rollup_checkpoints,
       c.last AS rollup_last_checkpoint_at,
       COALESCE(a.n, 0) AS rollup_pending_approvals,
       COALESCE(e.n, 0) AS rollup_uncertain_effects,
       v.verdict AS rollup_last_verdict,
       COALESCE(a.high, 0) AS rollup_pending_high,
       COALESCE(a.medium, 0) AS rollup_pending_medium,
       a.oldest AS rollup_oldest_pending_at,
       COALESCE(e.running, 0) AS rollup_in_progress_effects,
       v.at AS rollup_validated_at,
       (v.verdict IS NOT NULL AND (COALESCE(v.seq, 0) < COALESCE(c.last_seq, 0)
                                   OR COALESCE(l.changed, '') > v.at)) AS rollup_verdict_outdated,
       {branch} AS rollup_validated_branch,
       {branch_head} AS rollup_validated_branch_head,
       dr.verdict AS rollup_drill_verdict,
       dr.at AS rollup_drilled_at
FROM tasks AS t
LEFT JOIN (
    SELECT task_id, COUNT(*) AS n, MAX(created_at) AS last, MAX(seq) AS last_seq
    FROM checkpoints WHERE state = :complete GROUP BY task_id
) AS c ON c.task_id = t.id
LEFT JOIN (
    SELECT task_id, COUNT(*) AS n, SUM(risk = :high) AS high, SUM(risk = :medium) AS medium,
           MIN(requested_at) AS oldest
    FROM approvals
    WHERE state = :pending AND (expires_at IS NULL OR expires_at > :now) GROUP BY task_id
) AS a ON a.task_id = t.id
LEFT JOIN (
    SELECT task_id, SUM(state = :uncertain) AS n, SUM(state = :in_progress) AS running
    FROM effects WHERE state IN (:uncertain, :in_progress) GROUP BY task_id
) AS e ON e.task_id = t.id
LEFT JOIN (
    -- SQLite takes a bare column from the row that holds the MAX: the newest validation's verdict
    -- (by time: a validation fetched by sync may be older than one run here).
    SELECT task_id, verdict, seq, at, findings, MAX(at || printf('|%012d', id)) AS newest
    FROM validations GROUP BY task_id
) AS v ON v.task_id = t.id
LEFT JOIN (
    -- When the task's ledger last moved: a verdict reached before that may no longer hold.
    SELECT task_id, MAX(changed) AS changed FROM (
        SELECT task_id, COALESCE(decided_at, requested_at) AS changed FROM approvals
        UNION ALL SELECT task_id, updated_at FROM effects
    ) GROUP BY task_id
) AS l ON l.task_id = t.id AND v.verdict IS NOT NULL
LEFT JOIN (
    SELECT task_id, verdict, at, MAX(at || id) AS newest FROM drills GROUP BY task_id
) AS dr ON dr.task_id = t.id
ORDER BY t.updated_at DESC
""".format(branch=_branch_seen("branch"), branch_head=_branch_seen("branch_head"))

_PARAMETERS = {
    "complete": CheckpointState.COMPLETE.value,
    "pending": ApprovalState.PENDING.value,
    "uncertain": EffectState.UNCERTAIN.value,
    "in_progress": EffectState.IN_PROGRESS.value,
    "high": Risk.HIGH.value,
    "medium": Risk.MEDIUM.value,
}


def task_rollups(db: Database, now_iso: str, keys: TextKeys | None = None) -> list[TaskRollup]:
    """Every task, most recently updated first, with what the dashboard lists beside it.

    Each entry is `(task, complete checkpoints, newest checkpoint's time, pending approvals not
    yet expired at `now_iso`, uncertain effects, verdict of the newest validation or None)`;
    the task's sealed fields are opened with `keys` (without: the marker).
    """
    rows = list(db.query(_TASK_ROLLUP_SQL, {**_PARAMETERS, "now": now_iso}))
    prefetched(keys, rows, "id")
    return [_rollup_entry(row, keys) for row in rows]


# The first screenful, before the whole list: the `limit` tasks that come first in the order the
# dashboard triages (statuses in `order`, then the most recent activity), each figure a correlated
# index lookup for those tasks only, so its cost does not grow with the store's checkpoints.
# The page comes back as ONE row holding a JSON array: every row fetched from SQLite retakes the
# GIL, and while the UI thread is busy painting each retake can wait a whole switch interval.
_TASK_JSON_FIELDS = (
    "id", "repo_root", "store_repo", "objective", "status", "harness", "harness_version", "model",
    "model_version", "budget_tokens", "budget_usd", "budget_minutes", "tokens_used", "usd_used",
    "credentials", "approvers", "created_at", "updated_at",
)  # fmt: skip


def _json_value(column: str) -> str:
    """A task column as JSON holds it: a sealed one (a BLOB) as `[hex]`, JSON having no bytes."""
    if column not in TASK_SEALED:
        return f"t.{column}"
    value = f"t.{column}"
    return f"CASE typeof({value}) WHEN 'blob' THEN json_array(hex({value})) ELSE {value} END"


# Which tasks a page holds: one status's, or every open task holding a pending approval or an
# effect whose outcome is not known yet (few, and what triage weighs most).
_ONE_STATUS = "t.status = :status"
_HOT = """t.status IN (:running, :paused, :waiting, :resuming) AND t.id IN (
          SELECT task_id FROM approvals
          WHERE state = :pending AND (expires_at IS NULL OR expires_at > :now)
          UNION SELECT task_id FROM effects WHERE state IN (:uncertain, :in_progress))"""

_FIRST_ROLLUP_SQL = f"""
WITH page AS (
    SELECT t.id AS id,
           (SELECT MAX(created_at) FROM checkpoints
            WHERE state = :complete AND task_id = t.id) AS last
    FROM tasks AS t
    WHERE {{where}}
    ORDER BY COALESCE(last, t.updated_at) DESC
    LIMIT :limit
)
SELECT json_group_array(json_object(
    {", ".join(f"'{name}', {_json_value(name)}" for name in _TASK_JSON_FIELDS)},
    'rollup_checkpoints', (SELECT COUNT(*) FROM checkpoints
                           WHERE state = :complete AND task_id = t.id),
    'rollup_last_checkpoint_at', page.last,
    'rollup_pending_approvals', (SELECT COUNT(*) FROM approvals
                                 WHERE state = :pending AND task_id = t.id
                                   AND (expires_at IS NULL OR expires_at > :now)),
    'rollup_uncertain_effects', (SELECT COUNT(*) FROM effects
                                 WHERE state = :uncertain AND task_id = t.id),
    'rollup_last_verdict', v.verdict,
    'rollup_pending_high', (SELECT COUNT(*) FROM approvals
                            WHERE state = :pending AND task_id = t.id AND risk = :high
                              AND (expires_at IS NULL OR expires_at > :now)),
    'rollup_pending_medium', (SELECT COUNT(*) FROM approvals
                              WHERE state = :pending AND task_id = t.id AND risk = :medium
                                AND (expires_at IS NULL OR expires_at > :now)),
    'rollup_oldest_pending_at', (SELECT MIN(requested_at) FROM approvals
                                 WHERE state = :pending AND task_id = t.id
                                   AND (expires_at IS NULL OR expires_at > :now)),
    'rollup_in_progress_effects', (SELECT COUNT(*) FROM effects
                                   WHERE state = :in_progress AND task_id = t.id),
    'rollup_validated_at', v.at,
    'rollup_verdict_outdated', v.verdict IS NOT NULL AND (
        COALESCE(v.seq, 0) < (SELECT COALESCE(MAX(seq), 0) FROM checkpoints
                              WHERE state = :complete AND task_id = t.id)
        OR (SELECT MAX(COALESCE(decided_at, requested_at)) FROM approvals WHERE task_id = t.id)
           > v.at
        OR (SELECT MAX(updated_at) FROM effects WHERE task_id = t.id) > v.at),
    'rollup_validated_branch', {_branch_seen("branch")},
    'rollup_validated_branch_head', {_branch_seen("branch_head")},
    'rollup_drill_verdict', (SELECT verdict FROM drills WHERE task_id = t.id
                             ORDER BY at DESC, id DESC LIMIT 1),
    'rollup_drilled_at', (SELECT MAX(at) FROM drills WHERE task_id = t.id)
))
FROM page JOIN tasks AS t ON t.id = page.id
LEFT JOIN validations AS v ON v.id = (SELECT id FROM validations
                                      WHERE task_id = t.id ORDER BY at DESC, id DESC LIMIT 1)
"""


def first_task_rollups(
    db: Database,
    now_iso: str,
    limit: int,
    order: tuple[TaskStatus, ...],
    keys: TextKeys | None = None,
) -> list[TaskRollup]:
    """The first `limit` entries of `task_rollups` for a first screen: open tasks holding a
    pending approval or an unsettled effect (what triage weighs most), then statuses as listed
    in `order` (any others last), each newest checkpoint (or update) first."""
    # One status at a time, in triage order, until the page is full: the lookups run for the
    # tasks that can make the page (those needing a person come first), not for every task.
    statuses = [*order, *(status for status in TaskStatus if status not in order)]
    passes: list[TaskStatus | None] = [None, *statuses]  # None: the open tasks with a pending item
    open_statuses = {f"{s.value}": s.value for s in TaskStatus if not s.is_final}
    rows: dict[str, dict[str, Any]] = {}
    for status in passes:
        if len(rows) >= limit:
            break
        where, more = (_HOT, open_statuses) if status is None else (_ONE_STATUS, {})
        (page,) = db.execute(
            _FIRST_ROLLUP_SQL.format(where=where),
            {
                **_PARAMETERS,
                **more,
                "now": now_iso,
                "limit": limit,
                "status": status.value if status else None,
            },
        ).fetchone()
        # The aggregate does not promise the page's order: sort it again, as the SQL did.
        found = json.loads(page or "[]")
        found.sort(
            key=lambda row: row["rollup_last_checkpoint_at"] or row["updated_at"], reverse=True
        )
        for row in found:
            rows.setdefault(row["id"], row)  # a hot task comes back in its status's pass too
    page_rows = [_unhexed(row) for row in list(rows.values())[:limit]]
    prefetched(keys, page_rows, "id")
    return [_rollup_entry(row, keys) for row in page_rows]


def _unhexed(row: dict[str, Any]) -> dict[str, Any]:
    """A JSON rollup row with its sealed fields as the bytes the table holds."""
    for column in TASK_SEALED:
        if isinstance(row.get(column), list):
            row[column] = bytes.fromhex(row[column][0])
    return row


def _rollup_entry(row: Mapping[str, Any], keys: TextKeys | None) -> TaskRollup:
    """One rollup row (either statement's) as the dashboard's entry."""
    return (
        task_from_row(row, keys),
        row["rollup_checkpoints"],
        row["rollup_last_checkpoint_at"],
        row["rollup_pending_approvals"],
        row["rollup_uncertain_effects"],
        row["rollup_last_verdict"],
        TriageFacts(
            row["rollup_pending_high"] or 0,
            row["rollup_pending_medium"] or 0,
            row["rollup_oldest_pending_at"],
            row["rollup_in_progress_effects"] or 0,
            row["rollup_validated_at"],
            bool(row["rollup_verdict_outdated"]),
            row.get("rollup_validated_branch"),
            row.get("rollup_validated_branch_head"),
            False,
            row.get("rollup_drill_verdict"),
            row.get("rollup_drilled_at"),
        ),
    )
