"""Reading a store repository's objects: one `cat-file` process for a whole operation.

A ledger holds thousands of small files and a checkpoint reads back what it just wrote; a git
process per read would dominate push, fetch and every hook checkpoint. Loose objects are read
from their files, objects stored whole in a pack through its index (`pack_reader`), objects a
batch is still gathering from memory (`pack_writer`), and each is kept once read; everything
else goes through one `cat-file --batch-command` kept open for the operation (`session()`).

What came from a remote is read with a cap (`read_capped`): its size is asked first (a loose
object's header, or an `info` command to the same `cat-file --batch-command` process), so an
oversized blob is refused without its content ever being read, let alone held in memory. A git
older than 2.36 has no `--batch-command`: it gets `--batch` and a `--batch-check` beside it.
"""

from __future__ import annotations

import contextvars
import os
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from core.errors import DamagedObjectError, GitError
from core.git.objects import parse_tree
from core.git.pack_reader import PackedObjects
from core.git.pack_writer import pending_object
from core.git.run import run_git, start_git

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    import subprocess
    from typing import NamedTuple
else:
    from core.records import NamedTuple

# How many specs one round trip asks `cat-file --batch-check` about: its answers (a line each)
# must fit in the pipe while we are still writing questions.
_CHECK_BATCH = 256
# A loose object's header (`<kind> <size>\0`) is shorter than this.
_HEADER_MAX = 32
# Loose objects kept once read: each at most this big, all together at most this much.
_MEMO_OBJECT_MAX = 1 << 20
_MEMO_TOTAL_MAX = 32 << 20
# A loose object file this small is read whole when only its size was asked.
_WHOLE_READ_MAX = 64 << 10
_is_sha1 = re.compile(r"[0-9a-f]{40}").fullmatch


class Oversized(NamedTuple):
    """An object `read_capped` refused unread: its size, and the cap it exceeds."""

    size: int
    cap: int


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
        self._objects = f"{store_repo}/objects/"
        # Loose objects read so far, by id (an id names its content forever): a push or fetch
        # reads the same commit and trees several times over. Small ones only, to a total cap.
        self._memo: dict[str, tuple[str, bytes]] = {}
        self._memo_bytes = 0
        self._packed = PackedObjects(self._objects)  # packed objects, read here too
        self._process: subprocess.Popen[bytes] | None = None
        self._checker: subprocess.Popen[bytes] | None = None
        self._commands = True  # one `--batch-command` answers reads and sizes alike

    def _command_process(self) -> subprocess.Popen[bytes] | None:
        """The `cat-file --batch-command` process, started on first need; None on a git too
        old to have it (then `--batch` and `--batch-check` serve, as two processes)."""
        if self._commands and self._process is None:
            started = start_git(
                ["cat-file", "--batch-command"], env={"GIT_DIR": str(self.store_repo)}, fed=True
            )
            try:
                assert started.stdin is not None and started.stdout is not None
                started.stdin.write(b"info HEAD\n")  # a probe: any answer means it is there
                started.stdin.flush()
                answered = bool(started.stdout.readline())
            except (BrokenPipeError, OSError):
                answered = False
            if answered:
                self._process = started
            else:
                started.kill()
                started.wait()
                self._commands = False
        return self._process if self._commands else None

    def read(self, spec: str) -> tuple[str, bytes] | None:
        """An object's type and content, or None when it is missing."""
        found = self._read_loose(spec)
        if found is not None:
            return found
        if self._absent_from_loose_tree(spec):
            return None  # its loose tree has no such entry: nothing to ask cat-file
        return self._read_batch(spec)

    def _absent_from_loose_tree(self, spec: str) -> bool:
        """Whether `ID:PATH` names no entry of trees that are all loose (a checkpoint without
        a note, say): then it is missing for certain, and no cat-file is started to say so."""
        oid, colon, path = spec.partition(":")
        names = [name for name in path.split("/") if name]
        if not colon or not names:
            return False
        found = self._loose(oid)
        if found is not None and found[0] == "commit" and found[1][:5] == b"tree ":
            found = self._loose(found[1][5:45].decode("ascii"))
        for position, name in enumerate(names):
            if found is None or found[0] != "tree":
                return False
            entry = next((e for e in parse_tree(found[1]) if e[1] == name), None)
            if entry is None:
                return True
            if position < len(names) - 1:
                found = self._loose(entry[2])
        return False

    def _read_batch(self, spec: str) -> tuple[str, bytes] | None:
        prefix = b"contents " if self._command_process() is not None else b""
        if self._process is None:
            self._process = start_git(
                ["cat-file", "--batch"], env={"GIT_DIR": str(self.store_repo)}, fed=True
            )
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(prefix + spec.encode() + b"\n")
        stdin.flush()
        header = stdout.readline().decode().split()
        if len(header) != 3:  # "<spec> missing" (or ambiguous)
            return None
        data = stdout.read(int(header[2]))
        if len(data) != int(header[2]) or stdout.read(1) != b"\n":
            # cat-file died inside the object: it could not inflate what it had announced
            self._process.kill()
            self._process.wait()
            self._process = None
            raise DamagedObjectError(
                f"the store repository {self.store_repo} holds a damaged object ({spec}); "
                "run `git fsck` there, and fetch the task again"
            )
        return header[1], data

    def read_capped(self, specs: Mapping[str, int]) -> dict[str, bytes | Oversized | None]:
        """Read objects (spec → cap in bytes) whose size is within their cap; a larger one is
        `Oversized` and never read, a missing one None."""
        sizes = self.sizes(list(specs))
        out: dict[str, bytes | Oversized | None] = {}
        for spec, cap in specs.items():
            found = sizes.get(spec)
            if found is None:
                out[spec] = None
            elif found[1] > cap:
                out[spec] = Oversized(found[1], cap)
            else:
                data = self.read(found[0])
                out[spec] = data[1] if data is not None and len(data[1]) <= cap else None
        return out

    def sizes(self, specs: Sequence[str]) -> dict[str, tuple[str, int] | None]:
        """Each spec's object id and size, content unread (None: missing)."""
        out: dict[str, tuple[str, int] | None] = {}
        asked: list[str] = []
        for spec in dict.fromkeys(specs):
            oid = self._resolve_loose(spec)
            size = self._loose_size(oid) if oid is not None else None
            if oid is not None and size is not None:
                out[spec] = (oid, size)
            elif self._absent_from_loose_tree(spec):
                out[spec] = None
            else:
                asked.append(spec)
        for start in range(0, len(asked), _CHECK_BATCH):
            out.update(self._check_batch(asked[start : start + _CHECK_BATCH]))
        return out

    def _check_batch(self, specs: Sequence[str]) -> dict[str, tuple[str, int] | None]:
        """One round trip: id and size of each spec (`info` commands, or `--batch-check`)."""
        process = self._command_process()
        prefix = b"info "
        if process is None:
            if self._checker is None:
                self._checker = start_git(
                    ["cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
                    env={"GIT_DIR": str(self.store_repo)},
                    fed=True,
                )
            process, prefix = self._checker, b""
        stdin, stdout = process.stdin, process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(b"".join(prefix + spec.encode() + b"\n" for spec in specs))
        stdin.flush()
        out: dict[str, tuple[str, int] | None] = {}
        for spec in specs:
            answer = stdout.readline().decode().split()
            ok = len(answer) == 3 and answer[2].isdigit()
            out[spec] = (answer[0], int(answer[2])) if ok else None  # else "<spec> missing"
        return out

    def _resolve_loose(self, spec: str) -> str | None:
        """The id `ID` or `ID:PATH` names, through loose trees only; None: ask `cat-file`."""
        oid, colon, path = spec.partition(":")
        if not colon:
            return oid if _is_sha1(oid) else None  # loose or not: `_loose_size` tells
        parent, _, name = path.rstrip("/").rpartition("/")
        if not name:
            return None
        tree = self._read_loose(f"{oid}:{parent}")
        if tree is None or tree[0] != "tree":
            return None
        entry = next((e for e in parse_tree(tree[1]) if e[1] == name), None)
        return entry[2] if entry else None

    def _loose_size(self, oid: str) -> int | None:
        """A loose object's size, from its header alone when it is large; None when it is not a
        loose object. A small one is read whole on the way (and kept): its read comes next."""
        known = self._memo.get(oid) or pending_object(self.store_repo, oid)
        if known is not None:
            return len(known[1])
        if not _is_sha1(oid):
            return None
        try:
            with open(self._objects + oid[:2] + "/" + oid[2:], "rb") as handle:
                raw = handle.read(_WHOLE_READ_MAX + 1)
            # at most this much comes out, however well the file compresses
            start = zlib.decompressobj().decompress(raw, _HEADER_MAX + _MEMO_OBJECT_MAX)
        except FileNotFoundError:
            entry = self._packed.find(oid)  # stored whole in a pack: its header says
            return entry.size if entry is not None else None
        except (OSError, zlib.error):
            return None
        header, nul, body = start.partition(b"\0")
        kind, _, size = header.decode("ascii", "replace").partition(" ")
        if not nul or not size.isdigit():
            return None
        if len(raw) <= _WHOLE_READ_MAX and len(body) == int(size):
            self._remember(oid, kind, body)
        return int(size)

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
        known = self._memo.get(oid) or pending_object(self.store_repo, oid)
        if known is not None:
            return known
        if not _is_sha1(oid):
            return None
        try:
            with open(self._objects + oid[:2] + "/" + oid[2:], "rb") as handle:
                data = zlib.decompress(handle.read())
        except FileNotFoundError:
            packed = self._packed.read(oid)
            if packed is not None:
                self._remember(oid, *packed)
            return packed
        except (OSError, zlib.error):
            return None
        header, nul, body = data.partition(b"\0")
        kind, _, size = header.decode("ascii", "replace").partition(" ")
        if not nul or not size.isdigit() or int(size) != len(body):
            return None
        self._remember(oid, kind, body)
        return kind, body

    def _remember(self, oid: str, kind: str, body: bytes) -> None:
        if len(body) <= _MEMO_OBJECT_MAX and self._memo_bytes + len(body) <= _MEMO_TOTAL_MAX:
            self._memo[oid] = (kind, body)
            self._memo_bytes += len(body)

    def read_here(self, oid: str) -> tuple[str, bytes] | None:
        """An object read from the repository's files (loose, or whole in a pack), never
        through `cat-file`; None when it is not stored that way (it may still be held)."""
        return self._loose(oid)

    def held_here(self, oid: str) -> bool:
        """Whether the repository's files show `oid` held (loose, or whole in a pack); False
        means not seen here, not missing (a delta in a pack is not looked into)."""
        if pending_object(self.store_repo, oid) is not None or oid in self._memo:
            return True
        if not _is_sha1(oid):
            return False
        return os.path.exists(self._objects + oid[:2] + "/" + oid[2:]) or bool(
            self._packed.find(oid)
        )

    def listed_here(self, oid: str) -> bool:
        """Whether `oid` is loose, gathering, or listed by a pack's index (whole or a delta):
        enough to know that writing it again would only duplicate it."""
        return self.held_here(oid) or bool(_is_sha1(oid) and self._packed.locate(oid))

    def close(self) -> None:
        """End the `cat-file` processes, if any were started, and let go of the packs."""
        self._packed.close()
        for process in (self._process, self._checker):
            if process is None:
                continue
            if process.stdin is not None:
                process.stdin.close()
            process.wait()


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


def in_session(store_repo: Path) -> bool:
    """True while a `session()` is open on `store_repo` (its reads cost no process)."""
    return session_reader(store_repo) is not None


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


def read_capped(store_repo: Path, specs: Mapping[str, int]) -> dict[str, bytes | Oversized | None]:
    """Read objects (spec → cap in bytes) that are within their cap; larger ones come back
    `Oversized`, unread; missing ones None. The session's reader, when one is open."""
    if not specs:
        return {}
    reader = session_reader(store_repo)
    if reader is not None:
        return reader.read_capped(specs)
    one_off = ObjectReader(store_repo)
    try:
        return one_off.read_capped(specs)
    finally:
        one_off.close()


def has_object(store_repo: Path, oid: str) -> bool:
    """True when the store repository holds `oid`."""
    return read_objects(store_repo, [oid]).get(oid) is not None


def read_blob(store_repo: Path, commit: str, path: str) -> bytes:
    """Read one file of a commit's tree (e.g. `pitstop.json` at the top of a checkpoint)."""
    return run_git(["cat-file", "blob", f"{commit}:{path}"], git_dir=store_repo)


def tree_of_commit(store_repo: Path, commit: str) -> str:
    """The tree id of a commit held in the store's repository."""
    return run_git(["rev-parse", f"{commit}^{{tree}}"], git_dir=store_repo).decode().strip()


def object_sizes(store_repo: Path, oids: Iterable[str]) -> dict[str, int | None]:
    """Stored (compressed) size of each object the store holds by itself; None when missing.

    A loose object's size is its file's (git writes loose objects whole, by rename): a
    snapshot's new objects are loose, so a checkpoint usually needs no `cat-file` for them.
    The others (packed, or absent) are asked of `cat-file`.
    """
    unique = list(dict.fromkeys(oids))
    if not unique:
        return {}
    sizes: dict[str, int | None] = {}
    asked = []
    for oid in unique:
        size = _loose_size(store_repo, oid)
        if size:
            sizes[oid] = size
        else:
            asked.append(oid)
    if asked:
        out = run_git(
            ["cat-file", "--batch-check=%(objectname) %(objectsize:disk)"],
            git_dir=store_repo,
            input=("\n".join(asked) + "\n").encode(),
        )
        for oid, line in zip(asked, out.decode().splitlines(), strict=True):
            value = line.rsplit(" ", 1)[-1]
            sizes[oid] = int(value) if value.isdigit() else None
    return {oid: sizes[oid] for oid in unique}


def _loose_size(store_repo: Path, oid: str) -> int | None:
    """The size of `oid`'s loose file in the store (None when not loose, or not an id)."""
    if len(oid) != 40 or not all(c in "0123456789abcdef" for c in oid):
        return None
    try:
        return (store_repo / "objects" / oid[:2] / oid[2:]).stat().st_size
    except OSError:
        return None


def held_objects(store_repo: Path, oids: Iterable[str]) -> dict[str, bool]:
    """Which of `oids` the store's repository holds by itself (no alternates)."""
    return {oid: size is not None for oid, size in object_sizes(store_repo, oids).items()}


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
