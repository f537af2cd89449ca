"""Signing identities: the Ed25519 key an operator signs every fact that leaves the store with.

Encryption (`core.security.identity`) decides who can *read* a task; signatures decide whose
word counts. Every ledger fact, roster change and checkpoint attestation that crosses a machine
carries its author's public key and a signature over a canonical encoding that names the task
and the schema, so a fact cannot be altered, moved to another task or passed off as another's.

Where the key comes from, first match wins:

1. `PITSTOP_SIGNING_KEY`: a `pitstop-sign-1…` secret (`pitstop key init --print` makes one);
2. the OS keyring (`pitstop key init` keeps a new one there, beside the age identity);
3. an ssh-ed25519 identity (`PITSTOP_IDENTITY` naming `~/.ssh/id_ed25519`) signs with itself;
4. an age identity: its signing key is derived from it (HKDF-SHA256 with a label of its own),
   so an operator who holds an identity from an older Pitstop signs without a new secret, and the
   key is kept exactly like the identity: in an environment variable or a real keyring, never in
   a plain file Pitstop writes.

A public key is written `ed25519:<base64 of 32 bytes>`; people compare keys by their
fingerprint, sixteen base32 characters in four groups, short enough to read aloud.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import os
from dataclasses import dataclass, field

from core.errors import PitstopError
from core.security import crypto

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

SIGNING_ENV = "PITSTOP_SIGNING_KEY"
KEYRING_USERNAME = "signing-key"
SECRET_PREFIX = "pitstop-sign-1"
PUBLIC_PREFIX = "ed25519:"
SIGNATURE_DOMAIN = b"pitstop-signature/1\0"
_DERIVE_LABEL = b"pitstop signing key from age identity v1"
_PUBLIC_BYTES = 32
_SIGNATURE_BYTES = 64

HOW_TO_GET_ONE = (
    f"set {SIGNING_ENV} to a {SECRET_PREFIX}… string (`pitstop key init --print` makes one), or "
    "set PITSTOP_IDENTITY (your age identity signs through a key derived from it), or use a real "
    "OS keyring and run `pitstop key init`"
)


class SigningError(PitstopError):
    """The operator's signing key is missing or malformed, or a public key is not one."""


def _ed25519() -> Any:
    # imported on first use: hooks that only record never sign, and must not pay for it
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return ed25519


@dataclass(frozen=True)
class SigningKey:
    """An operator's Ed25519 signing key: where it came from, its public half, and the seed."""

    source: str
    seed: bytes = field(repr=False, compare=False)

    @property
    def public(self) -> str:
        """The public key as rosters and facts write it: `ed25519:<base64>`."""
        return _public_text_of(self.seed)

    @property
    def fingerprint(self) -> str:
        """The short fingerprint people compare by voice."""
        return fingerprint(self.public)

    @property
    def secret_text(self) -> str:
        """The secret as `PITSTOP_SIGNING_KEY` takes it."""
        return SECRET_PREFIX + base64.b32encode(self.seed).decode("ascii").rstrip("=").lower()

    def _private(self) -> Any:
        return _private_key(self.seed)

    def sign(self, schema: str, task_id: str, body: bytes) -> str:
        """The base64 signature of `body` as a document of `schema` about `task_id`."""
        return base64.b64encode(
            self._private().sign(signed_message(schema, task_id, body))
        ).decode()


@functools.lru_cache(maxsize=64)
def _private_key(seed: bytes) -> Any:
    # building the key object from its seed costs more than signing: do it once per key
    return _ed25519().Ed25519PrivateKey.from_private_bytes(seed)


@functools.lru_cache(maxsize=64)
def _public_text_of(seed: bytes) -> str:
    return public_text(_private_key(seed).public_key().public_bytes_raw())


@functools.lru_cache(maxsize=4096)
def _public_key(raw: bytes) -> Any:
    return _ed25519().Ed25519PublicKey.from_public_bytes(raw)


def signed_message(schema: str, task_id: str, body: bytes) -> bytes:
    """What a signature covers: a domain, the schema and the task, then the canonical body.

    Naming the task and the schema means a signed fact moved to another task, or read as
    another kind of document, no longer verifies.
    """
    return SIGNATURE_DOMAIN + schema.encode() + b"\0" + task_id.encode() + b"\0" + body


def public_text(raw: bytes) -> str:
    """`ed25519:<base64>` for 32 raw public-key bytes."""
    return PUBLIC_PREFIX + base64.b64encode(raw).decode("ascii")


def parse_public_key(text: str) -> str:
    """The normal form of a public signing key given as `ed25519:…` or `ssh-ed25519 AAAA…`."""
    cleaned = str(text).strip()
    if cleaned.startswith("ssh-ed25519 "):
        return public_text(_ssh_public_raw(cleaned.split()[1]))
    if not cleaned.startswith(PUBLIC_PREFIX):
        raise SigningError(
            f"{_short(cleaned)} is not a signing key; give an ed25519:… key "
            "(`pitstop key show` prints yours) or an ssh-ed25519 public key"
        )
    raw = _b64(cleaned.removeprefix(PUBLIC_PREFIX), "signing key")
    if len(raw) != _PUBLIC_BYTES:
        raise SigningError(f"signing key {_short(cleaned)} is not 32 bytes long")
    return public_text(raw)


def fingerprint(public: str) -> str:
    """Sixteen base32 characters in four groups (80 bits), e.g. `K7QF-2M9X-…`."""
    raw = _b64(public.removeprefix(PUBLIC_PREFIX), "signing key")
    digest = hashlib.sha256(b"pitstop-fingerprint\0" + raw).digest()[:10]
    text = base64.b32encode(digest).decode("ascii")
    return "-".join(text[i : i + 4] for i in range(0, 16, 4))


def normal_fingerprint(text: str) -> str:
    """A fingerprint as someone typed it (any case, with or without dashes or spaces)."""
    letters = "".join(ch for ch in text.upper() if ch.isalnum())
    if len(letters) != 16:
        raise SigningError(
            f"{_short(text)} is not a fingerprint: expected 16 letters and digits like "
            "K7QF-2M9X-AB3D-77QQ (`pitstop key show` prints yours)"
        )
    return "-".join(letters[i : i + 4] for i in range(0, 16, 4))


def verify(public: str, signature: str, schema: str, task_id: str, body: bytes) -> bool:
    """Whether `signature` is `public`'s over `body` as a `schema` document about `task_id`.

    A pure function of its arguments, so a signature found good once in this process is not
    checked again (a fetch meets the roster it holds and the same roster offered again); what
    is kept is a digest of the arguments, never the body itself.
    """
    named = repr((str(public), str(signature), schema, task_id)).encode()  # unambiguous
    key = hashlib.sha256(named + hashlib.sha256(body).digest()).digest()
    if key in _VERIFIED:
        return True
    good = _verify(str(public), str(signature), schema, task_id, body)
    if good:
        if len(_VERIFIED) >= _VERIFIED_MAX:
            _VERIFIED.clear()
        _VERIFIED.add(key)
    return good


_VERIFIED: set[bytes] = set()
_VERIFIED_MAX = 8192


def _verify(public: str, signature: str, schema: str, task_id: str, body: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        raw = base64.b64decode(str(public).removeprefix(PUBLIC_PREFIX), validate=True)
        sig = base64.b64decode(str(signature), validate=True)
    except (binascii.Error, ValueError):
        return False
    if not str(public).startswith(PUBLIC_PREFIX) or len(raw) != _PUBLIC_BYTES:
        return False
    if len(sig) != _SIGNATURE_BYTES:
        return False
    try:
        _public_key(raw).verify(sig, signed_message(schema, task_id, body))
    except (InvalidSignature, ValueError):
        return False
    return True


# --- where the key comes from ----------------------------------------------------------------


def create_signing_key() -> SigningKey:
    """A new random signing key (not stored anywhere yet)."""
    return SigningKey("newly created", os.urandom(32))


def _from_secret_text(text: str, origin: str, source: str) -> SigningKey:
    cleaned = text.strip().lower()
    if not cleaned.startswith(SECRET_PREFIX):
        raise SigningError(f"{origin} is not a {SECRET_PREFIX}… secret; {HOW_TO_GET_ONE}")
    body = cleaned.removeprefix(SECRET_PREFIX).upper()
    try:
        seed = base64.b32decode(body + "=" * (-len(body) % 8))
    except (binascii.Error, ValueError) as exc:
        raise SigningError(f"{origin} is damaged ({exc}); {HOW_TO_GET_ONE}") from exc
    if len(seed) != 32:
        raise SigningError(f"{origin} is not a 32-byte key; {HOW_TO_GET_ONE}")
    return SigningKey(source, seed)


def _from_identity() -> SigningKey | None:
    from core.security import identity as age_identity

    own = age_identity.load_identity_or_none()
    if own is None:
        return None
    if own.kind == "ssh":
        from cryptography.hazmat.primitives import serialization

        private = serialization.load_ssh_private_key(own.secret, password=None)
        seed = private.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        return SigningKey(f"{own.source} (signs with itself)", seed)
    seed = hmac.new(_DERIVE_LABEL, own.secret_text.strip().encode(), hashlib.sha256).digest()
    return SigningKey(f"the age identity in {own.source}, through a key derived from it", seed)


def _from_keyring() -> SigningKey | None:
    try:
        backend = crypto.safe_keyring(SigningError, HOW_TO_GET_ONE)
        stored = backend.get_password(crypto.KEYRING_SERVICE, KEYRING_USERNAME)
    except Exception:  # no usable keyring is the same as no key kept there
        return None
    if stored is None:
        return None
    name = crypto.backend_name(backend)
    return _from_secret_text(str(stored), "the signing key in the OS keyring", f"keyring {name}")


def load_signing_key_or_none() -> SigningKey | None:
    """The operator's signing key, or None when they have neither one nor an identity."""
    from_env = os.environ.get(SIGNING_ENV)
    if from_env:
        return _from_secret_text(from_env, SIGNING_ENV, f"environment variable {SIGNING_ENV}")
    return _from_keyring() or _from_identity()


def load_signing_key() -> SigningKey:
    """The operator's signing key; a clear error when there is none."""
    found = load_signing_key_or_none()
    if found is None:
        raise SigningError(f"no signing key: {HOW_TO_GET_ONE}")
    return found


def keyring_holds_signing_key() -> bool:
    """Whether the OS keyring already keeps a signing key (an unusable keyring is an error)."""
    backend = crypto.safe_keyring(SigningError, HOW_TO_GET_ONE)
    return backend.get_password(crypto.KEYRING_SERVICE, KEYRING_USERNAME) is not None


def store_signing_key_in_keyring(key: SigningKey) -> str:
    """Keep a new signing key in the OS keyring, never over an existing one; name the backend."""
    backend = crypto.safe_keyring(SigningError, HOW_TO_GET_ONE)
    if backend.get_password(crypto.KEYRING_SERVICE, KEYRING_USERNAME) is not None:
        raise SigningError(
            "the OS keyring already holds a Pitstop signing key; `pitstop key show` prints it"
        )
    backend.set_password(crypto.KEYRING_SERVICE, KEYRING_USERNAME, key.secret_text)
    return crypto.backend_name(backend)


def _ssh_public_raw(b64: str) -> bytes:
    blob = _b64(b64, "ssh-ed25519 key")
    # string "ssh-ed25519", string <32 bytes>
    if len(blob) != 4 + 11 + 4 + 32 or blob[4:15] != b"ssh-ed25519":
        raise SigningError("that ssh key is not a valid ssh-ed25519 public key")
    return blob[-32:]


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SigningError(f"the {what} {_short(text)} is not valid base64") from exc


def _short(text: str) -> str:
    one_line = " ".join(str(text).split())
    return repr(one_line if len(one_line) <= 40 else one_line[:37] + "…")
