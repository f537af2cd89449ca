"""Checks on the task's limits: a checkpoint past its TTL is stale, a spent budget blocks."""

from __future__ import annotations

from core import clock
from core.restore.findings import Finding, Status, ValidationInputs, Verdict


def check_age(inputs: ValidationInputs) -> list[Finding]:
    """The checkpoint is younger than its TTL."""
    cp = inputs.checkpoint
    if cp is None:
        return []
    age_days = (clock.now() - clock.parse(cp.created_at)).total_seconds() / 86400
    if age_days > inputs.ttl_days:
        return [
            Finding(
                "age",
                Status.FAIL,
                f"checkpoint is {age_days:.1f} days old, past the {inputs.ttl_days:g}-day TTL",
                "validate again after refreshing the branch, or start fresh",
                Verdict.STALE,
            )
        ]
    return [Finding("age", Status.PASS, f"{clock.humanize_age(cp.created_at)} old, within the TTL")]


def check_budget(inputs: ValidationInputs) -> list[Finding]:
    """The task has budget left."""
    task = inputs.task
    spent = []
    if task.budget.tokens is not None and task.tokens_used >= task.budget.tokens:
        spent.append(f"tokens {task.tokens_used}/{task.budget.tokens}")
    if task.budget.usd is not None and task.usd_used >= task.budget.usd:
        spent.append(f"USD {task.usd_used:g}/{task.budget.usd:g}")
    if spent:
        return [
            Finding(
                "budget",
                Status.FAIL,
                f"budget spent: {', '.join(spent)}",
                "start a new task with a larger budget if the work is still worth it",
            )
        ]
    return [Finding("budget", Status.PASS, "budget left")]
