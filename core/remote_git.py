"""Git plumbing for remotes: build trees and commits from bytes, and move refs over git's own
transports.

Everything runs `git` against the store's own bare repository (never the user's). Object
writes are batched — one `hash-object` for all blobs, one `mktree --batch` for all trees, one
`cat-file --batch` for all reads — because a ledger holds thousands of small files and a process
per object would dominate push and fetch.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from core.errors import GitError
from core.snapshot import PITSTOP_IDENT, _clean_env, _git

# Messages from hosts that refuse refs outside refs/heads and refs/tags (or a hook that does).
_REFUSED_REF_HINTS = (
    "funny refname",
    "refusing to",
    "deny",
    "not allowed",
    "hook declined",
    "pre-receive hook",
    "protected",
    "forbidden",
    "permission",
)


class NetworkError(GitError):
    """A git command talking to a remote failed; `stderr` keeps all it said, for callers that
    tell a moved ref from a refused one."""

    def __init__(self, message: str, stderr: str) -> None:
        super().__init__(message)
        self.stderr = stderr


class RemoteRefusedError(GitError):
    """The remote host refused Pitstop's refs (a host that only takes branches and tags)."""


class RemoteMovedError(GitError):
    """A ref on the remote moved since it was read (someone else pushed); fetch and retry."""


def write_blobs(store_repo: Path, blobs: Sequence[bytes]) -> list[str]:
    """Store many blobs with one `git hash-object` run; return their ids in order."""
    if not blobs:
        return []
    with tempfile.TemporaryDirectory(prefix="blobs-", dir=store_repo) as scratch:
        paths = []
        for number, data in enumerate(blobs):
            path = os.path.join(scratch, str(number))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            paths.append(path)
        listing = "".join(f"{path}\n" for path in paths).encode()
        out = _git(
            ["hash-object", "-w", "--no-filters", "--stdin-paths"],
            git_dir=store_repo,
            input=listing,
        )
    oids = out.decode().split()
    if len(oids) != len(blobs):
        raise GitError(f"git hash-object stored {len(oids)} of {len(blobs)} blobs")
    return oids


def build_tree(
    store_repo: Path,
    files: Mapping[str, bytes],
    trees: Mapping[str, str] | None = None,
    blob_ids: Mapping[str, str] | None = None,
) -> str:
    """One tree holding `files` (path → bytes), existing `trees` (path → tree id) and existing
    `blob_ids` (path → blob id) at their paths; return the root tree id."""
    paths = list(files)
    oids = write_blobs(store_repo, [files[path] for path in paths])
    entries: dict[str, tuple[str, str]] = {
        path: ("100644 blob", oid) for path, oid in zip(paths, oids, strict=True)
    }
    for path, oid in (blob_ids or {}).items():
        entries[path] = ("100644 blob", oid)
    for path, oid in (trees or {}).items():
        entries[path] = ("040000 tree", oid)
    return _mktree_nested(store_repo, entries)


def _mktree_nested(store_repo: Path, entries: Mapping[str, tuple[str, str]]) -> str:
    """Write nested trees bottom-up through one `git mktree --batch` process."""
    children: dict[str, dict[str, tuple[str, str]]] = {"": {}}
    for path, entry in entries.items():
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            parent, name = "/".join(parts[: depth - 1]), parts[depth - 1]
            children.setdefault("/".join(parts[:depth]), {})
            children.setdefault(parent, {})[name] = ("040000 tree", "")
        children.setdefault("/".join(parts[:-1]), {})[parts[-1]] = entry
    env = _clean_env({"GIT_DIR": str(store_repo)})
    process = subprocess.Popen(
        ["git", "mktree", "--batch", "-z"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        umask=0o077,
    )
    assert process.stdin is not None and process.stdout is not None
    built: dict[str, str] = {}
    try:
        for directory in sorted(children, key=lambda d: (-d.count("/"), d)):
            if directory == "" and len(children) > 1:
                continue  # the root goes last, below
            built[directory] = _write_one(process, directory, children, built)
        if "" not in built:
            built[""] = _write_one(process, "", children, built)
    finally:
        process.stdin.close()
        stderr = process.stderr.read() if process.stderr else b""
        code = process.wait()
    if code != 0:
        raise GitError(f"git mktree failed: {stderr.decode(errors='replace').strip()}")
    return built[""]


def _write_one(
    process: subprocess.Popen[bytes],
    directory: str,
    children: Mapping[str, Mapping[str, tuple[str, str]]],
    built: Mapping[str, str],
) -> str:
    assert process.stdin is not None and process.stdout is not None
    lines = []
    for name, (kind, oid) in sorted(children[directory].items()):
        if not oid:
            oid = built[f"{directory}/{name}" if directory else name]
        lines.append(f"{kind} {oid}\t{name}\0".encode())
    process.stdin.write(b"".join(lines) + b"\0")
    process.stdin.flush()
    answer = process.stdout.readline().decode().strip()
    if not answer:
        raise GitError(f"git mktree gave no tree for {directory or 'the root'}")
    return answer


def commit(
    store_repo: Path, tree: str, parents: Iterable[str], message: str, timestamp: str
) -> str:
    """A commit by Pitstop's fixed identity: the same inputs always give the same commit id."""
    args = ["commit-tree", tree, "-m", message]
    for parent in parents:
        args += ["-p", parent]
    env = {**PITSTOP_IDENT, "GIT_AUTHOR_DATE": timestamp, "GIT_COMMITTER_DATE": timestamp}
    return _git(args, git_dir=store_repo, env=env).decode().strip()


def list_tree(store_repo: Path, rev: str, prefix: str = "") -> dict[str, tuple[str, str]]:
    """Every entry under `rev` (recursively): path → (type, id)."""
    args = ["ls-tree", "-r", "-z", rev]
    if prefix:
        args += ["--", prefix]
    raw = _git(args, git_dir=store_repo)
    entries: dict[str, tuple[str, str]] = {}
    for item in raw.split(b"\0"):
        if item:
            meta, _, path = item.decode().partition("\t")
            _mode, kind, oid = meta.split()
            entries[path] = (kind, oid)
    return entries


def top_entries(store_repo: Path, rev: str) -> dict[str, str]:
    """The top-level entries of a commit's tree: name → id."""
    raw = _git(["ls-tree", "-z", rev], git_dir=store_repo)
    entries: dict[str, str] = {}
    for item in raw.split(b"\0"):
        if item:
            meta, _, name = item.decode().partition("\t")
            entries[name] = meta.split()[2]
    return entries


def read_objects(store_repo: Path, specs: Sequence[str]) -> dict[str, bytes | None]:
    """Read many objects (ids or `rev:path`) with one `cat-file --batch`; missing ones are None."""
    if not specs:
        return {}
    env = _clean_env({"GIT_DIR": str(store_repo)})
    process = subprocess.Popen(
        ["git", "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    found: dict[str, bytes | None] = {}
    try:
        for spec in specs:
            process.stdin.write(spec.encode() + b"\n")
            process.stdin.flush()
            header = process.stdout.readline().decode().split()
            if len(header) != 3:  # "<spec> missing" (or ambiguous)
                found[spec] = None
                continue
            size = int(header[2])
            data = process.stdout.read(size)
            process.stdout.read(1)  # the newline after the content
            found[spec] = data
    finally:
        process.stdin.close()
        process.wait()
    return found


def first_parent_chain(store_repo: Path, tip: str, stop: Iterable[str] = ()) -> list[str]:
    """Commits from `tip` back along first parents (newest first), not walking past `stop`."""
    args = ["rev-list", "--first-parent", tip]
    args += [f"^{oid}" for oid in stop]
    return _git(args, git_dir=store_repo).decode().split()


def read_ref(store_repo: Path, ref: str) -> str | None:
    """The id a local ref points at, or None."""
    out = _git(["rev-parse", "--verify", "--quiet", ref], git_dir=store_repo, ok_codes=(0, 1))
    return out.decode().strip() or None


def refs_under(store_repo: Path, prefix: str) -> dict[str, str]:
    """Local refs below `prefix`: ref name → id."""
    out = _git(["for-each-ref", "--format=%(refname) %(objectname)", prefix], git_dir=store_repo)
    pairs = (line.split(" ", 1) for line in out.decode().splitlines() if line)
    return {name: oid for name, oid in pairs}


def set_ref(store_repo: Path, ref: str, oid: str) -> None:
    """Point a local ref at `oid` (a lock left by a killed writer is cleared first)."""
    lock = store_repo / f"{ref}.lock"
    lock.unlink(missing_ok=True)
    _git(["update-ref", ref, oid], git_dir=store_repo)


def set_refs(store_repo: Path, refs: Mapping[str, str]) -> None:
    """Point several local refs at once (one `update-ref --stdin`, in one transaction)."""
    if not refs:
        return
    for ref in refs:
        (store_repo / f"{ref}.lock").unlink(missing_ok=True)
    script = "".join(f"update {ref} {oid}\n" for ref, oid in sorted(refs.items()))
    _git(["update-ref", "--stdin"], git_dir=store_repo, input=script.encode())


def is_ancestor(store_repo: Path, older: str, newer: str) -> bool:
    """True when `older` is reachable from `newer`."""
    code = subprocess.run(
        ["git", "merge-base", "--is-ancestor", older, newer],
        env=_clean_env({"GIT_DIR": str(store_repo)}),
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
    return _git(
        ["pack-objects", "--stdout", "--revs", "--quiet"],
        git_dir=store_repo,
        input=("\n".join(lines) + "\n").encode(),
    )


def index_pack(store_repo: Path, pack: bytes) -> None:
    """Store a pack's objects in the store repository (checked by git as it indexes them)."""
    _git(["index-pack", "--stdin", "--fix-thin"], git_dir=store_repo, input=pack)


def ls_remote(store_repo: Path, url: str, pattern: str) -> dict[str, str]:
    """The remote's refs matching `pattern`: ref name → id."""
    raw = _network(["ls-remote", url, pattern], store_repo, url)
    refs: dict[str, str] = {}
    for line in raw.decode().splitlines():
        oid, _, name = line.partition("\t")
        if name:
            refs[name] = oid
    return refs


def fetch(store_repo: Path, url: str, refspecs: Sequence[str], *, prune: bool = False) -> None:
    """Fetch `refspecs` from `url` into the store repository (only missing objects move).

    With `prune`, tracking refs that the refspecs' patterns cover and the remote no longer
    has are deleted, so one fetch both updates and lists what the remote holds.
    """
    if refspecs:
        args = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head"]
        if prune:
            args.append("--prune")
        _network([*args, url, *refspecs], store_repo, url)


def push(store_repo: Path, url: str, updates: Mapping[str, tuple[str, str | None]]) -> None:
    """Update remote refs atomically: ref → (new id, the id it must still have, or None if new).

    The expected old value makes the push a compare-and-set: a ref someone else moved since we
    read it fails the whole push with RemoteMovedError instead of losing their work.
    """
    if not updates:
        return
    args = ["push", "--atomic", "--quiet", "--no-verify"]
    for ref, (_new, old) in sorted(updates.items()):
        args.append(f"--force-with-lease={ref}:{old or ''}")
    args.append(url)
    # no "+" on the refspecs: a forced refspec would override the lease
    args += [f"{new}:{ref}" for ref, (new, _old) in sorted(updates.items())]
    try:
        _network(args, store_repo, url)
    except NetworkError as exc:
        text = exc.stderr.lower()
        if "stale info" in text or "fetch first" in text or "non-fast-forward" in text:
            raise RemoteMovedError(
                f"the remote {url} changed while pushing (someone else pushed); "
                "run `pitstop sync` to merge and push again"
            ) from exc
        if any(hint in text for hint in _REFUSED_REF_HINTS):
            raise RemoteRefusedError(
                f"the remote {url} refused refs/pitstop/* ({exc}); this host only accepts "
                "branches and tags, so share checkpoints through another remote "
                "(`pitstop remote add NAME URL`)"
            ) from exc
        raise


def _network(args: list[str], store_repo: Path, url: str) -> bytes:
    """Run a git command that talks to a remote; its failure names the remote."""
    env = _clean_env({"GIT_DIR": str(store_repo)})
    try:
        proc = subprocess.run(
            ["git", *args], env=env, capture_output=True, check=False, umask=0o077
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH; install git 2.31 or newer") from exc
    if proc.returncode != 0:
        lines = [
            line.strip()
            for line in proc.stderr.decode(errors="replace").splitlines()
            if line.strip() and not line.startswith("hint:")
        ]
        detail = " / ".join(lines[-3:]) if lines else f"exit code {proc.returncode}"
        raise NetworkError(f"git {args[0]} to {url} failed: {detail}", "\n".join(lines))
    return proc.stdout
