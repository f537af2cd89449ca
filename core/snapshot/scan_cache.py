"""The contents a snapshot already found holding no secret, so the next one need not scan again.

A hook checkpoints the same untracked notes and changed files again and again; judging each by
the redactor's rules (`secret_scan`) costs the rules' loading on every call, though the bytes
have not changed. A file's contents judged clean are remembered by their digest, under the
detectors that judged them: a digest of Pitstop's version and of the size and modification time
of every module and rule file the judgement depends on (a rule added, a fix to the redactor, an
upgrade — any of them starts the list afresh). Only clean judgements are kept; a file holding a
secret is scanned every time, and a changed file has another digest.

The list lives in the store repository (`pitstop-clean-scans`, private like the rest of the
store), at most `MAX_ENTRIES` digests, newest last; it is replaced whole by a rename, so a
reader never sees half of one, and two writers at once lose at most each other's additions.
Anything unreadable or foreign in it is taken as an empty list.
"""

from __future__ import annotations

import os
from pathlib import Path

import core
from core.digests import blake2b
from core.snapshot.secret_scan import SecretHit, first_secret

CACHE_NAME = "pitstop-clean-scans"
MAX_ENTRIES = 4096
_DIGEST_BYTES = 20
_JUDGES = (
    Path(core.__file__).parent / "redaction",
    Path(core.__file__).parent / "redaction" / "rules",
    Path(core.__file__).parent / "snapshot" / "secret_scan.py",
)


def detectors_digest() -> str:
    """What the judgement depends on: Pitstop's version and the redaction modules and rule
    files as they are on disk (name, size, modification time)."""
    h = blake2b(core.__version__.encode(), digest_size=_DIGEST_BYTES)
    for judge in _JUDGES:
        entries = os.scandir(judge) if judge.is_dir() else [judge]
        for name, info in sorted((Path(e).name, os.stat(e)) for e in entries):
            if name.endswith((".py", ".toml")):
                h.update(f"\0{judge.name}/{name}\0{info.st_size}\0{info.st_mtime_ns}".encode())
    return h.hexdigest()


def content_digest(data: bytes) -> str:
    """The digest a file's contents are remembered by."""
    return blake2b(data, digest_size=_DIGEST_BYTES, person=b"pitstop-scan").hexdigest()


class CleanScans:
    """The clean judgements of one store repository, read once and written back once."""

    def __init__(self, store_repo: Path) -> None:
        self.path = store_repo / CACHE_NAME
        self.detectors = detectors_digest()
        self.known: dict[str, None] = {}  # insertion-ordered: oldest first
        self.added = False
        try:
            lines = self.path.read_text(encoding="ascii").split("\n")
        except (OSError, UnicodeDecodeError):
            return
        if lines and lines[0] == self.detectors:
            # Not checked character by character (~5 ms for a full list, on every checkpoint):
            # a line that is no digest can never equal one, so it is only carried along.
            width = _DIGEST_BYTES * 2
            self.known = dict.fromkeys(d for d in lines[1:] if len(d) == width)

    def first_secret(self, data: bytes) -> SecretHit | None:
        """`secret_scan.first_secret`, skipped for contents already judged clean."""
        digest = content_digest(data)
        if digest in self.known:
            return None
        hit = first_secret(data)
        if hit is None:
            self.add(digest)
        return hit

    def is_clean(self, digest: str) -> bool:
        """Whether these contents were judged clean by the same detectors."""
        return digest in self.known

    def add(self, digest: str) -> None:
        """Remember contents judged clean (saved by `save`)."""
        self.known.pop(digest, None)
        self.known[digest] = None
        self.added = True

    def save(self) -> None:
        """Write the list back if it grew (newest `MAX_ENTRIES` kept); a failure to write
        only costs the next snapshot a scan."""
        if not self.added:
            return
        kept = list(self.known)[-MAX_ENTRIES:]
        temp = self.path.with_name(f"{CACHE_NAME}.{os.getpid()}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write("\n".join([self.detectors, *kept]) + "\n")
            os.replace(temp, self.path)
        except OSError:
            temp.unlink(missing_ok=True)
        self.added = False
