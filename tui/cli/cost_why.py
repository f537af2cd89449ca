"""`pitstop cost TASK --why`: the timeline of a task's automatic checkpoint decisions.

Every decision a hook made (core.engine.pays) — a milestone after a green step, a turn's
checkpoint, a wait's, the session's end — with the numbers the break-even model weighed.
"""

from __future__ import annotations

from typing import Any

from tui.cli.base import Context, emit


def show_decisions(ctx: Context, task_id: str, as_json: bool) -> None:
    """Print the decisions oldest first (JSON: the list with every number)."""
    found = ctx.engine().checkpoint_decisions(task_id)
    emit(as_json, found, lambda: _text(task_id, found))


def _text(task_id: str, found: list[dict[str, Any]]) -> str:
    from tui.render import table

    if not found:
        return f"{task_id}: no automatic checkpoint decisions recorded yet"
    rows = [
        (
            d["at"][:19].replace("T", " "),
            d.get("checkpoint_reason", ""),
            d.get("outcome", ""),
            d.get("reason") or "",
        )
        for d in found
    ]
    taken = sum(1 for d in found if str(d.get("outcome", "")).startswith("taken"))
    head = f"{task_id}: {len(found)} decisions, {taken} taken, {len(found) - taken} skipped"
    return head + "\n" + table(["at", "checkpoint", "outcome", "why"], rows)
