"""Encryption at rest: a master key from `PITSTOP_KEY` or a real OS keyring, per-task data keys,
and versioned AES-GCM envelopes bound to their place in the store.

Every stored blob (evidence chunks, tails, command lines) is an envelope: format version, key id,
nonce and ciphertext. Its associated data names the store, the task and the item, so a blob moved
to another row, task or store fails to decrypt instead of showing the wrong content. Data keys are
wrapped by the master key; deleting a task's wrapped key makes its blobs unreadable everywhere.

DESIGN §9: on a headless machine keyring picks a backend that fails, and `keyrings.alt` stores
keys as base64 in a plain file. Those backends are refused with a message naming both ways to
provide a key.
"""

# String annotations cost nothing here: `core.records.NamedTuple` keeps them as written (no
# `ForwardRef` compile as `typing.NamedTuple` does), and `typing` itself is loaded only by type
# checkers.
from __future__ import annotations

import binascii  # base64's own functions are these two, without loading base64
import os
import struct

from core.digests import sha256

# MasterKeyError is raised here and defined with the other errors, so the store can catch it.
from core.errors import MasterKeyError as MasterKeyError
from core.errors import PitstopError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple


_AESGCM: Any = None


def aesgcm(key: bytes) -> Any:
    """AES-GCM under `key`, cryptography loaded on the first use (issue 22).

    `cryptography` is ~5 ms of start-up (its compiled module is 14 MB) and its `exceptions`
    module loads `typing`: a command that opens or seals nothing (`locate`, an empty `task
    list`, most hooks) never pays for it. The class is taken from the compiled module itself:
    its public module also loads every cipher, mode and legacy algorithm, a quarter of
    cryptography's import time (tests check it is the same class).
    """
    global _AESGCM
    if _AESGCM is None:
        try:
            from cryptography.hazmat.bindings._rust import openssl as _rust_openssl

            _AESGCM = _rust_openssl.aead.AESGCM
        except (ImportError, AttributeError):  # a cryptography laid out otherwise
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            _AESGCM = AESGCM
    return _AESGCM(key)


def _is_invalid_tag(exc: Exception) -> bool:
    """Whether `exc` is cryptography's failed authentication; its module (and `typing` with
    it) is loaded only once a decryption failed (the compiled AESGCM raises it by itself)."""
    from cryptography.exceptions import InvalidTag

    return isinstance(exc, InvalidTag)


KEY_ENV = "PITSTOP_KEY"
KEYRING_SERVICE = "pitstop"
KEYRING_USERNAME = "master-key"
KEY_BYTES = 32
NONCE_BYTES = 12
ENVELOPE_MAGIC = b"PSE"
ENVELOPE_VERSION = 1
_HEADER = struct.Struct(">3sBB")  # magic, version, key-id length

# The demo store's key: public on purpose (the demo's content is made up). Never a real store's.
DEMO_KEY = sha256(b"pitstop demo store: this key is public, the content is fake").digest()

UNSAFE_BACKENDS = ("keyring.backends.fail", "keyring.backends.null", "keyrings.alt")
HOW_TO_PROVIDE = (
    "set PITSTOP_KEY to a base64 32-byte key (`pitstop key init --print` makes one) "
    "or use a real OS keyring (Secret Service, macOS Keychain, Windows Credential Locker) "
    "and run `pitstop key init`"
)


class DecryptError(PitstopError):
    """A blob failed authentication: altered, moved, or encrypted under another key."""


def key_id(key: bytes) -> str:
    """A short public identifier of a key (never enough to recover it)."""
    digest: str = sha256(b"pitstop-key-id\0" + key).hexdigest()
    return digest[:12]


class MasterKey(NamedTuple):
    """The store owner's master key and where it came from."""

    key: bytes
    source: str

    @property
    def id(self) -> str:
        return key_id(self.key)


def generate_key() -> bytes:
    """A fresh random 32-byte key."""
    return os.urandom(KEY_BYTES)  # what secrets.token_bytes returns; secrets costs ~1 ms


def encode_key(key: bytes) -> str:
    """The text form of a key, as `PITSTOP_KEY` and `pitstop key export` use it."""
    return binascii.b2a_base64(key, newline=False).decode()


def decode_key(text: str, origin: str) -> bytes:
    """Parse a base64 key, refusing anything that is not exactly 32 bytes."""
    try:
        key = binascii.a2b_base64(text.strip().encode("ascii"), strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise MasterKeyError(f"{origin} is not valid base64; {HOW_TO_PROVIDE}") from exc
    if len(key) != KEY_BYTES:
        raise MasterKeyError(f"{origin} holds {len(key)} bytes, not {KEY_BYTES}; {HOW_TO_PROVIDE}")
    return key


def _keyring_backend() -> Any:
    import keyring

    return keyring.get_keyring()


def backend_name(backend: Any) -> str:
    """`module.Class` of a keyring backend, for messages and safety checks."""
    cls = type(backend)
    return f"{cls.__module__}.{cls.__name__}"


def _unsafe(backend: Any) -> bool:
    name = backend_name(backend)
    if name.startswith(UNSAFE_BACKENDS):
        return True
    inner = getattr(backend, "backends", None)  # the chainer: safe only with a safe member
    if inner is not None:
        return not any(not _unsafe(member) for member in inner)
    return False


def safe_keyring(
    error_type: type[PitstopError] = MasterKeyError, how_to_provide: str = HOW_TO_PROVIDE
) -> Any:
    """The OS keyring backend; a fail, null or `keyrings.alt` one raises `error_type`.

    `how_to_provide` names both ways to supply the secret (its environment variable, or a real
    keyring), so the master key and the operator's identity refuse a bad keyring alike.
    """
    backend = _keyring_backend()
    if _unsafe(backend):
        raise error_type(
            f"no usable key store: the keyring backend {backend_name(backend)} does not keep "
            f"secrets safely; {how_to_provide}"
        )
    return backend


def _safe_keyring() -> Any:
    return safe_keyring()


def load_master_key() -> MasterKey:
    """The master key: `PITSTOP_KEY` first, then a real OS keyring; otherwise a clear error."""
    from_env = os.environ.get(KEY_ENV)
    if from_env:
        return MasterKey(decode_key(from_env, KEY_ENV), "environment variable PITSTOP_KEY")
    backend = _safe_keyring()
    try:
        stored = backend.get_password(KEYRING_SERVICE, KEYRING_USERNAME)
    except Exception as exc:  # keyring backends raise their own error types
        raise MasterKeyError(f"the OS keyring could not be read ({exc}); {HOW_TO_PROVIDE}") from exc
    if stored is None:
        raise MasterKeyError(f"no master key yet; {HOW_TO_PROVIDE}")
    return MasterKey(
        decode_key(stored, "the key in the OS keyring"), f"keyring {backend_name(backend)}"
    )


def store_master_key_in_keyring(key: bytes) -> str:
    """Save a new master key in the OS keyring (refusing unsafe backends); return the backend."""
    backend = _safe_keyring()
    if backend.get_password(KEYRING_SERVICE, KEYRING_USERNAME) is not None:
        raise UsageError(
            "the OS keyring already holds a Pitstop master key; `pitstop key export` prints it"
        )
    backend.set_password(KEYRING_SERVICE, KEYRING_USERNAME, encode_key(key))
    return backend_name(backend)


# What to do about a stored object that is not what its record names.
DAMAGED_FIX = "run `pitstop doctor`, and fetch the task again from its remote if it has one"


def associated_data(store_id: str, task_id: str, item: str) -> bytes:
    """What binds a blob to its place: the store, the task and the item within it."""
    return f"pitstop/v1\0{store_id}\0{task_id}\0{item}".encode()


def seal(key: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """Encrypt into a versioned envelope: magic, version, key id, nonce, ciphertext+tag."""
    kid = key_id(key).encode()
    nonce = os.urandom(NONCE_BYTES)
    body: bytes = aesgcm(key).encrypt(nonce, plaintext, aad)
    return _HEADER.pack(ENVELOPE_MAGIC, ENVELOPE_VERSION, len(kid)) + kid + nonce + body


def envelope_key_id(envelope: bytes) -> str:
    """The id of the key an envelope was sealed with."""
    magic, version, kid_len = _HEADER.unpack_from(envelope)
    if magic != ENVELOPE_MAGIC:
        raise DecryptError("the stored blob is not a Pitstop envelope; it was altered or replaced")
    if version != ENVELOPE_VERSION:
        raise DecryptError(
            f"the stored blob uses envelope version {version}, which this Pitstop does not "
            "read; upgrade pitstop"
        )
    kid = envelope[_HEADER.size : _HEADER.size + kid_len]
    if len(kid) != kid_len or not kid.isascii():
        raise DecryptError("the stored blob's key id is damaged; it was altered")
    return kid.decode()


def peek_key_id(envelope: bytes) -> str | None:
    """The key id an envelope names, or None when it is not a readable envelope at all."""
    if len(envelope) < _HEADER.size:
        return None
    try:
        return envelope_key_id(envelope)
    except DecryptError:
        return None


def open_envelope(key: bytes, envelope: bytes, aad: bytes, what: str) -> bytes:
    """Decrypt an envelope; a wrong key, a moved blob or any alteration is a DecryptError."""
    if len(envelope) < _HEADER.size:
        raise DecryptError(f"{what} is truncated; it was altered")
    kid = envelope_key_id(envelope)
    start = _HEADER.size + len(kid)
    nonce, body = envelope[start : start + NONCE_BYTES], envelope[start + NONCE_BYTES :]
    if kid != key_id(key):
        # The task's keys come from the store under a master key that opened them, so an
        # envelope naming none of them was put here from another task, or damaged.
        raise DecryptError(
            f"{what} was sealed with key {kid}, which is not one of its task's keys: the stored "
            f"object was swapped for another record's or damaged; {DAMAGED_FIX}"
        )
    try:
        opened: bytes = aesgcm(key).decrypt(nonce, body, aad)
    except Exception as exc:
        if not _is_invalid_tag(exc):
            raise
        raise DecryptError(
            f"{what} failed authentication: it was altered or moved from another record; "
            f"{DAMAGED_FIX}"
        ) from exc
    return opened


def wrap_data_key(
    master: MasterKey, data_key: bytes, store_id: str, task_id: str, item: str = "data-key"
) -> bytes:
    """Seal a task's data key under the master key (`item` tells a retired key from the current)."""
    return seal(master.key, data_key, associated_data(store_id, task_id, item))


def unwrap_data_key(
    master: MasterKey, wrapped: bytes, store_id: str, task_id: str, item: str = "data-key"
) -> bytes:
    """Recover a task's data key; a different master key gives a clear error."""
    kid = envelope_key_id(wrapped)
    if kid != master.id:
        raise MasterKeyError(
            f"task {task_id}'s data was encrypted under master key {kid}, but the key in use "
            f"({master.source}) is {master.id}; set PITSTOP_KEY to the key from your backup"
        )
    return open_envelope(
        master.key, wrapped, associated_data(store_id, task_id, item), f"task {task_id}'s key"
    )
