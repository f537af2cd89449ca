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

_CACHE_SIZE = 4096
_resolved: dict[tuple[str, str, str, str | None], Roster | None] = {}


def roster_in(
    store_repo: Path, task_id: str, ledger_commit: str, pinned: str | None = None
) -> Roster | None:
    """The roster a ledger commit holds for `task_id` (None: no signed one); competing founders
    without a pin are a TrustError.

    A commit never changes, so what it resolves to is remembered for the process: the
    dashboard's re-listing of a remote where nothing moved reads no roster again.
    """
    key = (str(store_repo), task_id, ledger_commit, pinned)
    if key in _resolved:
        return _resolved[key]
    roster = _read_roster(store_repo, task_id, ledger_commit, pinned)
    if len(_resolved) >= _CACHE_SIZE:
        _resolved.clear()
    _resolved[key] = roster
    return roster


def _read_roster(
    store_repo: Path, task_id: str, ledger_commit: str, pinned: str | None
) -> Roster | None:
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
