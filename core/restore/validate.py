"""Restore validation: may this checkpoint still be resumed safely, and if not, what to do.

Each check of DESIGN §5 yields findings (pass / warn / fail / unknown, one line of why, one of
how to fix). A failing finding carries what it means for the verdict: `unsupported` (a format
from a newer Pitstop), `blocked` (resuming now would be wrong: damage, an unsettled side effect,
a pending approval, a live lease, a missing credential, budget spent) or `stale` (the world
moved: the branch touched the same files, lockfiles changed, the checkpoint outlived its TTL).
Checks that need the network say `unknown` offline; they never fail for lack of it.
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from core import clock
from core.git.run import run_git
from core.models import (
    Approval,
    ApprovalState,
    Checkpoint,
    CheckpointState,
    EffectState,
    SideEffect,
    Task,
)
from core.restore import worktree
from core.security.fingerprint import fingerprint
from core.snapshot import SourceRepo, git_version
from core.store import MANIFEST_SCHEMA


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
        return {"ready": 0, "ready_with_warnings": 0, "stale": 3, "blocked": 4, "unsupported": 5}[
            self.value
        ]


@dataclass(frozen=True)
class Finding:
    """One check's result: why, and how to fix it; `weight` says what a failure means."""

    check: str
    status: Status
    message: str
    fix: str = ""
    weight: Verdict = Verdict.BLOCKED

    def as_dict(self) -> dict[str, str]:
        return {
            "check": self.check,
            "status": self.status.value,
            "message": self.message,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class ValidationReport:
    """Every finding and the verdict, for one checkpoint."""

    ref: str
    verdict: Verdict
    findings: tuple[Finding, ...]
    duration_ms: int
    advice: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "verdict": self.verdict.value,
            "findings": [f.as_dict() for f in self.findings],
            "duration_ms": self.duration_ms,
            "advice": self.advice,
        }


@dataclass
class ValidationInputs:
    """Everything the checks look at, gathered by the engine."""

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
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))


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


def _manifest(inputs: ValidationInputs) -> dict[str, Any]:
    return (inputs.checkpoint.manifest if inputs.checkpoint else None) or {}


def check_schema(inputs: ValidationInputs) -> list[Finding]:
    if inputs.schema_error:
        return [
            Finding(
                "schema",
                Status.FAIL,
                inputs.schema_error,
                "upgrade pitstop to read this checkpoint",
                Verdict.UNSUPPORTED,
            )
        ]
    schema = _manifest(inputs).get("schema")
    if (
        inputs.checkpoint
        and inputs.checkpoint.state is CheckpointState.COMPLETE
        and schema != MANIFEST_SCHEMA
    ):
        return [
            Finding(
                "schema",
                Status.FAIL,
                f"manifest schema {schema!r} is not supported",
                "upgrade pitstop to read this checkpoint",
                Verdict.UNSUPPORTED,
            )
        ]
    return [Finding("schema", Status.PASS, f"manifest schema {MANIFEST_SCHEMA}")]


def check_complete(inputs: ValidationInputs) -> list[Finding]:
    cp = inputs.checkpoint
    if cp is None or cp.state is not CheckpointState.COMPLETE:
        state = cp.state.value if cp else "missing"
        why = f": {cp.failure}" if cp and cp.failure else ""
        return [
            Finding(
                "complete",
                Status.FAIL,
                f"checkpoint is {state}{why}",
                "resume the newest complete checkpoint instead (`pitstop checkpoints`)",
            )
        ]
    if inputs.damage:
        return [
            Finding(
                "complete",
                Status.FAIL,
                f"damaged: {inputs.damage[0]}",
                "resume an earlier checkpoint; this one cannot be restored",
            )
        ]
    return [Finding("complete", Status.PASS, "complete; every stored part verifies")]


def check_base_commit(inputs: ValidationInputs) -> list[Finding]:
    base = _manifest(inputs).get("repository", {}).get("base_commit")
    if inputs.source is None:
        return [
            Finding(
                "repository",
                Status.FAIL,
                inputs.source_error or "repository missing",
                "restore the repository at its old path, or resume with --into a new "
                "directory from a clone",
                Verdict.BLOCKED,
            )
        ]
    if not base:
        return [Finding("base-commit", Status.PASS, "the repository had no commit yet")]
    if worktree.has_commit(inputs.source, base):
        return [
            Finding("base-commit", Status.PASS, f"base commit {base[:12]} is in the repository")
        ]
    return [
        Finding(
            "base-commit",
            Status.WARN,
            f"base commit {base[:12]} is gone from the repository (kept in the store)",
            "resume brings it back from the Pitstop store; nothing to do",
            Verdict.STALE,
        )
    ]


def check_branch(inputs: ValidationInputs) -> list[Finding]:
    repo = _manifest(inputs).get("repository", {})
    branch, base = repo.get("branch"), repo.get("base_commit")
    if inputs.source is None or not base:
        return []
    if not branch:
        return [Finding("branch", Status.PASS, "checkpoint was taken on a detached HEAD")]
    changed = {c["path"] for c in _manifest(inputs).get("snapshot", {}).get("changed_files", [])}
    drift = worktree.branch_drift(inputs.source, branch, base, changed)
    if not drift.exists:
        return [
            Finding(
                "branch",
                Status.WARN,
                f"branch {branch} no longer exists",
                f"resume creates pitstop/{inputs.task.id} from the base commit",
            )
        ]
    if drift.rewritten:
        return [
            Finding(
                "branch",
                Status.FAIL,
                f"branch {branch} was rewritten: the base commit {base[:12]} is no longer "
                "in its history",
                f"rebase the resumed work onto {branch} after resuming, or start fresh",
                Verdict.STALE,
            )
        ]
    if not drift.commits:
        return [Finding("branch", Status.PASS, f"branch {branch} has not moved")]
    listed = "; ".join(drift.commits[:3]) + (" …" if len(drift.commits) > 3 else "")
    if drift.touched:
        return [
            Finding(
                "branch",
                Status.FAIL,
                f"branch {branch} moved {len(drift.commits)} commit(s) ({listed}) touching "
                f"files this checkpoint changed: {', '.join(drift.touched[:5])}",
                f"resume, then merge or rebase onto {branch} and resolve those files; or "
                "start fresh if cheaper (`pitstop cost`)",
                Verdict.STALE,
            )
        ]
    return [
        Finding(
            "branch",
            Status.WARN,
            f"branch {branch} moved {len(drift.commits)} commit(s) ({listed}), none "
            "touching this checkpoint's files",
            f"after resuming, rebase onto {branch} (no conflicts expected)",
        )
    ]


def check_target(inputs: ValidationInputs) -> list[Finding]:
    into = inputs.into
    if into is None:
        return [Finding("target", Status.PASS, "no target directory given")]
    if not into.exists():
        return [Finding("target", Status.PASS, f"{into} does not exist yet")]
    if into.is_dir() and not any(into.iterdir()):
        return [Finding("target", Status.PASS, f"{into} is empty")]
    cp = inputs.checkpoint
    if (
        into.is_dir()
        and cp
        and cp.worktree_tree
        and worktree.tree_equals_directory(
            inputs.store_repo, cp.worktree_tree, into, inputs.scratch
        )
    ):
        return [Finding("target", Status.PASS, f"{into} already equals the snapshot")]
    return [
        Finding(
            "target",
            Status.FAIL,
            f"{into} exists and differs from the snapshot",
            "choose a new --into directory, or move that one aside",
        )
    ]


def check_lockfiles(inputs: ValidationInputs) -> list[Finding]:
    recorded: dict[str, str] = _manifest(inputs).get("lockfiles", {})
    if inputs.source is None:
        return []
    if not recorded:
        return [Finding("lockfiles", Status.PASS, "no lockfiles in the snapshot")]
    now = worktree.worktree_blob_ids(inputs.source, sorted(recorded))
    drifted = [path for path, blob in recorded.items() if now.get(path) != blob]
    if drifted:
        return [
            Finding(
                "lockfiles",
                Status.FAIL,
                f"lockfile changed since the checkpoint: {', '.join(drifted)}",
                "reinstall dependencies from the snapshot's lockfile after resuming, "
                "or start fresh",
                Verdict.STALE,
            )
        ]
    return [Finding("lockfiles", Status.PASS, f"{len(recorded)} lockfile(s) unchanged")]


def check_runtime(inputs: ValidationInputs) -> list[Finding]:
    env = _manifest(inputs).get("environment", {})
    findings: list[Finding] = []
    current = {
        "os": platform.system(),
        "arch": platform.machine(),
        "python": platform.python_version(),
        "git": git_version(),
    }
    for key in ("os", "arch"):
        if env.get(key) and env[key] != current[key]:
            findings.append(
                Finding(
                    "runtime",
                    Status.WARN,
                    f"{key} was {env[key]}, now {current[key]}",
                    "rebuild native dependencies after resuming",
                )
            )
    recorded_py, now_py = env.get("python", ""), current["python"]
    if recorded_py and recorded_py.split(".")[:2] != now_py.split(".")[:2]:
        findings.append(
            Finding(
                "runtime",
                Status.WARN,
                f"Python was {recorded_py}, now {now_py}",
                f"use Python {'.'.join(recorded_py.split('.')[:2])} or reinstall the environment",
            )
        )
    if not findings:
        findings.append(
            Finding(
                "runtime", Status.PASS, f"same OS, arch and Python ({now_py}) as the checkpoint"
            )
        )
    findings.extend(_harness_findings(inputs))
    return findings


def _harness_findings(inputs: ValidationInputs) -> list[Finding]:
    harness = _manifest(inputs).get("harness") or {}
    if not harness.get("name"):
        return []
    name, recorded = harness["name"], harness.get("version")
    table = inputs.harness_config
    current = table.get("version")
    if not current and table.get("version_command"):
        try:
            out = subprocess.run(
                shlex.split(table["version_command"]),
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            current = out.stdout.strip().split()[-1] if out.stdout.strip() else None
        except (OSError, subprocess.TimeoutExpired):
            current = None
    if not recorded or not current:
        return [
            Finding(
                "harness",
                Status.UNKNOWN,
                f"{name} version {'now' if recorded else 'at checkpoint'} is not known",
                f"set [harness.{name}] version or version_command in config.toml",
            )
        ]
    if current != recorded:
        return [
            Finding(
                "harness",
                Status.WARN,
                f"{name} was {recorded}, now {current}",
                f"install {name} {recorded}, or accept that the resumed session may behave "
                "differently",
            )
        ]
    return [Finding("harness", Status.PASS, f"{name} {current} as at the checkpoint")]


def check_credentials(inputs: ValidationInputs) -> list[Finding]:
    recorded: list[dict[str, Any]] = _manifest(inputs).get("credentials", [])
    if not recorded:
        return [Finding("credentials", Status.PASS, "the task names no credentials")]
    findings: list[Finding] = []
    for item in recorded:
        name = item["name"]
        value = inputs.environ.get(name)
        if value is None:
            findings.append(
                Finding(
                    "credentials",
                    Status.FAIL,
                    f"{name} is not set",
                    f"export {name} before resuming",
                )
            )
        elif (
            item.get("fingerprint")
            and fingerprint(inputs.fingerprint_key, value) != item["fingerprint"]
        ):
            findings.append(
                Finding(
                    "credentials",
                    Status.WARN,
                    f"{name} has a different value than at the checkpoint",
                    f"make sure the new {name} grants the same access",
                )
            )
        elif not item.get("present"):
            findings.append(
                Finding(
                    "credentials",
                    Status.WARN,
                    f"{name} is set now but was not at the checkpoint",
                    "nothing to do if this is intended",
                )
            )
    if not findings:
        findings.append(
            Finding(
                "credentials",
                Status.PASS,
                f"{len(recorded)} credential(s) present with the same fingerprint",
            )
        )
    return findings


def check_upstream(inputs: ValidationInputs) -> list[Finding]:
    upstream = _manifest(inputs).get("repository", {}).get("upstream", {}) or {}
    name, head = upstream.get("name"), upstream.get("head")
    if not name or not head or inputs.source is None:
        return [Finding("upstream", Status.PASS, "no upstream branch recorded")]
    if inputs.offline:
        return [
            Finding(
                "upstream",
                Status.UNKNOWN,
                f"{name} not checked (offline)",
                "run without --offline to compare with the remote",
                Verdict.STALE,
            )
        ]
    remote, _, branch = name.partition("/")
    try:
        wanted = f"refs/heads/{branch}"
        out = run_git(["ls-remote", remote, wanted], cwd=inputs.source.toplevel)
    except Exception as exc:
        return [
            Finding(
                "upstream",
                Status.UNKNOWN,
                f"{name} could not be reached ({exc})",
                "check the network or run with --offline",
            )
        ]
    now = next(
        (line.split()[0] for line in out.decode().splitlines() if line.split()[1:] == [wanted]),
        None,
    )
    if now is None:
        return [
            Finding(
                "upstream",
                Status.WARN,
                f"{name} no longer exists on the remote",
                "push the branch again after resuming",
            )
        ]
    if now != head:
        return [
            Finding(
                "upstream",
                Status.WARN,
                f"{name} moved from {head[:12]} to {now[:12]} on the remote",
                f"fetch and rebase onto {name} after resuming",
            )
        ]
    return [Finding("upstream", Status.PASS, f"{name} unchanged on the remote")]


def check_transcript(inputs: ValidationInputs) -> list[Finding]:
    harness = _manifest(inputs).get("harness") or {}
    path = harness.get("transcript_path")
    if not path:
        return []
    if Path(path).exists():
        return [Finding("transcript", Status.PASS, "the harness transcript is still present")]
    return [
        Finding(
            "transcript",
            Status.WARN,
            f"the harness transcript {path} is gone",
            "the conversation cannot be continued; the resume brief carries the state",
        )
    ]


def check_effects(inputs: ValidationInputs) -> list[Finding]:
    blocking = [
        e for e in inputs.effects if e.state in (EffectState.UNCERTAIN, EffectState.IN_PROGRESS)
    ]
    if not blocking:
        return [Finding("side-effects", Status.PASS, "no uncertain or in-progress side effect")]
    return [
        Finding(
            "side-effects",
            Status.FAIL,
            f"side effect {e.key} ({e.kind}) is {e.state.value}"
            + (" and its runner is still alive" if e.runner_alive else ""),
            f"settle it: `pitstop effect check --task {e.task_id} --key {e.key}`, or "
            f"`pitstop effect confirm|fail --task {e.task_id} --key {e.key} --reason …`",
        )
        for e in blocking
    ]


def check_approvals(inputs: ValidationInputs) -> list[Finding]:
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


def check_age(inputs: ValidationInputs) -> list[Finding]:
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


def check_lease(inputs: ValidationInputs) -> list[Finding]:
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


CHECKS: tuple[Check, ...] = (
    check_schema,
    check_complete,
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
