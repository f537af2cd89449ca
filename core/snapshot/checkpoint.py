"""A checkpoint in the store's repository: one commit holding the header, the sealed manifest
and both snapshot trees, and the task's ref pointing at its newest one.

The commit's parents are the task's previous checkpoint and the snapshot's base commit, so the
store's own history keeps every object a checkpoint needs reachable, and a push sends a chain
of checkpoints as one pack.
"""

from __future__ import annotations

import re
from pathlib import Path

from core.git.objects import build_tree, commit, loose_object_bytes, write_blobs
from core.git.reader import read_objects
from core.git.refs import refs_under, write_ref_file

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:  # verifying a checkpoint reads MANIFEST_FILE: nothing of taking a snapshot
    from core.snapshot.take import Snapshot

# The manifest is stored sealed (AES-GCM under the task's data key); only the header is plain.
MANIFEST_FILE = "manifest.enc"
HEADER_FILE = "pitstop.json"
CHECKPOINT_REFS = "refs/pitstop/checkpoints/"
# Every checkpoint commit's message names it: taken here, exported, or fetched.
_MESSAGE_SEQ = re.compile(rb"\n\npitstop checkpoint [^@\s]+@(\d+)")


def write_checkpoint_commit(
    store_repo: Path,
    *,
    header: bytes,
    manifest: bytes,
    snapshot: Snapshot,
    parent: str | None,
    message: str,
    timestamp: str,
) -> tuple[str, int]:
    """Store header, manifest and trees as one commit; return its id and the bytes it added.

    The objects are written directly as loose objects in git's own format (the ids `hash-object`,
    `mktree` and `commit-tree` would give): four git processes fewer per checkpoint.
    """
    header_oid, manifest_oid = write_blobs(store_repo, [header, manifest])
    root = build_tree(
        store_repo,
        {},
        trees={"worktree": snapshot.worktree_tree, "index": snapshot.index_tree},
        blob_ids={HEADER_FILE: header_oid, MANIFEST_FILE: manifest_oid},
    )
    parents = [oid for oid in (parent, snapshot.base_commit) if oid]
    commit_oid = commit(store_repo, root, parents, message, timestamp)
    written = (header_oid, manifest_oid, root, commit_oid)
    return commit_oid, sum(loose_object_bytes(store_repo, oid) for oid in written)


def update_checkpoint_ref(store_repo: Path, task_id: str, commit: str) -> None:
    """Point `refs/pitstop/checkpoints/<task>` at the task's newest checkpoint commit.

    The loose ref is written the way git writes it, sparing an `update-ref` process; callers
    hold the task's checkpoint lock, so a ref lock file left there can only belong to a writer
    that was killed mid-update.
    """
    write_ref_file(store_repo, f"refs/pitstop/checkpoints/{task_id}", commit)


def checkpoint_ref_seqs(store_repo: Path, task_id: str | None = None) -> dict[str, tuple[str, int]]:
    """Task → (commit, seq) of what each checkpoint ref of the store repository points at.

    Read from the ref files and the commits' messages (no git process when they are loose), so
    the seq about to be allocated can be checked against what the repository already holds: a
    database that lost committed rows must not hand the same numbers out again.
    """
    tips = _one_tip(store_repo, task_id) if task_id else None
    if tips is None:
        refs = refs_under(store_repo, CHECKPOINT_REFS)
        tips = {ref.removeprefix(CHECKPOINT_REFS): oid for ref, oid in refs.items()}
        if task_id:
            tips = {task_id: tips[task_id]} if task_id in tips else {}
    bodies = read_objects(store_repo, list(set(tips.values())))
    found: dict[str, tuple[str, int]] = {}
    for task, oid in tips.items():
        match = _MESSAGE_SEQ.search(bodies.get(oid) or b"")
        if match:
            found[task] = (oid, int(match.group(1)))
    return found


def _one_tip(store_repo: Path, task_id: str) -> dict[str, str] | None:
    """The task's loose checkpoint ref, read as a file; None when git's word is needed."""
    try:
        value = (store_repo / (CHECKPOINT_REFS + task_id)).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    is_oid = len(value) in (40, 64) and not value.strip("0123456789abcdef")
    return {task_id: value} if is_oid else None
