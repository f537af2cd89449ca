"""The store's copy of a remote's refs: tracking refs, and the one fetch that fills them.

After a fetch, `refs/pitstop/remotes/<hash of url>/<kind>/<task>` says what the remote held;
push leases on these (it refuses when the remote moved since), fetch and listing read them
without another connection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from core.git import plumbing, transport
from core.sharing.layout import KINDS, PREFIX


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
