"""Digests from the interpreter's own modules, for commands that must start fast.

`hashlib` loads OpenSSL's libcrypto on import (~2 ms), and a command that opens sealed text
loads `cryptography`'s own copy of OpenSSL beside it. What a hook checkpoint hashes is mostly
small (git objects of a few changed files, a manifest, key ids, credential fingerprints), and
the interpreter's built-in SHA-1, SHA-256 and BLAKE2 give the same digests; OpenSSL's are about
five times faster on bulk data, so a large input still goes to `hashlib` (`BULK_BYTES`).
`hmac` would load OpenSSL too, so `hmac_sha256` is RFC 2104 over the built-in SHA-256.
"""

from __future__ import annotations

try:
    from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]  # Python >= 3.12
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
    except ImportError:  # an interpreter built without its own hashes
        from hashlib import sha256  # type: ignore[assignment, unused-ignore]
try:
    from _sha1 import sha1 as _sha1  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - an interpreter built without its own SHA-1
    from hashlib import sha1 as _sha1  # type: ignore[assignment, unused-ignore]
try:
    from _blake2 import blake2b  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover
    from hashlib import blake2b  # type: ignore[assignment, unused-ignore]

__all__ = ["BULK_BYTES", "blake2b", "hmac_sha256", "sha1_hex", "sha256", "sha256_hex"]

# From this size on, OpenSSL's speed pays for loading it (~2 ms at ~4 ms per MiB saved).
BULK_BYTES = 512 << 10
_BLOCK = 64  # SHA-256's block size, for HMAC


def sha1_hex(data: bytes) -> str:
    """SHA-1 of `data` as hex (git's object ids)."""
    if len(data) < BULK_BYTES:
        return str(_sha1(data).hexdigest())
    import hashlib

    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def sha256_hex(data: bytes) -> str:
    """SHA-256 of `data` as hex."""
    if len(data) < BULK_BYTES:
        return str(sha256(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()


def hmac_sha256(key: bytes, message: bytes) -> bytes:
    """HMAC-SHA-256 (RFC 2104), the bytes `hmac.new(key, message, hashlib.sha256)` gives."""
    if len(key) > _BLOCK:
        key = sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = sha256(bytes(byte ^ 0x36 for byte in key) + message).digest()
    return bytes(sha256(bytes(byte ^ 0x5C for byte in key) + inner).digest())
