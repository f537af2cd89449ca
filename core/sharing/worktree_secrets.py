"""Whether a checkpoint's snapshot may travel as plain trees: never when it holds a secret.

A push sends a checkpoint's `worktree/` and `index/` trees as plain git objects shared with the
repository, unless `--encrypt-worktree`. A snapshot that holds a detected secret travels sealed
instead, whatever the flag: one whose manifest lists sealed files or files kept by
`--allow-secret`, or whose blobs the base commit lacks hold a secret when read again now (a
checkpoint taken before snapshots were judged, or judged by older rules). Blobs found clean are
remembered for the rest of the push, so a chain of checkpoints reads each new blob once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from core.git import plumbing
from core.git.objects import EMPTY_TREE, GITLINK_MODE, NULL_OID
from core.git.run import run_git
from core.models import Checkpoint
from core.snapshot import first_secret, manifest

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

if TYPE_CHECKING:
    from core.session import Session


class SecretCheck:
    """One push's judgement of its checkpoints' trees: the blobs found clean so far, and the
    checkpoints that travel sealed because they hold a secret (task → seqs)."""

    def __init__(self) -> None:
        self.clean: set[str] = set()
        self.sealed: dict[str, list[int]] = {}

    def holds_secret(
        self,
        session: Session,
        store_repo: Path,
        checkpoint: Checkpoint,
        trees: Mapping[str, str],
    ) -> bool:
        """True (and recorded) when the checkpoint's snapshot must not travel plain."""
        found = _marked_in_manifest(session, checkpoint) or self._blobs_hold_one(
            store_repo, checkpoint.base_commit, trees
        )
        if found:
            self.sealed.setdefault(checkpoint.task_id, []).append(checkpoint.seq)
        return found

    def _blobs_hold_one(
        self, store_repo: Path, base_commit: str | None, trees: Mapping[str, str]
    ) -> bool:
        """Read the blobs the trees add over the base commit; True at the first secret."""
        added = _added_blobs(store_repo, base_commit, trees)
        added = [oid for oid in added if oid not in self.clean]
        for oid, data in plumbing.read_objects(store_repo, added).items():
            if data is not None and first_secret(data) is not None:
                return True
            self.clean.add(oid)
        return False


def _marked_in_manifest(session: Session, checkpoint: Checkpoint) -> bool:
    """Whether the checkpoint's manifest lists files sealed or kept though holding a secret."""
    if not checkpoint.sealed_manifest:
        return False
    plain = session.keys.open(
        checkpoint.task_id,
        f"checkpoint/{checkpoint.seq}/manifest",
        checkpoint.sealed_manifest,
        f"the manifest of {checkpoint.ref}",
    )
    section = manifest.parse(plain, checkpoint.ref).get("snapshot") or {}
    return bool(section.get("sealed") or section.get("allowed_secrets"))


def _added_blobs(store_repo: Path, base_commit: str | None, trees: Mapping[str, str]) -> list[str]:
    """Blobs of `trees` that the base commit's tree does not hold at their path, from one
    `diff-tree --stdin` (submodule commits left out)."""
    base_tree = _tree_of(store_repo, base_commit) if base_commit else EMPTY_TREE
    pairs = [f"{base_tree} {tree}" for tree in dict.fromkeys(trees.values()) if tree != base_tree]
    if not pairs:
        return []
    raw = run_git(
        ["diff-tree", "--stdin", "-r", "--raw", "--no-renames"],
        git_dir=store_repo,
        input=("\n".join(pairs) + "\n").encode(),
    )
    blobs: dict[str, None] = {}
    for line in raw.decode("utf-8", errors="surrogateescape").splitlines():
        if not line.startswith(":"):
            continue  # the "<old> <new>" line that opens each pair
        _old_mode, new_mode, _old, new, _status = line[1:].split("\t", 1)[0].split(" ")
        if new != NULL_OID and new_mode != GITLINK_MODE:
            blobs[new] = None
    return list(blobs)


def _tree_of(store_repo: Path, commit: str) -> str:
    """A commit's tree id, read through the push's object reader."""
    body = plumbing.read_objects(store_repo, [commit]).get(commit) or b""
    first = body.split(b"\n", 1)[0]
    if not first.startswith(b"tree "):
        return run_git(["rev-parse", f"{commit}^{{tree}}"], git_dir=store_repo).decode().strip()
    return first[5:].decode()
