"""SHA-256 from the interpreter's own module, for commands that must start fast.

`hashlib` loads OpenSSL's libcrypto on import (~2 ms), and a command that opens sealed text
loads `cryptography`'s own copy of OpenSSL beside it; what such a command hashes (key ids, a
manifest) is small, so the interpreter's built-in SHA-256 serves, with the same digests.
Bulk hashing (git objects as they are written) keeps `hashlib`.
"""

from __future__ import annotations

try:
    from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]  # Python >= 3.12
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
    except ImportError:  # an interpreter built without its own hashes
        from hashlib import sha256  # type: ignore[assignment, unused-ignore]

__all__ = ["sha256"]
