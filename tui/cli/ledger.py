"""What `pitstop effect …` and `pitstop approval …` share: exit codes, warnings and conflicts.

Both groups answer with the same exit codes (an agent's script branches on them), and both mark
what ledger sync set aside because another machine decided it differently.
"""

from __future__ import annotations

from typing import Any

import click

EXIT_CODES_HELP = """\b
Exit codes: 0 done (or already done); 1 refused (illegal transition, not an approver, an
approval already decided or expired, a finished task) or failure; 2 usage error or unknown
task, key or approval; 3 needs settling (uncertain or in_progress, and no check could tell);
4 needs approval (none, pending, rejected or expired); 5 busy (another guard is running this
key). `effect guard` also ends with the action's own exit code when it failed, 124 when it
timed out and 128+N when signal N ended it.
"""


def warn(message: str) -> None:
    """Print one `pitstop: …` line to stderr (the action's own output keeps stdout)."""
    click.echo(f"pitstop: {message}", err=True)


def conflict_lines(engine: Any, task_id: str | None, entity: str, entity_id: str) -> list[str]:
    """What ledger sync set aside for one effect or approval (decided differently elsewhere)."""
    from core.ledger.merge import describe_conflict

    return [
        describe_conflict(record)
        for record in engine.ledger_conflicts(task_id, entity)
        if record["entity_id"] == entity_id
    ]


def conflicted_ids(engine: Any, task_id: str | None, entity: str) -> set[tuple[str, str]]:
    """The (task, id) pairs of effects or approvals that have a sync conflict."""
    return {(c["task_id"], c["entity_id"]) for c in engine.ledger_conflicts(task_id, entity)}
