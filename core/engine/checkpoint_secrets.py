"""The secrets side of taking a checkpoint: `--allow-secret` paths, the sealer, their audit.

A snapshot leaves out untracked files that hold a secret and seals tracked ones
(`core.snapshot.sealed_files`); what the checkpoint use-case adds is the task's key to seal
with, the paths its user allowed to keep one (checked before anything is written), and one
audit event for each file kept so.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import UsageError
from core.models import Checkpoint
from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

if TYPE_CHECKING:  # snapshot pulls in git plumbing: loaded only when a checkpoint is taken
    from core import snapshot


def allowed_secret_paths(repo_root: str | Path, paths: tuple[str, ...]) -> frozenset[str]:
    """`--allow-secret` paths as the snapshot names them (relative to the repository's top,
    `/`-separated); one that is outside the repository or names nothing there is refused."""
    root = Path(repo_root).resolve()
    allowed = set()
    for raw in paths:
        given = Path(raw).expanduser()
        absolute = given if given.is_absolute() else root / given
        relative = os.path.relpath(os.path.normpath(absolute), root)
        if relative == "." or relative.split(os.sep)[0] == "..":
            raise UsageError(
                f"--allow-secret {raw}: not a file inside {root}; name it relative to the "
                "repository's top"
            )
        if not os.path.lexists(root / relative):
            raise UsageError(
                f"--allow-secret {raw}: {root / relative} does not exist; name a file of the "
                "work tree, relative to the repository's top"
            )
        allowed.add(Path(relative).as_posix())
    return frozenset(allowed)


def sealing_for(
    session: Session, task_id: str, previous: Checkpoint | None, allowed: frozenset[str]
) -> snapshot.Sealing:
    """How this checkpoint seals the tracked files that hold a secret: under the task's data
    key, reusing the previous checkpoint's stand-ins for bytes that did not change."""
    from core import snapshot

    def seal(item: str, plaintext: bytes) -> bytes:
        return session.keys.seal(task_id, item, plaintext)

    reuse = snapshot.sealed_reuse_map(previous.manifest if previous else None)
    return snapshot.Sealing(seal, session.keys.data_key_id(task_id), reuse, allowed)


def record_allowed_secrets(
    session: Session, task_id: str, seq: int, snap: snapshot.Snapshot, at: str
) -> None:
    """One audit event per file kept as it is though it holds a secret (`--allow-secret`):
    the path and the rule, never the value."""
    from core.snapshot import describe_secret

    for path, rule, line in dict.fromkeys(snap.allowed):
        session.record_event(
            task_id,
            "checkpoint",
            f"{task_id}@{seq}",
            "allow-secret",
            None,
            None,
            f"{path} kept as it is (--allow-secret) though it {describe_secret(rule, line)}",
            at,
            detail={"rule": rule},
        )
