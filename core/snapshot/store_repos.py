"""The store's own repositories: created once per source repository, holding by themselves
every object a snapshot needs.

A snapshot is hashed with the user's objects as an alternate; whatever it needs that still
lives only in the user's repository is copied in afterwards, so a `git gc` there can never
break a checkpoint (DESIGN §6). The base commit is fetched shallowly (depth 1: the commit and
its tree, recorded in the store's `shallow` file), never its history, which stays in the user's
repository and on its remote. A store that fetched a checkpoint gets its base commit the same
way: carried beside the remote commit's tree (`adopt_base_commit`), not as its parent.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from core.git.objects import GITLINK_MODE, NULL_OID, TREE_MODE
from core.git.packs import copy_objects, fetch_shallow
from core.git.reader import object_sizes, read_objects
from core.git.run import run_git
from core.git.shallow import add_shallow, raw_object_id
from core.snapshot.gitpython_adapter import init_private_bare_repo
from core.snapshot.source import SourceRepo


def ensure_store_repo(repos_dir: Path, source: SourceRepo, name: str | None = None) -> Path:
    """Create (once) and return the store's own bare repository for `source`.

    `name` is the task's store repository when it has one: a resumed task snapshots a worktree
    of its repository (another toplevel, so another default name) into the same store repo.
    `pitstop-source` is written last: a repository without it was left half-initialised by a
    killed process and is completed here (git init and config are idempotent).
    """
    name = name or source.store_repo_name
    path = repos_dir / name
    marker = path / "pitstop-source"
    if marker.exists():
        return path
    repos_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _exclusive(repos_dir / f".{name}.init-lock"):
        if marker.exists():  # another process finished it while we waited
            return path
        # Holding the init lock with no marker: any lock file here is a killed initialiser's.
        for stale in path.glob("*.lock"):
            stale.unlink(missing_ok=True)
        init_private_bare_repo(path)
        temp = marker.with_name(f"pitstop-source.{os.getpid()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(str(source.toplevel) + "\n")
        os.replace(temp, marker)
    return path


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on `lock_path` (released by the OS if we die)."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure_base_commit(
    store_repo: Path, source: SourceRepo, base_commit: str, held: bool | None = None
) -> int:
    """Fetch the base commit and its tree (not its history) into the store once; return the
    bytes added.

    `held`: whether the store holds the base commit, when the caller already asked. Otherwise
    it is read through the operation's `cat-file` session when one is open.
    """
    if held is None:
        held = read_objects(store_repo, [base_commit])[base_commit] is not None
    if held:
        return 0
    with _shallow_lock(store_repo):
        if object_sizes(store_repo, [base_commit])[base_commit] is not None:
            return 0  # another process fetched it while we waited
        return fetch_shallow(store_repo, source.toplevel, base_commit)


def adopt_base_commit(store_repo: Path, base_commit: str, raw: bytes, tree: str | None) -> str:
    """Store a fetched checkpoint's base commit from its raw bytes (a remote commit carries
    them beside the base tree, never the history); "" when stored, else why not (nothing
    written then).

    The bytes must hash to `base_commit` and name `tree`, which the store must hold whole
    (it came as the remote commit's `base/`). Parents the store lacks make it a shallow
    commit, as a depth-1 fetch records one, so that git walks no further.
    """
    if raw_object_id("commit", raw) != base_commit:
        return f"its base commit is not {base_commit[:12]}"
    header = raw.split(b"\n\n", 1)[0].split(b"\n")
    if not tree or header[0] != f"tree {tree}".encode():
        return "its base commit does not name the base tree it carries"
    parents = [line[7:].decode() for line in header[1:] if line.startswith(b"parent ")]
    with _shallow_lock(store_repo):
        if object_sizes(store_repo, [base_commit])[base_commit] is not None:
            return ""
        run_git(["hash-object", "-w", "-t", "commit", "--stdin"], git_dir=store_repo, input=raw)
        held = object_sizes(store_repo, parents)
        if any(size is None for size in held.values()):
            add_shallow(store_repo, [base_commit])
    return ""


# How long a `shallow.lock` git itself holds lasts at most (a `git prune` in `pitstop gc`
# rewrites the file in an instant); one older, found while holding our lock, is a killed writer's.
_SHALLOW_LOCK_STALE_S = 5.0


@contextmanager
def _shallow_lock(store_repo: Path) -> Iterator[None]:
    """One writer of the store's `shallow` file at a time (git's `shallow.lock` refuses a
    second rather than waiting): Pitstop's writers take this lock, and wait for a
    `shallow.lock` git holds; one left by a killed writer is removed."""
    with _exclusive(store_repo / "pitstop-shallow.flock"):
        lock = store_repo / "shallow.lock"
        while True:
            try:
                age = time.time() - lock.stat().st_mtime
            except FileNotFoundError:
                break
            if age >= _SHALLOW_LOCK_STALE_S:
                lock.unlink(missing_ok=True)
                break
            time.sleep(0.05)
        yield


def new_objects(
    store_repo: Path, pairs: Sequence[tuple[str, str]], source: SourceRepo
) -> tuple[list[str], list[tuple[str, str | None]] | None]:
    """Objects the new tree of each (old, new) pair does not share with the old one, and the
    files (path, new id or None when gone) that changed in the first pair.

    Blobs and subtrees (gitlinks excluded) plus each new root tree, from one `diff-tree --stdin`.
    The file changes are None when the output could not be attributed to its pair.
    """
    oids = [new for old, new in pairs if old != new]
    changed_pairs = [index for index, (old, new) in enumerate(pairs) if old != new]
    changed = [f"{pairs[index][0]} {pairs[index][1]}" for index in changed_pairs]
    first_changes: list[tuple[str, str | None]] | None = []
    if not changed:
        return oids, first_changes
    # The user's objects are an alternate here: the temporary index's cache may name subtrees
    # only the user's repository holds; they are copied into the store right after.
    raw = run_git(
        ["diff-tree", "--stdin", "-r", "-t", "-z", "--raw", "--no-renames"],
        git_dir=store_repo,
        env={"GIT_ALTERNATE_OBJECT_DIRECTORIES": str(source.objects_dir)},
        input=("\n".join(changed) + "\n").encode(),
        read_only=True,
    )
    fields = raw.split(b"\0")
    pair = -1
    position = 0
    while position < len(fields):
        # "<old> <new>\n" opens each pair's records; each record is its meta then its path
        _header, newline, meta = fields[position].rpartition(b"\n")
        if newline:
            pair += 1
        if not meta.startswith(b":"):
            position += 1
            continue
        path = fields[position + 1] if position + 1 < len(fields) else b""
        position += 2
        old_mode, new_mode, _old_oid, new_oid, _status = meta[1:].decode().split(" ")
        if new_oid != NULL_OID and new_mode != GITLINK_MODE:
            oids.append(new_oid)
        if first_changes is None or TREE_MODE in (new_mode, old_mode):
            continue
        if not 0 <= pair < len(changed_pairs):
            first_changes = None
        elif changed_pairs[pair] == 0:
            name = path.decode("utf-8", "surrogateescape")
            first_changes.append((name, None if new_oid == NULL_OID else new_oid))
    return oids, first_changes


def loose_objects(store_repo: Path) -> frozenset[str]:
    """The ids of the store's loose objects, from the fan-out directories' names alone."""
    objects = store_repo / "objects"
    found: set[str] = set()
    try:
        fanouts = [entry for entry in os.scandir(objects) if len(entry.name) == 2]
    except FileNotFoundError:
        return frozenset()
    for fanout in fanouts:
        try:
            found.update(fanout.name + name for name in os.listdir(fanout.path))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return frozenset(found)


def copy_missing_objects(
    store_repo: Path,
    source: SourceRepo,
    oids: list[str],
    base_commit: str | None = None,
    held_before: frozenset[str] | None = None,
    packed_now: Collection[str] = (),
) -> tuple[int, int]:
    """Copy objects only the user's repository holds into the store; return the bytes this
    snapshot added to the store and how many of `oids` the store still lacks afterwards.

    With `base_commit`, the same batch asks whether the store holds it, and it is fetched
    (shallowly) when it does not. The bytes added are real bytes on disk, each counted once:
    the fetch's growth, what was copied, and the loose objects of `oids` not among
    `held_before` (the loose objects before the snapshot wrote any; without it every loose one
    of `oids` counts). Packed ones were counted by whatever fetched, copied or packed them:
    `packed_now`, the snapshot's own pack (`pack_writer.batched`), is known held unasked.
    """
    if packed_now:
        oids = [oid for oid in oids if oid not in packed_now]
    sizes = object_sizes(store_repo, [*oids, base_commit] if base_commit else oids)
    fetched = 0
    if base_commit is not None and sizes.pop(base_commit, None) is None:
        fetched = ensure_base_commit(store_repo, source, base_commit, held=False)
        sizes = object_sizes(store_repo, oids)  # the fetch may have brought some of them
    before = held_before or frozenset()
    written = sum(
        size
        for oid, size in sizes.items()
        if size and oid not in before and _is_loose(store_repo, oid)
    )
    missing = [oid for oid, size in sizes.items() if size is None]
    if not missing:
        return fetched + written, 0
    copy_objects(source.toplevel, store_repo, missing)
    copied = object_sizes(store_repo, missing)
    unstored = sum(1 for size in copied.values() if size is None)
    return fetched + written + sum(size or 0 for size in copied.values()), unstored


def _is_loose(store_repo: Path, oid: str) -> bool:
    """Whether `oid` is a loose object of the store (packed ones came by a fetch or a copy)."""
    return (store_repo / "objects" / oid[:2] / oid[2:]).is_file()
