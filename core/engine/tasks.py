"""Tasks: start one on a work tree, list and summarise them, share them, finish them.

A task is the unit everything else hangs on (checkpoints, evidence, effects, approvals), so its
lifecycle changes — start, harness activity, finish — are audited here, and its recipients (the
public keys its remote copies are encrypted to) are recorded with it. Its objective and its
harness's and model's names and versions are free text: redacted, then sealed under the task's
key (DESIGN §6.6); the lists here open them with the session's keys.
"""

# String annotations cost nothing: `core.records.NamedTuple` keeps them as written (no
# `ForwardRef` compile as `typing.NamedTuple` does); `typing` is for type checkers only.
from __future__ import annotations

import os
import re
from collections.abc import Sequence

from core import clock, numbers, store
from core.errors import ConflictError, UsageError
from core.models import Budget, NamedVersion, Task, TaskStatus, validate_task_id
from core.session import Session
from core.store.dashboard import TriageFacts
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

_REDACTION_MARK = r"\[REDACTED:[^\]]*\]"


class TaskSummary(NamedTuple):
    """A task plus what the dashboard lists beside it."""

    task: Task
    checkpoint_count: int
    last_checkpoint_at: str | None
    pending_approvals: int = 0
    uncertain_effects: int = 0
    last_verdict: str | None = None
    triage: TriageFacts = TriageFacts()


def generate_task_id(objective: str, taken: set[str]) -> str:
    """A short, human id from the objective's first words plus four hex digits.

    Ids are plain, so the words come from the redacted objective with its `[REDACTED:rule]`
    markers taken out: a secret in the objective never reaches an id.
    """
    from core.redaction.free_text import persistable  # writes only: a listing loads no rules

    words = re.findall(r"[a-z0-9]+", re.sub(_REDACTION_MARK, " ", persistable(objective)).lower())
    stem = "-".join(words[:3])[:24].strip("-") or "task"
    while True:
        candidate = f"{stem}-{os.urandom(2).hex()}"
        if candidate not in taken:
            return candidate


def start_task(
    session: Session,
    *,
    repo: str | os.PathLike[str],
    objective: str,
    task_id: str | None = None,
    harness: NamedVersion | None = None,
    model: NamedVersion | None = None,
    budget: Budget | None = None,
    credentials: Sequence[str] = (),
    approvers: Sequence[str] = (),
    recipients: Sequence[str] = (),
) -> Task:
    """Register a new task on the git work tree that contains `repo`.

    `recipients` (and the operator's own recipient, when they have an identity) are the
    public keys the task's remote copies will be encrypted to.
    """
    from core import snapshot
    from core.ledger.approvals import validate_operator_names
    from core.redaction.free_text import persistable
    from core.security import identity

    if not objective.strip():
        raise UsageError("the objective is empty; say what the task should achieve")
    stored_objective = persistable(objective)
    harness, model = _persistable_named(harness), _persistable_named(model)
    approver_names = validate_operator_names(approvers)
    recipient_keys = identity.with_own_recipient(identity.parse_recipients(recipients))
    _check_credential_names(credentials)
    budget = _checked_budget(budget or Budget())
    source = snapshot.resolve_source_repo(repo)
    now = clock.now_iso()
    with write_txn(session.db):
        new_id = (
            validate_task_id(task_id)
            if task_id
            else generate_task_id(stored_objective, store.task_ids(session.db))
        )
        task = Task(
            id=new_id,
            repo_root=str(source.toplevel),
            store_repo=source.store_repo_name,
            objective=stored_objective,
            status=TaskStatus.RUNNING,
            created_at=now,
            updated_at=now,
            harness=harness,
            model=model,
            budget=budget,
            credentials=tuple(dict.fromkeys(credentials)),
            approvers=approver_names,
        )
        store.insert_task(session.db, task, session.keys)
        session.record_event(
            task.id, "task", task.id, "start", None, TaskStatus.RUNNING.value, None, now
        )
        _add_recipients(session, task.id, recipient_keys, now)
    return task


def _persistable_named(named: NamedVersion | None) -> NamedVersion | None:
    """A harness or model as it may be stored: its name and version redacted (invariant 2)."""
    if named is None:
        return None
    from core.redaction.free_text import persistable

    return NamedVersion(
        persistable(named.name), persistable(named.version) if named.version else None
    )


def _check_credential_names(credentials: Sequence[str]) -> None:
    for name in credentials:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UsageError(f"invalid --credential {name!r}: give an environment variable name")


def _checked_budget(budget: Budget) -> Budget:
    for label, value in (
        ("tokens", budget.tokens),
        ("usd", budget.usd),
        ("minutes", budget.minutes),
    ):
        if value is not None:
            numbers.non_negative(value, f"--budget-{label}")
    return budget


def _add_recipients(session: Session, task_id: str, recipients: Sequence[str], at: str) -> None:
    """Record recipients inside the caller's transaction; each new one is audited."""
    for recipient in recipients:
        if store.add_task_recipient(session.db, task_id, recipient, at, session.actor):
            session.record_event(task_id, "task", task_id, "share", None, recipient, None, at)


def task_recipients(session: Session, task_id: str) -> list[str]:
    """The public keys a task's remote copies are encrypted to, in the order added."""
    store.get_task(session.db, task_id)
    return store.list_task_recipients(session.db, task_id)


def share_task(
    session: Session,
    task_id: str,
    recipients: Sequence[str],
    *,
    signer: str | None = None,
    label: str | None = None,
) -> list[str]:
    """Add recipients to a task (those it has already are left alone); return all of them.

    Once the task has a roster, sharing is a roster change signed by an owner; with `signer`
    (that person's public signing key) the new member may also write facts, and `label` names
    them for people.
    """
    from core.ledger import trust
    from core.ledger.roster import Member
    from core.security import identity, signing

    if not recipients:
        raise UsageError("give at least one --recipient to share the task with")
    parsed = identity.parse_recipients(recipients)
    key = signing.parse_public_key(signer) if signer else None
    if key is not None and len(parsed) != 1:
        raise UsageError("--signer names one person: give exactly one --recipient with it")
    store.get_task(session.db, task_id)
    if trust.local_roster(session, task_id) is not None or key is not None:
        members = [Member(label or trust.recipient_label(r), key, r) for r in parsed]
        trust.add_members(session, task_id, members)
    now = clock.now_iso()
    with write_txn(session.db):
        _add_recipients(session, task_id, parsed, now)
        return store.list_task_recipients(session.db, task_id)


def unshare_task(session: Session, task_id: str, recipients: Sequence[str]) -> list[str]:
    """Remove recipients (or members, by key or label) from a task's roster and rotate its data
    key, so nothing written after opens for them; return the recipients left."""
    from core.ledger import trust

    if not recipients:
        raise UsageError("give at least one --recipient to remove from the task")
    store.get_task(session.db, task_id)
    matches = [_normal_member_text(text) for text in recipients]
    if trust.local_roster(session, task_id) is None and not set(matches) & set(
        store.list_task_recipients(session.db, task_id)
    ):  # refused before a roster is founded: a bad input changes nothing
        raise UsageError(f"task {task_id} is shared with none of {', '.join(recipients)}")
    roster, removed = trust.remove_members(session, task_id, matches)
    if not removed:
        raise UsageError(f"task {task_id}'s roster names none of {', '.join(recipients)}")
    now = clock.now_iso()
    # a member removed by key or label takes their recipient with them
    left = set(roster.recipients())
    gone = [r for r in store.list_task_recipients(session.db, task_id) if r not in left]
    with write_txn(session.db):
        for text in dict.fromkeys([*matches, *gone]):
            if store.remove_task_recipient(session.db, task_id, text):
                session.record_event(task_id, "task", task_id, "unshare", text, None, None, now)
    from core.sharing.key_rotation import rotate_for_removal

    rotate_for_removal(session, task_id, f"removed {', '.join(recipients)}")
    return store.list_task_recipients(session.db, task_id)


def _normal_member_text(text: str) -> str:
    """A recipient or signing key in its normal form; a label as given."""
    from core.security import identity, signing

    cleaned = text.strip()
    if cleaned.startswith(("age1", "ssh-ed25519 ")):
        return identity.normalise_recipient(cleaned)
    if cleaned.startswith(signing.PUBLIC_PREFIX):
        return signing.parse_public_key(cleaned)
    return cleaned


def get_task(session: Session, task_id: str) -> Task:
    """One task by id, its objective, harness and model opened (the marker without the key)."""
    return store.get_task(session.db, task_id, session.keys)


def list_tasks(session: Session, statuses: Sequence[TaskStatus] = ()) -> list[Task]:
    """Tasks, most recently updated first, their sealed fields opened as `get_task`'s."""
    return store.list_tasks(session.db, tuple(statuses), session.keys)


def task_summaries(session: Session) -> list[TaskSummary]:
    """Tasks with their checkpoint counts, pending approvals, uncertain effects and last
    verdict, most recently updated first: one aggregate query, for lists and the dashboard."""
    rows = store.task_rollups(session.db, clock.now_iso(), session.keys)
    return with_branch_moves([TaskSummary(*row) for row in rows])


def first_task_summaries(
    session: Session, limit: int, status_order: Sequence[TaskStatus]
) -> list[TaskSummary]:
    """The first `limit` task summaries in triage order (statuses as in `status_order`, then
    the most recent checkpoint first), without aggregating the whole store: a first screen."""
    numbers.storable_integer(limit, "the number of tasks shown")
    rows = store.first_task_rollups(
        session.db, clock.now_iso(), limit, tuple(status_order), session.keys
    )
    return with_branch_moves([TaskSummary(*row) for row in rows])


def with_branch_moves(summaries: list[TaskSummary]) -> list[TaskSummary]:
    """`summaries` with each verdict whose branch moved since it was reached marked out of date.

    A validation keeps the tip of the branch its checkpoint was taken on; when the repository's
    branch now points elsewhere (or is gone), what the checks said about drift no longer holds.
    The tips are read from ref files, once per repository and branch.
    """
    from pathlib import Path

    tips: dict[tuple[str, str], str] = {}
    result = []
    for summary in summaries:
        facts = summary.triage
        branch, then = facts.validated_branch, facts.validated_branch_head
        if branch is None or then is None or not summary.last_verdict:
            result.append(summary)
            continue
        where = (summary.task.repo_root, branch)
        if where not in tips:
            from core.git.branch_tips import branch_tip  # a store never validated reads no refs

            tips[where] = branch_tip(Path(summary.task.repo_root), branch) or ""
        if tips[where] == then:
            result.append(summary)
            continue
        moved = facts._replace(verdict_outdated=True, branch_moved=True)
        result.append(summary._replace(triage=moved))
    return result


def task_status_counts(session: Session) -> dict[TaskStatus, int]:
    """How many tasks have each status."""
    return store.task_status_counts(session.db)


def finish_task(
    session: Session, task_id: str, status: TaskStatus, reason: str | None = None
) -> Task:
    """Mark a task `done` or `cancelled`; a finished task stays finished."""
    if status not in (TaskStatus.DONE, TaskStatus.CANCELLED):
        raise UsageError(f"a task can be finished as done or cancelled, not {status.value}")
    now = clock.now_iso()
    with write_txn(session.db):
        task = store.get_task(session.db, task_id, session.keys)
        if task.status.is_final:
            raise ConflictError(f"task {task_id} is already {task.status.value}; nothing to change")
        store.update_task(session.db, task_id, status=status, updated_at=now)
        session.record_event(
            task_id, "task", task_id, status.value, task.status.value, status.value, reason, now
        )
        for approval_id in store.expire_pending_approvals(session.db, task_id, now):
            session.record_event(
                task_id,
                "approval",
                approval_id,
                "expire",
                "pending",
                "expired",
                f"task {status.value}: nothing is left to decide for",
                now,
            )
    return task._replace(status=status, updated_at=now)


def set_task_activity(session: Session, task_id: str, status: TaskStatus, reason: str) -> Task:
    """A harness says its agent waits for input (`waiting`), works again (`running`), or
    ended a trivially restartable session without a checkpoint (`paused`, core.engine.pays).

    Hooks call this on every turn, so no key is loaded: the task returned has its ids, states
    and times, and its sealed fields hold the marker (`get_task` opens them).
    """
    if status not in (TaskStatus.WAITING, TaskStatus.RUNNING, TaskStatus.PAUSED):
        raise UsageError(f"a harness marks a task waiting, running or paused, not {status.value}")
    now = clock.now_iso()
    with write_txn(session.db):
        task = store.get_task(session.db, task_id)
        if task.status.is_final or task.status is status:
            return task
        if status is TaskStatus.RUNNING and _pending_approvals(session, task_id):
            return task  # still waiting for an approver, whatever the agent does meanwhile
        store.update_task(session.db, task_id, status=status, updated_at=now)
        session.record_event(
            task_id, "task", task_id, "status", task.status.value, status.value, reason, now
        )
    return task._replace(status=status, updated_at=now)


def _pending_approvals(session: Session, task_id: str) -> bool:
    """Whether a task still waits for an approver (approvals load only when a harness asks)."""
    from core.engine.approvals import list_approvals

    return bool(list_approvals(session, task_id, pending_only=True))
