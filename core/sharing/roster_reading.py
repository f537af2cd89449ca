"""Reading a task's roster straight from a remote ledger commit, without taking anything.

A listing and the first step of a fetch need to know who founded a task and whether it names
this operator as a recipient before anything is recorded. Roster changes live in their own
directory of the ledger tree (`roster/`), so this reads a handful of small blobs, never the
whole ledger.
"""

from __future__ import annotations

from pathlib import Path

from core.git import plumbing
from core.ledger.fact_format import MAX_FACT_BYTES, ROSTER_DIR, parse_each
from core.ledger.roster import Roster, resolve


def roster_in(
    store_repo: Path, task_id: str, ledger_commit: str, pinned: str | None = None
) -> Roster | None:
    """The roster a ledger commit holds for `task_id` (None: no signed one); competing founders
    without a pin are a TrustError."""
    entries = {
        path: oid
        for path, (kind, oid) in plumbing.list_tree(store_repo, ledger_commit, ROSTER_DIR).items()
        if kind == "blob" and path.startswith(ROSTER_DIR)
    }
    if not entries:
        return None
    blobs = plumbing.read_capped(store_repo, {oid: MAX_FACT_BYTES for oid in entries.values()})
    readable = {
        path: data for path, oid in entries.items() if isinstance(data := blobs.get(oid), bytes)
    }  # an oversized roster fact is never read; the fetch reports it
    facts, _refused = parse_each(readable)
    return resolve(task_id, facts, pinned=pinned).roster
