"""What a snapshot keeps and what it leaves out, and why each left-out path was left out.

Untracked files that look like credentials or hold a secret are never stored (invariant 2), nor
files over the size limit, nested repositories or ignored paths; each is listed in the manifest
with its reason ("contains a github-token at line 1"), so a restore can say what it could not
bring back. A changed tracked file that holds a secret is kept, but sealed
(`core.snapshot.sealed_files`). Every changed or untracked file is judged by the redactor's
rules (`core.snapshot.secret_scan`); unchanged tracked files are in the repository's history
already and are not read. The work tree's state comes from one `git status` scan.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Set
from pathlib import Path

import core.snapshot.early_scan as early_scan
from core.config import DEFAULT_MAX_FILE_BYTES
from core.git.objects import GITLINK_MODE
from core.models import LeftOut
from core.snapshot.patterns import matches_any
from core.snapshot.sealed_files import SYMLINK_MODE, WORKTREE, AllowedSecret, Candidate
from core.snapshot.secret_scan import SecretHit, first_secret
from core.snapshot.source import SourceRepo

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

Scanner = Callable[[bytes], SecretHit | None]
"""Finds the first secret a file's contents hold (None: none)."""

MAX_IGNORED_LISTED = 500

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

# The scan of the work tree (tracked changes, untracked and ignored files, submodules) is
# defined beside the early scan, which starts it before this module loads.
STATUS_ARGS = early_scan.STATUS_ARGS


class SnapshotLimits(NamedTuple):
    """What a snapshot is allowed to store."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES


DEFAULT_LIMITS = SnapshotLimits()


class StagedBlob(NamedTuple):
    """A staged file whose content the base commit does not have: the index's mode and blob,
    and whether the work tree differs from it."""

    path: str
    mode: str
    blob: str
    worktree_differs: bool


class StatusScan:
    """What `git status` said, by kind (a plain class: a dataclass costs a hook ~0.5 ms)."""

    __slots__ = (
        "ignored",
        "staged",
        "staged_blobs",
        "submodules",
        "unmerged",
        "untracked",
        "worktree_changed",
        "worktree_modes",
    )

    def __init__(self) -> None:
        self.worktree_changed: list[str] = []
        self.worktree_modes: dict[str, str] = {}
        self.untracked: list[str] = []
        self.ignored: list[str] = []
        self.unmerged: list[str] = []
        self.submodules: list[str] = []
        self.staged = 0
        self.staged_blobs: list[StagedBlob] = []


class Selection(NamedTuple):
    """What enters the snapshot from the work tree: paths git hashes from disk, tracked files
    to seal, files kept although they hold a secret (allowed), and what is left out."""

    include: list[str]
    left_out: list[LeftOut]
    to_seal: list[Candidate]
    allowed: list[AllowedSecret]


def parse_status(raw: bytes) -> StatusScan:
    """Tracked changes, untracked and ignored paths from `git status --porcelain=v2 -z`."""
    scan = StatusScan()
    for record in raw.split(b"\0"):
        if not record:
            continue
        kind = record[:1]
        text = record.decode("utf-8", errors="surrogateescape")
        if kind == b"1":
            # 1 XY sub mH mI mW hH hI path
            fields = text.split(" ", 8)
            xy, sub, path = fields[1], fields[2], fields[8]
            if xy[1] != ".":
                scan.worktree_changed.append(path)
                scan.worktree_modes[path] = fields[5]
            if xy[0] != ".":
                scan.staged += 1
                if xy[0] != "D" and fields[4] != GITLINK_MODE and fields[7] != fields[6]:
                    scan.staged_blobs.append(StagedBlob(path, fields[4], fields[7], xy[1] != "."))
            if sub.startswith("S"):
                scan.submodules.append(path)
        elif kind == b"u":
            scan.unmerged.append(text.split(" ", 10)[10])
        elif kind == b"?":
            scan.untracked.append(text[2:])
        elif kind == b"!":
            scan.ignored.append(text[2:])
    return scan


def select_paths(
    source: SourceRepo,
    scan: StatusScan,
    limits: SnapshotLimits,
    allowed: Set[str] = frozenset(),
    scanner: Scanner = first_secret,
) -> Selection:
    """Decide which changed and untracked paths enter the snapshot, which are sealed and which
    are left out (listed with why); `allowed` paths are kept as they are whatever they hold.
    `scanner` finds a file's first secret (`CleanScans.first_secret` skips known contents)."""
    chosen = Selection([], [], [], [])
    for path in scan.worktree_changed:
        _judge_tracked(source.toplevel / path, path, scan, limits, allowed, chosen, scanner)
    for path in scan.untracked:
        if path.endswith("/"):
            chosen.left_out.append(LeftOut(path, "a nested git repository that is not a submodule"))
            continue
        _judge_untracked(source.toplevel / path, path, limits, allowed, chosen, scanner)
    chosen.left_out.extend(_ignored_left_out(scan.ignored))
    return chosen


def _judge_untracked(
    full: Path,
    path: str,
    limits: SnapshotLimits,
    allowed: Set[str],
    chosen: Selection,
    scanner: Scanner,
) -> None:
    """Take an untracked file, or leave it out with why: a credential's name, not a regular
    file, too large, a private key block, or any secret the redactor's rules find (unless
    `allowed`). The file is read once."""
    try:
        size = full.lstat().st_size
    except (FileNotFoundError, NotADirectoryError):
        return  # vanished between the scan and now
    reason = _untracked_left_out(full, path, size, limits)
    read = read_for_scan(full) if reason is None else None
    if reason is None and read is None and not full.is_symlink():
        reason = LeftOut(path, "not a regular file", None)  # swapped since the look
    if reason is None and read is not None and holds_private_key(read[0]):
        reason = LeftOut(path, "contains a private key block", size)
    hit = scanner(read[0]) if reason is None and read is not None else None
    if hit is not None and path in allowed:
        chosen.allowed.append(AllowedSecret(path, hit.rule, hit.line))
    elif hit is not None:
        reason = LeftOut(path, hit.describe(), size)
    if reason is None:
        chosen.include.append(path)
    else:
        chosen.left_out.append(reason)


def _judge_tracked(
    full: Path,
    path: str,
    scan: StatusScan,
    limits: SnapshotLimits,
    allowed: Set[str],
    chosen: Selection,
    scanner: Scanner,
) -> None:
    """Take a changed tracked file from disk, seal it (it holds a secret) or leave it at its
    staged version (too large)."""
    reason = _tracked_left_out(full, path, limits)
    if reason is not None:
        chosen.left_out.append(reason)
        return
    read = read_for_scan(full)
    hit = scanner(read[0]) if read is not None else None
    if hit is None:
        chosen.include.append(path)
    elif path in allowed:
        chosen.include.append(path)
        chosen.allowed.append(AllowedSecret(path, hit.rule, hit.line))
    else:
        data, mode = read  # type: ignore[misc]
        mode = scan.worktree_modes.get(path, mode) if mode != SYMLINK_MODE else mode
        chosen.to_seal.append(Candidate(WORKTREE, path, mode, data, hit.rule, hit.line))


def read_for_scan(full: Path) -> tuple[bytes, str] | None:
    """What git would store for a work-tree path, and its mode: a file's bytes, or a symbolic
    link's target (never followed). None for anything else (gone, a directory, a device)."""
    try:
        info = full.lstat()
        if stat.S_ISLNK(info.st_mode):
            return os.fsencode(os.readlink(full)), SYMLINK_MODE
        if not stat.S_ISREG(info.st_mode):
            return None
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None  # swapped for something else since the look
        data = handle.read()
    return data, "100755" if info.st_mode & stat.S_IXUSR else "100644"


def _tracked_left_out(full: Path, path: str, limits: SnapshotLimits) -> LeftOut | None:
    """Why a changed tracked file stays at its staged version, or None to take it (a deleted
    file is taken: `update-index --remove` records the deletion)."""
    try:
        info = full.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(info.st_mode) and info.st_size > limits.max_file_bytes:
        return LeftOut(
            path,
            f"larger than {limits.max_file_bytes} bytes; kept at its staged version",
            info.st_size,
        )
    return None


def _untracked_left_out(full: Path, path: str, size: int, limits: SnapshotLimits) -> LeftOut | None:
    """Why an untracked file of `size` bytes is left out, or None to take it."""
    if is_secret_name(path):
        return LeftOut(path, "looks like a credential file", size)
    if full.is_symlink():
        return None  # stored as its target's name, never followed
    if not full.is_file():
        return LeftOut(path, "not a regular file", None)
    if size > limits.max_file_bytes:
        return LeftOut(path, f"larger than {limits.max_file_bytes} bytes", size)
    return None


def _ignored_left_out(ignored: list[str]) -> list[LeftOut]:
    """The ignored paths, listed up to `MAX_IGNORED_LISTED`, then counted."""
    listed = [LeftOut(path, "ignored by git") for path in ignored[:MAX_IGNORED_LISTED]]
    if len(ignored) > MAX_IGNORED_LISTED:
        hidden = len(ignored) - MAX_IGNORED_LISTED
        listed.append(LeftOut("…", f"{hidden} more ignored paths not listed"))
    return listed


def is_secret_name(path: str) -> bool:
    """True when the file's name looks like a credential file's (templates excepted)."""
    name = path.rsplit("/", 1)[-1]
    if name.endswith(SAFE_NAME_SUFFIXES):
        return False
    return matches_any(SECRET_NAME_PATTERNS, name)


def holds_private_key(data: bytes) -> bool:
    """True when `data` holds a PEM private key block's markers."""
    return all(marker in data for marker in PRIVATE_KEY_MARKERS)
