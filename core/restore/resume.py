"""Resume: the brief a resumed agent reads first, and how its harness is launched.

The brief is the checkpoint's state in the words an agent needs: the objective, what is done,
what is left, what commands showed (with pointers to the full evidence), which side effects
already happened and must not be repeated, which are uncertain, what approvers decided and why,
how much budget is left, and what validation warned about. It is written as `BRIEF.md` for
people and agents and `brief.json` for programs.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from core.models import Approval, ApprovalState, Checkpoint, EffectState, SideEffect, Task

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

BUILTIN_TEMPLATES = {
    # Claude Code continues the recorded conversation when there is one.
    "claude-code": 'claude --resume {session} "$(cat {brief})"',
    "claude-code-new": 'claude "$(cat {brief})"',
    "codex": 'codex resume {session} "$(cat {brief})"',
    "codex-new": 'codex "$(cat {brief})"',
    "generic": '"${{SHELL:-sh}}"',
}


@dataclass(frozen=True)
class ResumePlan:
    """A resume that holds its lease and has its files in place, ready to launch."""

    resume_id: int
    task_id: str
    seq: int
    workdir: Path
    branch: str | None
    brief_md: Path
    brief_json: Path
    restore_ms: int
    verdict: str
    warnings: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    # The task's status before the resume: what it goes back to when the harness cannot start.
    previous_status: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.task_id}@{self.seq}"


def harness_command(
    template: str | None, harness: str | None, values: dict[str, str]
) -> tuple[str, ...]:
    """The argv that launches the harness: a config template or a built-in one, via `sh -c`."""
    chosen = template
    if chosen is None:
        name = harness or "generic"
        if name in ("claude-code", "codex") and not values.get("session"):
            name = f"{name}-new"
        chosen = BUILTIN_TEMPLATES.get(name, BUILTIN_TEMPLATES["generic"])
    quoted = {key: shlex.quote(value) for key, value in values.items()}
    try:
        command = chosen.format(**quoted)
    except (KeyError, IndexError) as exc:
        from core.errors import UsageError

        raise UsageError(
            f"harness resume template {chosen!r} uses an unknown placeholder {exc}; "
            "use {brief}, {workdir}, {task}, {checkpoint} or {session}"
        ) from exc
    return ("sh", "-c", command)


def build_brief(
    *,
    task: Task,
    checkpoint: Checkpoint,
    evidence: list[Any],
    effects: list[SideEffect],
    approvals: list[Approval],
    warnings: list[str],
    workdir: Path,
    branch: str | None,
) -> dict[str, Any]:
    """The resume brief as data."""
    manifest = checkpoint.manifest or {}
    steps = manifest.get("steps", {})
    budget = manifest.get("budget", {})
    done_effects = [e for e in effects if e.state is EffectState.CONFIRMED]
    unsettled = [e for e in effects if e.state in (EffectState.UNCERTAIN, EffectState.IN_PROGRESS)]
    return {
        "schema": "pitstop.brief/1",
        "task": task.id,
        "checkpoint": checkpoint.ref,
        "objective": task.objective,
        "note": checkpoint.note,
        "workdir": str(workdir),
        "branch": branch,
        "base_commit": checkpoint.base_commit,
        "done": list(steps.get("done", [])),
        "todo": list(steps.get("todo", [])),
        "evidence": [
            {
                "id": item.id,
                "label": item.label,
                "outcome": item.outcome,
                "summary": item.summary_text or None,
                "show": f"pitstop evidence show {item.id}",
            }
            for item in evidence
        ],
        "already_done_do_not_repeat": [
            {"key": e.key, "kind": e.kind, "target": e.target, "at": e.finished_at or e.updated_at}
            for e in done_effects
        ],
        "uncertain": [
            {
                "key": e.key,
                "kind": e.kind,
                "target": e.target,
                "state": e.state.value,
                "check": e.check,
            }
            for e in unsettled
        ],
        "failed_may_retry": [
            {"key": e.key, "kind": e.kind, "target": e.target}
            for e in effects
            if e.state is EffectState.FAILED
        ],
        "approvals": [
            {
                "id": a.id,
                "action": a.action,
                "state": a.state.value,
                "by": a.decided_by,
                "reason": a.reason,
                "at": a.decided_at,
            }
            for a in approvals
            if a.state is not ApprovalState.PENDING
        ],
        "budget_left": {
            name: (None if values.get("limit") is None else values["limit"] - values["used"])
            for name, values in budget.items()
        },
        "validation_warnings": warnings,
    }


def brief_markdown(brief: dict[str, Any]) -> str:
    """The brief as Markdown an agent (or a person) reads first."""

    def bullets(items: list[str], empty: str) -> list[str]:
        return [f"- {item}" for item in items] or [f"- {empty}"]

    lines = [
        f"# Resume brief — {brief['task']} from checkpoint {brief['checkpoint']}",
        "",
        f"**Objective:** {brief['objective']}",
        "",
        f"Working directory: `{brief['workdir']}`"
        + (f" on branch `{brief['branch']}`" if brief.get("branch") else ""),
    ]
    if brief.get("note"):
        lines += ["", f"Note from the checkpoint: {brief['note']}"]
    lines += ["", "## Done", *bullets(brief["done"], "nothing recorded")]
    lines += ["", "## Still to do", *bullets(brief["todo"], "nothing recorded")]
    lines += ["", "## What commands showed"]
    lines += [
        f"- {e['label'] or 'command'}: {e['outcome']}"
        + (f" — {e['summary']}" if e["summary"] else "")
        + f" (`{e['show']}`)"
        for e in brief["evidence"]
    ] or ["- no evidence recorded"]
    lines += ["", "## Already done — do not repeat"]
    lines += [
        f"- `{e['key']}` ({e['kind']}{', ' + e['target'] if e['target'] else ''}) at {e['at']}"
        for e in brief["already_done_do_not_repeat"]
    ] or ["- no external side effect happened"]
    if brief["uncertain"]:
        lines += ["", "## Uncertain — check before doing anything"]
        lines += [
            f"- `{e['key']}` ({e['kind']}) is {e['state']}"
            + (f"; check with `{e['check']}`" if e["check"] else "")
            for e in brief["uncertain"]
        ]
    if brief["failed_may_retry"]:
        lines += ["", "## Failed (may be retried under the same key)"]
        lines += [f"- `{e['key']}` ({e['kind']})" for e in brief["failed_may_retry"]]
    lines += ["", "## Decisions by approvers"]
    lines += [
        f"- {a['id']}: {a['action']} — **{a['state']}** by {a['by']}: {a['reason']}"
        for a in brief["approvals"]
    ] or ["- none"]
    left = {k: v for k, v in brief["budget_left"].items() if v is not None}
    lines += ["", "## Budget left"]
    lines += [f"- {name}: {value:g}" for name, value in left.items()] or ["- no limits set"]
    if brief["validation_warnings"]:
        lines += ["", "## Validation warnings", *bullets(brief["validation_warnings"], "")]
    lines.append("")
    return "\n".join(lines)


def write_brief(directory: Path, brief: dict[str, Any]) -> tuple[Path, Path]:
    """Write `BRIEF.md` and `brief.json` into `directory` (created private, its parent
    `resumes/` too: mkdir's mode reaches only the last directory)."""
    directory.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    directory.mkdir(exist_ok=True, mode=0o700)
    md = directory / "BRIEF.md"
    js = directory / "brief.json"
    for path, text in ((md, brief_markdown(brief)), (js, json.dumps(brief, indent=2) + "\n")):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    return md, js
