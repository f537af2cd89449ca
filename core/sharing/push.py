"""`pitstop push`: send tasks' checkpoints and ledgers to a remote in one atomic push.

The push leases on what we last saw of the remote (its tracking refs): when someone else moved
a ref since, the remote refuses the whole push, and we fetch, merge and push again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import clock, snapshot, store
from core.errors import ConflictError, UsageError
from core.git import plumbing, transport
from core.models import Task
from core.sharing.checkpoint_export import export_chain
from core.sharing.layout import PREFIX, checkpoint_ref, ledger_ref, local_ledger_ref
from core.sharing.ledger_commit import ledger_commit
from core.sharing.remotes import resolve_url
from core.sharing.tracking import fetch_task_refs, tracking_ref
from core.store.db import batch_txn, write_txn

if TYPE_CHECKING:
    from core.session import Session


@dataclass
class PushResult:
    """What one push sent."""

    url: str
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class _Plan:
    """The ref updates of one push: `updates` on the remote (new, leased on old), `moved` here."""

    updates: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    moved: dict[str, str] = field(default_factory=dict)


def push(
    session: Session,
    task_ids: Sequence[str],
    remote: str | None = None,
    *,
    seal_worktree: bool = False,
) -> PushResult:
    """Send tasks' checkpoints and ledgers to a remote in one atomic push."""
    tasks = [store.get_task(session.db, task_id) for task_id in task_ids]
    if not tasks:
        raise UsageError("no task to push; name one (`pitstop task list` shows them)")
    groups: dict[tuple[str, str], list[Task]] = {}
    for task in tasks:
        url = resolve_url(session, remote, task.repo_root)
        groups.setdefault((url, task.store_repo), []).append(task)
    results = [
        _push_group(session, url, session.paths.repos / repo, group, seal_worktree)
        for (url, repo), group in groups.items()
    ]
    merged = PushResult(url=results[0].url)
    for result in results:
        merged.tasks.update(result.tasks)
    return merged


def _push_group(
    session: Session, url: str, store_repo: Path, tasks: list[Task], seal_worktree: bool
) -> PushResult:
    """Push on what we last saw of the remote (one connection), again on a moved remote."""
    for attempt in range(3):
        try:
            with plumbing.session(store_repo):  # one cat-file for every read of the push
                return _push_once(
                    session, url, store_repo, tasks, seal_worktree, refresh=attempt > 0
                )
        except transport.RemoteMovedError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _push_once(
    session: Session,
    url: str,
    store_repo: Path,
    tasks: list[Task],
    seal_worktree: bool,
    *,
    refresh: bool,
) -> PushResult:
    if refresh:
        fetch_task_refs(store_repo, url, [t.id for t in tasks])
    refs = plumbing.refs_under(store_repo, PREFIX)
    plan = _Plan()
    result = PushResult(url=snapshot.strip_url_credentials(url))
    # what is recorded before the push (remote commits built, ledger facts) commits once
    with batch_txn(session.db):
        for task in tasks:
            result.tasks[task.id] = _plan_task(
                session, url, store_repo, task, refs, seal_worktree, plan, result.url
            )
    transport.push(store_repo, url, plan.updates)
    plumbing.set_refs(store_repo, plan.moved)
    now = clock.now_iso()
    with write_txn(session.db):
        for task in tasks:
            store.link_remote(session.db, task.id, result.url, pushed_at=now)
            # Kept out of the task's own log (task_id None): a push is not part of the ledger it
            # sends, or every push would change the ledger and the next push would send again.
            session.record_event(None, "remote", task.id, "push", None, None, None, now)
    return result


def _plan_task(
    session: Session,
    url: str,
    store_repo: Path,
    task: Task,
    refs: dict[str, str],
    seal_worktree: bool,
    plan: _Plan,
    shown_url: str,
) -> dict[str, Any]:
    """Build one task's commits and add its ref updates to `plan`; return what it sends."""
    remote_cp = refs.get(tracking_ref(url, "checkpoints", task.id))
    remote_ledger = refs.get(tracking_ref(url, "ledger", task.id))
    chain = export_chain(session, store_repo, task, seal_worktree)
    tip = chain[-1] if chain else None
    sent = 0
    if tip is not None and tip != remote_cp:
        if remote_cp is None:
            sent = len(chain)
        elif remote_cp in chain:
            sent = len(chain) - chain.index(remote_cp) - 1
        else:
            tip = _reconcile_checkpoints(store_repo, task.id, tip, remote_cp, shown_url)
        if tip is not None:
            plan.updates[checkpoint_ref(task.id)] = (tip, remote_cp)
            plan.moved[tracking_ref(url, "checkpoints", task.id)] = tip
    local_ledger = refs.get(local_ledger_ref(task.id))
    ledger = ledger_commit(session, store_repo, task, remote_ledger, local_ledger)
    if ledger is not None:
        plan.updates[ledger_ref(task.id)] = (ledger, remote_ledger)
    final = ledger or remote_ledger
    if final is not None:
        plan.moved[local_ledger_ref(task.id)] = final
        plan.moved[tracking_ref(url, "ledger", task.id)] = final
    return {"checkpoints_sent": sent, "ledger_updated": ledger is not None}


def _reconcile_checkpoints(
    store_repo: Path, task_id: str, tip: str, remote_cp: str, url: str
) -> str | None:
    """Our checkpoint tip when the remote's is not in our chain: None when the remote is ahead
    (nothing of ours is missing there); a conflict when the two histories diverged."""
    if not plumbing.has_object(store_repo, remote_cp):
        raise ConflictError(
            f"the remote holds checkpoints of {task_id} that this store lacks; "
            f"run `pitstop fetch {task_id}` first"
        )
    if plumbing.is_ancestor(store_repo, remote_cp, tip):
        return tip
    if plumbing.is_ancestor(store_repo, tip, remote_cp):
        return None
    raise ConflictError(
        f"task {task_id} has checkpoints here and on {url} that diverge; "
        "resume one of them as a new task"
    )
