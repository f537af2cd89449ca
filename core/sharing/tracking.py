"""The store's copy of a remote's refs: tracking refs, and the one fetch that fills them.

After a fetch, `refs/pitstop/remotes/<hash of url>/<kind>/<task>` says what the remote held;
push leases on these (it refuses when the remote moved since), fetch and listing read them
without another connection.

A remote's ref names are input like any other: only refs named for a valid task id
(`remote_input.is_task_id`) are ever read as tasks; the others are reported, one line each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.errors import UsageError
from core.git import plumbing, transport
from core.sharing.layout import KINDS, PREFIX
from core.sharing.remote_input import is_task_id, shown


def tracking_ref(url: str, kind: str, task_id: str) -> str:
    """Where a remote's ref is kept in the store's repository after a fetch."""
    return f"{tracking_root(url)}{kind}/{task_id}"


def tracking_root(url: str) -> str:
    """The namespace of one remote's tracking refs (keyed by a hash of its URL)."""
    key = hashlib.sha256(url.encode()).hexdigest()[:12]
    return f"{PREFIX}remotes/{key}/"


def fetch_task_refs(
    store_repo: Path, url: str, task_ids: Sequence[str], kinds: Sequence[str] = KINDS
) -> dict[str, str]:
    """Fetch the tasks' refs of `kinds` (whichever exist) into tracking refs, pruning those the
    remote dropped, in one connection; return every Pitstop ref of the store repository after
    it (this remote's tracking refs and our own ledgers alike, read without a process)."""
    root = tracking_root(url)
    for task_id in task_ids:  # a name with `*` or `:` would be another refspec
        if not is_task_id(task_id):
            raise UsageError(f"invalid task id {shown(task_id)}: no remote holds a task by it")
    if task_ids:
        # patterns, not exact refs: an exact one fails on a ref the remote lacks, a pattern
        # just matches nothing, so one fetch also tells which of the tasks the remote holds
        # (`l*` is `ledger`, `c*` is `checkpoints`: the only kinds under refs/pitstop/)
        stems = ["*"] if set(kinds) == set(KINDS) else [f"{kind[0]}*" for kind in kinds]
        refspecs = [f"+{PREFIX}{stem}/{t}:{root}{stem}/{t}" for t in task_ids for stem in stems]
    else:
        refspecs = [f"+{PREFIX}{kind}/*:{root}{kind}/*" for kind in kinds]
    transport.fetch(store_repo, url, refspecs, prune=True)
    return plumbing.refs_under(store_repo, PREFIX)


def task_refs(refs: Mapping[str, str], prefix: str) -> tuple[dict[str, str], dict[str, str]]:
    """The refs below `prefix` by task id (task → id), and one line for each ref below it
    that names no valid task (never read as a task)."""
    tasks: dict[str, str] = {}
    refused: dict[str, str] = {}
    for ref, oid in refs.items():
        if not ref.startswith(prefix):
            continue
        name = ref.removeprefix(prefix)
        if is_task_id(name):
            tasks[name] = oid
        else:
            refused[shown(name)] = (
                "the remote holds a ref for this name, which is not a valid task id "
                "(1-64 lowercase letters, digits, '.', '_' or '-'); it is ignored"
            )
    return tasks, refused
