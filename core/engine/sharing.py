"""Sharing: tasks travel to and from remotes, and their ledgers merge when they come back.

The transport and the merge live in `core.sharing` (one module per use-case) and
`core.ledger.facts`, both taking
the session; these entries keep age, git transport and the network off every other path, since
they are imported only when a sharing command runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from core import store
from core.models import Task
from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.ledger.apply import ApplyReport
    from core.sharing.fetch import FetchResult
    from core.sharing.listing import RemoteListing
    from core.sharing.push import PushResult


def remote_recipients(session: Session, task_id: str) -> list[str]:
    """Whom a task's remote copy is encrypted to: its recipients and the current operator."""
    from core.sharing.adoption import remote_recipients

    return remote_recipients(session, task_id)


def adopt_task(session: Session, task: Task, *, origin_store: str, data_key: bytes) -> Task:
    """Record a task fetched from a remote: same id, its content bound to its origin store."""
    from core.sharing.adoption import adopt_task

    return adopt_task(session, task, origin_store=origin_store, data_key=data_key)


def rotate_task_key(session: Session, task_id: str, reason: str | None = None) -> str:
    """Give a task a fresh data key for what is written after a recipient was removed."""
    from core.sharing.key_rotation import rotate_for_removal

    return rotate_for_removal(session, task_id, reason)


def push(
    session: Session,
    task_ids: Sequence[str],
    remote: str | None = None,
    *,
    seal_worktree: bool = False,
) -> PushResult:
    """Send tasks' checkpoints and ledgers to a remote (`pitstop push`)."""
    from core.sharing.push import push

    return push(session, task_ids, remote, seal_worktree=seal_worktree)


def fetch(
    session: Session,
    task_ids: Sequence[str] = (),
    remote: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    *,
    expect_owner: str | None = None,
) -> FetchResult:
    """Bring remote tasks into this store (`pitstop fetch`); with `expect_owner`, a task met
    for the first time only when that fingerprint founded it."""
    from core.sharing.fetch import fetch

    return fetch(session, task_ids, remote, repo, expect_owner=expect_owner)


def list_remote(
    session: Session, remote: str | None = None, repo: str | os.PathLike[str] = "."
) -> RemoteListing:
    """Tasks on a remote, from refs and plain headers (`pitstop remote list`)."""
    from core.sharing.listing import list_remote

    return list_remote(session, remote, repo)


def sync(
    session: Session,
    task_ids: Sequence[str] = (),
    remote: str | None = None,
    repo: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Fetch, merge and push (`pitstop sync`)."""
    from core.sharing.sync import sync

    return sync(session, task_ids, remote, repo)


def add_remote(
    session: Session, name: str, url: str, repo: str | os.PathLike[str] = "."
) -> dict[str, Any]:
    """Name a remote (`pitstop remote add NAME URL`)."""
    from core.sharing.remotes import add_remote

    return add_remote(session, name, url, repo)


def remove_remote(session: Session, name: str) -> None:
    """Forget a named remote."""
    from core.sharing.remotes import remove_remote

    remove_remote(session, name)


def named_remotes(session: Session) -> list[dict[str, Any]]:
    """Named remotes."""
    return store.list_remotes(session.db)


def remote_links(session: Session, task_id: str | None = None) -> list[dict[str, Any]]:
    """Which tasks travel through which remotes, and when they last did."""
    return store.remote_links(session.db, task_id)


def remote_only_tasks(session: Session) -> list[dict[str, Any]]:
    """Tasks seen on remotes (last listing) that this store does not hold."""
    from core.sharing.listing import remote_tasks_for_dashboard

    return remote_tasks_for_dashboard(session)


def export_ledger(session: Session, task_id: str) -> dict[str, bytes]:
    """The task's ledger as fact files (path → bytes) for `refs/pitstop/ledger/<task>`."""
    from core.ledger import facts as ledger

    return ledger.export_facts(session, task_id)


def apply_ledger(session: Session, task_id: str, facts: Mapping[str, bytes]) -> ApplyReport:
    """Merge fetched ledger facts into this store; every change audited as `sync`."""
    from core.ledger import facts as ledger

    return ledger.apply_facts(session, task_id, facts)


def ledger_conflicts(
    session: Session, task_id: str | None = None, entity: str | None = None
) -> list[dict[str, Any]]:
    """Decisions that lost a ledger merge (kept and shown, never lost), of one task or all."""
    if task_id is not None:
        store.get_task(session.db, task_id)
    return store.ledger_conflicts(session.db, task_id, entity)
