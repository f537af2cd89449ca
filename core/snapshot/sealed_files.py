"""Tracked files that hold a secret: kept exactly, but stored sealed in the snapshot's trees.

A changed tracked file (or a staged one) cannot be left out the way an untracked one is: the
agent's work would be lost, and a staged blob is part of the index. So its bytes are sealed
under the task's data key (AES-GCM, item `snapshot/file/<blob id of the bytes>`) and the tree
holds a *stand-in* at its path: a blob of `STAND_IN_MAGIC` and the envelope. The manifest
(sealed too) lists each sealed file with the stand-in, git's id of the real bytes, its mode and
what was found, and checkout, resume and comparisons put the real bytes back in its place. The
real bytes never enter the store's objects, not even for a moment: they are never handed to
git there.

A stand-in is reused while the same bytes stay at a path (`Sealing.reuse`, from the previous
checkpoint's manifest), so an unchanged sealed file keeps its tree id and a checkpoint with
nothing new is still a no-op; one sealed under a key since rotated is sealed again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from core.errors import DamagedCheckpointError
from core.git.objects import write_object
from core.git.reader import read_objects
from core.git.run import run_git
from core.security.crypto import peek_key_id

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

STAND_IN_MAGIC = b"pitstop-sealed-file/1\n"
WORKTREE = "worktree"
INDEX = "index"
SYMLINK_MODE = "120000"


class SealedFile(NamedTuple):
    """One file stored sealed in one of a snapshot's trees."""

    tree: str  # WORKTREE or INDEX
    path: str
    mode: str  # git's mode of the real file: 100644, 100755 or 120000
    blob: str  # the stand-in the tree holds at `path`
    plain_blob: str  # git's id of the real bytes (never stored)
    rule: str
    line: int


class AllowedSecret(NamedTuple):
    """A file kept as it is although it holds a secret: its user said so (`--allow-secret`)."""

    path: str
    rule: str
    line: int


class Sealing(NamedTuple):
    """What a snapshot needs to seal files: the task's sealer, its current key's id, the
    stand-ins it may reuse (blob id of the real bytes → stand-in) and the paths allowed."""

    seal: Callable[[str, bytes], bytes]  # (item, plaintext) → envelope
    key_id: str
    reuse: Mapping[str, str] = {}
    allowed: frozenset[str] = frozenset()


class Candidate(NamedTuple):
    """A tracked file found holding a secret, about to be sealed."""

    tree: str
    path: str
    mode: str
    data: bytes
    rule: str
    line: int


def sealed_file_item(plain_blob: str) -> str:
    """The envelope item of a sealed file's bytes (bound to their id, not to a path)."""
    return f"snapshot/file/{plain_blob}"


def git_blob_id(data: bytes) -> str:
    """The id git gives a blob of `data` (computed, nothing written)."""
    header = f"blob {len(data)}\0".encode()
    from core.digests import sha1_hex

    return sha1_hex(header + data)


def seal_candidates(
    store_repo: Path, candidates: Sequence[Candidate], sealing: Sealing
) -> list[SealedFile]:
    """Write (or reuse) a stand-in for each candidate; the real bytes never reach git."""
    made: dict[str, str] = {}
    sealed = []
    for candidate in candidates:
        plain_blob = git_blob_id(candidate.data)
        blob = made.get(plain_blob) or _reusable(store_repo, sealing, plain_blob)
        if blob is None:
            envelope = sealing.seal(sealed_file_item(plain_blob), candidate.data)
            blob = write_object(store_repo, "blob", STAND_IN_MAGIC + envelope)
        made[plain_blob] = blob
        sealed.append(
            SealedFile(
                candidate.tree,
                candidate.path,
                candidate.mode,
                blob,
                plain_blob,
                candidate.rule,
                candidate.line,
            )
        )
    return sealed


def _reusable(store_repo: Path, sealing: Sealing, plain_blob: str) -> str | None:
    """The previous checkpoint's stand-in for these bytes, if the store holds it and it is
    sealed under the task's current key."""
    blob = sealing.reuse.get(plain_blob)
    if blob is None:
        return None
    body = read_objects(store_repo, [blob]).get(blob)
    if body is None or not body.startswith(STAND_IN_MAGIC):
        return None
    return blob if peek_key_id(body[len(STAND_IN_MAGIC) :]) == sealing.key_id else None


def put_stand_ins(cwd: Path, env: Mapping[str, str], entries: Iterable[SealedFile]) -> None:
    """Point the scratch index's entries at their stand-ins (one `update-index`)."""
    lines = b"".join(
        f"{stand_in_mode(e.mode)} {e.blob}\t".encode()
        + e.path.encode("utf-8", errors="surrogateescape")
        + b"\0"
        for e in entries
    )
    if lines:
        run_git(["update-index", "-z", "--index-info"], cwd=cwd, env=env, input=lines)


def stand_in_mode(mode: str) -> str:
    """The mode a stand-in has in the tree: the real file's, a symbolic link's as a file (its
    stand-in is an envelope, not a link target)."""
    return "100644" if mode == SYMLINK_MODE else mode


# --- the manifest's record, and reading sealed files back -------------------------------------


def to_manifest(entries: Iterable[SealedFile]) -> list[dict[str, Any]]:
    """The manifest's `snapshot.sealed` list."""
    return [entry._asdict() for entry in entries]


def sealed_files_of(
    manifest: Mapping[str, Any] | None, tree: str | None = None
) -> list[SealedFile]:
    """The sealed files a manifest lists (of one `tree` when given); a malformed entry means
    the checkpoint cannot be restored exactly, and says so."""
    listed = ((manifest or {}).get("snapshot") or {}).get("sealed") or []
    entries = []
    for item in listed:
        try:
            entry = SealedFile(**item)
        except TypeError as exc:
            raise DamagedCheckpointError(
                "a sealed file's record in the manifest is malformed; this checkpoint cannot "
                "be restored exactly"
            ) from exc
        if tree is None or entry.tree == tree:
            entries.append(entry)
    return entries


def sealed_reuse_map(manifest: Mapping[str, Any] | None) -> dict[str, str]:
    """Blob id of the real bytes → stand-in, from a previous checkpoint's manifest."""
    try:
        return {entry.plain_blob: entry.blob for entry in sealed_files_of(manifest)}
    except DamagedCheckpointError:
        return {}


def open_sealed(
    store_repo: Path,
    entries: Sequence[SealedFile],
    opener: Callable[[str, bytes, str], bytes],
) -> dict[str, bytes]:
    """The real bytes of each sealed file (stand-in → bytes), each checked against its id.

    `opener(item, envelope, what)` opens an envelope with the task's keys (`what` names the
    file in its error); a stand-in missing or not its manifest's bytes is a
    DamagedCheckpointError naming the file.
    """
    wanted = list(dict.fromkeys(entry.blob for entry in entries))
    found = read_objects(store_repo, wanted)
    opened: dict[str, bytes] = {}
    for entry in entries:
        if entry.blob in opened:
            continue
        body = found.get(entry.blob)
        if body is None or not body.startswith(STAND_IN_MAGIC):
            raise DamagedCheckpointError(
                f"the sealed copy of {entry.path} is missing from the store; this checkpoint "
                "cannot be restored exactly"
            )
        what = f"the sealed copy of {entry.path}"
        plain = opener(sealed_file_item(entry.plain_blob), body[len(STAND_IN_MAGIC) :], what)
        if git_blob_id(plain) != entry.plain_blob:
            raise DamagedCheckpointError(
                f"the sealed copy of {entry.path} does not hold the bytes its manifest names"
            )
        opened[entry.blob] = plain
    return opened


def write_real_files(
    into: Path, entries: Sequence[SealedFile], opened: Mapping[str, bytes]
) -> None:
    """Replace each stand-in a checkout wrote in `into` with the real file: bytes, mode, or a
    symbolic link. Only paths the tree itself put there are written (a stand-in is there)."""
    import os

    for entry in entries:
        target = into / entry.path
        plain = opened[entry.blob]
        if not target.is_file() or target.is_symlink():
            raise DamagedCheckpointError(
                f"{entry.path} was not written by the checkout; its sealed copy has no place"
            )
        if entry.mode == SYMLINK_MODE:
            target.unlink()
            os.symlink(os.fsdecode(plain), target)
            continue
        # the checkout gave the stand-in the real file's mode already
        fd = os.open(target, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        with os.fdopen(fd, "wb") as handle:
            handle.write(plain)
