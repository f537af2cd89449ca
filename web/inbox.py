"""The pages: the inbox across tasks and one approval in context (effects: `web.effects`).

Each handler is a view over `core.engine` calls made by the request's device (see
`web.guard.paired`); decisions and settlements go through the same use-cases as the CLI and the
dashboard, so they are checked, written in one `BEGIN IMMEDIATE` transaction and audited alike
(interface `web`, the approver, the device).
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import quote

from starlette.responses import RedirectResponse, Response

from core.errors import UsageError
from core.ledger.checks import shell_quoted
from core.models import Approval, EffectState, SideEffect
from web.guard import Visit
from web.render import page

INBOX_SHOWN = 200  # a phone lists this many; the rest are counted, never silently dropped


class Inbox(NamedTuple):
    """What waits for an approver: pending approvals (riskiest, then oldest first) and effects."""

    approvals: list[Approval]
    more_approvals: int
    held: set[tuple[str, str]]
    effects: list[SideEffect]


def read_inbox(visit: Visit) -> Inbox:
    """The pending approvals and the side effects nobody knows the outcome of."""
    engine = visit.engine
    shown, pending = engine.pending_approvals(INBOX_SHOWN)
    unsettled = [
        effect
        for effect in engine.list_effects(None, (EffectState.UNCERTAIN, EffectState.IN_PROGRESS))
        if effect.needs_settling
    ]
    return Inbox(shown, pending - len(shown), engine.held_prompts(), unsettled)


def inbox(visit: Visit) -> Response:
    """The inbox page; after a decision it says what was decided."""
    decided = visit.request.query_params.get("decided")
    done = visit.engine.get_approval(decided) if decided else None
    return page(
        visit.request,
        "inbox.html",
        visit=visit,
        inbox=read_inbox(visit),
        done=done,
        dashboard=visit.request.app.state.web.dashboard_url,
    )


def inbox_part(visit: Visit) -> Response:
    """Just the lists, for the page's live refresh."""
    return page(visit.request, "inbox_lists.html", visit=visit, inbox=read_inbox(visit))


def approval(visit: Visit) -> Response:
    """One approval with its context, and the approve / reject form while it is pending."""
    return _approval_page(visit, visit.request.path_params["approval_id"])


def _approval_page(visit: Visit, approval_id: str, error: str = "", status: int = 200) -> Response:
    context = visit.engine.approval_context(approval_id)
    return page(
        visit.request,
        "approval.html",
        status=status,
        visit=visit,
        ctx=context,
        error=error,
        shown_check=shell_quoted(context.effect.check)
        if context.effect and context.effect.check
        else None,
    )


def decide(visit: Visit) -> Response:
    """Approve or reject with a reason, then back to the inbox."""
    approval_id = visit.request.path_params["approval_id"]
    decision = visit.field("decision")
    reason = visit.field("reason").strip()
    if decision not in ("approve", "reject"):
        raise UsageError("choose approve or reject")
    if not reason:
        return _approval_page(
            visit, approval_id, "Say why: the reason is kept in the audit log.", 400
        )
    decided = visit.engine.decide_approval(approval_id, decision == "approve", reason)
    return RedirectResponse(f"/?decided={quote(decided.id)}", status_code=303)


def forget(visit: Visit) -> Response:
    """Unpair this device: its session is revoked and its cookie dropped."""
    from web.guard import COOKIE, refusal

    visit.engine.revoke_device(visit.device.id)
    response = refusal(visit.request, 200, "Unpaired", "This browser is no longer paired.")
    response.delete_cookie(COOKIE, path="/")
    return response
