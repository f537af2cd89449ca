"""Recording the checkpoints fetched from a remote: each verified against its signed
attestation and its sealed manifest, its evidence re-bound, and a sealed worktree unpacked into a
local commit.

Whoever can push can rewrite a checkpoint's plain parts, so a fetched checkpoint is taken only
when an attestation the task's roster admits names exactly its commit and every byte read
matches it, and the commit's snapshot trees are those its sealed manifest records
(`core.sharing.attestation`). All of it is checked before anything of the checkpoint is written;
one that fails is refused with one line and leaves nothing here, and neither the checkpoints
before it nor the task's ledger are held back (those after it build on it and wait with it).

A fetched checkpoint that this store already has must be the same commit; a different one means
the task diverged, which is refused rather than merged. Every file of a fetched checkpoint is
read with its cap and checked (`core.sharing.remote_documents`) before anything is recorded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path

from core import clock, snapshot, store
from core.errors import ConflictError, PitstopError
from core.git import plumbing
from core.ledger.fact_format import Fact
from core.models import CheckpointState
from core.sharing import remote_documents as docs
from core.sharing.attestation import (
    CheckpointRefused,
    attestations,
    describe_commit,
    manifest_mismatch,
    mismatch,
)
from core.sharing.evidence_transfer import insert_evidence, read_evidence
from core.sharing.layout import (
    BASE_COMMIT_FILE,
    BASE_TREE,
    CHECKPOINT_FILE,
    CHECKPOINT_SCHEMA,
    NOTE_FILE,
    PACK_FILE,
    RemoteFormatError,
)
from core.sharing.remote_reads import COMMIT_CAP, read_capped
from core.sharing.sealing import open_json
from core.snapshot import manifest
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


INVALID = "invalid"  # a chain entry whose checkpoint.json was refused: why


@dataclass
class Imported:
    """What importing a task's fetched checkpoints did."""

    count: int = 0
    newest: str | None = None
    refused: list[str] = field(default_factory=list)


def import_checkpoints(
    session: Session,
    store_repo: Path,
    task_id: str,
    tip: str,
    offered: Mapping[str, bytes] = {},
) -> Imported:
    """Record every fetched checkpoint this store lacks, oldest first, that an admitted
    attestation vouches for (those held here, and `offered`: the facts this fetch admitted).

    Returns how many, the local commit the task's checkpoint ref must move to (None when
    nothing new), and one line for a checkpoint refused (the ones after it wait with it).
    """
    have = {c.seq: c for c in store.list_checkpoints(session.db, task_id)}
    exports = store.export_commits(session.db, task_id)
    vouched = attestations(session, task_id, offered)
    result = Imported()
    chain = list(reversed(checkpoint_chain(store_repo, tip, set(exports.values()), task_id)))
    for position, (oid, facts) in enumerate(chain):
        seq = facts.get("seq") if isinstance(facts.get("seq"), int) else "?"
        try:
            if INVALID in facts:
                raise CheckpointRefused(str(facts[INVALID]))
            evidence = _checked_evidence(session, store_repo, task_id, oid, facts)
            if not isinstance(seq, int) or oid not in vouched:
                raise CheckpointRefused(mismatch([], {"commit": oid}) or "")
            if seq in have:
                _already_held(session, task_id, seq, oid, exports)
                continue
            result.newest = _import_checkpoint(
                session, store_repo, task_id, oid, facts, vouched[oid], evidence
            )
        except CheckpointRefused as exc:
            later = len(chain) - position - 1
            after = f" (nor the {later} after it, which build on it)" if later else ""
            which = f"checkpoint {task_id}@{seq}" if seq != "?" else f"a checkpoint of {task_id}"
            result.refused.append(f"{which} refused: {exc}; nothing of it was taken{after}")
            break
        result.count += 1
    return result


def _already_held(
    session: Session, task_id: str, seq: int, oid: str, exports: Mapping[int, str]
) -> None:
    """A fetched checkpoint whose seq this store holds: the same commit, or a divergence."""
    if exports.get(seq) not in (None, oid):
        raise ConflictError(
            f"checkpoint {task_id}@{seq} here differs from the remote's; the task "
            "diverged, resume one of them as a new task"
        )
    if exports.get(seq) is None:
        with write_txn(session.db):
            store.record_export(session.db, task_id, seq, oid)


def checkpoint_chain(
    store_repo: Path, tip: str, known: Set[str] = frozenset(), task_id: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The checkpoint commits from `tip` back along first parents, newest first, with their
    `checkpoint.json` (checked, and for `task_id` when given). The walk stops at a commit in
    `known` (this store has it and all before it) or at the first commit that is not a
    checkpoint (the first checkpoint's first parent is its base commit); sequence numbers must
    fall along it. A commit whose `checkpoint.json` is refused ends the walk as `{INVALID: why}`.
    Reads go through the session's `cat-file`."""
    chain: list[tuple[str, dict[str, Any]]] = []
    oid: str | None = tip
    while oid is not None and oid not in known:
        caps = {f"{oid}:{CHECKPOINT_FILE}": docs.CHECKPOINT_CAP, oid: COMMIT_CAP}
        try:
            raw = read_capped(store_repo, caps, f"remote checkpoint commit {oid[:12]}")
            data = raw.get(f"{oid}:{CHECKPOINT_FILE}")
            if data is None:
                break
            facts = docs.checkpoint_facts(data, oid, task_id)
            if chain and facts["seq"] >= chain[-1][1]["seq"]:
                raise RemoteFormatError(
                    f"remote checkpoint commit {oid[:12]} is numbered {facts['seq']}, not below "
                    f"the {chain[-1][1]['seq']} after it; the remote is damaged"
                )
        except RemoteFormatError as exc:  # refused with its line; its parents are not walked
            chain.append((oid, {INVALID: str(exc)}))
            break
        chain.append((oid, facts))
        parents = plumbing.commit_parents(raw.get(oid) or b"")
        oid = parents[0] if parents else None
    return chain


def _verify(
    session: Session, store_repo: Path, task_id: str, oid: str, facts: Mapping[str, Any],
    vouching: list[Fact],
) -> Mapping[str, Any]:  # fmt: skip
    """What the fetched commit is, once an attestation vouches for all of it and its trees are
    those of its sealed manifest; a CheckpointRefused saying why not. Writes nothing."""
    seq = int(facts["seq"])
    try:
        actual = describe_commit(session, store_repo, task_id, oid)
        why = mismatch(vouching, actual)
        if why is None and facts.get("schema") != CHECKPOINT_SCHEMA:
            why = f"it uses schema {facts.get('schema')!r}, not {CHECKPOINT_SCHEMA!r}: upgrade"
        if why is None:
            blob = plumbing.read_objects(store_repo, [f"{oid}:{snapshot.MANIFEST_FILE}"])
            plain = session.keys.open(
                task_id, f"checkpoint/{seq}/manifest", blob[f"{oid}:{snapshot.MANIFEST_FILE}"]
                or b"", f"the manifest of {task_id}@{seq}",
            )  # fmt: skip
            why = manifest_mismatch(manifest.parse(plain, f"{task_id}@{seq}"), actual)
    except CheckpointRefused:
        raise
    except (PitstopError, ValueError) as exc:
        why = f"it cannot be read ({exc})"
    if why is not None:
        raise CheckpointRefused(why)
    return actual


def _checked_evidence(
    session: Session, store_repo: Path, task_id: str, oid: str, facts: Mapping[str, Any]
) -> list[Any]:
    """A fetched checkpoint's evidence, every field checked (a CheckpointRefused naming the
    field that fails): malformed input is named as such before any trust is weighed."""
    try:
        return list(read_evidence(session, store_repo, task_id, oid, facts))
    except RemoteFormatError as exc:
        raise CheckpointRefused(str(exc)) from exc


def _prepare(
    session: Session,
    store_repo: Path,
    task_id: str,
    oid: str,
    facts: Mapping[str, Any],
    vouching: list[Fact],
) -> tuple[Any, ...]:
    """Read and check all of one fetched checkpoint (its attestation and manifest); write
    nothing."""
    seq = int(facts["seq"])
    _verify(session, store_repo, task_id, oid, facts, vouching)
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
        raise CheckpointRefused("its manifest does not match the hash its checkpoint.json gives")
    sealed = docs.checkpoint_content(
        open_json(
            session, task_id, f"remote/checkpoint/{seq}", facts["sealed"], f"{task_id}@{seq}"
        ),
        f"{task_id}@{seq}",
    )
    _hold_base_commit(store_repo, task_id, oid, facts, top)
    local_commit = oid
    worktree_tree, index_tree = top.get("worktree"), top.get("index")
    if facts.get("worktree") == "sealed":
        local_commit, worktree_tree, index_tree = _open_sealed_worktree(
            session, store_repo, task_id, oid, facts, sealed, blobs
        )
    return seq, blobs, manifest_blob, sealed, local_commit, worktree_tree, index_tree


def _hold_base_commit(
    store_repo: Path, task_id: str, oid: str, facts: Mapping[str, Any], top: Mapping[str, str]
) -> None:
    """Make sure the store holds the fetched checkpoint's base commit (diffs, validation and
    resume read its tree). A remote commit by an older Pitstop has it as its second parent, so
    the fetch brought it with its history; a newer one carries its raw bytes and tree instead
    (`base.commit`, `base/`), stored here as a shallow commit."""
    base = facts.get("base_commit")
    if not base or plumbing.has_object(store_repo, str(base)):
        return
    seq = facts.get("seq")
    raw = read_capped(
        store_repo, {f"{oid}:{BASE_COMMIT_FILE}": COMMIT_CAP}, f"remote checkpoint {task_id}@{seq}"
    )[f"{oid}:{BASE_COMMIT_FILE}"]
    if raw is None:
        raise CheckpointRefused(f"it carries neither its base commit {str(base)[:12]} nor its tree")
    why = snapshot.adopt_base_commit(store_repo, str(base), raw, top.get(BASE_TREE))
    if why:
        raise CheckpointRefused(why)


def _import_checkpoint(
    session: Session,
    store_repo: Path,
    task_id: str,
    oid: str,
    facts: Mapping[str, Any],
    vouching: list[Fact],
    evidence: list[Any],
) -> str:
    """Verify and record one fetched checkpoint (its `evidence` read and checked already);
    return its local commit (the fetched one itself, or for a sealed worktree, a local commit
    built once its pack is opened).

    Everything is read and checked before anything is written; what fails refuses this
    checkpoint alone (a CheckpointRefused), never the task."""
    try:
        prepared = _prepare(session, store_repo, task_id, oid, facts, vouching)
    except RemoteFormatError as exc:
        raise CheckpointRefused(str(exc)) from exc
    seq, blobs, manifest_blob, sealed, local_commit, worktree_tree, index_tree = prepared
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
    return str(local_commit)


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
        raise CheckpointRefused("it lacks its sealed snapshot")
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
