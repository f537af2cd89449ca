"""What an approver needs beside a request to decide it away from the terminal.

The web inbox (`pitstop serve`) shows one request at a time on a phone: the task's objective,
the action and the side effect it guards, what the checkpoint changed, the end of the latest
evidence (redacted when it was recorded), and the last restore verdict. Gathering it is one
use-case so the page stays a view; a part that cannot be read (a damaged checkpoint, a key that
is not here) is reported in `problems` and the rest is still shown.
"""

from __future__ import annotations

from core.errors import PitstopError
from core.models import Approval, Interface, SideEffect, Task
from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

EVIDENCE_TAIL_LINES = 20


class DiffStat(NamedTuple):
    """One changed file of a checkpoint: status letter, path, lines added and deleted."""

    status: str
    path: str
    added: int | None
    deleted: int | None


class EvidenceTail(NamedTuple):
    """The end of the task's latest evidence, as stored (redacted)."""

    label: str
    outcome: str
    summary: str
    lines: list[str]


class ApprovalContext(NamedTuple):
    """One approval and what it is about."""

    approval: Approval
    task: Task
    effect: SideEffect | None
    checkpoint_ref: str | None
    diff_stat: list[DiffStat]
    evidence: EvidenceTail | None
    verdict: str | None
    held_by_hook: bool
    problems: list[str]


def held_prompts(session: Session) -> set[tuple[str, str]]:
    """(task, approval id) of approvals a harness hook asked for: a prompt is held open on them."""
    from core.store.events import approvals_requested_via

    return approvals_requested_via(session.db, Interface.HOOK)


def approval_context(session: Session, approval_id: str) -> ApprovalContext:
    """The approval with its task, effect, checkpoint diff stat, evidence tail and verdict."""
    from core.engine.approvals import get_approval
    from core.engine.tasks import get_task

    approval = get_approval(session, approval_id)
    task = get_task(session, approval.task_id)
    problems: list[str] = []
    effect = _effect(session, approval, problems)
    ref, diff_stat = _diff_stat(session, approval, problems)
    return ApprovalContext(
        approval=approval,
        task=task,
        effect=effect,
        checkpoint_ref=ref,
        diff_stat=diff_stat,
        evidence=_evidence_tail(session, task.id, problems),
        verdict=_verdict(session, task.id),
        held_by_hook=(task.id, approval.id) in held_prompts(session),
        problems=problems,
    )


def _effect(session: Session, approval: Approval, problems: list[str]) -> SideEffect | None:
    from core.engine.effects import get_effect

    if not approval.effect_key:
        return None
    try:
        return get_effect(session, approval.task_id, approval.effect_key)
    except PitstopError as exc:
        problems.append(exc.message)
        return None


def _diff_stat(
    session: Session, approval: Approval, problems: list[str]
) -> tuple[str | None, list[DiffStat]]:
    """The approval's own checkpoint, else the task's latest complete one, against its base."""
    from core import store
    from core.engine.checkpoints import changed_files

    seq = approval.checkpoint_seq
    if seq is None:
        latest = store.latest_complete(session.db, approval.task_id)
        seq = latest.seq if latest is not None else None
    if seq is None:
        return None, []
    ref = f"{approval.task_id}@{seq}"
    try:
        files = changed_files(session, ref)
    except PitstopError as exc:
        problems.append(f"checkpoint {ref}: {exc.message}")
        return ref, []
    return ref, [DiffStat(f.status, f.path, f.added, f.deleted) for f in files]


def _evidence_tail(session: Session, task_id: str, problems: list[str]) -> EvidenceTail | None:
    from core.engine.evidence import get_evidence, list_evidence

    items = list_evidence(session, task_id)
    if not items:
        return None
    try:
        item = get_evidence(session, items[-1].id)
    except PitstopError as exc:
        problems.append(f"evidence {items[-1].id}: {exc.message}")
        return None
    summary = item.summary or {}
    lines = (item.tail or "").splitlines()[-EVIDENCE_TAIL_LINES:]
    command = item.command or {}
    argv = command.get("argv") if isinstance(command, dict) else None
    label = item.label or (" ".join(map(str, argv)) if isinstance(argv, list) else item.source)
    return EvidenceTail(label, item.outcome, str(summary.get("text", "")), lines)


def _verdict(session: Session, task_id: str) -> str | None:
    from core import store

    row = store.latest_validation(session.db, task_id)
    return str(row["verdict"]) if row else None
