"""The page of one unsettled side effect, settled under the dashboard's confirmation rules.

The precondition check is shown before it runs and runs only when the approver presses its
button on a page that showed exactly that command. It runs through the dashboard's own
`Engine.run_effect_check`: its output is kept (redacted) as evidence, exit 0 settles the effect
as happened, and exit 1 settles nothing by itself — the page shows what the check printed and
"it did not happen" is recorded only once the approver confirms it, having read that output.
Anything else settles nothing.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple
from urllib.parse import quote

from starlette.responses import Response

from core.errors import UsageError
from core.ledger.checks import CheckVerdict, shell_quoted
from core.models import EffectState, SideEffect
from web.guard import Visit
from web.render import page

OUTPUT_LINES = 200  # the page shows a check's last lines; the evidence item keeps all of it
CHECK_SOURCE = "check"


class CheckShown(NamedTuple):
    """What a precondition check printed, for the page: from evidence, or just now."""

    evidence_id: int | None
    exit_code: int | None
    detail: str
    output: str
    not_happened: bool


def check_label(key: str) -> str:
    """The label `Engine.run_effect_check` gives the evidence item of an effect's check."""
    return f"precondition check of {key}"


def check_digest(check: str | None) -> str:
    """A short fingerprint of the check command the page showed (sent back with the form)."""
    return hashlib.sha256((check or "").encode()).hexdigest()[:32]


def shown_output(lines: list[bytes], total_lines: int) -> str:
    """Output lines as text, with how many earlier lines only the evidence item holds."""
    text = b"".join(lines).decode("utf-8", errors="replace").rstrip("\n")
    cut = total_lines - len(lines)
    return f"… {cut} earlier lines are in the evidence item\n{text}" if cut > 0 else text


def last_check(visit: Visit, found: SideEffect) -> CheckShown | None:
    """The newest kept run of this effect's check since it last moved, or None."""
    if found.check is None:
        return None
    items = [
        item
        for item in visit.engine.list_evidence(found.task_id)
        if item.source == CHECK_SOURCE
        and item.label == check_label(found.key)
        and item.started_at >= found.updated_at
    ]
    if not items:
        return None
    item = items[-1]
    lines = visit.engine.evidence_last_lines(item.id, OUTPUT_LINES)
    return CheckShown(
        item.id,
        item.exit_code,
        f"{_ended(item.exit_code)}; its output is evidence #{item.id}",
        shown_output(lines, item.lines_total),
        item.exit_code == 1,
    )


def _ended(exit_code: int | None) -> str:
    return f"check exit {exit_code}" if exit_code is not None else "the check did not end"


def effect_path(found: SideEffect) -> str:
    """The page of an effect."""
    return f"/effects/{quote(found.task_id, safe='')}/{quote(found.key, safe='')}"


def effect(visit: Visit) -> Response:
    """One side effect, with its check and the ways to settle it."""
    params = visit.request.path_params
    return effect_page(visit, params["task_id"], params["key"])


def effect_page(
    visit: Visit,
    task_id: str,
    key: str,
    *,
    notice: str = "",
    error: str = "",
    checked: CheckShown | None = None,
    status: int = 200,
) -> Response:
    """Render the effect's page; `checked` is a check just run (else the last one kept)."""
    found = visit.engine.get_effect(task_id, key)
    settleable = found.state in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN)
    if checked is None and settleable:
        checked = last_check(visit, found)
    return page(
        visit.request,
        "effect.html",
        status=status,
        visit=visit,
        effect=found,
        shown_check=shell_quoted(found.check) if found.check else None,
        check_digest=check_digest(found.check),
        settleable=settleable,
        notice=notice,
        error=error,
        checked=checked,
        path=effect_path(found),
    )


def check(visit: Visit) -> Response:
    """Run the effect's precondition check, on the approver's explicit choice only."""
    params = visit.request.path_params
    task_id, key = params["task_id"], params["key"]
    if visit.field("run") != "yes":
        raise UsageError("the check runs only when you press Run the check")
    found = visit.engine.get_effect(task_id, key)
    if visit.field("shown") != check_digest(found.check):
        return effect_page(
            visit,
            task_id,
            key,
            status=409,
            error="The check changed since this page showed it; read it again before running it.",
        )
    outcome = visit.engine.run_effect_check(task_id, key, confirmed=visit.field("trust") == "yes")
    result = outcome.result
    lines = result.output.splitlines(keepends=True)
    shown = CheckShown(
        outcome.evidence_id,
        result.exit_code,
        result.detail,
        shown_output(lines[-OUTPUT_LINES:], len(lines)),
        not outcome.settled and result.verdict is CheckVerdict.NOT_HAPPENED,
    )
    if outcome.settled:
        notice = f"{result.detail}: {key} is now {outcome.effect.state.value}"
    elif shown.not_happened:
        notice = "The check says it did not happen. Read its output, then confirm below."
    else:
        notice = f"Nothing was settled: {result.detail}. Settle it by hand once you know."
    return effect_page(visit, task_id, key, notice=notice, checked=shown)


def settle(visit: Visit) -> Response:
    """Record that an unsettled effect did, or did not, happen; with a reason.

    "It did not happen" lets the agent run the action again, so it needs the approver to tick
    that they read the check's output (or that there is none), as the dashboard asks. Citing a
    check run (`evidence`) it must be this effect's check, and it must have exited 1.
    """
    params = visit.request.path_params
    task_id, key = params["task_id"], params["key"]
    state = visit.field("state")
    reason = visit.field("reason").strip()
    if state not in (EffectState.CONFIRMED.value, EffectState.FAILED.value):
        raise UsageError("choose whether it happened (confirmed) or not (failed)")
    if not reason:
        return effect_page(
            visit, task_id, key, error="Say why: it is kept in the audit log.", status=400
        )
    if state == EffectState.FAILED.value and visit.field("seen") != "yes":
        return effect_page(
            visit,
            task_id,
            key,
            status=400,
            error="Tick that you saw the check's answer: marking it failed lets the agent run "
            "the action again.",
        )
    cited = visit.field("evidence")
    if cited and state == EffectState.FAILED.value:
        reason = _cited_reason(visit, task_id, key, cited, reason)
    moved = visit.engine.move_effect(task_id, key, EffectState(state), reason=reason)
    return effect_page(visit, task_id, key, notice=f"{key} is now {moved.state.value}")


def _cited_reason(visit: Visit, task_id: str, key: str, cited: str, reason: str) -> str:
    """The audit reason of a "did not happen" read from a check's output, as the dashboard
    writes it; refused unless the evidence is this effect's check and it exited 1."""
    item = visit.engine.get_evidence(int(cited)) if cited.isdigit() else None
    if (
        item is None
        or item.task_id != task_id
        or item.source != CHECK_SOURCE
        or item.label != check_label(key)
        or item.exit_code != 1
    ):
        raise UsageError(f"evidence {cited} is not a run of {key}'s check that exited 1")
    return f"precondition check exit 1, evidence #{item.id}, read by the operator: {reason}"
