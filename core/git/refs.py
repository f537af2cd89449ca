"""Refs of the store's repositories, and the history between them.

Refs are read from, and where it is safe written to, their files directly (git's "files" ref
storage): push, fetch and every checkpoint touch refs, and a git process for each would cost
more than the work. A repository with another ref storage (reftable) is left to git.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from core.git.run import run_git, run_git_process


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
    for name, path in _loose_ref_files(f"{store_repo}/", prefix.rstrip("/")):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                value = handle.read().strip()
        except OSError:  # deleted meanwhile (a pack-refs), or unreadable: git's word counts
            continue
        if len(value) in (40, 64) and not value.strip("0123456789abcdef"):
            refs[name] = value
        elif value.startswith("ref: "):  # a symbolic ref: let git resolve it
            resolved = read_ref(store_repo, name)
            if resolved:
                refs[name] = resolved
    return dict(sorted(refs.items()))


def _loose_ref_files(root: str, name: str) -> Iterator[tuple[str, str]]:
    """Every loose ref file below the ref directory `name`: (ref name, path); locks skipped."""
    try:
        entries = list(os.scandir(root + name))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        child = f"{name}/{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            yield from _loose_ref_files(root, child)
        elif entry.is_file() and not entry.name.endswith(".lock"):
            yield child, entry.path


# A ref name part written as a file here: what git's check-ref-format takes, narrowed to plain
# characters (no "..", no leading or trailing ".", no ".lock"); anything else is git's to judge.
# (A pattern compiled by `re` on the first ref written, never by a command that only reads.)
_PLAIN_PART = r"[A-Za-z0-9_-](?:[A-Za-z0-9_-]|\.(?!\.))*(?<!\.)(?<!\.lock)"


def set_ref(store_repo: Path, ref: str, oid: str) -> None:
    """Point a local ref at `oid` (a lock left by a killed writer is cleared first)."""
    set_refs(store_repo, {ref: oid})


def set_refs(store_repo: Path, refs: Mapping[str, str]) -> None:
    """Point several local refs at once, the way git's "files" ref storage does it: every
    `<ref>.lock` is taken before any ref moves, then each is renamed over its ref.

    Written here rather than by `update-ref`, which push and fetch would otherwise start on
    every call. Pitstop holds its own lock on what it moves, so a lock file found here can only
    be a killed writer's and is removed first. Whatever the files cannot say safely — a ref
    outside `refs/pitstop/`, a reftable store, a reflog to append to, a file where a directory
    must be — is left to one `update-ref --stdin`, in one transaction.
    """
    if not refs:
        return
    for ref in refs:
        if _is_plain(ref):  # never a path built from a name git would refuse
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                (store_repo / f"{ref}.lock").unlink()
    if not _write_loose_refs(store_repo, refs):
        script = "".join(f"update {ref} {oid}\n" for ref, oid in sorted(refs.items()))
        run_git(["update-ref", "--stdin"], git_dir=store_repo, input=script.encode())


def write_ref_file(store_repo: Path, ref: str, oid: str) -> None:
    """Point one ref at `oid` without an `update-ref` process (`set_refs` of one)."""
    set_refs(store_repo, {ref: oid})


def _is_plain(ref: str) -> bool:
    return all(re.fullmatch(_PLAIN_PART, part) for part in ref.split("/"))


def _write_loose_refs(store_repo: Path, refs: Mapping[str, str]) -> bool:
    """Write `refs` as loose ref files; False (nothing written) where git must do it."""
    if (store_repo / "reftable").exists():
        return False
    targets: list[tuple[Path, str]] = []
    for ref, oid in sorted(refs.items()):
        if (
            not ref.startswith("refs/pitstop/")
            or not _is_plain(ref)
            or len(oid) not in (40, 64)
            or oid.strip("0123456789abcdef")
            or (store_repo / "logs" / ref).exists()
        ):
            return False
        targets.append((store_repo / ref, oid))
    taken: list[tuple[Path, Path]] = []
    try:
        for final, oid in targets:
            _private_directories(store_repo, final.parent)
            if final.is_dir():  # a ref named like a directory of refs: git says what is wrong
                raise IsADirectoryError(final)
            lock = final.with_name(final.name + ".lock")
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            taken.append((lock, final))
            with os.fdopen(fd, "w") as handle:
                handle.write(f"{oid}\n")
    except OSError:  # a file where a directory must be, a lock taken meanwhile: leave it to git
        for lock, _final in taken:
            lock.unlink(missing_ok=True)
        return False
    try:
        for lock, final in taken:
            os.replace(lock, final)
    finally:
        for lock, _final in taken:
            lock.unlink(missing_ok=True)
    return True


def _private_directories(store_repo: Path, directory: Path) -> None:
    """Create `directory` and any missing parents below the repository, each private (0700)."""
    if directory.is_dir():
        return
    missing = []
    while not directory.is_dir() and directory != store_repo:
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another writer
            path.mkdir(mode=0o700)
        if not path.is_dir():
            raise NotADirectoryError(path)


def is_ancestor(store_repo: Path, older: str, newer: str) -> bool:
    """True when `older` is reachable from `newer`."""
    process = run_git_process(["merge-base", "--is-ancestor", older, newer], git_dir=store_repo)
    return process.returncode == 0


def first_parent_chain(store_repo: Path, tip: str, stop: Iterable[str] = ()) -> list[str]:
    """Commits from `tip` back along first parents (newest first), not walking past `stop`."""
    args = ["rev-list", "--first-parent", tip]
    args += [f"^{oid}" for oid in stop]
    return run_git(args, git_dir=store_repo).decode().split()
