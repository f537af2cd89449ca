"""Transitional: the names `core.engine` imported from here before sharing was split.

Each now lives in the module of its use-case (`remotes`, `push`, `fetch`, `listing`, `sync`,
`adoption`); delete this module once the engine imports them from there.
"""

from __future__ import annotations

from core.sharing.adoption import adopt_task, remote_recipients
from core.sharing.fetch import FetchResult, fetch
from core.sharing.listing import (
    RemoteCheckpoint,
    RemoteTask,
    list_remote,
    remote_tasks_for_dashboard,
)
from core.sharing.push import PushResult, push
from core.sharing.remotes import add_remote, remove_remote, resolve_url
from core.sharing.sync import sync

__all__ = [
    "FetchResult",
    "PushResult",
    "RemoteCheckpoint",
    "RemoteTask",
    "add_remote",
    "adopt_task",
    "fetch",
    "list_remote",
    "push",
    "remote_recipients",
    "remote_tasks_for_dashboard",
    "remove_remote",
    "resolve_url",
    "sync",
]
