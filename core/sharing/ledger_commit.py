"""Building a task's ledger commit: the signed task header, the data key for every recipient
the roster names, and the facts of both sides that the roster admits.

Facts already in a ledger commit are carried by blob id when they are the bytes this store
holds; a remote fact this store has not judged yet is read and screened first, and one that the
roster does not admit is left out, so a forged fact someone pushed does not travel on with the
next honest push. An unchanged task builds nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from core import clock, store
from core.errors import UsageError
from core.git import plumbing
from core.ledger.fact_format import MAX_FACT_BYTES, is_fact_path
from core.ledger.facts import export_facts, keep_rejected, screen_facts
from core.ledger.roster import Roster
from core.ledger.trust import ensure_roster
from core.models import CheckpointState, Task
from core.sharing import key_file
from core.sharing.layout import (
    KEY_FILE,
    TASK_FILE,
    TASK_SCHEMA,
    RemoteFormatError,
    canonical,
)
from core.sharing.remote_documents import parse_task_header
from core.sharing.sealing import seal_json
from core.sharing.signed_header import key_file_digest, sign_header, signature_holds
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


def facts_of(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The ledger facts (and roster changes) among a ledger commit's files."""
    return {path: data for path, data in files.items() if is_fact_path(path)}


def _blob_entries(store_repo: Path, rev: str | None) -> dict[str, str]:
    """The files of a ledger commit: path → blob id (no content read)."""
    if rev is None:
        return {}
    return {
        path: oid
        for path, (kind, oid) in plumbing.list_tree(store_repo, rev).items()
        if kind == "blob"
    }


def blob_oid(data: bytes) -> str:
    """The git object id `data` has as a blob (the store repositories use SHA-1)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def ledger_commit(
    session: Session,
    store_repo: Path,
    task: Task,
    remote_tip: str | None,
    local_tip: str | None,
) -> str | None:
    """The ledger commit to push: local facts merged with the admitted remote ones; None when
    the remote holds exactly this already."""
    roster = ensure_roster(session, task.id)
    remote_entries = _blob_entries(store_repo, remote_tip)
    local_entries = _blob_entries(store_repo, local_tip) if local_tip != remote_tip else {}
    base_entries = remote_entries or local_entries
    blob_ids, new_files = _facts_to_send(
        session, store_repo, task.id, remote_entries, local_entries
    )
    header_oid = base_entries.get(TASK_FILE)
    previous_raw = None
    if header_oid is not None:
        previous_raw = plumbing.read_objects(store_repo, [header_oid]).get(header_oid)
    _header_and_key(session, task, roster, base_entries, previous_raw, blob_ids, new_files)
    unchanged = not new_files
    if (
        unchanged
        and remote_tip is not None
        and blob_ids == remote_entries
        and (
            local_tip in (None, remote_tip)
            or plumbing.is_ancestor(store_repo, str(local_tip), remote_tip)
        )
    ):
        return None  # the remote holds exactly this already
    if unchanged and remote_tip is None and local_tip is not None and blob_ids == local_entries:
        return local_tip  # a new remote: our last ledger commit as it is
    tree = plumbing.build_tree(store_repo, new_files, blob_ids=blob_ids)
    parents = [p for p in dict.fromkeys([local_tip, remote_tip]) if p]
    return plumbing.commit(
        store_repo, tree, parents, f"pitstop ledger {task.id}", clock.git_timestamp(clock.now_iso())
    )


def _facts_to_send(
    session: Session,
    store_repo: Path,
    task_id: str,
    remote_entries: Mapping[str, str],
    local_entries: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, bytes]]:
    """The facts of the commit to push: (path → existing blob id, path → bytes to write).

    Ours are every fact this store holds; a remote fact at a path we do not hold, or with other
    bytes than ours, is read and screened, and kept only when the roster admits it (of two
    admitted byte strings for one fact, the smaller, so every order gives the same tree).
    """
    exported = export_facts(session, task_id)
    existing = {oid for path, oid in (*remote_entries.items(), *local_entries.items())}
    blob_ids: dict[str, str] = {}
    new_files: dict[str, bytes] = {}
    for path, data in exported.items():
        oid = blob_oid(data)
        if oid in existing:
            blob_ids[path] = oid
        else:
            new_files[path] = data
    unknown = {
        path: oid
        for path, oid in remote_entries.items()
        if is_fact_path(path) and blob_ids.get(path) != oid
    }
    if not unknown:
        return blob_ids, new_files
    contents = plumbing.read_capped(store_repo, {oid: MAX_FACT_BYTES for oid in unknown.values()})
    offered = {  # an oversized fact is never read, so never sent on
        path: blob for path, oid in unknown.items() if isinstance(blob := contents.get(oid), bytes)
    }
    screening = screen_facts(session, task_id, offered)
    for path in screening.taken:
        ours = exported.get(path)
        if ours is None or offered[path] < ours:
            new_files.pop(path, None)
            blob_ids[path] = unknown[path]
    with write_txn(session.db):
        keep_rejected(session, task_id, offered, screening.rejected)
    return blob_ids, new_files


def _header_and_key(
    session: Session,
    task: Task,
    roster: Roster,
    base_entries: Mapping[str, str],
    previous_raw: bytes | None,
    blob_ids: dict[str, str],
    new_files: dict[str, bytes],
) -> None:
    """Add the signed task header and the key file wrapped for the roster's recipients: both
    kept by blob id when unchanged, else written."""
    try:
        previous_header = parse_task_header(previous_raw, task.id)
    except RemoteFormatError:  # a damaged header someone pushed is simply replaced by ours
        previous_header = {}
    recipients = roster.recipients()
    if not recipients:
        raise UsageError(
            f"task {task.id} has no recipients, so nobody could read it remotely; run "
            f"`pitstop key init` (creates your identity) or `pitstop task share {task.id} "
            "--recipient KEY`"
        )
    session.keys.data_key(task.id, create=True)
    header = task_header(session, task, recipients, previous_header)
    header["roster"] = roster.uid
    previous_key = base_entries.get(KEY_FILE)
    key_blob: bytes | None = None
    same_keys = previous_header.get(key_file.HEADER_FIELD) == header[key_file.HEADER_FIELD]
    if previous_key is not None and previous_header.get("recipients") == recipients and same_keys:
        key_blob = plumbing.read_objects(session.paths.repos / task.store_repo, [previous_key]).get(
            previous_key
        )
        if key_blob is None or previous_header.get("key_file_sha256") != key_file_digest(key_blob):
            key_blob = None  # not the key file a header names: write our own
        elif not _signed_by_us(session, task.id, previous_header):
            key_blob = None  # a key file someone else's header names: never reused
    if key_blob is None:
        current = session.keys.data_key_id(task.id)
        key_blob = key_file.encode_key_file(session.keys.all_keys(task.id), current, recipients)
        new_files[KEY_FILE] = key_blob
    else:
        blob_ids[KEY_FILE] = str(previous_key)
    header["key_file_sha256"] = key_file_digest(key_blob)
    encoded = canonical(sign_header(session, task.id, header))
    if previous_raw == encoded:  # Ed25519 signs deterministically: unchanged, same bytes
        blob_ids[TASK_FILE] = base_entries[TASK_FILE]
    else:
        new_files[TASK_FILE] = encoded


def _signed_by_us(session: Session, task_id: str, header: Mapping[str, Any]) -> bool:
    """Whether `header` is one this operator signed (so the key file it names is ours)."""
    return header.get("by") == session.signing_key().public and signature_holds(task_id, header)


def task_header(
    session: Session,
    task: Task,
    recipients: list[str],
    previous: Mapping[str, Any],
) -> dict[str, Any]:
    """The `task.json` of a task: ids, states, times, counts and keys in clear (what a listing
    shows); every text a person or an agent wrote sealed."""
    header: dict[str, Any] = {
        "schema": TASK_SCHEMA,
        "task": task.id,
        "origin_store": session.keys.scope(task.id),
        "status": task.status.value,
        "created_at": task.created_at,
        "updated_at": task.updated_at,
        "budget": {
            "tokens": task.budget.tokens,
            "usd": task.budget.usd,
            "minutes": task.budget.minutes,
        },
        "tokens_used": task.tokens_used,
        "usd_used": task.usd_used,
        "checkpoints": _listed_checkpoints(session, task),
        "recipients": recipients,
        key_file.HEADER_FIELD: key_file.header_entry_of(session.keys, task.id),
    }
    content = {  # every field a person or an agent wrote: sealed (DESIGN §6.7)
        "objective": task.objective,
        "harness": task.harness.name if task.harness else None,
        "harness_version": task.harness.version if task.harness else None,
        "model": task.model.name if task.model else None,
        "model_version": task.model.version if task.model else None,
        "credentials": list(task.credentials),
        "approvers": list(task.approvers),
    }
    if store.UNREADABLE in (content["objective"], content["harness"], content["model"]):
        raise UsageError(
            f"task {task.id}'s objective cannot be opened here (its key is not available), so "
            "its header cannot be written; push from the store that holds its key"
        )
    sealed, fingerprint = seal_json(session, task.id, "remote/task", content)
    header["sealed_fp"] = fingerprint
    if previous.get("sealed_fp") == fingerprint and "sealed" in previous:
        header["sealed"] = previous["sealed"]  # unchanged content keeps its envelope
    else:
        header["sealed"] = sealed
    return header


def _listed_checkpoints(session: Session, task: Task) -> list[dict[str, Any]]:
    """The exported complete checkpoints, as the header lists them."""
    exports = store.export_commits(session.db, task.id)
    return [
        {
            "seq": checkpoint.seq,
            "created_at": checkpoint.created_at,
            "reason": checkpoint.reason.value,
            "commit": exports[checkpoint.seq],
        }
        for checkpoint in store.list_checkpoints(session.db, task.id)
        if checkpoint.state is CheckpointState.COMPLETE and checkpoint.seq in exports
    ]
