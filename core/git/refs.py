"""Refs of the store's repositories, and the history between them.

Refs are read from, and where it is safe written to, their files directly (git's "files" ref
storage): push, fetch and every checkpoint touch refs, and a git process for each would cost
more than the work. A repository with another ref storage (reftable) is left to git.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
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


def write_ref_file(store_repo: Path, ref: str, oid: str) -> None:
    """Point a ref three levels deep (`refs/<a>/<b>/<name>`) at `oid`, the way git writes a
    loose ref (`<ref>.lock` created exclusively, then renamed over the ref): no `update-ref`
    process. The caller holds its own lock on the ref, so a lock file left here can only be a
    killed writer's and is removed first. Any other ref, or a reftable store, is left to git.
    """
    lock = store_repo / f"{ref}.lock"
    lock.unlink(missing_ok=True)  # git would refuse forever until it is removed
    *directories, name = ref.split("/")
    if (store_repo / "reftable").exists() or len(directories) != 3:
        run_git(["update-ref", ref, oid], git_dir=store_repo)
        return
    directory = store_repo
    for part in directories:
        directory = directory / part
        directory.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{oid}\n")
        os.replace(lock, directory / name)
    except BaseException:
        lock.unlink(missing_ok=True)
        raise


def is_ancestor(store_repo: Path, older: str, newer: str) -> bool:
    """True when `older` is reachable from `newer`."""
    process = run_git_process(["merge-base", "--is-ancestor", older, newer], git_dir=store_repo)
    return process.returncode == 0


def first_parent_chain(store_repo: Path, tip: str, stop: Iterable[str] = ()) -> list[str]:
    """Commits from `tip` back along first parents (newest first), not walking past `stop`."""
    args = ["rev-list", "--first-parent", tip]
    args += [f"^{oid}" for oid in stop]
    return run_git(args, git_dir=store_repo).decode().split()
