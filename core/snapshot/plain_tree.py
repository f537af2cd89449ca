"""The work tree's tree written here, without `update-index` and `write-tree`, when git would
store each changed file's bytes exactly as they are on disk.

A repeat checkpoint changes a few dozen files of thousands. git's way (`update-index --add
--remove` into the scratch index, then `write-tree`) is two processes that each load the whole
index: on a 7,000-file repository about 12 ms, a tenth of a hook checkpoint (issues 21 and 22).
Here the changed files are hashed as blobs and only the trees on their paths are rewritten,
starting from the staged tree; every other subtree is kept by its id.

That is the same tree git writes only where git would not transform a file on its way in. So
this path is taken only for a *plain* repository (`plain_repository`): no attributes file
anywhere git looks (`.gitattributes` tracked or on disk, `info/attributes`, the global and
system ones) that sets an attribute git converts files by (`core.snapshot.plain_attributes`:
`export-ignore`, `diff=`, `linguist-*` leave the bytes alone), no `GIT_ATTR_SOURCE`, and no
config that converts or reinterprets what is on disk
(`core.autocrlf`, `core.filemode=false`, `core.symlinks=false`, `core.ignorecase`,
`core.attributesFile`, `core.precomposeUnicode`; read by `locate`). Anything this module does
not model exactly (a directory, fifo or submodule at a changed path, a file where the tree has
a directory or the other way round, a path through a symbolic link, a tree the store does not
hold) raises `NotPlain` and the snapshot takes git's way instead. tests/core/test_plain_tree.py
checks the ids against git's on generated changes, and each refusal.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from core.digests import sha1_hex
from core.git.objects import EMPTY_TREE, GITLINK_MODE, write_object
from core.snapshot.plain_attributes import file_leaves_bytes_alone, tracked_attributes

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22)
if TYPE_CHECKING:
    from typing import Any

    from core.git.reader import ObjectReader
    from core.snapshot.sealed_files import SealedFile
    from core.snapshot.selection import StatusScan
    from core.snapshot.source import SourceRepo

TREE = "40000"
FILE = "100644"
EXECUTABLE = "100755"
SYMLINK = "120000"

# Attributes files git reads besides the work tree's and the repository's own: the system
# file of the usual build prefixes (`GIT_ATTR_NOSYSTEM` turns it off).
_SYSTEM_ATTRIBUTES = (
    "/etc/gitattributes",
    "/usr/etc/gitattributes",
    "/usr/local/etc/gitattributes",
)
_ATTRIBUTES = ".gitattributes"


class NotPlain(Exception):
    """git's own way is needed for this snapshot (the reason is for tests and tracing)."""


def plain_repository(
    source: SourceRepo, plain_config: bool, scan: StatusScan, index_copy: Path
) -> bool:
    """Whether git would store every changed file of this work tree byte for byte, with the
    mode its stat gives: no attributes and no converting config (see the module's doc)."""
    if not plain_config or os.environ.get("GIT_ATTR_SOURCE"):
        return False
    top = source.toplevel
    for path in (*scan.untracked, *scan.ignored):
        if _names_attributes(path) and not file_leaves_bytes_alone(top / path):
            return False
    if any(path.endswith("/") for path in scan.ignored):
        return False  # an ignored directory may hide an attributes file for tracked files in it
    extra = [source.common_dir / "info" / "attributes", _global_attributes()]
    if not os.environ.get("GIT_ATTR_NOSYSTEM"):
        extra.extend(_SYSTEM_ATTRIBUTES)
    if any(_exists(path) and not file_leaves_bytes_alone(path) for path in extra if path):
        return False
    try:
        with open(index_copy, "rb") as handle:
            index = handle.read()
    except FileNotFoundError:
        return True  # no index: nothing tracked, and no attributes file among untracked ones
    except OSError:
        return False
    # Versions 2 and 3 end each path with NULs; 4 compresses paths against the previous one,
    # so a name could hide in pieces there: not plain.
    if index[:4] != b"DIRC" or index[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        return False
    if b".gitattributes\0" not in index:
        return True
    # git reads a tracked attributes file from the work tree when it is there (else from the
    # index: not modelled, so one gone from disk is not plain).
    tracked = tracked_attributes(index)
    return tracked is not None and all(file_leaves_bytes_alone(top / p) for p in tracked)


def worktree_tree(
    store_repo: Path,
    toplevel: Path,
    index_tree: str,
    include: Iterable[str],
    sealed: Iterable[SealedFile],
    reader: ObjectReader,
) -> str:
    """The staged tree with each `include`d path as it is on disk (gone when it is gone) and
    each `sealed` path pointing at its stand-in; raises `NotPlain` for what it does not model."""
    from core.snapshot.sealed_files import stand_in_mode

    changes: dict[str, tuple[str, str] | None] = {}
    directories: dict[str, bool] = {}
    for path in include:
        changes[_checked(path)] = _on_disk(store_repo, toplevel, path, directories, reader)
    for entry in sealed:
        changes[_checked(entry.path)] = (stand_in_mode(entry.mode), entry.blob)
    nested: dict[str, Any] = {}
    # What is gone first: a file or link that took a directory's place replaces the
    # directory, whose files are then all among them.
    for path, change in sorted(changes.items(), key=lambda item: item[1] is not None):
        *parents, name = path.split("/")
        node = nested
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise NotPlain(f"{path} is under a path that is a file")
            node = child
        replaced = node.get(name)
        if replaced is not None and (change is None or not _only_gone(replaced)):
            raise NotPlain(f"{path} is a file and a directory")
        node[name] = _Leaf(change, replaced)
    return _rewrite(store_repo, reader, index_tree, nested) or EMPTY_TREE


class _Leaf:
    """One changed path's new entry (None when it is gone), and the gone files of the
    directory it replaces, if it took one's place."""

    __slots__ = ("change", "replaced")

    def __init__(self, change: tuple[str, str] | None, replaced: Any = None) -> None:
        self.change = change
        self.replaced = replaced


def _only_gone(node: Any) -> bool:
    """Whether a nested change holds nothing but files that are gone."""
    if isinstance(node, _Leaf):
        return node.change is None and node.replaced is None
    return isinstance(node, dict) and all(_only_gone(child) for child in node.values())


def _all_gone(reader: ObjectReader, tree: str, gone: Mapping[str, Any]) -> bool:
    """Whether every entry of `tree` is among the `gone` files (git then lets a file take the
    directory's place; with any left, `update-index` refuses, and so does this)."""
    found = reader.read(tree)
    if found is None or found[0] != "tree":
        return False
    for mode, name, child in _parse(found[1]):
        change = gone.get(name)
        if mode == TREE:
            if not isinstance(change, dict) or not _all_gone(reader, child, change):
                return False
        elif not isinstance(change, _Leaf):
            return False
    return True


def _rewrite(
    store_repo: Path, reader: ObjectReader, oid: str | None, changes: Mapping[str, Any]
) -> str | None:
    """The tree `oid` (None: a new one) with `changes` applied, written; None when empty.

    The entries are kept as git wrote them (raw bytes) and only the changed names are decoded
    and encoded: the directories on a changed path can hold thousands of entries."""
    entries: dict[bytes, tuple[bytes, bytes]] = {}  # name → (mode, entry as in the tree)
    if oid is not None:
        found = reader.read(oid)
        if found is None or found[0] != "tree":
            raise NotPlain(f"the store does not hold tree {oid}")
        entries = _raw_entries(found[1])
    for name, change in changes.items():
        raw_name = name.encode("utf-8", "surrogateescape")
        held = entries.get(raw_name)
        existing = (held[0].decode(), held[1][-20:].hex()) if held is not None else None
        if isinstance(change, _Leaf):
            if existing is not None and existing[0] == TREE:
                if change.replaced is None or not _all_gone(reader, existing[1], change.replaced):
                    raise NotPlain(f"{name} is a directory in the staged tree")
            elif (existing is not None and existing[0] == GITLINK_MODE) or change.replaced:
                raise NotPlain(f"{name} is a submodule, or no directory, in the staged tree")
            if change.change is None:
                entries.pop(raw_name, None)
            else:
                entries[raw_name] = _entry(change.change[0], raw_name, change.change[1])
            continue
        if existing is not None and existing[0] != TREE:
            raise NotPlain(f"{name} is a file in the staged tree")
        subtree = _rewrite(store_repo, reader, existing[1] if existing else None, change)
        if subtree is None:
            entries.pop(raw_name, None)
        else:
            entries[raw_name] = _entry(TREE, raw_name, subtree)
    if not entries:
        return None
    # git's order: by name, a tree's as if it ended in "/"
    ordered = sorted(
        (name + b"/" if mode == _TREE_BYTES else name, entry)
        for name, (mode, entry) in entries.items()
    )
    return _write(store_repo, reader, "tree", b"".join(entry for _key, entry in ordered))


_TREE_BYTES = TREE.encode()


def _raw_entries(body: bytes) -> dict[bytes, tuple[bytes, bytes]]:
    """A tree object's entries by name: (mode, the entry's bytes as they are in `body`)."""
    entries: dict[bytes, tuple[bytes, bytes]] = {}
    find = body.find
    position, size = 0, len(body)
    while position < size:
        space = find(b" ", position)
        nul = find(b"\0", space)
        end = nul + 21
        if space < 0 or nul < 0 or end > size:
            raise NotPlain("a tree of the staged tree is damaged")
        entries[body[space + 1 : nul]] = (body[position:space], body[position:end])
        position = end
    return entries


def _entry(mode: str, raw_name: bytes, oid: str) -> tuple[bytes, bytes]:
    encoded = mode.encode()
    return encoded, encoded + b" " + raw_name + b"\0" + bytes.fromhex(oid)


def _parse(body: bytes) -> list[tuple[str, str, str]]:
    from core.git.objects import parse_tree

    return parse_tree(body)


def _on_disk(
    store_repo: Path,
    toplevel: Path,
    path: str,
    directories: dict[str, bool],
    reader: ObjectReader,
) -> tuple[str, str] | None:
    """The entry git would give `path` from the disk (mode, blob id), or None when it is gone."""
    parent = path.rpartition("/")[0]
    if parent and not _real_directory(toplevel, parent, directories):
        return None  # gone with its directory, or with a file or link in the directory's place
    full = f"{toplevel}/{path}"
    try:
        status = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(status.st_mode):
        target = os.readlink(os.fsencode(full))
        return SYMLINK, _write(store_repo, reader, "blob", target)
    if not stat.S_ISREG(status.st_mode):
        raise NotPlain(f"{path} is not a regular file or a symbolic link")
    fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    mode = EXECUTABLE if status.st_mode & stat.S_IXUSR else FILE
    return mode, _write(store_repo, reader, "blob", data)


def _real_directory(toplevel: Path, directory: str, known: dict[str, bool]) -> bool:
    """Whether `directory` (and each directory above it) is a real directory: False when it
    is missing, or a file or a symbolic link stands in its place (git sees nothing in or
    beyond either; whether that file may take the directory's place is `_rewrite`'s to say)."""
    if directory in known:
        return known[directory]
    above = directory.rpartition("/")[0]
    if above and not _real_directory(toplevel, above, known):
        known[directory] = False
        return False
    try:
        mode = os.lstat(f"{toplevel}/{directory}").st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    known[directory] = mode is not None and stat.S_ISDIR(mode)
    return known[directory]


def beyond_a_link(toplevel: Path, path: str) -> bool:
    """Whether a directory on `path`'s way is a symbolic link (so git sees no such file)."""
    parts = path.split("/")[:-1]
    for end in range(1, len(parts) + 1):
        try:
            if stat.S_ISLNK(os.lstat(f"{toplevel}/{'/'.join(parts[:end])}").st_mode):
                return True
        except OSError:
            return False
    return False


def _write(store_repo: Path, reader: ObjectReader, kind: str, body: bytes) -> str:
    """The object's id, written loose unless the store holds it already."""
    oid = sha1_hex(f"{kind} {len(body)}\0".encode() + body)
    if reader.listed_here(oid):
        return oid
    return write_object(store_repo, kind, body)


def _checked(path: str) -> str:
    """`path` when git would take it as a path in the tree, else `NotPlain` (git decides)."""
    parts = path.split("/")
    if (
        not path
        or "\0" in path
        or any(part in ("", ".", "..") or part.lower() == ".git" for part in parts)
    ):
        raise NotPlain(f"{path!r} is not a plain path")
    return path


def _names_attributes(path: str) -> bool:
    return path.rstrip("/").rpartition("/")[2] == _ATTRIBUTES


def _exists(path: Path | str | None) -> bool:
    return path is not None and os.path.lexists(path)


def _global_attributes() -> str | None:
    """git's default global attributes file (`core.attributesFile` is config, checked apart)."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return f"{xdg}/git/attributes"
    home = os.environ.get("HOME")
    return f"{home}/.config/git/attributes" if home else None
