"""Checks on the ledger: no side effect left uncertain, no approval pending, no other lease.

Resuming past any of these could do an action twice or without the approval it waits for, so
each one blocks until a person settles it.
"""

from __future__ import annotations

from core import store
from core.ledger.checks import shell_quoted
from core.models import ApprovalState, EffectState, SideEffect
from core.restore.findings import Finding, Status, ValidationInputs


def check_effects(inputs: ValidationInputs) -> list[Finding]:
    """No side effect is uncertain or in progress."""
    blocking = [
        e for e in inputs.effects if e.state in (EffectState.UNCERTAIN, EffectState.IN_PROGRESS)
    ]
    if not blocking:
        return [Finding("side-effects", Status.PASS, "no uncertain or in-progress side effect")]
    return [_unsettled(e) for e in blocking]


def _unsettled(effect: SideEffect) -> Finding:
    """The finding of one unsettled effect; another store's check is shown, not run blind."""
    e = effect
    settle = f"`pitstop effect confirm|fail --task {e.task_id} --key {e.key} --reason …`"
    foreign = e.check_foreign and bool(e.check) and e.check != store.UNREADABLE
    check = f"pitstop effect check --task {e.task_id} --key {e.key}"
    return Finding(
        "side-effects",
        Status.FAIL,
        # the kind is sealed text, and a finding is stored plain: the key names the effect
        f"side effect {e.key} is {e.state.value}"
        + (" and its runner is still alive" if e.runner_alive else ""),
        f"its precondition check came from another store: read it, and if it is safe, "
        f"`{check} --yes-run-check`; or {settle}"
        if foreign
        else f"settle it: `{check}`, or {settle}",
        command=shell_quoted(e.check or "") if foreign else "",
    )


def check_approvals(inputs: ValidationInputs) -> list[Finding]:
    """No approval is pending."""
    pending = [a for a in inputs.approvals if a.state is ApprovalState.PENDING]
    if not pending:
        return [Finding("approvals", Status.PASS, "no pending approval")]
    return [
        Finding(
            "approvals",
            Status.FAIL,
            # Findings are stored plain: the action's text (sealed) stays out of them.
            f"approval {a.id} is pending ({a.risk.value} risk)",
            f"decide it: `pitstop approval approve|reject {a.id} --reason …`",
        )
        for a in pending
    ]


def check_lease(inputs: ValidationInputs) -> list[Finding]:
    """No other resume holds the task's lease."""
    if inputs.live_leases:
        return [
            Finding(
                "lease",
                Status.FAIL,
                f"another resume holds the lease: {inputs.live_leases[0]}",
                "wait for it to finish, or release it if its holder is gone",
            )
        ]
    return [Finding("lease", Status.PASS, "no other resume holds a lease")]
