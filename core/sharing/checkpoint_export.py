"""Building the remote commit of each checkpoint: once per checkpoint, remembered after.

A checkpoint's remote commit never changes once built (history never changes under a remote),
so pushing twice sends nothing, and a checkpoint that has expired here since keeps its commit.
Each one is attested as it is built: a signed ledger fact naming the commit and the hashes of its
plain parts (`core.sharing.attestation`), without which no other store takes it. A commit built
by an older Pitstop is attested on the next push, before the ledger that carries the fact.
A snapshot that holds a detected secret never travels as plain trees: it is sealed as with
`--encrypt-worktree` (`core.sharing.worktree_secrets`), and the push says so.
"""

from __future__ import annotations

from pathlib import Path

from core import clock, snapshot, store
from core.errors import ConflictError
from core.git import plumbing
from core.models import Checkpoint, CheckpointState, Task
from core.sharing.attestation import attest, attested_commits
from core.sharing.evidence_transfer import export_evidence
from core.sharing.layout import (
    BASE_COMMIT_FILE,
    BASE_TREE,
    CHECKPOINT_FILE,
    CHECKPOINT_SCHEMA,
    NOTE_FILE,
    PACK_FILE,
    canonical,
)
from core.sharing.sealing import seal_json
from core.sharing.worktree_secrets import SecretCheck
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


def export_chain(
    session: Session,
    store_repo: Path,
    task: Task,
    seal_worktree: bool = False,
    secrets: SecretCheck | None = None,
) -> list[str]:
    """The remote commits of the task's checkpoints, oldest first, building any not yet built.

    A checkpoint already exported keeps its commit, even if it has expired here since;
    `seal_worktree` applies to new ones only, as does sealing one that holds a secret
    (`secrets` records which).
    """
    secrets = secrets or SecretCheck()
    known = store.export_commits(session.db, task.id)
    present = plumbing.read_objects(store_repo, list(known.values()))  # one process for all
    attested = attested_commits(session, task.id)
    chain: list[str] = []
    for checkpoint in store.list_checkpoints(session.db, task.id):
        exported = known.get(checkpoint.seq)
        if exported is not None and present.get(exported) is not None:
            chain.append(exported)
            if exported not in attested:  # built before checkpoints were attested
                with write_txn(session.db):
                    attest(session, store_repo, task.id, exported)
            continue
        if checkpoint.state is not CheckpointState.COMPLETE:
            continue
        parent = chain[-1] if chain else None
        chain.append(
            export_checkpoint(
                session, store_repo, task, checkpoint.seq, parent, seal_worktree, secrets
            )
        )
    return chain


def export_checkpoint(
    session: Session,
    store_repo: Path,
    task: Task,
    seq: int,
    parent: str | None,
    seal_worktree: bool = False,
    secrets: SecretCheck | None = None,
) -> str:
    """Build the remote commit of one local checkpoint (once; later pushes reuse it).

    With `seal_worktree`, or when the snapshot holds a detected secret, the snapshot's objects
    (those its base commit does not already hold) travel as one sealed pack instead of the
    plain `worktree/` and `index/` trees.

    Its only parent is the previous checkpoint's remote commit. The base commit is carried as
    its tree (`base/`, sharing objects with `worktree/`) and its raw bytes, not as a parent: a
    store holds its base commit shallowly, and a remote refuses history that reaches a shallow
    commit it lacks.
    """
    checkpoint = store.get_checkpoint(session.db, task.id, seq)
    if checkpoint.commit is None or checkpoint.state is not CheckpointState.COMPLETE:
        raise ConflictError(f"checkpoint {task.id}@{seq} is not complete; it cannot be pushed")
    top = plumbing.top_entries(store_repo, checkpoint.commit)
    files: dict[str, bytes] = {}
    blobs = {name: top[name] for name in ("pitstop.json", snapshot.MANIFEST_FILE) if name in top}
    trees: dict[str, str] = {n: top[n] for n in ("worktree", "index") if n in top}
    if checkpoint.sealed_note:
        files[NOTE_FILE] = checkpoint.sealed_note
    content: dict[str, Any] = {"branch": checkpoint.branch}
    if not seal_worktree and trees:
        seal_worktree = (secrets or SecretCheck()).holds_secret(
            session, store_repo, checkpoint, trees
        )
    if seal_worktree:
        pack = plumbing.pack_objects(
            store_repo, [t for t in trees.values()], exclude=[checkpoint.base_commit or ""]
        )
        files[PACK_FILE] = session.keys.seal(task.id, f"remote/checkpoint/{seq}/pack", pack)
        content.update(worktree_tree=trees.get("worktree"), index_tree=trees.get("index"))
        trees = {}
    sealed, _fingerprint = seal_json(session, task.id, f"remote/checkpoint/{seq}", content)
    evidence_ids = []
    for item in store.evidence_rows_for_export(session.db, task.id, seq):
        origin_id = int(item["id"])
        evidence_ids.append(origin_id)
        files.update(export_evidence(session, task.id, origin_id, item))
    files[CHECKPOINT_FILE] = _checkpoint_facts(
        session, task, checkpoint, seal_worktree, evidence_ids, sealed
    )
    if checkpoint.base_commit:
        files[BASE_COMMIT_FILE] = raw_base = _raw_commit(store_repo, checkpoint.base_commit)
        trees[BASE_TREE] = raw_base.split(b"\n", 1)[0].removeprefix(b"tree ").decode()
    tree = plumbing.build_tree(store_repo, files, trees=trees, blob_ids=blobs)
    commit = plumbing.commit(
        store_repo,
        tree,
        [parent] if parent else [],
        f"pitstop checkpoint {task.id}@{seq}",
        clock.git_timestamp(checkpoint.created_at),
    )
    with write_txn(session.db):
        store.record_export(session.db, task.id, seq, commit)
        attest(session, store_repo, task.id, commit)
    return commit


def _raw_commit(store_repo: Path, oid: str) -> bytes:
    """A commit's content as the store holds it (the base commit every checkpoint's store
    holds: a checkpoint fetches it, a fetch adopts it)."""
    raw = plumbing.read_objects(store_repo, [oid])[oid]
    if raw is None or not raw.startswith(b"tree "):
        raise ConflictError(
            f"the store lacks base commit {oid[:12]}; run `pitstop doctor` to check it"
        )
    return raw


def _checkpoint_facts(
    session: Session,
    task: Task,
    checkpoint: Checkpoint,
    seal_worktree: bool,
    evidence_ids: list[int],
    sealed: str,
) -> bytes:
    """The commit's `checkpoint.json`: what a listing shows in clear, and the sealed rest."""
    return canonical(
        {
            "schema": CHECKPOINT_SCHEMA,
            "task": task.id,
            "seq": checkpoint.seq,
            "origin_store": session.keys.scope(task.id),
            "reason": checkpoint.reason.value,
            "created_at": checkpoint.created_at,
            "completed_at": checkpoint.completed_at,
            "creation_ms": checkpoint.creation_ms,
            "bytes_added": checkpoint.bytes_added,
            "changed_count": checkpoint.changed_count,
            "left_out_count": checkpoint.left_out_count,
            "manifest_sha256": checkpoint.manifest_sha256,
            "base_commit": checkpoint.base_commit,
            "worktree": "sealed" if seal_worktree else "plain",
            "evidence": evidence_ids,
            "sealed": sealed,
        }
    )
