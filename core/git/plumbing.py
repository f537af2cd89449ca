"""Git object plumbing on the store's repositories: write and read objects, trees, commits, refs.

Everything runs against the store's own bare repository (never the user's). New objects are
written directly as loose objects (git's own format); reads take loose objects from their files
and go through one `cat-file --batch` for the rest: a ledger holds thousands of small files,
and a git process per step would dominate push and fetch.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import subprocess
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.errors import GitError
from core.git.run import PITSTOP_IDENT, clean_env, run_git


def _write_object(store_repo: Path, kind: str, body: bytes) -> str:
    """Write one loose object the way git does (zlib of `<kind> <size>\\0<body>`, named by its
    SHA-1, read-only, moved into place whole); return its id.

    Writing objects here instead of running `hash-object`, `mktree` and `commit-tree` saves a
    process per step: a push builds two trees and two commits, and a git process costs more
    than the objects themselves.
    """
    data = f"{kind} {len(body)}\0".encode() + body
    oid = hashlib.sha1(data, usedforsecurity=False).hexdigest()
    directory = store_repo / "objects" / oid[:2]
    final = directory / oid[2:]
    if final.exists():
        return oid
    directory.mkdir(mode=0o700, exist_ok=True)
    temp = directory / f"tmp_obj_{os.getpid()}_{os.urandom(6).hex()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(zlib.compress(data, 1))
        os.replace(temp, final)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return oid


def write_blobs(store_repo: Path, blobs: Sequence[bytes]) -> list[str]:
    """Store blobs in the store repository; return their ids in order."""
    return [_write_object(store_repo, "blob", data) for data in blobs]


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
        place(path, ("100644", _write_object(store_repo, "blob", data)))
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
    return _write_object(store_repo, "tree", body)


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
    return _write_object(store_repo, "commit", ("\n".join(lines) + "\n").encode())


class ObjectReader:
    """Reads a store repository's objects for a whole operation.

    A loose object (what a checkpoint just wrote, and what it reads back: commits, manifests,
    the trees of the previous checkpoint) is read straight from its file; anything else (a
    packed object, a missing one, a revision this reader does not parse) goes to one `git
    cat-file --batch`, started on first need and kept open: a round trip on a pipe per read
    instead of a git process. A checkpoint whose objects are all loose starts no reader process.
    """

    def __init__(self, store_repo: Path) -> None:
        self.store_repo = store_repo
        self._objects = store_repo / "objects"
        self._process: subprocess.Popen[bytes] | None = None

    def read(self, spec: str) -> tuple[str, bytes] | None:
        """An object's type and content, or None when it is missing."""
        return self._read_loose(spec) or self._read_batch(spec)

    def _read_batch(self, spec: str) -> tuple[str, bytes] | None:
        if self._process is None:
            self._process = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=clean_env({"GIT_DIR": str(self.store_repo)}),
            )
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(spec.encode() + b"\n")
        stdin.flush()
        header = stdout.readline().decode().split()
        if len(header) != 3:  # "<spec> missing" (or ambiguous)
            return None
        data = stdout.read(int(header[2]))
        stdout.read(1)  # the newline after the content
        return header[1], data

    def _read_loose(self, spec: str) -> tuple[str, bytes] | None:
        """`ID`, `ID^{tree}` or `ID:PATH` from loose objects only; None: ask `cat-file`."""
        if spec.endswith("^{tree}"):
            spec = spec[: -len("^{tree}")] + ":"
        oid, colon, path = spec.partition(":")
        found = self._loose(oid)
        if found is None or not colon:
            return found
        if found[0] == "commit":
            found = (
                self._loose(found[1][5:45].decode("ascii")) if found[1][:5] == b"tree " else None
            )
        for name in filter(None, path.split("/")):
            if found is None or found[0] != "tree":
                return None
            entry = next((e for e in parse_tree(found[1]) if e[1] == name), None)
            found = self._loose(entry[2]) if entry else None
        return found if found is not None and (path or found[0] == "tree") else None

    def _loose(self, oid: str) -> tuple[str, bytes] | None:
        """A loose object by its full SHA-1 id; None when it is not a readable loose object."""
        if len(oid) != 40 or not all(c in "0123456789abcdef" for c in oid):
            return None
        try:
            with open(self._objects / oid[:2] / oid[2:], "rb") as handle:
                data = zlib.decompress(handle.read())
        except (OSError, zlib.error):
            return None
        header, nul, body = data.partition(b"\0")
        kind, _, size = header.decode("ascii", "replace").partition(" ")
        if not nul or not size.isdigit() or int(size) != len(body):
            return None
        return kind, body

    def close(self) -> None:
        if self._process is None:
            return
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait()


_READERS: contextvars.ContextVar[dict[Path, ObjectReader] | None] = contextvars.ContextVar(
    "pitstop_object_readers", default=None
)


@contextmanager
def session(store_repo: Path) -> Iterator[None]:
    """Within the block, reads of `store_repo` share one `cat-file` process."""
    readers = _READERS.get()
    if readers is not None and store_repo in readers:
        yield
        return
    reader = ObjectReader(store_repo)
    token = _READERS.set({**(readers or {}), store_repo: reader})
    try:
        yield
    finally:
        _READERS.reset(token)
        reader.close()


def session_reader(store_repo: Path) -> ObjectReader | None:
    """The object reader of the `session()` open on this repository in this context, if any."""
    readers = _READERS.get()
    return readers.get(store_repo) if readers else None


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


def _kind(mode: str) -> str:
    return {"40000": "tree", "160000": "commit"}.get(mode, "blob")


def list_tree(store_repo: Path, rev: str, prefix: str = "") -> dict[str, tuple[str, str]]:
    """Every entry under `rev` (recursively; only below `prefix` when given): path → (type, id)."""
    reader = session_reader(store_repo)
    if reader is None:
        return _ls_tree(store_repo, rev, prefix)
    entries: dict[str, tuple[str, str]] = {}
    start = f"{rev}:{prefix.rstrip('/')}" if prefix else f"{rev}^{{tree}}"
    pending = [(prefix.rstrip("/") + "/" if prefix else "", start)]
    while pending:
        base, spec = pending.pop()
        found = reader.read(spec)
        if found is None or found[0] != "tree":
            continue
        for mode, name, oid in parse_tree(found[1]):
            if mode == "40000":
                pending.append((f"{base}{name}/", oid))
            else:
                entries[f"{base}{name}"] = (_kind(mode), oid)
    return entries


def _ls_tree(store_repo: Path, rev: str, prefix: str) -> dict[str, tuple[str, str]]:
    args = ["ls-tree", "-r", "-z", rev]
    if prefix:
        args += ["--", prefix]
    raw = run_git(args, git_dir=store_repo)
    entries: dict[str, tuple[str, str]] = {}
    for item in raw.split(b"\0"):
        if item:
            meta, _, path = item.decode().partition("\t")
            _mode, kind, oid = meta.split()
            entries[path] = (kind, oid)
    return entries


def top_entries(store_repo: Path, rev: str) -> dict[str, str]:
    """The top-level entries of a commit's tree: name → id."""
    reader = session_reader(store_repo)
    if reader is not None:
        found = reader.read(f"{rev}^{{tree}}")
        if found is None:
            raise GitError(f"{rev[:12]} is not in the store repository")
        return {name: oid for _mode, name, oid in parse_tree(found[1])}
    raw = run_git(["ls-tree", "-z", rev], git_dir=store_repo)
    entries: dict[str, str] = {}
    for item in raw.split(b"\0"):
        if item:
            meta, _, name = item.decode().partition("\t")
            entries[name] = meta.split()[2]
    return entries


def read_objects(store_repo: Path, specs: Sequence[str]) -> dict[str, bytes | None]:
    """Read many objects (ids or `rev:path`); missing ones are None. One `cat-file --batch`
    (the session's, when one is open)."""
    if not specs:
        return {}
    reader = session_reader(store_repo)
    if reader is not None:
        return {spec: (found[1] if (found := reader.read(spec)) else None) for spec in specs}
    one_off = ObjectReader(store_repo)
    try:
        return {spec: (found[1] if (found := one_off.read(spec)) else None) for spec in specs}
    finally:
        one_off.close()


def commit_parents(body: bytes) -> list[str]:
    """The parent ids in a commit object's content, first parent first."""
    header = body.split(b"\n\n", 1)[0]
    return [
        line[len(b"parent ") :].decode()
        for line in header.splitlines()
        if line.startswith(b"parent ")
    ]


def first_parent_chain(store_repo: Path, tip: str, stop: Iterable[str] = ()) -> list[str]:
    """Commits from `tip` back along first parents (newest first), not walking past `stop`."""
    args = ["rev-list", "--first-parent", tip]
    args += [f"^{oid}" for oid in stop]
    return run_git(args, git_dir=store_repo).decode().split()


def read_ref(store_repo: Path, ref: str) -> str | None:
    """The id a local ref points at, or None."""
    out = run_git(["rev-parse", "--verify", "--quiet", ref], git_dir=store_repo, ok_codes=(0, 1))
    return out.decode().strip() or None


def refs_under(store_repo: Path, prefix: str) -> dict[str, str]:
    """Local refs below `prefix`: ref name → id.

    Read from the ref files themselves (loose refs over `packed-refs`, git's "files" ref
    storage) to spare a git process on every push and fetch; a repository with another ref
    storage is asked through `git for-each-ref`.
    """
    if (store_repo / "reftable").exists():
        out = run_git(
            ["for-each-ref", "--format=%(refname) %(objectname)", prefix], git_dir=store_repo
        )
        pairs = (line.split(" ", 1) for line in out.decode().splitlines() if line)
        return {name: oid for name, oid in pairs}
    refs: dict[str, str] = {}
    packed = store_repo / "packed-refs"
    if packed.exists():
        for line in packed.read_text(encoding="utf-8", errors="replace").splitlines():
            if line and line[0] not in "#^":
                oid, _, name = line.partition(" ")
                if name.startswith(prefix):
                    refs[name] = oid
    top = store_repo / prefix.rstrip("/")
    if top.is_dir():
        for path in top.rglob("*"):
            if path.is_file() and not path.name.endswith(".lock"):
                name = path.relative_to(store_repo).as_posix()
                value = path.read_text(encoding="utf-8", errors="replace").strip()
                if len(value) in (40, 64) and all(c in "0123456789abcdef" for c in value):
                    refs[name] = value
                elif value.startswith("ref: "):  # a symbolic ref: let git resolve it
                    resolved = read_ref(store_repo, name)
                    if resolved:
                        refs[name] = resolved
    return dict(sorted(refs.items()))


def set_ref(store_repo: Path, ref: str, oid: str) -> None:
    """Point a local ref at `oid` (a lock left by a killed writer is cleared first)."""
    lock = store_repo / f"{ref}.lock"
    lock.unlink(missing_ok=True)
    run_git(["update-ref", ref, oid], git_dir=store_repo)


def set_refs(store_repo: Path, refs: Mapping[str, str]) -> None:
    """Point several local refs at once (one `update-ref --stdin`, in one transaction)."""
    if not refs:
        return
    for ref in refs:
        (store_repo / f"{ref}.lock").unlink(missing_ok=True)
    script = "".join(f"update {ref} {oid}\n" for ref, oid in sorted(refs.items()))
    run_git(["update-ref", "--stdin"], git_dir=store_repo, input=script.encode())


def is_ancestor(store_repo: Path, older: str, newer: str) -> bool:
    """True when `older` is reachable from `newer`."""
    code = subprocess.run(
        ["git", "merge-base", "--is-ancestor", older, newer],
        env=clean_env({"GIT_DIR": str(store_repo)}),
        capture_output=True,
        check=False,
    ).returncode
    return code == 0


def has_object(store_repo: Path, oid: str) -> bool:
    """True when the store repository holds `oid`."""
    return read_objects(store_repo, [oid]).get(oid) is not None


def pack_objects(store_repo: Path, tips: Sequence[str], exclude: Sequence[str] = ()) -> bytes:
    """A self-contained pack of every object reachable from `tips` (trees or commits) and not
    from `exclude` (commits the receiver already has)."""
    lines = [*tips, *(f"^{oid}" for oid in exclude if oid)]
    return run_git(
        ["pack-objects", "--stdout", "--revs", "--quiet"],
        git_dir=store_repo,
        input=("\n".join(lines) + "\n").encode(),
    )


def index_pack(store_repo: Path, pack: bytes) -> None:
    """Store a pack's objects in the store repository (checked by git as it indexes them)."""
    run_git(["index-pack", "--stdin", "--fix-thin"], git_dir=store_repo, input=pack)
