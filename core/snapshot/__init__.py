"""The git side of checkpoints: write, verify and materialise exact worktree snapshots.

A snapshot is written into the store's *own* bare repository for the source repository, never
into the user's `.git` (invariant 8). git runs in the user's work tree with a temporary index
copied from the user's (so stat data lets it rehash only changed files), `GIT_OBJECT_DIRECTORY`
pointing at the store's objects and the user's objects as an alternate. Afterwards every object
the snapshot needs that still lives only in the user's repository is copied into the store, so a
`git gc` in the user's repository can never break a checkpoint (DESIGN §6).

GitPython finds and creates repositories; the plumbing that needs a custom environment or stdin
runs through `run_git()`. No GitPython object leaves this module.
"""

from __future__ import annotations

import fcntl
import fnmatch
import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from core.config import DEFAULT_MAX_FILE_BYTES
from core.errors import DamagedCheckpointError, GitError, NotAGitRepoError, UsageError
from core.git import plumbing
from core.git.run import clean_env, run_git
from core.models import ChangedFile, LeftOut

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
NULL_OID = "0" * 40
GITLINK_MODE = "160000"
TREE_MODE = "040000"
MAX_IGNORED_LISTED = 500
# The manifest is stored sealed (AES-GCM under the task's data key); only the header is plain.
MANIFEST_FILE = "manifest.enc"


# Untracked files that look like credentials are never stored (invariant 2).
SECRET_NAME_PATTERNS = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "credentials*.json",
    "*-credentials.json",
    "service-account*.json",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".htpasswd",
    "secrets.yml",
    "secrets.yaml",
)
# Templates and public halves that share those names are safe and useful to keep.
SAFE_NAME_SUFFIXES = (".example", ".sample", ".template", ".dist", ".pub")
PRIVATE_KEY_MARKERS = (b"-----BEGIN", b"PRIVATE KEY-----")

LOCKFILE_NAMES = (
    "uv.lock",
    "poetry.lock",
    "Pipfile.lock",
    "pdm.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lockb",
    "Cargo.lock",
    "go.sum",
    "Gemfile.lock",
    "composer.lock",
    "mix.lock",
    "flake.lock",
    "Package.resolved",
)
LOCKFILE_PATTERNS = ("requirements*.txt", "constraints*.txt")


# The value types here are named tuples, not frozen dataclasses: immutable all the same, and
# defined in a fraction of the time (~1.5 ms less for every hook process that takes a snapshot).


class SourceRepo(NamedTuple):
    """A user's git work tree, located once; everything Pitstop must never write to."""

    toplevel: Path
    git_dir: Path
    common_dir: Path
    index_file: Path
    objects_dir: Path

    @property
    def store_repo_name(self) -> str:
        """A stable, readable name for this repository's bare repo inside the store."""
        digest = hashlib.sha256(str(self.common_dir).encode()).hexdigest()[:12]
        slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in self.toplevel.name)
        return f"{slug[:40] or 'repo'}-{digest}.git"


class SnapshotLimits(NamedTuple):
    """What a snapshot is allowed to store."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES


_DEFAULT_LIMITS = SnapshotLimits()


class Snapshot(NamedTuple):
    """The trees of one snapshot, now held entirely by the store's repository."""

    worktree_tree: str
    index_tree: str
    base_commit: str | None
    branch: str | None
    left_out: tuple[LeftOut, ...]
    submodules: tuple[tuple[str, str], ...]
    bytes_added: int
    base_tree: str | None = None  # the base commit's tree (EMPTY_TREE without one)
    facts: RepoFacts | None = None  # remotes and upstream, read beside the snapshot (`locate`)
    # True when every object of both trees is known to be in the store by itself: the
    # previous trees were verified complete and each object beyond them was checked after
    # copying. The checkpoint's verification then needs no walk of the whole trees.
    objects_present: bool = False
    lockfiles: tuple[tuple[str, str], ...] | None = None  # path → blob id, when derived


class RepoFacts(NamedTuple):
    """What the manifest records about the source repository besides the snapshot."""

    remotes: tuple[tuple[str, str], ...]
    upstream: str | None
    upstream_head: str | None


def git_version(cache_dir: Path | None = None) -> str:
    """The installed git's version string, for the manifest's environment identity.

    With `cache_dir`, the answer is kept in a file keyed by the git executable's resolved path,
    inode, size and modification time, so that a new process (every hook is one) asks git only
    after git itself changed.
    """
    if cache_dir is None:
        return _ask_git_version()
    found = shutil.which("git")
    try:
        info = Path(found).resolve().stat() if found else None
    except OSError:
        info = None
    if found is None or info is None:
        return _ask_git_version()
    key = f"{Path(found).resolve()}\0{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
    cache = cache_dir / "git-version"
    try:
        cached_key, _, cached = cache.read_text(encoding="utf-8").partition("\n")
        if cached_key == key and cached:
            return cached
    except (OSError, UnicodeDecodeError):
        pass
    version = _ask_git_version()
    temp = cache.with_name(f"git-version.{os.getpid()}.tmp")
    try:
        cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"{key}\n{version}")
        os.replace(temp, cache)
    except OSError:
        temp.unlink(missing_ok=True)
    return version


def _ask_git_version() -> str:
    return run_git(["--version"]).decode().strip().removeprefix("git version ")


def resolve_source_repo(path: str | os.PathLike[str]) -> SourceRepo:
    """Locate the work tree containing `path`, refusing paths that are not inside one."""
    candidate = Path(path).expanduser()
    if not candidate.exists():
        raise NotAGitRepoError(
            f"{candidate} does not exist; pass --repo a path inside a git work tree"
        )
    if not candidate.is_dir():
        candidate = candidate.parent
    try:
        # Inside a work tree (the common case, and every harness hook's): one git call.
        lines = run_git(["rev-parse", *_REPO_FACTS], cwd=candidate).decode().splitlines()
    except GitError:
        lines = _resolve_with_gitpython(candidate)
    return _source_from(lines)


class Located(NamedTuple):
    """A work tree located for a snapshot, with what its config and HEAD said meanwhile."""

    source: SourceRepo
    remotes: tuple[tuple[str, str], ...]
    any_upstream: bool
    head: HeadFacts | None  # None: asked again when the snapshot is taken


def locate(path: str | os.PathLike[str]) -> Located:
    """`resolve_source_repo`, plus the remotes and HEAD a snapshot records, from two git calls
    run side by side: the config, and one `rev-parse` for the repository's paths, HEAD and its
    upstream. Without an upstream, that `rev-parse` stops after HEAD's tree; the branch is then
    read from the repository's HEAD file, as git reads it."""
    candidate = Path(path).expanduser()
    if candidate.is_file():
        candidate = candidate.parent
    if not candidate.is_dir():
        return Located(resolve_source_repo(path), (), False, None)  # explains the refusal
    config = _start_git(_CONFIG_ARGS, cwd=candidate, env={})
    try:
        args = ["rev-parse", *_REPO_FACTS, *_head_args(upstream=True)]
        lines = run_git(args, cwd=candidate, ok_codes=(0, 128)).decode().splitlines()
    finally:
        out, err = config.communicate()
    plainly_inside = len(lines) >= 5
    source = _source_from(lines) if plainly_inside else resolve_source_repo(path)  # or explains
    if config.returncode not in (0, 1):  # 1: no remote and no upstream configured
        message = err.decode(errors="replace").strip().splitlines()
        raise GitError(f"git config failed: {message[-1] if message else config.returncode}")
    remotes, any_upstream = _parse_config_facts(out)
    if not plainly_inside:
        return Located(source, remotes, any_upstream, None)
    head = _parse_head(lines[5:], upstream=True)
    if head is None and len(lines) == 7 and not any_upstream:  # HEAD resolved; no upstream
        head = _head_without_upstream(source, commit=lines[5], tree=lines[6])
    return Located(source, remotes, any_upstream, head)


def _head_without_upstream(source: SourceRepo, *, commit: str, tree: str) -> HeadFacts | None:
    """HEAD's facts with the branch read from `HEAD` (`ref: refs/heads/NAME`, or an id when
    detached); None when that file says something else, or is an old-style symbolic link,
    which names its branch by where it points (asked through git later)."""
    head = source.git_dir / "HEAD"
    try:
        if head.is_symlink():
            return None
        text = head.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if text == "ref: refs/heads/.invalid":  # a reftable repository's stub: HEAD lives elsewhere
        return None
    if text.startswith("ref: "):
        return HeadFacts(commit, tree, _branch_of(text.removeprefix("ref: ").strip()))
    if text == commit:
        return HeadFacts(commit, tree, None)
    return None


def _source_from(lines: Sequence[str]) -> SourceRepo:
    toplevel, git_dir, common_dir, index_file, objects_dir = (Path(line) for line in lines[:5])
    return SourceRepo(
        toplevel=toplevel.resolve(),
        git_dir=git_dir.resolve(),
        common_dir=common_dir.resolve(),
        index_file=index_file,
        objects_dir=objects_dir.resolve(),
    )


_REPO_FACTS = (
    "--path-format=absolute",
    "--show-toplevel",
    "--git-dir",
    "--git-common-dir",
    "--git-path",
    "index",
    "--git-path",
    "objects",
)


def _resolve_with_gitpython(candidate: Path) -> list[str]:
    """The repository facts when `git rev-parse` refused: explain why (no repository, bare…)."""
    import git as gitpython  # only when the quick look failed: GitPython costs ~7 bare starts

    try:
        repo = gitpython.Repo(candidate, search_parent_directories=True)
    except (gitpython.InvalidGitRepositoryError, gitpython.NoSuchPathError) as exc:
        raise NotAGitRepoError(
            f"{candidate.absolute()} is not inside a git work tree; run `git init` there or pass "
            "--repo the path of your repository"
        ) from exc
    try:
        if repo.bare or repo.working_tree_dir is None:
            raise NotAGitRepoError(
                f"{candidate.absolute()} is a bare git repository; a task needs a work tree"
            )
        return (
            run_git(["rev-parse", *_REPO_FACTS], cwd=Path(repo.working_tree_dir))
            .decode()
            .splitlines()
        )
    finally:
        repo.close()


def ensure_store_repo(repos_dir: Path, source: SourceRepo) -> Path:
    """Create (once) and return the store's own bare repository for `source`.

    `pitstop-source` is written last: a repository without it was left half-initialised by a
    killed process and is completed here (git init and config are idempotent).
    """
    path = repos_dir / source.store_repo_name
    marker = path / "pitstop-source"
    if marker.exists():
        return path
    repos_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _exclusive(repos_dir / f".{source.store_repo_name}.init-lock"):
        if marker.exists():  # another process finished it while we waited
            return path
        # Holding the init lock with no marker: any lock file here is a killed initialiser's.
        for stale in path.glob("*.lock"):
            stale.unlink(missing_ok=True)
        import git as gitpython

        try:
            repo = gitpython.Repo.init(path, bare=True, shared="0600")
            try:
                with repo.config_writer() as config:
                    config.set_value("core", "logAllRefUpdates", "false")
                    # Files readable by their owner only (invariant 9).
                    config.set_value("core", "sharedRepository", "0600")
                    # Only Pitstop's own gc may prune; checkpoints must not vanish behind its back.
                    config.set_value("gc", "auto", "0")
                    config.set_value("gc", "pruneExpire", "never")
            finally:
                repo.close()
        except (gitpython.GitError, OSError) as exc:
            raise GitError(f"cannot create the store repository {path}: {exc}") from exc
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


def _object_sizes(store_repo: Path, oids: Iterable[str]) -> dict[str, int | None]:
    """Stored (compressed) size of each object the store holds by itself; None when missing."""
    unique = list(dict.fromkeys(oids))
    if not unique:
        return {}
    out = run_git(
        ["cat-file", "--batch-check=%(objectname) %(objectsize:disk)"],
        git_dir=store_repo,
        input=("\n".join(unique) + "\n").encode(),
    )
    sizes: dict[str, int | None] = {}
    for oid, line in zip(unique, out.decode().splitlines(), strict=True):
        value = line.rsplit(" ", 1)[-1]
        sizes[oid] = int(value) if value.isdigit() else None
    return sizes


def _has_objects(store_repo: Path, oids: Iterable[str]) -> dict[str, bool]:
    """Which of `oids` the store's repository holds by itself (no alternates)."""
    return {oid: size is not None for oid, size in _object_sizes(store_repo, oids).items()}


def _ensure_base_history(
    store_repo: Path, source: SourceRepo, base_commit: str, held: bool | None = None
) -> int:
    """Fetch the base commit and its history into the store once; return bytes added.

    `held`: whether the store holds the base commit, when the caller already asked.
    """
    if held is None:
        held = _store_reads(store_repo, [base_commit])[base_commit] is not None
    if held:
        return 0
    before = _store_pack_bytes(store_repo)
    run_git(
        [
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            str(source.toplevel),
            base_commit,
        ],
        git_dir=store_repo,
    )
    return max(_store_pack_bytes(store_repo) - before, 0)


def _store_reads(store_repo: Path, specs: Sequence[str]) -> dict[str, bytes | None]:
    """Objects (ids or `rev:path`) the store holds by itself, read through the operation's
    `cat-file` session when one is open (one process for every read of a checkpoint)."""
    return plumbing.read_objects(store_repo, specs)


def _in_session(store_repo: Path) -> bool:
    """True while a `cat-file` session is open on `store_repo` (its reads cost no process)."""
    return plumbing.session_reader(store_repo) is not None


def _store_pack_bytes(store_repo: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(store_repo / "objects"):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue
    return total


def _is_secret_name(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    if name.endswith(SAFE_NAME_SUFFIXES):
        return False
    return _matches_any(SECRET_NAME_PATTERNS, name)


def _contains_private_key(full_path: Path) -> bool:
    try:
        with full_path.open("rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return all(marker in data for marker in PRIVATE_KEY_MARKERS)


class _StatusScan:
    """What `git status` said, by kind (a plain class: a dataclass costs a hook ~0.5 ms)."""

    __slots__ = ("ignored", "staged", "submodules", "unmerged", "untracked", "worktree_changed")

    def __init__(self) -> None:
        self.worktree_changed: list[str] = []
        self.untracked: list[str] = []
        self.ignored: list[str] = []
        self.unmerged: list[str] = []
        self.submodules: list[str] = []
        self.staged = 0


_STATUS_ARGS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--untracked-files=all",
    "--ignored=matching",
    "--no-renames",
    "--ignore-submodules=none",
)


def _start_git(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """Start a git command in the background (its output is read by `_finish_git`)."""
    try:
        return subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            env=clean_env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            umask=0o077,
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH; install git 2.31 or newer") from exc


def _finish_git(process: subprocess.Popen[bytes], name: str) -> bytes:
    out, err = process.communicate()
    if process.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {name} failed: {lines[-1] if lines else process.returncode}")
    return out


def _parse_status(raw: bytes) -> _StatusScan:
    """Tracked changes, untracked and ignored paths from `git status --porcelain=v2 -z`."""
    scan = _StatusScan()
    for record in raw.split(b"\0"):
        if not record:
            continue
        kind = record[:1]
        text = record.decode("utf-8", errors="surrogateescape")
        if kind == b"1":
            fields = text.split(" ", 8)
            xy, sub, path = fields[1], fields[2], fields[8]
            if xy[1] != ".":
                scan.worktree_changed.append(path)
            if xy[0] != ".":
                scan.staged += 1
            if sub.startswith("S"):
                scan.submodules.append(path)
        elif kind == b"u":
            scan.unmerged.append(text.split(" ", 10)[10])
        elif kind == b"?":
            scan.untracked.append(text[2:])
        elif kind == b"!":
            scan.ignored.append(text[2:])
    return scan


def _select_paths(
    source: SourceRepo, scan: _StatusScan, limits: SnapshotLimits
) -> tuple[list[str], list[LeftOut]]:
    """Decide which changed and untracked paths enter the snapshot; list the rest with why."""
    include: list[str] = []
    left_out: list[LeftOut] = []
    for path in scan.worktree_changed:
        full = source.toplevel / path
        try:
            info = full.lstat()
        except (FileNotFoundError, NotADirectoryError):
            info = None  # deleted: update-index --remove records the deletion
        if info is not None and stat.S_ISREG(info.st_mode) and info.st_size > limits.max_file_bytes:
            size = info.st_size
            left_out.append(
                LeftOut(
                    path,
                    f"larger than {limits.max_file_bytes} bytes; kept at its staged version",
                    size,
                )
            )
            continue
        include.append(path)
    for path in scan.untracked:
        full = source.toplevel / path
        if path.endswith("/"):
            left_out.append(LeftOut(path, "a nested git repository that is not a submodule"))
            continue
        try:
            info = full.lstat()
        except (FileNotFoundError, NotADirectoryError):
            continue  # vanished between the scan and now
        if _is_secret_name(path):
            left_out.append(LeftOut(path, "looks like a credential file", info.st_size))
        elif full.is_symlink():
            include.append(path)
        elif not full.is_file():
            left_out.append(LeftOut(path, "not a regular file", None))
        elif info.st_size > limits.max_file_bytes:
            left_out.append(
                LeftOut(path, f"larger than {limits.max_file_bytes} bytes", info.st_size)
            )
        elif _contains_private_key(full):
            left_out.append(LeftOut(path, "contains a private key block", info.st_size))
        else:
            include.append(path)
    for path in scan.ignored[:MAX_IGNORED_LISTED]:
        left_out.append(LeftOut(path, "ignored by git"))
    if len(scan.ignored) > MAX_IGNORED_LISTED:
        hidden = len(scan.ignored) - MAX_IGNORED_LISTED
        left_out.append(LeftOut("…", f"{hidden} more ignored paths not listed"))
    return include, left_out


def _new_objects(
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


def _copy_missing_objects(
    store_repo: Path, source: SourceRepo, oids: list[str], base_commit: str | None = None
) -> tuple[int, int]:
    """Copy objects only the user's repository holds into the store; return the bytes stored
    and how many of `oids` the store still lacks afterwards.

    With `base_commit`, the same batch asks whether the store holds it, and its history is
    fetched when it does not (its bytes counted too).
    """
    sizes = _object_sizes(store_repo, [*oids, base_commit] if base_commit else oids)
    fetched = 0
    if base_commit is not None and sizes.pop(base_commit, None) is None:
        fetched = _ensure_base_history(store_repo, source, base_commit, held=False)
    missing = [oid for oid, size in sizes.items() if size is None]
    if not missing:
        return fetched + sum(size or 0 for size in sizes.values()), 0
    pack = run_git(
        ["pack-objects", "--stdout", "-q"],
        cwd=source.toplevel,
        input=("\n".join(missing) + "\n").encode(),
    )
    run_git(
        ["index-pack", "--stdin", "-q"] if len(missing) > 100 else ["unpack-objects", "-q"],
        git_dir=store_repo,
        input=pack,
    )
    sizes = _object_sizes(store_repo, oids)
    stored = fetched + sum(size or 0 for size in sizes.values())
    return stored, sum(1 for size in sizes.values() if size is None)


@contextmanager
def scratch_directory(parent: Path, prefix: str) -> Iterator[Path]:
    """A new private directory under `parent`, removed afterwards: what
    `tempfile.TemporaryDirectory` gives, without loading tempfile and random (~2 ms) in every
    hook that checkpoints."""
    while True:
        path = parent / f"{prefix}{os.urandom(6).hex()}"
        try:
            path.mkdir(mode=0o700)
            break
        except FileExistsError:
            continue
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def take_snapshot(
    source: SourceRepo,
    store_repo: Path,
    scratch_dir: Path,
    limits: SnapshotLimits = _DEFAULT_LIMITS,
    previous_trees: tuple[str, str] | None = None,
    previous_lockfiles: Mapping[str, str] | None = None,
    located: Located | None = None,
) -> Snapshot:
    """Write the exact working tree and staged state of `source` into `store_repo`.

    `previous_trees` (worktree, index) of the task's last complete checkpoint, every object of
    which the caller verified the store holds, let the store skip objects it already holds and
    count only what this snapshot adds; the snapshot then knows its own objects are all present.
    `previous_lockfiles` (the lockfiles of that worktree tree) let the new tree's lockfiles be
    derived from the same diff instead of a walk of the whole tree. `located` (from `locate`)
    spares asking HEAD again and gives the snapshot the repository's remotes and upstream
    (`Snapshot.facts`); without it they are not read.
    """
    scratch_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    with scratch_directory(scratch_dir, "snapshot-") as temp:
        temp_index = Path(temp) / "index"
        if source.index_file.exists():
            shutil.copy2(source.index_file, temp_index)
        env = {
            "GIT_INDEX_FILE": str(temp_index),
            "GIT_OBJECT_DIRECTORY": str(store_repo / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(source.objects_dir),
        }
        # The directory walk is the slow part: run it while the cheap steps happen beside it.
        # (Writing the staged tree beside it too gained nothing measurable on two cores.)
        status = _start_git(_STATUS_ARGS, cwd=source.toplevel, env=env)
        try:
            if located is None:  # the snapshot alone: HEAD, no remotes or upstream
                facts = None
                head = _head_facts(source)
            else:
                head = located.head or _head_facts(source, upstream=located.any_upstream)
                facts = RepoFacts(located.remotes, head.upstream, head.upstream_head)
            base_commit, base_tree, branch_name = head.commit, head.tree, head.branch
            # Whether the store holds the base commit: read through the session when one is
            # open (no process), else asked in one batch with the snapshot's new objects.
            ask_base_later = base_commit is not None and not _in_session(store_repo)
            bytes_added = (
                _ensure_base_history(store_repo, source, base_commit)
                if base_commit and not ask_base_later
                else 0
            )
            staged_tree = run_git(["write-tree"], cwd=source.toplevel, env=env, ok_codes=(0, 128))
        finally:
            raw_status = _finish_git(status, "status")
        scan = _parse_status(raw_status)
        if scan.unmerged:
            raise UsageError(
                f"{source.toplevel} has unresolved merge conflicts ({scan.unmerged[0]}"
                f"{' and others' if len(scan.unmerged) > 1 else ''}); resolve them, then checkpoint"
            )
        index_tree = staged_tree.decode().strip()
        if not index_tree:
            raise GitError(f"git write-tree failed in {source.toplevel}; is its index damaged?")
        include, left_out = _select_paths(source, scan, limits)
        if include:
            run_git(
                ["update-index", "--add", "--remove", "-z", "--stdin"],
                cwd=source.toplevel,
                env=env,
                input=b"".join(
                    p.encode("utf-8", errors="surrogateescape") + b"\0" for p in include
                ),
            )
            worktree_tree = run_git(["write-tree"], cwd=source.toplevel, env=env).decode().strip()
        else:
            worktree_tree = index_tree
        submodules = (
            _submodule_commits(source, env, worktree_tree)
            if (source.toplevel / ".gitmodules").exists()
            else []
        )

    old_worktree, old_index = previous_trees or (base_tree, base_tree)
    needed, worktree_changes = _new_objects(
        store_repo, [(old_worktree, worktree_tree), (old_index, index_tree)], source
    )
    copied_bytes, unstored = _copy_missing_objects(
        store_repo, source, needed, base_commit if ask_base_later else None
    )
    lockfiles = None
    if previous_trees and previous_lockfiles is not None and worktree_changes is not None:
        # Entries a newer rule set no longer counts are dropped; a file that only a newer
        # rule counts is picked up when it changes (or when a chain starts afresh).
        found = {path: oid for path, oid in previous_lockfiles.items() if is_lockfile(path)}
        for path, oid in worktree_changes:
            if is_lockfile(path):
                if oid is None:
                    found.pop(path, None)
                else:
                    found[path] = oid
        lockfiles = tuple(sorted(found.items()))
    return Snapshot(
        worktree_tree=worktree_tree,
        index_tree=index_tree,
        base_commit=base_commit,
        branch=branch_name,
        left_out=tuple(left_out),
        submodules=tuple(submodules),
        bytes_added=bytes_added + copied_bytes,
        base_tree=base_tree,
        facts=facts,
        objects_present=previous_trees is not None and unstored == 0,
        lockfiles=lockfiles,
    )


class HeadFacts(NamedTuple):
    """The base commit, its tree, the branch, and the upstream branch with its head."""

    commit: str | None
    tree: str
    branch: str | None
    upstream: str | None = None
    upstream_head: str | None = None


def _head_args(*, upstream: bool) -> list[str]:
    """`rev-parse` arguments for the base commit, its tree and the branch (with `upstream`,
    the upstream's head and short name too)."""
    if upstream:  # the upstream's id before the symbolic names: rev-parse has no way back
        return [
            "HEAD^{commit}",
            "HEAD^{tree}",
            "@{upstream}",
            "--symbolic-full-name",
            "HEAD",
            "--abbrev-ref",
            "@{upstream}",
        ]
    return ["HEAD^{commit}", "HEAD^{tree}", "--symbolic-full-name", "HEAD"]


def _parse_head(lines: Sequence[str], *, upstream: bool) -> HeadFacts | None:
    """What `_head_args` printed, or None when rev-parse stopped short (unborn HEAD, no
    upstream for this branch, a gone upstream branch)."""
    if upstream and len(lines) == 5:
        commit, tree, upstream_head, ref, upstream_name = lines
        return HeadFacts(commit, tree, _branch_of(ref), upstream_name, upstream_head)
    if not upstream and len(lines) == 3:
        commit, tree, ref = lines
        return HeadFacts(commit, tree, _branch_of(ref))
    return None


def _head_facts(source: SourceRepo, *, upstream: bool = False) -> HeadFacts:
    """Base commit, its tree and the branch name (with `upstream`, the upstream branch and its
    head too), in one git call; an unborn HEAD or a missing upstream asks again apart."""
    args = ["rev-parse", *_head_args(upstream=upstream)]
    lines = run_git(args, cwd=source.toplevel, ok_codes=(0, 128)).decode().splitlines()
    parsed = _parse_head(lines, upstream=upstream)
    if parsed is not None:
        return parsed
    if upstream and len(lines) == 2:  # HEAD resolved, its upstream did not (none, or gone)
        head = _head_facts(source)
    else:  # unborn HEAD
        ref_out = run_git(
            ["symbolic-ref", "-q", "--short", "HEAD"], cwd=source.toplevel, ok_codes=(0, 1)
        )
        head = HeadFacts(None, EMPTY_TREE, ref_out.decode().strip() or None)
    if not upstream:
        return head
    name, oid = _upstream(source)
    return HeadFacts(head.commit, head.tree, head.branch, name, oid)


def _branch_of(ref: str) -> str | None:
    return ref.removeprefix("refs/heads/") if ref != "HEAD" else None


def _rev_parse_optional(source: SourceRepo, rev: str) -> str | None:
    out = run_git(["rev-parse", "-q", "--verify", rev], cwd=source.toplevel, ok_codes=(0, 1))
    return out.decode().strip() or None


def _tree_of(store_repo: Path, commit: str) -> str:
    return run_git(["rev-parse", f"{commit}^{{tree}}"], git_dir=store_repo).decode().strip()


def _submodule_commits(
    source: SourceRepo, env: Mapping[str, str], tree: str
) -> list[tuple[str, str]]:
    raw = run_git(["ls-tree", "-r", "-z", tree], cwd=source.toplevel, env=env)
    result = []
    for entry in raw.split(b"\0"):
        if entry.startswith(GITLINK_MODE.encode()):
            meta, _, path = entry.decode("utf-8", errors="surrogateescape").partition("\t")
            result.append((path, meta.split()[2]))
    return result


def repo_facts(source: SourceRepo) -> RepoFacts:
    """Remotes (credentials stripped) and the upstream branch with its head, where known."""
    remotes, _any_upstream = _config_facts(source.toplevel)
    upstream, upstream_head = _upstream(source)
    return RepoFacts(remotes=remotes, upstream=upstream, upstream_head=upstream_head)


_CONFIG_ARGS = ("config", "-z", "--get-regexp", r"^(remote\..*\.url|branch\..*\.merge)$")


def _config_facts(cwd: Path) -> tuple[tuple[tuple[str, str], ...], bool]:
    """The remotes (credentials stripped) and whether any branch has an upstream, from one
    `git config` read (a branch without `branch.<name>.merge` has no upstream)."""
    return _parse_config_facts(run_git(_CONFIG_ARGS, cwd=cwd, ok_codes=(0, 1)))


def _parse_config_facts(raw: bytes) -> tuple[tuple[tuple[str, str], ...], bool]:
    """What `git config -z --get-regexp` printed for `_CONFIG_ARGS`."""
    remotes = []
    any_upstream = False
    for item in raw.split(b"\0"):
        if not item:
            continue
        key, _, value = item.decode(errors="replace").partition("\n")
        if key.startswith("remote.") and key.endswith(".url"):
            name = key.removeprefix("remote.").removesuffix(".url")
            remotes.append((name, strip_url_credentials(value)))
        else:
            any_upstream = True
    return tuple(remotes), any_upstream


def _upstream(source: SourceRepo) -> tuple[str | None, str | None]:
    """The upstream branch's short name and head, asked apart (None when there is none)."""
    upstream = (
        run_git(
            ["rev-parse", "-q", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"],
            cwd=source.toplevel,
            ok_codes=(0, 1, 128),
        )
        .decode()
        .strip()
        or None
    )
    upstream_head = _rev_parse_optional(source, "@{upstream}") if upstream else None
    return upstream, upstream_head


def strip_url_credentials(url: str) -> str:
    """Drop `user:password@` from URLs that carry a scheme; ssh `git@host:` users stay."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = authority.rsplit("@", 1)[1]
    return f"{scheme}://{authority}{slash}{path}"


def write_checkpoint_commit(
    store_repo: Path,
    *,
    header: bytes,
    manifest: bytes,
    snapshot: Snapshot,
    parent: str | None,
    message: str,
    timestamp: str,
) -> tuple[str, int]:
    """Store header, manifest and trees as one commit; return its id and the bytes it added.

    The objects are written directly as loose objects in git's own format (the ids `hash-object`,
    `mktree` and `commit-tree` would give): four git processes fewer per checkpoint.
    """
    header_oid, manifest_oid = plumbing.write_blobs(store_repo, [header, manifest])
    root = plumbing.build_tree(
        store_repo,
        {},
        trees={"worktree": snapshot.worktree_tree, "index": snapshot.index_tree},
        blob_ids={"pitstop.json": header_oid, MANIFEST_FILE: manifest_oid},
    )
    parents = [oid for oid in (parent, snapshot.base_commit) if oid]
    commit = plumbing.commit(store_repo, root, parents, message, timestamp)
    written = (header_oid, manifest_oid, root, commit)
    return commit, sum(_loose_object_bytes(store_repo, oid) for oid in written)


def _loose_object_bytes(store_repo: Path, oid: str) -> int:
    """The size on disk of a loose object (0 when the store holds it only in a pack)."""
    try:
        return (store_repo / "objects" / oid[:2] / oid[2:]).stat().st_size
    except FileNotFoundError:
        return 0


def update_checkpoint_ref(store_repo: Path, task_id: str, commit: str) -> None:
    """Point `refs/pitstop/checkpoints/<task>` at the task's newest checkpoint commit.

    The loose ref is written the way git writes it (`<ref>.lock` created exclusively, then
    renamed over the ref), sparing an `update-ref` process; a store with another ref storage
    than loose files is left to git.
    """
    ref = f"refs/pitstop/checkpoints/{task_id}"
    # Callers hold the task's checkpoint lock, so a ref lock file left here can only belong to
    # a writer that was killed mid-update; git would refuse forever until it is removed.
    stale_lock = store_repo / f"{ref}.lock"
    stale_lock.unlink(missing_ok=True)
    if (store_repo / "reftable").exists() or "/" in task_id:
        run_git(["update-ref", ref, commit], git_dir=store_repo)
        return
    directory = store_repo
    for part in ("refs", "pitstop", "checkpoints"):
        directory = directory / part
        directory.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(stale_lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{commit}\n")
        os.replace(stale_lock, directory / task_id)
    except BaseException:
        stale_lock.unlink(missing_ok=True)
        raise


def read_blob(store_repo: Path, commit: str, path: str) -> bytes:
    """Read one file of a checkpoint commit's top-level tree (e.g. `pitstop.json`)."""
    return run_git(["cat-file", "blob", f"{commit}:{path}"], git_dir=store_repo)


class Verification:
    """What `verify_checkpoint` found, its walk of the trees' objects maybe still running."""

    def __init__(self, problems: list[str], missing: int = 0, walk: _Walk | None = None) -> None:
        self._problems = problems
        self._missing = missing
        self._walk = walk
        if walk is None:
            self._state_missing()

    def problems(self) -> list[str]:
        """Every problem found (waits for the walk): empty when the checkpoint is sound."""
        if self._walk is not None:
            self._missing += self._walk.missing()
            self._walk = None
            self._state_missing()
        return self._problems

    def _state_missing(self) -> None:
        if self._missing:
            self._problems.append(
                f"{self._missing} snapshot object(s) are missing from the store repository"
            )


def verify_checkpoint(
    store_repo: Path,
    *,
    commit: str,
    worktree_tree: str,
    index_tree: str,
    manifest_sha256: str | None,
    deep: bool = True,
    objects_present: bool = False,
) -> Verification:
    """Re-read a checkpoint from the store; `.problems()` lists every problem found (empty
    when sound).

    The commit, its root entries, the manifest (by sha256) and both snapshot root trees are
    read back at once (through the operation's object reader when one is open). `deep` then
    walks every object of both snapshot trees; without it only what the index tree holds
    beyond the worktree tree is walked (a restore reads every blob anyway and reports any
    missing one itself). `objects_present` (the writer checked every object of both trees as
    it stored them, see `Snapshot.objects_present`) skips the walk. The walk runs in the
    background until `.problems()` is asked: a checkpoint takes its snapshot meanwhile.
    """
    if not (store_repo / "objects").is_dir():
        return Verification([f"the store repository {store_repo} is missing"])
    manifest_spec = f"{commit}:{MANIFEST_FILE}"
    specs = [commit, f"{commit}^{{tree}}", worktree_tree, index_tree]
    if manifest_sha256 is not None:
        specs.append(manifest_spec)
    found = _store_reads(store_repo, list(dict.fromkeys(specs)))
    if found[commit] is None:
        return Verification(
            [f"checkpoint commit {commit[:12]} is missing from the store repository"]
        )
    problems: list[str] = []
    entries = _root_entries(found[f"{commit}^{{tree}}"] or b"")
    if entries.get("worktree") != worktree_tree:
        problems.append("the commit's worktree/ tree differs from the recorded snapshot tree")
    if entries.get("index") != index_tree:
        problems.append("the commit's index/ tree differs from the recorded staged tree")
    if manifest_sha256 is not None:
        manifest = found[manifest_spec]
        if manifest is None:
            problems.append(f"{MANIFEST_FILE} cannot be read from the checkpoint commit")
        elif hashlib.sha256(manifest).hexdigest() != manifest_sha256:
            problems.append(f"{MANIFEST_FILE} does not match its recorded sha256")
    presence = {tree: found[tree] is not None for tree in (worktree_tree, index_tree)}
    if objects_present:
        return Verification(problems, sum(1 for present in presence.values() if not present))
    if deep:
        walk = _Walk.start(store_repo, [worktree_tree, index_tree], presence=presence)
    else:  # the restore walks the worktree tree itself; check what only the index holds
        walk = _Walk.start(store_repo, [index_tree], exclude=[worktree_tree], presence=presence)
    return Verification(problems, walk=walk)


def _root_entries(body: bytes) -> dict[str, str]:
    """A tree object's entries: name → id."""
    return {name: oid for _mode, name, oid in plumbing.parse_tree(body)}


def _missing_tree_objects(
    store_repo: Path,
    trees: list[str],
    exclude: Sequence[str] = (),
    presence: Mapping[str, bool] | None = None,
) -> int:
    """Count objects reachable from `trees` (and not from `exclude`) the store cannot produce.

    `presence` (tree → held), when the caller already read the trees, spares asking again.
    """
    return _Walk.start(store_repo, trees, exclude, presence).missing()


class _Walk:
    """A `git rev-list --objects --missing=print` over some trees, running until asked."""

    def __init__(self, missing: int, process: subprocess.Popen[bytes] | None) -> None:
        self._missing = missing
        self._process = process

    @classmethod
    def start(
        cls,
        store_repo: Path,
        trees: list[str],
        exclude: Sequence[str] = (),
        presence: Mapping[str, bool] | None = None,
    ) -> _Walk:
        if presence is None or any(tree not in presence for tree in trees):
            presence = _has_objects(store_repo, trees)
        missing = sum(1 for tree in dict.fromkeys(trees) if not presence[tree])
        present_trees = [tree for tree in dict.fromkeys(trees) if presence[tree]]
        if not present_trees:
            return cls(missing, None)
        args = [
            "rev-list",
            "--objects",
            "--no-object-names",
            "--missing=print",
            *present_trees,
            *[f"^{tree}" for tree in exclude],
        ]
        return cls(missing, _start_git(args, cwd=store_repo, env={"GIT_DIR": str(store_repo)}))

    def missing(self) -> int:
        """How many objects the store cannot produce (waits for the walk to end)."""
        if self._process is not None:
            out, err = self._process.communicate()
            code, self._process = self._process.returncode, None
            if code not in (0, 128):
                lines = err.decode(errors="replace").strip().splitlines()
                raise GitError(f"git rev-list failed: {lines[-1] if lines else code}")
            self._missing += sum(1 for line in out.decode().split() if line.startswith("?"))
        return self._missing


def materialise(store_repo: Path, tree: str, into: Path, scratch_dir: Path) -> int:
    """Write `tree` into the new directory `into` byte for byte; return the number of files."""
    if into.exists() and (not into.is_dir() or any(into.iterdir())):
        raise UsageError(
            f"{into} already exists and is not empty; choose a new directory for --into"
        )
    if not _has_objects(store_repo, [tree])[tree]:
        raise DamagedCheckpointError(
            f"snapshot tree {tree[:12]} is missing from the store; "
            "this checkpoint cannot be restored"
        )
    created = not into.exists()
    into.mkdir(parents=True, exist_ok=True)
    scratch_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        return _checkout_tree(store_repo, tree, into, scratch_dir)
    except GitError as exc:
        # A missing blob surfaces here, half-way: take back what was written.
        if created:
            shutil.rmtree(into, ignore_errors=True)
        else:
            for child in into.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        raise DamagedCheckpointError(
            f"snapshot tree {tree[:12]} cannot be restored: {exc.message}"
        ) from exc


def _checkout_tree(store_repo: Path, tree: str, into: Path, scratch_dir: Path) -> int:
    with scratch_directory(scratch_dir, "checkout-") as temp:
        env = {"GIT_INDEX_FILE": str(Path(temp) / "index"), "GIT_WORK_TREE": str(into)}
        config = [
            "-c",
            "core.symlinks=true",
            "-c",
            "core.filemode=true",
            "-c",
            "core.autocrlf=false",
        ]
        run_git([*config, "read-tree", tree], git_dir=store_repo, env=env)
        run_git([*config, "checkout-index", "-a", "-f"], git_dir=store_repo, env=env, cwd=into)
        with (Path(temp) / "index").open("rb") as index:
            header = index.read(12)  # "DIRC", version, entry count (big-endian)
    return int.from_bytes(header[8:12], "big")


def changed_files(store_repo: Path, old_tree: str, new_tree: str) -> list[ChangedFile]:
    """Per-path status and line counts between two trees (renames detected).

    One `diff-tree --raw --numstat`: every raw record (`:<modes> <ids> <status>`, then one path,
    or two for a rename or copy) comes first, then every numstat record.
    """
    raw = run_git(
        ["diff-tree", "-r", "-z", "-M", "--raw", "--numstat", old_tree, new_tree],
        git_dir=store_repo,
    )
    fields = raw.decode("utf-8", errors="surrogateescape").split("\0")
    statuses: list[tuple[str, str | None, str]] = []  # (status, old path, path)
    position = 0
    while position < len(fields) and fields[position].startswith(":"):
        status = fields[position].rsplit(" ", 1)[-1]
        if status[0] in "RC":
            statuses.append((status, fields[position + 1], fields[position + 2]))
            position += 3
        else:
            statuses.append((status, None, fields[position + 1]))
            position += 2
    counts: dict[str, tuple[int | None, int | None]] = {}
    while position < len(fields) and fields[position]:
        added_text, deleted_text, path = fields[position].split("\t", 2)
        if not path:  # a rename: old and new names follow as their own fields
            path = fields[position + 2]
            position += 3
        else:
            position += 1
        counts[path] = (
            None if added_text == "-" else int(added_text),
            None if deleted_text == "-" else int(deleted_text),
        )
    result = []
    for status, old_path, path in statuses:
        added, deleted = counts.get(path, (None, None))
        result.append(
            ChangedFile(
                path=path, status=status[0], added=added, deleted=deleted, old_path=old_path
            )
        )
    return result


def unified_diff(store_repo: Path, old_tree: str, new_tree: str, paths: Sequence[str] = ()) -> str:
    """A unified diff between two trees; binary files are named, not dumped."""
    out = run_git(
        [
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "-M",
            old_tree,
            new_tree,
            "--",
            *paths,
        ],
        git_dir=store_repo,
    )
    return out.decode("utf-8", errors="replace")


def tree_of_commit(store_repo: Path, commit: str) -> str:
    """The tree id of a commit held in the store's repository."""
    return _tree_of(store_repo, commit)


def lockfiles_in(store_repo: Path, tree: str) -> dict[str, str]:
    """Lockfiles anywhere in `tree` mapped to their blob ids (a change of id is drift)."""
    raw = run_git(["ls-tree", "-r", "-z", tree], git_dir=store_repo)
    found = {}
    for entry in raw.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.decode("utf-8", errors="surrogateescape").partition("\t")
        if is_lockfile(path):
            found[path] = meta.split()[2]
    return found


def is_lockfile(path: str) -> bool:
    """True for a dependency lockfile (by its name, in any directory)."""
    name = path.rsplit("/", 1)[-1]
    return name in LOCKFILE_NAMES or _matches_any(LOCKFILE_PATTERNS, name)


def _matches_any(patterns: tuple[str, ...], name: str) -> bool:
    """`fnmatch.fnmatchcase` against any of `patterns`. A pattern of plain text with at most one
    `*` (all of ours) is checked with string operations: compiling each into a regex cost ~1 ms
    of every hook checkpoint. Any other pattern goes to fnmatch."""
    for pattern in patterns:
        head, star, tail = pattern.partition("*")
        if "?" in pattern or "[" in pattern or "*" in tail:
            if fnmatch.fnmatchcase(name, pattern):
                return True
        elif not star:
            if name == pattern:
                return True
        elif len(name) >= len(head) + len(tail) and name.startswith(head) and name.endswith(tail):
            return True
    return False
