"""What restore validation speaks in: findings, verdicts, reports, and the inputs checks read.

Every check module under `core.restore.checks` returns `Finding`s from one `ValidationInputs`;
`core.restore.validate` runs them and folds the findings into a `Verdict`. Keeping the vocabulary
here lets each check module import it without importing the runner (or each other). The records
are `NamedTuple`s built without `typing` (`core.records`), not dataclasses: `dataclasses` loads
`inspect` and compiles each class, ~9 ms of every `pitstop validate` (issue 21).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, NamedTuple

    from core.models import Approval, Checkpoint, SideEffect, Task
    from core.snapshot import SourceRepo
else:
    from core.records import NamedTuple


class Status(StrEnum):
    """One check's outcome."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    UNKNOWN = "unknown"


class Verdict(StrEnum):
    """What the checks add up to; exit codes 0, 0, 3, 4, 5."""

    READY = "ready"
    READY_WITH_WARNINGS = "ready_with_warnings"
    STALE = "stale"
    BLOCKED = "blocked"
    UNSUPPORTED = "unsupported"

    @property
    def exit_code(self) -> int:
        """The exit code `pitstop validate` and `pitstop resume` end with for this verdict."""
        return {"ready": 0, "ready_with_warnings": 0, "stale": 3, "blocked": 4, "unsupported": 5}[
            self.value
        ]


class Finding(NamedTuple):
    """One check's result: why, and how to fix it; `weight` says what a failure means."""

    check: str
    status: Status
    message: str
    fix: str = ""
    weight: Verdict = Verdict.BLOCKED
    # A command the fix is about, shown to people but never stored with the finding (it may be
    # sealed text: another store's precondition check).
    command: str = ""
    # What the check saw that a later reader compares with the world, stored with the finding
    # (the branch check keeps the branch's tip: a verdict is out of date once the branch moves).
    observed: tuple[tuple[str, str], ...] = ()

    @property
    def shown_fix(self) -> str:
        """The fix as people read it: with the command it is about, when there is one."""
        return f"{self.fix}; the check is: {self.command}" if self.command else self.fix

    def as_dict(self, *, shown: bool = False) -> dict[str, str]:
        """The finding as JSON-ready text (`shown`: with the command, for people, not stored)."""
        return {
            "check": self.check,
            "status": self.status.value,
            "message": self.message,
            "fix": self.shown_fix if shown else self.fix,
            **dict(self.observed),
        }


class ValidationReport(NamedTuple):
    """Every finding and the verdict, for one checkpoint."""

    ref: str
    verdict: Verdict
    findings: tuple[Finding, ...]
    duration_ms: int
    advice: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready document."""
        return {
            "ref": self.ref,
            "verdict": self.verdict.value,
            "findings": [f.as_dict(shown=True) for f in self.findings],
            "duration_ms": self.duration_ms,
            "advice": self.advice,
        }


class ValidationInputs(NamedTuple):
    """Everything the checks look at, gathered by the engine (`environ`: the environment the
    credential and harness checks read; None reads the process's own)."""

    task: Task
    seq: int
    checkpoint: Checkpoint | None
    schema_error: str | None
    damage: list[str]
    source: SourceRepo | None
    source_error: str | None
    store_repo: Path
    scratch: Path
    effects: list[SideEffect]
    approvals: list[Approval]
    live_leases: list[str]
    fingerprint_key: bytes
    ttl_days: float
    harness_config: dict[str, str]
    into: Path | None = None
    offline: bool = False
    environ: Mapping[str, str] | None = None

    @property
    def environment(self) -> Mapping[str, str]:
        """The environment the checks read (`environ`, or the process's own)."""
        return os.environ if self.environ is None else self.environ


def verdict_of(findings: Sequence[Finding]) -> Verdict:
    """The worst failure decides; warnings alone give `ready_with_warnings`."""
    failed = {f.weight for f in findings if f.status is Status.FAIL}
    for level in (Verdict.UNSUPPORTED, Verdict.BLOCKED, Verdict.STALE):
        if level in failed:
            return level
    if any(f.status is Status.WARN for f in findings):
        return Verdict.READY_WITH_WARNINGS
    return Verdict.READY


Check = Callable[[ValidationInputs], list[Finding]]
"""One check: it reads the inputs and says what it found (one finding or several, or none)."""


def manifest_of(inputs: ValidationInputs) -> dict[str, Any]:
    """The checkpoint's manifest, or an empty one when there is no readable checkpoint."""
    return (inputs.checkpoint.manifest if inputs.checkpoint else None) or {}
