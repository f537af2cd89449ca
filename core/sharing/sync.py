"""`pitstop sync`: fetch, merge and push, so both sides hold the union of what either knew.

Without a named remote, each task syncs with every remote it travelled through (its
repository's origin when it never did); tasks are grouped per repository and remote so each
pair costs one fetch and one push.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from core import store
from core.errors import UsageError
from core.sharing.fetch import fetch
from core.sharing.push import push
from core.sharing.remotes import resolve_url

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


def sync(
    session: Session,
    task_ids: Sequence[str] = (),
    remote: str | None = None,
    repo: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Fetch, merge and push: afterwards both sides hold the union of what either knew."""
    groups = _groups(session, task_ids, remote, repo)
    report: dict[str, Any] = {"fetched": {}, "pushed": {}, "no_key": [], "problems": {}}
    for (where, url), ids in groups.items():
        fetched = fetch(session, ids, url, where, missing_ok=True)
        report["fetched"].update(fetched.fetched)
        report["no_key"] += [t for t in fetched.no_key if t not in report["no_key"]]
        report["problems"].update(fetched.problems)
        held = store.known_task_ids(session.db, ids)  # one query, not one per task
        pushable = [t for t in ids if t in held and t not in report["no_key"]]
        if pushable:
            pushed = push(session, pushable, url)
            report["pushed"].update(pushed.tasks)
            report["url"] = pushed.url
            if pushed.sealed_for_secrets:  # said only when something was: the report stays
                report.setdefault("sealed_for_secrets", {}).update(pushed.sealed_for_secrets)
    return report


def _groups(
    session: Session,
    task_ids: Sequence[str],
    remote: str | None,
    repo: str | os.PathLike[str] | None,
) -> dict[tuple[str, str], list[str]]:
    """The tasks to sync, by (repository, remote URL)."""
    links = store.remote_links(session.db)
    targets = list(task_ids) or sorted({row["task_id"] for row in links})
    if not targets:
        raise UsageError(
            "no task has been pushed or fetched yet; `pitstop push TASK` or `pitstop fetch` first"
        )
    local = store.task_ids(session.db)
    groups: dict[tuple[str, str], list[str]] = {}
    for task_id in targets:
        where = (
            store.get_task(session.db, task_id).repo_root if task_id in local else str(repo or ".")
        )
        if remote is not None:
            urls = [resolve_url(session, remote, where)]
        else:
            urls = [row["url"] for row in links if row["task_id"] == task_id]
            urls = urls or [resolve_url(session, None, where)]
        for url in urls:
            groups.setdefault((where, url), []).append(task_id)
    return groups
