"""`pitstop remote list`, and the last listing kept for the dashboard.

A listing reads refs and plain headers alone: it needs no key and imports nothing, so it
shows every task on a remote, readable here or not. Each listing is remembered per remote,
and the dashboard shows the remembered tasks this store does not hold yet without going online.

A remote may hold refs and headers written by anyone who can push: each is read with a cap and
checked (`core.sharing.remote_documents`), and one that fails is left out of the listing with
one line in `problems`, never remembered, while the other tasks list as usual.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from core import clock, snapshot, store
from core.errors import PitstopError
from core.git import plumbing, transport
from core.security import identity
from core.sharing.layout import PREFIX
from core.sharing.remote_documents import parse_task_header
from core.sharing.remote_reads import task_headers
from core.sharing.remotes import open_remote
from core.sharing.tracking import task_refs, tracking_root
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from pathlib import Path

    from core.session import Session

UNSIGNED = "unsigned (older Pitstop)"


@dataclass(frozen=True)
class RemoteCheckpoint:
    """One checkpoint as a remote's plain header lists it."""

    seq: int
    created_at: str
    reason: str
    local: bool


@dataclass(frozen=True)
class RemoteTask:
    """One task on a remote, from its refs and plain headers alone."""

    task_id: str
    status: str
    created_at: str
    updated_at: str
    checkpoints: tuple[RemoteCheckpoint, ...]
    readable: bool
    local: bool
    recipients: int
    owner: str | None = None  # the founder's fingerprint, from the signed roster
    owner_note: str = UNSIGNED

    @property
    def latest(self) -> RemoteCheckpoint | None:
        """The newest checkpoint listed, if any."""
        return self.checkpoints[-1] if self.checkpoints else None


@dataclass(frozen=True)
class RemoteListing:
    """What a remote holds: its tasks, and one line for each ref or header refused."""

    url: str
    tasks: list[RemoteTask]
    problems: dict[str, str]


def list_remote(
    session: Session, remote: str | None = None, repo: str | os.PathLike[str] = "."
) -> RemoteListing:
    """Tasks and checkpoints on a remote, from its refs and plain headers alone."""
    _source, store_repo, url = open_remote(session, remote, repo)
    # One connection: fetch every ledger ref (only what moved transfers) and prune the ones
    # the remote dropped; the tracking refs then say what the remote holds.
    tracking = f"{tracking_root(url)}ledger/"
    transport.fetch(store_repo, url, [f"+{PREFIX}ledger/*:{tracking}*"], prune=True)
    ledgers, problems = task_refs(plumbing.refs_under(store_repo, tracking), tracking)
    with plumbing.session(store_repo):
        raw, oversized = task_headers(store_repo, ledgers)
    problems.update(oversized)
    me = identity.load_identity_or_none()
    local_ids = store.task_ids(session.db)
    pins = store.trust_pins(session.db)
    listing: list[RemoteTask] = []
    with plumbing.session(store_repo):  # one cat-file for every roster read
        for task_id in sorted(raw):
            try:
                header = parse_task_header(raw[task_id], task_id)
                if not header:
                    problems[task_id] = "its ledger holds no task header; it is ignored"
                    continue
                pinned = pins.get(task_id, {}).get("genesis_key")
                owner = _owner(store_repo, task_id, ledgers[task_id], pinned)
                listing.append(_remote_task(session, task_id, header, me, local_ids, owner))
            except PitstopError as exc:
                problems[task_id] = exc.message
    _remember_listing(session, snapshot.strip_url_credentials(url), listing)
    return RemoteListing(
        snapshot.strip_url_credentials(url), listing, dict(sorted(problems.items()))
    )


def _remote_task(
    session: Session,
    task_id: str,
    header: dict[str, Any],
    me: identity.Identity | None,
    local_ids: set[str],
    owner: tuple[str | None, str] = (None, UNSIGNED),
) -> RemoteTask:
    """One listed task from its plain header."""
    local_seqs: set[int] = set()
    if task_id in local_ids:
        local_seqs = {c.seq for c in store.list_checkpoints(session.db, task_id)}
    checkpoints = tuple(
        RemoteCheckpoint(
            seq=c["seq"],
            created_at=c["created_at"],
            reason=c["reason"],
            local=c["seq"] in local_seqs,
        )
        for c in header["checkpoints"]
    )
    recipients = header["recipients"]
    return RemoteTask(
        task_id=task_id,
        status=header["status"],
        created_at=header["created_at"],
        updated_at=header["updated_at"],
        checkpoints=checkpoints,
        readable=me is not None and me.recipient in recipients,
        local=task_id in local_ids,
        recipients=len(recipients),
        owner=owner[0],
        owner_note=owner[1],
    )


def _owner(store_repo: Path, task_id: str, oid: str, pinned: str | None) -> tuple[str | None, str]:
    """Who founded a listed task (fingerprint) and what that means here; one task's bad roster
    says so on its own line and never breaks the listing."""
    from core.security import signing
    from core.sharing.roster_reading import roster_in

    try:
        roster = roster_in(store_repo, task_id, oid, pinned)
    except PitstopError:
        return None, "competing owners: fetch with --expect-owner FINGERPRINT"
    if roster is None:
        return None, "no roster by the owner pinned here" if pinned else UNSIGNED
    return signing.fingerprint(roster.genesis_key), "pinned here" if pinned else "not pinned yet"


def _remember_listing(session: Session, url: str, listing: list[RemoteTask]) -> None:
    now = clock.now_iso()
    rows = [
        {
            "task_id": task.task_id,
            "status": task.status,
            "created_at": task.created_at,
            "updated_at": task.updated_at,
            "checkpoints": len(task.checkpoints),
            "latest_seq": task.latest.seq if task.latest else None,
            "latest_at": task.latest.created_at if task.latest else None,
            "readable": int(task.readable),
            "header": json.dumps({"recipients": task.recipients, "owner": task.owner}),
            "seen_at": now,
        }
        for task in listing
    ]
    with write_txn(session.db):
        store.replace_listing(session.db, url, rows)


def remote_tasks_for_dashboard(session: Session) -> list[dict[str, Any]]:
    """Remote tasks from the last listings that are not in this store yet."""
    listed = store.remote_listing(session.db)
    if not listed:
        return []  # without reading every local id: the dashboard asks this at each start
    local = store.known_task_ids(session.db, {row["task_id"] for row in listed})
    seen: dict[str, dict[str, Any]] = {}
    for row in listed:
        if row["task_id"] not in local and row["task_id"] not in seen:
            seen[row["task_id"]] = row
    return list(seen.values())
