"""Restore validation: may this checkpoint still be resumed safely, and if not, what to do.

Each check of DESIGN §5 yields findings (pass / warn / fail / unknown, one line of why, one of
how to fix). A failing finding carries what it means for the verdict: `unsupported` (a format
from a newer Pitstop), `blocked` (resuming now would be wrong: damage, an unsettled side effect,
a pending approval, a live lease, a missing credential, budget spent) or `stale` (the world
moved: the branch touched the same files, lockfiles changed, the checkpoint outlived its TTL).
Checks that need the network say `unknown` offline; they never fail for lack of it.

The checks live in `core.restore.checks`, one module per subject, and the vocabulary (findings,
verdicts, reports) in `core.restore.findings`; this module runs them in order and is where
callers import all of it from.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from core.restore.checks.checkpoint import check_complete, check_schema
from core.restore.checks.environment import check_credentials, check_runtime, check_transcript
from core.restore.checks.ledger import check_approvals, check_effects, check_lease
from core.restore.checks.limits import check_age, check_budget
from core.restore.checks.repository import (
    check_base_commit,
    check_branch,
    check_lockfiles,
    check_target,
    check_upstream,
)
from core.restore.checks.tree_paths import check_tree_paths
from core.restore.findings import (
    Check,
    Finding,
    Status,
    ValidationInputs,
    ValidationReport,
    Verdict,
    verdict_of,
)

__all__ = [
    "CHECKS",
    "Check",
    "Finding",
    "Status",
    "ValidationInputs",
    "ValidationReport",
    "Verdict",
    "run_checks",
    "verdict_of",
]

CHECKS: tuple[Check, ...] = (
    check_schema,
    check_complete,
    check_tree_paths,
    check_base_commit,
    check_branch,
    check_target,
    check_lockfiles,
    check_runtime,
    check_credentials,
    check_upstream,
    check_transcript,
    check_effects,
    check_approvals,
    check_age,
    check_budget,
    check_lease,
)


def run_checks(
    inputs: ValidationInputs, progress: Callable[[Finding], None] | None = None
) -> ValidationReport:
    """Run every check in order (reporting each finding as it comes) and decide the verdict."""
    started = time.monotonic()
    findings: list[Finding] = []
    ref = f"{inputs.task.id}@{inputs.seq}"
    for check in CHECKS:
        try:
            produced = check(inputs)
        except Exception as exc:  # one broken check must not hide the others
            produced = [
                Finding(
                    check.__name__.removeprefix("check_"),
                    Status.UNKNOWN,
                    f"could not be checked: {exc}",
                    "run `pitstop validate` again",
                )
            ]
        for finding in produced:
            findings.append(finding)
            if progress:
                progress(finding)
        if findings and findings[0].check == "schema" and findings[0].status is Status.FAIL:
            break  # a manifest from the future is never half-read
    return ValidationReport(
        ref=ref,
        verdict=verdict_of(findings),
        findings=tuple(findings),
        duration_ms=int((time.monotonic() - started) * 1000),
    )
