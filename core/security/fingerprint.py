"""Credential fingerprints: a keyed HMAC of a variable's value, never the value itself.

A fingerprint lets restore validation say "GITHUB_TOKEN changed since the checkpoint" without
Pitstop ever storing the token (invariant 2). The key is a per-store random secret kept in a
`0600` file inside the `0700` store, so fingerprints cannot be brute-forced from a copied manifest.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from core.digests import hmac_sha256

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

KEY_BYTES = 32


def load_or_create_key(path: Path) -> bytes:
    """Read the store's fingerprint key, creating it on first use."""
    try:
        key = path.read_bytes()
        if len(key) == KEY_BYTES:
            return key
    except FileNotFoundError:
        pass
    key = os.urandom(KEY_BYTES)
    temp = path.with_name(f"{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
        handle.flush()
        os.fsync(handle.fileno())
    try:
        os.link(temp, path)  # fails if another process got there first: then theirs wins
    except FileExistsError:
        key = path.read_bytes()
    finally:
        temp.unlink(missing_ok=True)
    return key


def fingerprint(key: bytes, value: str) -> str:
    """A short keyed fingerprint of a secret value."""
    digest = hmac_sha256(key, value.encode("utf-8", errors="surrogateescape"))
    return "hmac-sha256:" + digest.hex()[:32]


def fingerprint_environment(
    key: bytes, names: Iterable[str], environ: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Fingerprints of the named variables: present or not, never their values."""
    env = os.environ if environ is None else environ
    result: list[dict[str, Any]] = []
    for name in names:
        value = env.get(name)
        result.append(
            {
                "name": name,
                "present": value is not None,
                "fingerprint": fingerprint(key, value) if value is not None else None,
            }
        )
    return result
