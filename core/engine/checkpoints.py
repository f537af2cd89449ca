"""Reading recorded checkpoints: find one by ref, open its sealed content, verify, compare.

Every reader goes through `open_checkpoint` (decrypt, refuse a manifest from a newer Pitstop) and
`writers.displayed` (a half-written checkpoint whose writer died shows as incomplete), so the CLI,
the dashboard, validation and resume all see a checkpoint the same way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from core import numbers, store
from core.engine.writers import displayed
from core.errors import DamagedCheckpointError, NotFoundError, PitstopError, UsageError
from core.models import Checkpoint, CheckpointState
from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

CHECKPOINT_REF = re.compile(r"^(?P<task>[^@\s]+)(?:@(?P<seq>\d+|latest))?$")


def parse_checkpoint_ref(text: str) -> tuple[str, int | None]:
    """Split `TASK@SEQ` (or `TASK`, `TASK@latest`) into the task id and the sequence."""
    match = CHECKPOINT_REF.match(text.strip())
    if not match:
        raise UsageError(f"invalid checkpoint {text!r}: expected TASK@SEQ, e.g. fix-login-3f2a@2")
    seq = match.group("seq")
    if not seq or seq == "latest":
        return match.group("task"), None
    return match.group("task"), numbers.storable_integer(int(seq), f"checkpoint number in {text!r}")


def open_checkpoint(session: Session, checkpoint: Checkpoint, *, strict: bool = True) -> Checkpoint:
    """Decrypt a checkpoint's note and manifest (refusing a manifest from the future).

    With `strict` off (lists), content that cannot be decrypted shows as a marker instead.
    """
    from core.security.crypto import DecryptError, MasterKeyError
    from core.snapshot import manifest

    task_id, seq = checkpoint.task_id, checkpoint.seq
    try:
        note = (
            session.keys.open(
                task_id,
                f"checkpoint/{seq}/note",
                checkpoint.sealed_note,
                f"the note of {checkpoint.ref}",
            ).decode("utf-8", "replace")
            if checkpoint.sealed_note
            else None
        )
        document = None
        if checkpoint.sealed_manifest:
            plain = session.keys.open(
                task_id,
                f"checkpoint/{seq}/manifest",
                checkpoint.sealed_manifest,
                f"the manifest of {checkpoint.ref}",
            )
            document = manifest.parse(plain, checkpoint.ref)
    except (MasterKeyError, DecryptError):
        if strict:
            raise
        # The sealed bytes go too: a listing (and its JSON) shows the marker, never ciphertext.
        return checkpoint._replace(note=store.UNREADABLE, sealed_note=None, sealed_manifest=None)
    return checkpoint._replace(note=note, manifest=document, sealed_note=None, sealed_manifest=None)


def list_checkpoints(session: Session, task_id: str) -> list[Checkpoint]:
    """A task's checkpoints, oldest first; half-written ones show as incomplete."""
    store.get_task(session.db, task_id)
    return [
        displayed(session.paths, open_checkpoint(session, c, strict=False))
        for c in store.list_checkpoints(session.db, task_id)
    ]


def get_checkpoint(session: Session, ref: str, *, with_content: bool = True) -> Checkpoint:
    """A checkpoint by `TASK@SEQ` (`TASK` alone: its newest), note and manifest decrypted."""
    task_id, seq = parse_checkpoint_ref(ref)
    store.get_task(session.db, task_id)
    if seq is None:
        seq = store.latest_seq(session.db, task_id)
        if seq is None:
            raise NotFoundError(
                f"task {task_id} has no checkpoints yet; run `pitstop checkpoint {task_id}`"
            )
    found = store.get_checkpoint(session.db, task_id, seq)
    return displayed(session.paths, open_checkpoint(session, found) if with_content else found)


def store_repo_for(session: Session, task_id: str) -> Path:
    """The store's own git repository that holds a task's snapshots."""
    return session.paths.repos / store.get_task(session.db, task_id).store_repo


def verify(session: Session, checkpoint: Checkpoint, *, deep: bool = True) -> list[str]:
    """Problems found re-reading a checkpoint from the store (empty when it is sound).

    The commit, its root entries and the manifest are read back every time. Every object of
    both trees is walked (present, and each loose one hashing to its id) unless a reader walked
    this checkpoint whole before and every file its objects live in is as it was then
    (`core.snapshot.verified_reads`): a diff or validation of a checkpoint read before costs
    what its root reads and its own loose objects cost, not what its tree holds.
    """
    from core import snapshot
    from core.snapshot import verified_reads

    if checkpoint.state is not CheckpointState.COMPLETE:
        return [
            f"checkpoint {checkpoint.ref} is {checkpoint.state.value}: "
            f"{checkpoint.failure or 'not complete'}"
        ]
    assert checkpoint.commit and checkpoint.worktree_tree and checkpoint.index_tree
    store_repo = store_repo_for(session, checkpoint.task_id)
    read_before = verified_reads.still_read(store_repo, checkpoint.commit)
    packs = loose = None
    if deep and not read_before:  # as the store was before the walk: what a record vouches for
        packs = verified_reads.packs_state(store_repo)
        loose = verified_reads.loose_listing(store_repo)
    verification = snapshot.verify_checkpoint(
        store_repo,
        commit=checkpoint.commit,
        worktree_tree=checkpoint.worktree_tree,
        index_tree=checkpoint.index_tree,
        manifest_sha256=checkpoint.manifest_sha256,
        deep=deep,
        objects_present=read_before,
        known_loose=loose,
    )
    problems = verification.problems()
    walk = verification.walk
    # recorded when every object that was loose before the walk was rehashed (its file's state
    # kept): the others were packed, in packs the record holds as they were
    if (
        packs
        and loose is not None
        and walk is not None
        and not problems
        and all(oid in walk.loose for oid in walk.walked if oid in loose)
    ):
        verified_reads.record_read(store_repo, checkpoint.commit, packs, walk.loose)
    return problems


def _require_sound(session: Session, checkpoint: Checkpoint, *, deep: bool = True) -> Path:
    problems = verify(session, checkpoint, deep=deep)
    if problems:
        raise DamagedCheckpointError(
            f"checkpoint {checkpoint.ref} is damaged: {problems[0]}"
            if checkpoint.state is CheckpointState.COMPLETE
            else problems[0]
        )
    return store_repo_for(session, checkpoint.task_id)


def diff(session: Session, ref: str, against: str = "base", paths: Sequence[str] = ()) -> str:
    """A unified diff of a checkpoint's snapshot against its base commit or the previous one."""
    from core.snapshot import early_diff
    from core.snapshot.diff import finish_unified_diff, start_unified_diff

    _check_against(against)  # before any read: a refusal changes nothing (no record either)
    checkpoint = get_checkpoint(session, ref, with_content=False)
    if checkpoint.state is not CheckpointState.COMPLETE or not checkpoint.worktree_tree:
        _require_sound(session, checkpoint)  # raises: it says why
    assert checkpoint.worktree_tree
    store_repo = store_repo_for(session, checkpoint.task_id)
    try:
        old_tree = _comparison_tree(session, checkpoint, against, store_repo)
    except PitstopError:
        _require_sound(session, checkpoint)  # damage is what is said first
        raise
    # git writes the text while the checkpoint is checked; nothing of it is shown unless sound
    started = None if paths else early_diff.take(store_repo, old_tree, checkpoint.worktree_tree)
    running = started or start_unified_diff(store_repo, old_tree, checkpoint.worktree_tree, paths)
    try:
        _require_sound(session, checkpoint)
    except BaseException:
        running.stop()
        raise
    return finish_unified_diff(running)


def _check_against(against: str) -> None:
    if against not in ("base", "previous"):
        raise UsageError(f"invalid --against {against!r}: use base or previous")


def _comparison_tree(
    session: Session, checkpoint: Checkpoint, against: str, store_repo: Path
) -> str:
    from core import snapshot

    if against == "base":
        if not checkpoint.base_commit:
            return snapshot.EMPTY_TREE
        # git peels it itself: no process (nor a read of the commit) to ask for the tree id
        return f"{checkpoint.base_commit}^{{tree}}"
    if against == "previous":
        earlier = [
            c
            for c in store.list_checkpoints(session.db, checkpoint.task_id)
            if c.seq < checkpoint.seq and c.state is CheckpointState.COMPLETE
        ]
        if not earlier or not earlier[-1].worktree_tree:
            return _comparison_tree(session, checkpoint, "base", store_repo)
        return earlier[-1].worktree_tree
    raise UsageError(f"invalid --against {against!r}: use base or previous")


def changed_files(session: Session, ref: str, against: str = "base") -> list[Any]:
    """Per-file status and line counts of a checkpoint against base or previous."""
    from core import snapshot

    _check_against(against)
    checkpoint = get_checkpoint(session, ref, with_content=False)
    store_repo = _require_sound(session, checkpoint)
    assert checkpoint.worktree_tree
    old_tree = _comparison_tree(session, checkpoint, against, store_repo)
    return snapshot.changed_files(store_repo, old_tree, checkpoint.worktree_tree)


def checkout(session: Session, ref: str, into: str | os.PathLike[str]) -> int:
    """Materialise a complete checkpoint's working tree, byte-exact, into a new directory.

    The manifest is opened for the files stored sealed (they hold a secret): their real bytes
    are opened before anything is written, and written in place of their stand-ins.
    """
    from core import snapshot

    checkpoint = get_checkpoint(session, ref)
    store_repo = _require_sound(session, checkpoint, deep=False)
    assert checkpoint.worktree_tree
    target = Path(into).expanduser().absolute()
    sealed = snapshot.sealed_files_of(checkpoint.manifest, "worktree")
    opened = open_sealed_files(session, checkpoint, store_repo, sealed)
    return snapshot.materialise(
        store_repo, checkpoint.worktree_tree, target, session.paths.tmp, sealed, opened
    )


def open_sealed_files(
    session: Session, checkpoint: Checkpoint, store_repo: Path, sealed: Sequence[Any]
) -> dict[str, bytes]:
    """The real bytes of a checkpoint's sealed files (stand-in → bytes), with the task's keys."""
    from core import snapshot

    if not sealed:
        return {}

    def opener(item: str, envelope: bytes, what: str) -> bytes:
        return session.keys.open(checkpoint.task_id, item, envelope, f"{what} in {checkpoint.ref}")

    return snapshot.open_sealed(store_repo, sealed, opener)
