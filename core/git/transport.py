"""Moving refs and objects between the store's repository and a remote, over git's own transports.

Each call is one git process against the store's bare repository (never the user's). A failure
names the remote and keeps what git said, so callers can tell a ref someone else moved (fetch,
merge, retry) from a host that refuses `refs/pitstop/*` (one clear line) from anything else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.errors import GitError
from core.git.run import run_git_process

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


def ls_remote(store_repo: Path, url: str, pattern: str) -> dict[str, str]:
    """The remote's refs matching `pattern`: ref name → id."""
    raw = _network(["ls-remote", url, pattern], store_repo, url)
    refs: dict[str, str] = {}
    for line in raw.decode().splitlines():
        oid, _, name = line.partition("\t")
        if name:
            refs[name] = oid
    return refs


UNPACK_LIMIT = 500  # objects: below this a fetch is unpacked into loose objects


def fetch(store_repo: Path, url: str, refspecs: Sequence[str], *, prune: bool = False) -> None:
    """Fetch `refspecs` from `url` into the store repository (only missing objects move).

    With `prune`, tracking refs that the refspecs' patterns cover and the remote no longer
    has are deleted, so one fetch both updates and lists what the remote holds.
    """
    if refspecs:
        # A small fetch (a checkpoint, a ledger commit) lands as loose objects, which the
        # object reader opens from their files: reading what came in then starts no cat-file.
        # A large one still lands as one pack. Which refs were forced is never shown (so not
        # worked out), and housekeeping runs only when it may be due (`maintain_if_due`).
        args = ["-c", f"fetch.unpackLimit={UNPACK_LIMIT}", *_QUIET_FETCH, "fetch", "--quiet",
                "--no-tags", "--no-write-fetch-head"]  # fmt: skip
        if prune:
            args.append("--prune")
        _network([*args, url, *refspecs], store_repo, url)
        maintain_if_due(store_repo)


_QUIET_FETCH = (
    "-c", "fetch.showForcedUpdates=false", "-c", "advice.fetchShowForcedUpdates=false",
    "-c", "maintenance.auto=false",
)  # fmt: skip
# git's own `gc --auto` looks for 27 loose objects in objects/17 (6,700 in all) or 50 packs;
# it is asked well before either, so a lower gc.auto in the user's config still counts.
_LOOSE_IN_17_SOON = 6
_PACKS_SOON = 25


def maintain_if_due(store_repo: Path) -> None:
    """Run `git maintenance run --auto` when the repository may need it (what every fetch
    would otherwise start, only to find nothing to do): loose objects or packs piling up."""
    try:
        loose = sum(1 for name in os.listdir(store_repo / "objects" / "17") if len(name) == 38)
    except OSError:
        loose = 0
    try:
        packs = sum(1 for n in os.listdir(store_repo / "objects" / "pack") if n.endswith(".pack"))
    except OSError:
        packs = 0
    if loose > _LOOSE_IN_17_SOON or packs > _PACKS_SOON:
        run_git_process(["maintenance", "run", "--auto", "--quiet"], git_dir=store_repo)


def push(
    store_repo: Path,
    url: str,
    updates: Mapping[str, tuple[str, str | None]],
    *,
    known_objects: Sequence[Path] = (),
) -> None:
    """Update remote refs atomically: ref → (new id, the id it must still have, or None if new).

    The expected old value makes the push a compare-and-set: a ref someone else moved since we
    read it fails the whole push with RemoteMovedError instead of losing their work.

    `known_objects` are object directories (the user's repository's) that git may read, for
    this push only, to learn what the remote's advertised tips hold: a store holds its base
    commit alone, so a remote whose branch moved past it would otherwise be sent the base's
    whole tree again. Only objects reachable from what is pushed are sent; the store's
    repository never comes to depend on them, and a push they spoil (a damaged object in the
    user's repository) is made once more without them.
    """
    if not updates:
        return
    args = ["push", "--atomic", "--quiet", "--no-verify"]
    for ref, (_new, old) in sorted(updates.items()):
        args.append(f"--force-with-lease={ref}:{old or ''}")
    args.append(url)
    # no "+" on the refspecs: a forced refspec would override the lease
    args += [f"{new}:{ref}" for ref, (new, _old) in sorted(updates.items())]
    usable = [str(path) for path in known_objects if ":" not in str(path) and path.is_dir()]
    env = {"GIT_ALTERNATE_OBJECT_DIRECTORIES": ":".join(usable)} if usable else None
    try:
        try:
            _network(args, store_repo, url, env)
        except NetworkError as exc:
            if env is None or _moved(exc) or _refused(exc):
                raise
            _network(args, store_repo, url)  # an atomic push that failed changed nothing
    except NetworkError as exc:
        if _moved(exc):
            raise RemoteMovedError(
                f"the remote {url} changed while pushing (someone else pushed); "
                "run `pitstop sync` to merge and push again"
            ) from exc
        if _refused(exc):
            raise RemoteRefusedError(
                f"the remote {url} refused refs/pitstop/* ({exc}); this host only accepts "
                "branches and tags, so share checkpoints through another remote "
                "(`pitstop remote add NAME URL`)"
            ) from exc
        raise


def _moved(exc: NetworkError) -> bool:
    """A push refused because a leased ref moved since it was read."""
    text = exc.stderr.lower()
    return "stale info" in text or "fetch first" in text or "non-fast-forward" in text


def _refused(exc: NetworkError) -> bool:
    """A push refused because the host takes no refs outside branches and tags."""
    return any(hint in exc.stderr.lower() for hint in _REFUSED_REF_HINTS)


def _network(
    args: list[str], store_repo: Path, url: str, env: Mapping[str, str] | None = None
) -> bytes:
    """Run a git command that talks to a remote; its failure names the remote."""
    proc = run_git_process(args, git_dir=store_repo, env=env)
    if proc.returncode != 0:
        lines = [
            line.strip()
            for line in proc.stderr.decode(errors="replace").splitlines()
            if line.strip() and not line.startswith("hint:")
        ]
        detail = " / ".join(lines[-3:]) if lines else f"exit code {proc.returncode}"
        verb = next((a for a in args if a in ("fetch", "push", "ls-remote")), args[0])
        raise NetworkError(f"git {verb} to {url} failed: {detail}", "\n".join(lines))
    return proc.stdout
