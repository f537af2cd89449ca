"""What a snapshot keeps and what it leaves out, and why each left-out path was left out.

Untracked files that look like credentials are never stored (invariant 2), nor files over the
size limit, nested repositories or ignored paths; each is listed in the manifest with its
reason, so a restore can say what it could not bring back. The work tree's state comes from
one `git status` scan.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import NamedTuple

from core.config import DEFAULT_MAX_FILE_BYTES
from core.models import LeftOut
from core.snapshot.patterns import matches_any
from core.snapshot.source import SourceRepo

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

# The scan of the work tree: tracked changes, untracked and ignored files, submodules.
STATUS_ARGS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--untracked-files=all",
    "--ignored=matching",
    "--no-renames",
    "--ignore-submodules=none",
)


class SnapshotLimits(NamedTuple):
    """What a snapshot is allowed to store."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES


DEFAULT_LIMITS = SnapshotLimits()


class StatusScan:
    """What `git status` said, by kind (a plain class: a dataclass costs a hook ~0.5 ms)."""

    __slots__ = ("ignored", "staged", "submodules", "unmerged", "untracked", "worktree_changed")

    def __init__(self) -> None:
        self.worktree_changed: list[str] = []
        self.untracked: list[str] = []
        self.ignored: list[str] = []
        self.unmerged: list[str] = []
        self.submodules: list[str] = []
        self.staged = 0


def parse_status(raw: bytes) -> StatusScan:
    """Tracked changes, untracked and ignored paths from `git status --porcelain=v2 -z`."""
    scan = StatusScan()
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


def select_paths(
    source: SourceRepo, scan: StatusScan, limits: SnapshotLimits
) -> tuple[list[str], list[LeftOut]]:
    """Decide which changed and untracked paths enter the snapshot; list the rest with why."""
    include: list[str] = []
    left_out: list[LeftOut] = []
    for path in scan.worktree_changed:
        reason = _tracked_left_out(source.toplevel / path, path, limits)
        if reason is None:
            include.append(path)
        else:
            left_out.append(reason)
    for path in scan.untracked:
        if path.endswith("/"):
            left_out.append(LeftOut(path, "a nested git repository that is not a submodule"))
            continue
        full = source.toplevel / path
        try:
            size = full.lstat().st_size
        except (FileNotFoundError, NotADirectoryError):
            continue  # vanished between the scan and now
        reason = _untracked_left_out(full, path, size, limits)
        if reason is None:
            include.append(path)
        else:
            left_out.append(reason)
    left_out.extend(_ignored_left_out(scan.ignored))
    return include, left_out


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
        return None
    if not full.is_file():
        return LeftOut(path, "not a regular file", None)
    if size > limits.max_file_bytes:
        return LeftOut(path, f"larger than {limits.max_file_bytes} bytes", size)
    if contains_private_key(full):
        return LeftOut(path, "contains a private key block", size)
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


def contains_private_key(full_path: Path) -> bool:
    """True when the file holds a PEM private key block (unreadable files hold none)."""
    try:
        with full_path.open("rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return all(marker in data for marker in PRIVATE_KEY_MARKERS)
