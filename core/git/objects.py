"""Git's object format, written directly: blobs, trees and commits as loose objects.

Writing objects here instead of running `hash-object`, `mktree` and `commit-tree` saves a process
per step: a checkpoint writes four objects and a push two trees and two commits, and a git
process costs more than the objects themselves. The ids are the ones git would give.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from core.digests import sha1_hex
from core.errors import GitError
from core.git.pack_writer import pending_objects
from core.git.run import PITSTOP_IDENT

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
NULL_OID = "0" * 40
GITLINK_MODE = "160000"
TREE_MODE = "040000"


BATCHED_MAX = 1 << 20
"""Larger objects are written loose even inside `batched()`: a batch holds what it gathers in
memory until its pack is written."""


def write_object(store_repo: Path, kind: str, body: bytes) -> str:
    """Write one loose object the way git does (zlib of `<kind> <size>\\0<body>`, named by its
    SHA-1, read-only, moved into place whole); return its id."""
    data = f"{kind} {len(body)}\0".encode() + body
    oid = sha1_hex(data)
    directory = f"{store_repo}/objects/{oid[:2]}"
    final = f"{directory}/{oid[2:]}"
    pending = pending_objects(store_repo)
    if oid in (pending or ()) or os.path.exists(final):
        return oid
    if pending is not None and len(body) <= BATCHED_MAX:
        pending[oid] = (kind, body)  # inside `batched()`: one pack for all, when it ends
        return oid
    temp = f"{directory}/tmp_obj_{os.getpid()}_{os.urandom(6).hex()}"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    except FileNotFoundError:  # the first object of its fan-out directory
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(zlib.compress(data, 1))
        os.replace(temp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    return oid


def write_blobs(store_repo: Path, blobs: Sequence[bytes]) -> list[str]:
    """Store blobs in the store repository; return their ids in order."""
    return [write_object(store_repo, "blob", data) for data in blobs]


def build_tree(
    store_repo: Path,
    files: Mapping[str, bytes],
    trees: Mapping[str, str] | None = None,
    blob_ids: Mapping[str, str] | None = None,
) -> str:
    """One tree holding `files` (path → bytes), existing `trees` (path → tree id) and existing
    `blob_ids` (path → blob id) at their paths; return the root tree id."""
    root: dict[str, Any] = {}

    def place(path: str, entry: tuple[str, str] | dict[str, Any]) -> None:
        parts = path.strip("/").split("/")
        node = root
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise GitError(f"{path} is both a file and a directory")
            node = child
        node[parts[-1]] = entry

    for path, data in files.items():
        place(path, ("100644", write_object(store_repo, "blob", data)))
    for path, oid in (blob_ids or {}).items():
        place(path, ("100644", oid))
    for path, oid in (trees or {}).items():
        place(path, ("40000", oid))
    return _write_tree(store_repo, root)


def _write_tree(store_repo: Path, node: Mapping[str, Any]) -> str:
    """Write a nested tree bottom-up; entries sorted as git sorts them (a tree's name as if it
    ended in '/')."""
    entries: list[tuple[bytes, bytes]] = []
    for name, entry in node.items():
        if isinstance(entry, dict):
            mode, oid = "40000", _write_tree(store_repo, entry)
        else:
            mode, oid = entry
        raw_name = name.encode()
        key = raw_name + b"/" if mode == "40000" else raw_name
        entries.append((key, mode.encode() + b" " + raw_name + b"\0" + bytes.fromhex(oid)))
    body = b"".join(line for _key, line in sorted(entries))
    return write_object(store_repo, "tree", body)


def commit(
    store_repo: Path, tree: str, parents: Iterable[str], message: str, timestamp: str
) -> str:
    """A commit by Pitstop's fixed identity: the same inputs always give the same commit id.

    `timestamp` is git's `@<epoch> +0000` form (`clock.git_timestamp`).
    """
    when = timestamp.lstrip("@")
    ident = f"{PITSTOP_IDENT['GIT_COMMITTER_NAME']} <{PITSTOP_IDENT['GIT_COMMITTER_EMAIL']}>"
    lines = [f"tree {tree}", *(f"parent {parent}" for parent in parents)]
    lines += [f"author {ident} {when}", f"committer {ident} {when}", "", message]
    return write_object(store_repo, "commit", ("\n".join(lines) + "\n").encode())


def parse_tree(body: bytes) -> list[tuple[str, str, str]]:
    """A tree object's entries: (mode, name, id)."""
    entries = []
    position = 0
    while position < len(body):
        space = body.index(b" ", position)
        nul = body.index(b"\0", space)
        mode = body[position:space].decode()
        name = body[space + 1 : nul].decode("utf-8", "surrogateescape")
        oid = body[nul + 1 : nul + 21].hex()
        entries.append((mode, name, oid))
        position = nul + 21
    return entries


def commit_parents(body: bytes) -> list[str]:
    """The parent ids in a commit object's content, first parent first."""
    header = body.split(b"\n\n", 1)[0]
    return [
        line[len(b"parent ") :].decode()
        for line in header.splitlines()
        if line.startswith(b"parent ")
    ]


def loose_object_bytes(store_repo: Path, oid: str) -> int:
    """The size on disk of a loose object (0 when the store holds it only in a pack)."""
    try:
        return (store_repo / "objects" / oid[:2] / oid[2:]).stat().st_size
    except FileNotFoundError:
        return 0


def objects_bytes(store_repo: Path) -> int:
    """Bytes on disk of every file under the repository's `objects/` (loose objects and packs)."""
    total = 0
    for root, _dirs, files in os.walk(store_repo / "objects"):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue
    return total
