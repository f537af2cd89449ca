"""Who a task's remote copy is for, and how a task fetched from a remote becomes this store's.

An adopted task keeps its id and stays bound to its origin store (its sealed content opens
under the origin's scope); its data key is kept wrapped by this store's master key, so the
task reads like one created here. Its objective, harness and model come from the header's
sealed part only, and are redacted before they are stored: what another store wrote is input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from core import clock, snapshot, store
from core.errors import ConflictError
from core.models import Budget, NamedVersion, Task, TaskStatus
from core.redaction.free_text import persistable
from core.security import identity
from core.sharing.key_file import TaskKeySet
from core.sharing.remote_documents import task_content
from core.sharing.sealing import open_json
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


def remote_recipients(session: Session, task_id: str) -> list[str]:
    """Whom a task's remote copy is encrypted to: its recipients and the current operator."""
    store.get_task(session.db, task_id)
    return identity.with_own_recipient(store.list_task_recipients(session.db, task_id))


def adopt_task(session: Session, task: Task, *, origin_store: str, data_key: bytes) -> Task:
    """Record a task fetched from a remote: same id, its content bound to its origin store.

    `task` carries this machine's repository (`repo_root`, `store_repo`).
    """
    session.keys.adopt(task.id, data_key, origin_store)
    now = clock.now_iso()
    with write_txn(session.db):
        store.insert_task(session.db, task, session.keys)
        store.set_task_origin(session.db, task.id, origin_store)
        session.keys.keep_adopted(task.id)
        session.record_event(task.id, "task", task.id, "adopt", None, task.status.value, None, now)
    return task


def adopt_fetched(
    session: Session,
    source_of: Callable[[], snapshot.SourceRepo],
    task_id: str,
    header: Mapping[str, Any],
    origin: str,
    keys: TaskKeySet,
    *,
    may_rotate: bool = True,
) -> bool:
    """Create the local record of a fetched task (once); False when it was here already.

    A task here already takes the keys it lacks (a rotation made elsewhere), but only from a
    header an owner signed (`may_rotate`): rotating is an owner's act, so a removed member who
    can still push cannot hand the others a key of their own.
    """
    if task_id in store.task_ids(session.db):
        scope = session.keys.scope(task_id)
        if scope != origin:
            raise ConflictError(
                f"this store has a different task with id {task_id!r}; it cannot take the "
                "remote one (fetch into another store with --store)"
            )
        if not may_rotate:  # only an owner rotates: a member's key file cannot move ours
            return False
        with write_txn(session.db):
            session.keys.merge_keys(task_id, keys.keys, keys.current)
        return False
    source = source_of()  # the repository is located only for a task met here first
    session.keys.adopt_keys(task_id, keys.keys, keys.current, origin)
    content = task_content(
        open_json(session, task_id, "remote/task", header["sealed"], f"task {task_id}'s header"),
        task_id,
    )
    budget = header.get("budget") or {}
    adopt_task(
        session,
        Task(
            id=task_id,
            repo_root=str(source.toplevel),
            store_repo=source.store_repo_name,
            objective=persistable(str(content["objective"])),
            status=TaskStatus(str(header["status"])),
            created_at=str(header["created_at"]),
            updated_at=str(header["updated_at"]),
            harness=_named(content["harness"], content["harness_version"]),
            model=_named(content["model"], content["model_version"]),
            budget=Budget(
                tokens=budget.get("tokens"), usd=budget.get("usd"), minutes=budget.get("minutes")
            ),
            tokens_used=int(header.get("tokens_used") or 0),
            usd_used=float(header.get("usd_used") or 0.0),
            credentials=tuple(content.get("credentials", [])),
            approvers=tuple(content.get("approvers", [])),
        ),
        origin_store=origin,
        data_key=keys.keys[keys.current],
    )
    return True


def _named(name: Any, version: Any) -> NamedVersion | None:
    """A harness or model from a fetched header's sealed part, redacted before it is stored."""
    if not name or not persistable(str(name)):
        return None
    return NamedVersion(persistable(str(name)), persistable(str(version)) if version else None)


def refresh_task(session: Session, task_id: str, header: Mapping[str, Any]) -> None:
    """Take the remote's status and consumption when it is newer than ours."""
    task = store.get_task(session.db, task_id)
    if str(header.get("updated_at", "")) > task.updated_at:
        store.update_task(
            session.db,
            task_id,
            status=TaskStatus(str(header["status"])),
            tokens_used=int(header.get("tokens_used") or 0),
            usd_used=float(header.get("usd_used") or 0.0),
            updated_at=str(header["updated_at"]),
        )
