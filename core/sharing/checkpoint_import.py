"""Recording the checkpoints fetched from a remote: each checked against its manifest hash,
its evidence re-bound, and a sealed worktree unpacked into a local commit.

A fetched checkpoint that this store already has must be the same commit; a different one means
the task diverged, which is refused rather than merged. Every file of a fetched checkpoint is
read with its cap and checked (`core.sharing.remote_documents`) before anything is recorded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import clock, snapshot, store
from core.errors import ConflictError
from core.git import plumbing
from core.models import CheckpointState
from core.sharing import remote_documents as docs
from core.sharing.evidence_transfer import insert_evidence, read_evidence
from core.sharing.layout import CHECKPOINT_FILE, NOTE_FILE, PACK_FILE, RemoteFormatError
from core.sharing.remote_reads import COMMIT_CAP, read_capped
from core.sharing.sealing import open_json
from core.store.db import write_txn

if TYPE_CHECKING:
    from core.session import Session


def import_checkpoints(
    session: Session, store_repo: Path, task_id: str, tip: str
) -> tuple[int, str | None]:
    """Record every fetched checkpoint this store lacks, oldest first; return how many, and
    the local commit the task's checkpoint ref must move to (None when nothing new)."""
    have = {c.seq: c for c in store.list_checkpoints(session.db, task_id)}
    exports = store.export_commits(session.db, task_id)
    count = 0
    newest: str | None = None
    for oid, facts in reversed(checkpoint_chain(store_repo, tip, set(exports.values()), task_id)):
        seq = int(facts["seq"])
        if seq in have:
            if exports.get(seq) not in (None, oid):
                raise ConflictError(
                    f"checkpoint {task_id}@{seq} here differs from the remote's; the task "
                    "diverged, resume one of them as a new task"
                )
            if exports.get(seq) is None:
                with write_txn(session.db):
                    store.record_export(session.db, task_id, seq, oid)
            continue
        newest = _import_checkpoint(session, store_repo, task_id, oid, facts)
        count += 1
    return count, newest if count else None


def checkpoint_chain(
    store_repo: Path, tip: str, known: Set[str] = frozenset(), task_id: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The checkpoint commits from `tip` back along first parents, newest first, with their
    `checkpoint.json` (checked, and for `task_id` when given). The walk stops at a commit in
    `known` (this store has it and all before it) or at the first commit that is not a
    checkpoint (the first checkpoint's first parent is its base commit); sequence numbers must
    fall along it. Reads go through the session's `cat-file`."""
    chain: list[tuple[str, dict[str, Any]]] = []
    oid: str | None = tip
    while oid is not None and oid not in known:
        caps = {f"{oid}:{CHECKPOINT_FILE}": docs.CHECKPOINT_CAP, oid: COMMIT_CAP}
        raw = read_capped(store_repo, caps, f"remote checkpoint commit {oid[:12]}")
        data = raw.get(f"{oid}:{CHECKPOINT_FILE}")
        if data is None:
            break
        facts = docs.checkpoint_facts(data, oid, task_id)
        if chain and facts["seq"] >= chain[-1][1]["seq"]:
            raise RemoteFormatError(
                f"remote checkpoint commit {oid[:12]} is numbered {facts['seq']}, not below the "
                f"{chain[-1][1]['seq']} after it; the remote is damaged"
            )
        chain.append((oid, facts))
        parents = plumbing.commit_parents(raw.get(oid) or b"")
        oid = parents[0] if parents else None
    return chain


def _import_checkpoint(
    session: Session, store_repo: Path, task_id: str, oid: str, facts: Mapping[str, Any]
) -> str:
    """Record one fetched checkpoint; return its local commit (the fetched one itself, or for
    a sealed worktree, a local commit built once its pack is opened)."""
    seq = int(facts["seq"])
    top = plumbing.top_entries(store_repo, oid)
    caps = {
        f"{oid}:{snapshot.MANIFEST_FILE}": docs.MANIFEST_CAP,
        f"{oid}:{NOTE_FILE}": docs.NOTE_CAP,
    }
    if facts["worktree"] == "sealed":
        caps[f"{oid}:{PACK_FILE}"] = docs.PACK_CAP
    blobs = read_capped(store_repo, caps, f"remote checkpoint {task_id}@{seq}")
    manifest_blob = blobs.get(f"{oid}:{snapshot.MANIFEST_FILE}")
    if manifest_blob is None or hashlib.sha256(manifest_blob).hexdigest() != facts.get(
        "manifest_sha256"
    ):
        raise RemoteFormatError(
            f"remote checkpoint {task_id}@{seq} fails its manifest hash; the remote is damaged"
        )
    sealed = docs.checkpoint_content(
        open_json(
            session, task_id, f"remote/checkpoint/{seq}", facts["sealed"], f"{task_id}@{seq}"
        ),
        f"{task_id}@{seq}",
    )
    evidence = read_evidence(session, store_repo, task_id, oid, facts)
    local_commit = oid
    worktree_tree, index_tree = top.get("worktree"), top.get("index")
    if facts.get("worktree") == "sealed":
        local_commit, worktree_tree, index_tree = _open_sealed_worktree(
            session, store_repo, task_id, oid, facts, sealed, blobs
        )
    with write_txn(session.db):
        store.insert_fetched_checkpoint(
            session.db,
            task_id=task_id,
            seq=seq,
            state=CheckpointState.COMPLETE.value,
            reason=str(facts["reason"]),
            note=blobs.get(f"{oid}:{NOTE_FILE}"),
            commit_sha=local_commit,
            worktree_tree=worktree_tree,
            index_tree=index_tree,
            base_commit=facts.get("base_commit"),
            branch=sealed.get("branch"),
            manifest=manifest_blob,
            manifest_sha256=facts["manifest_sha256"],
            created_at=facts["created_at"],
            completed_at=facts.get("completed_at"),
            creation_ms=facts.get("creation_ms"),
            bytes_added=facts.get("bytes_added"),
            changed_count=int(facts.get("changed_count") or 0),
            left_out_count=int(facts.get("left_out_count") or 0),
        )
        for item in evidence:
            insert_evidence(session, task_id, seq, item)
        store.record_export(session.db, task_id, seq, oid)
        session.record_event(
            task_id, "checkpoint", f"{task_id}@{seq}", "fetch", None, "complete", None,
            clock.now_iso(),
        )  # fmt: skip
    return local_commit


def _open_sealed_worktree(
    session: Session,
    store_repo: Path,
    task_id: str,
    oid: str,
    facts: Mapping[str, Any],
    sealed: Mapping[str, Any],
    blobs: Mapping[str, bytes | None],
) -> tuple[str, str, str]:
    """Unpack a sealed snapshot and build the local checkpoint commit that holds its trees."""
    seq = int(facts["seq"])
    envelope = blobs.get(f"{oid}:{PACK_FILE}")
    worktree_tree, index_tree = sealed.get("worktree_tree"), sealed.get("index_tree")
    if envelope is None or not worktree_tree or not index_tree:
        raise RemoteFormatError(f"remote checkpoint {task_id}@{seq} lacks its sealed snapshot")
    pack = session.keys.open(
        task_id, f"remote/checkpoint/{seq}/pack", envelope, f"the snapshot of {task_id}@{seq}"
    )
    plumbing.index_pack(store_repo, pack)
    previous = store.latest_complete(session.db, task_id)
    header = read_capped(
        store_repo, {f"{oid}:pitstop.json": docs.CHECKPOINT_HEADER_CAP}, f"{task_id}@{seq}"
    )[f"{oid}:pitstop.json"]
    commit, _bytes = snapshot.write_checkpoint_commit(
        store_repo,
        header=header or b"{}",
        manifest=blobs[f"{oid}:{snapshot.MANIFEST_FILE}"] or b"",
        snapshot=snapshot.Snapshot(
            worktree_tree=str(worktree_tree),
            index_tree=str(index_tree),
            base_commit=facts.get("base_commit"),
            branch=sealed.get("branch"),
            left_out=(),
            submodules=(),
            bytes_added=0,
        ),
        parent=previous.commit if previous else None,
        message=f"pitstop checkpoint {task_id}@{seq} (fetched)",
        timestamp=clock.git_timestamp(str(facts["created_at"])),
    )
    return commit, str(worktree_tree), str(index_tree)
