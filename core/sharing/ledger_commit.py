"""Building a task's ledger commit: the plain task header, the data key for every recipient,
and the facts of both sides merged.

Facts already in a ledger commit are carried by blob id, never re-read: only the header, the
key file and facts that differ between the two sides are. An unchanged task builds nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import clock, store
from core.errors import UsageError
from core.git import plumbing
from core.ledger.facts import export_facts
from core.models import CheckpointState, Task
from core.security import identity
from core.sharing.adoption import remote_recipients
from core.sharing.layout import (
    FACTS_DIR,
    KEY_FILE,
    TASK_FILE,
    TASK_SCHEMA,
    canonical,
)
from core.sharing.remote_documents import parse_task_header
from core.sharing.sealing import seal_json

if TYPE_CHECKING:
    from core.session import Session


def read_tree_files(store_repo: Path, rev: str | None) -> dict[str, bytes]:
    """Every file of a ledger commit (path → bytes); empty for None."""
    if rev is None:
        return {}
    entries = plumbing.list_tree(store_repo, rev)
    paths = [path for path, (kind, _oid) in entries.items() if kind == "blob"]
    blobs = plumbing.read_objects(store_repo, [entries[path][1] for path in paths])
    return {path: blobs[entries[path][1]] or b"" for path in paths}


def facts_of(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The ledger facts among a ledger commit's files."""
    return {path: data for path, data in files.items() if path.startswith(FACTS_DIR)}


def _blob_entries(store_repo: Path, rev: str | None) -> dict[str, str]:
    """The files of a ledger commit: path → blob id (no content read)."""
    if rev is None:
        return {}
    return {
        path: oid
        for path, (kind, oid) in plumbing.list_tree(store_repo, rev).items()
        if kind == "blob"
    }


def ledger_commit(
    session: Session,
    store_repo: Path,
    task: Task,
    remote_tip: str | None,
    local_tip: str | None,
) -> str | None:
    """The ledger commit to push: local facts merged with the remote's; None when unchanged."""
    remote_entries = _blob_entries(store_repo, remote_tip)
    local_entries = _blob_entries(store_repo, local_tip) if local_tip != remote_tip else {}
    base_entries = remote_entries or local_entries
    facts, previous_raw = _union_of_facts(
        store_repo, local_entries, remote_entries, base_entries.get(TASK_FILE)
    )
    exported = export_facts(session, task.id)
    new_files = {path: data for path, data in exported.items() if path not in facts}
    blob_ids = dict(facts)
    _header_and_key(session, task, base_entries, previous_raw, blob_ids, new_files)
    if not new_files and blob_ids == base_entries:
        if remote_tip is not None and (
            local_tip in (None, remote_tip)
            or plumbing.is_ancestor(store_repo, str(local_tip), remote_tip)
        ):
            return None  # the remote holds exactly this already
        if remote_tip is None and local_tip is not None:
            return local_tip  # a new remote: our last ledger commit as it is
    tree = plumbing.build_tree(store_repo, new_files, blob_ids=blob_ids)
    parents = [p for p in dict.fromkeys([local_tip, remote_tip]) if p]
    return plumbing.commit(
        store_repo, tree, parents, f"pitstop ledger {task.id}", clock.git_timestamp(clock.now_iso())
    )


def _union_of_facts(
    store_repo: Path,
    local_entries: Mapping[str, str],
    remote_entries: Mapping[str, str],
    header_oid: str | None,
) -> tuple[dict[str, str], bytes | None]:
    """Both sides' facts (path → blob id), and the previous task header's bytes, in one read."""
    clashes = [
        path
        for path, oid in local_entries.items()
        if path.startswith(FACTS_DIR) and remote_entries.get(path, oid) != oid
    ]
    wanted = [oid for oid in (header_oid, *(local_entries[p] for p in clashes)) if oid]
    wanted += [remote_entries[p] for p in clashes]
    contents = plumbing.read_objects(store_repo, wanted)
    facts = {p: oid for p, oid in local_entries.items() if p.startswith(FACTS_DIR)}
    facts.update({p: oid for p, oid in remote_entries.items() if p.startswith(FACTS_DIR)})
    for path in clashes:  # the same fact sealed twice: keep the smaller bytes, in any order
        ours, theirs = local_entries[path], remote_entries[path]
        facts[path] = min((ours, theirs), key=lambda oid: (contents.get(oid) or b"", oid))
    return facts, contents.get(header_oid or "")


def _header_and_key(
    session: Session,
    task: Task,
    base_entries: Mapping[str, str],
    previous_raw: bytes | None,
    blob_ids: dict[str, str],
    new_files: dict[str, bytes],
) -> None:
    """Add the task header and the key file: kept by blob id when unchanged, else written."""
    previous_header = parse_task_header(previous_raw, task.id)
    recipients = sorted(
        set(remote_recipients(session, task.id)) | set(previous_header.get("recipients", []))
    )
    if not recipients:
        raise UsageError(
            f"task {task.id} has no recipients, so nobody could read it remotely; run "
            f"`pitstop key init` (creates your identity) or `pitstop task share {task.id} "
            "--recipient KEY`"
        )
    header = canonical(task_header(session, task, recipients, previous_header))
    if previous_raw == header:
        blob_ids[TASK_FILE] = base_entries[TASK_FILE]
    else:
        new_files[TASK_FILE] = header
    previous_key = base_entries.get(KEY_FILE)
    if previous_key is not None and previous_header.get("recipients") == recipients:
        blob_ids[KEY_FILE] = previous_key
    else:
        new_files[KEY_FILE] = identity.wrap_for_recipients(
            session.keys.data_key(task.id, create=True), recipients
        )


def task_header(
    session: Session,
    task: Task,
    recipients: list[str],
    previous: Mapping[str, Any],
) -> dict[str, Any]:
    """The plain `task.json` of a task: what a listing shows, the rest sealed."""
    header: dict[str, Any] = {
        "schema": TASK_SCHEMA,
        "task": task.id,
        "origin_store": session.keys.scope(task.id),
        "status": task.status.value,
        "created_at": task.created_at,
        "updated_at": task.updated_at,
        "harness": task.harness.name if task.harness else None,
        "harness_version": task.harness.version if task.harness else None,
        "model": task.model.name if task.model else None,
        "model_version": task.model.version if task.model else None,
        "budget": {
            "tokens": task.budget.tokens,
            "usd": task.budget.usd,
            "minutes": task.budget.minutes,
        },
        "tokens_used": task.tokens_used,
        "usd_used": task.usd_used,
        "checkpoints": _listed_checkpoints(session, task),
        "recipients": recipients,
    }
    content = {
        "objective": task.objective,
        "credentials": list(task.credentials),
        "approvers": list(task.approvers),
    }
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
