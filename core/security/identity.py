"""Operator identities and task recipients: who may read a task's content once it leaves the store.

An operator's identity is an age X25519 key pair (or their own unencrypted OpenSSH ed25519 key);
its public half, the **recipient**, is what a task lists so that checkpoints pushed to a remote
are encrypted to every operator of the task and to no one else. The private half is kept like the
master key: `PITSTOP_IDENTITY` first, then a real OS keyring; never a plain file Pitstop writes.

Recipients are stored in one normal form (`age1…`, or `ssh-ed25519 <base64>` without a comment),
so the same key given twice is listed once. ssh-rsa and other key types are refused: age's ssh
support for them is a compatibility path we do not want operators to depend on.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyrage

from core.errors import PitstopError, UsageError
from core.security import crypto

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

IDENTITY_ENV = "PITSTOP_IDENTITY"
KEYRING_SERVICE = crypto.KEYRING_SERVICE
KEYRING_USERNAME = "age-identity"
AGE_SECRET_PREFIX = "AGE-SECRET-KEY-1"
AGE_RECIPIENT_PREFIX = "age1"
SSH_ED25519 = "ssh-ed25519"
AGE_MAGIC = b"age-encryption.org/v1\n"
_SSH_KEY_TYPE_PREFIXES = ("ssh-", "ecdsa-", "sk-")
_OPENSSH_MAGIC = b"openssh-key-v1\0"
_OPENSSH_PEM = re.compile(
    rb"-----BEGIN OPENSSH PRIVATE KEY-----(?P<body>.*?)-----END OPENSSH PRIVATE KEY-----", re.S
)

HOW_TO_GET_ONE = (
    "set PITSTOP_IDENTITY to an AGE-SECRET-KEY-1… string (`pitstop key init --print` makes one) "
    "or to the path of your unencrypted ~/.ssh/id_ed25519, or use a real OS keyring and run "
    "`pitstop key init`"
)
RECIPIENT_FORMS = "give an age1… recipient, an `ssh-ed25519 AAAA…` public key, or a path to a .pub"


class IdentityError(PitstopError):
    """The operator's identity is missing, malformed, or kept somewhere unsafe."""


@dataclass(frozen=True)
class Identity:
    """An operator's identity: the public recipient, where it came from, and the private key."""

    recipient: str
    source: str
    kind: str  # "age" or "ssh"
    secret: bytes = field(repr=False, compare=False)

    @property
    def secret_text(self) -> str:
        """The private half as text (an AGE-SECRET-KEY-1… string, or the OpenSSH key file)."""
        return self.secret.decode()


# --- identities ------------------------------------------------------------------------------


def create_identity() -> Identity:
    """A new age X25519 identity (not stored anywhere yet)."""
    generated = pyrage.x25519.Identity.generate()
    return Identity(
        recipient=str(generated.to_public()),
        source="newly created",
        kind="age",
        secret=str(generated).encode(),
    )


def _age_identity(text: str, origin: str, source: str) -> Identity:
    cleaned = text.strip()
    try:
        parsed = pyrage.x25519.Identity.from_str(cleaned)
    except pyrage.IdentityError as exc:
        raise IdentityError(
            f"{origin} is not a valid age identity ({exc}); {HOW_TO_GET_ONE}"
        ) from exc
    return Identity(str(parsed.to_public()), source, "age", cleaned.encode())


def _read_ssh_string(data: bytes, offset: int, what: str) -> tuple[bytes, int]:
    if offset + 4 > len(data):
        raise ValueError(f"truncated before the {what}")
    (length,) = struct.unpack_from(">I", data, offset)
    start = offset + 4
    if start + length > len(data):
        raise ValueError(f"truncated inside the {what}")
    return data[start : start + length], start + length


def _openssh_public_blob(pem: bytes) -> tuple[bytes, str]:
    """The public key blob and cipher name of an OpenSSH private key file (its header is plain)."""
    match = _OPENSSH_PEM.search(pem)
    if match is None:
        raise ValueError("not an OpenSSH private key")
    try:
        raw = base64.b64decode(b"".join(match.group("body").split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("its base64 body is damaged") from exc
    if not raw.startswith(_OPENSSH_MAGIC):
        raise ValueError("not an openssh-key-v1 file")
    offset = len(_OPENSSH_MAGIC)
    cipher, offset = _read_ssh_string(raw, offset, "cipher name")
    _kdf, offset = _read_ssh_string(raw, offset, "kdf name")
    _kdf_options, offset = _read_ssh_string(raw, offset, "kdf options")
    if offset + 4 > len(raw):
        raise ValueError("truncated before the key count")
    (count,) = struct.unpack_from(">I", raw, offset)
    if count != 1:
        raise ValueError(f"it holds {count} keys, not one")
    public, _ = _read_ssh_string(raw, offset + 4, "public key")
    return public, cipher.decode("ascii", "replace")


def _ssh_identity(path: Path, pem: bytes, source: str) -> Identity:
    origin = f"{IDENTITY_ENV} ({path})"
    try:
        public, cipher = _openssh_public_blob(pem)
    except ValueError as exc:
        raise IdentityError(f"{origin} is not a usable OpenSSH private key: {exc}") from exc
    key_type = _ssh_key_type(public)
    if key_type != SSH_ED25519:
        raise IdentityError(
            f"{origin} is an {key_type or 'unknown'} key; Pitstop accepts ssh-ed25519 keys only "
            f"(make one with `ssh-keygen -t ed25519`) or {HOW_TO_GET_ONE}"
        )
    if cipher != "none":
        raise IdentityError(
            f"{origin} is protected by a passphrase, which Pitstop cannot ask for; use an "
            "unencrypted ed25519 key or an age identity (`pitstop key init`)"
        )
    try:
        pyrage.ssh.Identity.from_buffer(pem)
    except pyrage.IdentityError as exc:
        raise IdentityError(f"{origin} is not a usable ssh identity ({exc})") from exc
    recipient = f"{SSH_ED25519} {base64.b64encode(public).decode()}"
    return Identity(recipient, source, "ssh", pem)


def _from_environment(value: str) -> Identity:
    if value.strip().upper().startswith(AGE_SECRET_PREFIX):
        return _age_identity(value, IDENTITY_ENV, f"environment variable {IDENTITY_ENV}")
    path = Path(value).expanduser()
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise IdentityError(
            f"{IDENTITY_ENV} is neither an AGE-SECRET-KEY-1… string nor a readable key file "
            f"({exc.strerror or exc}); {HOW_TO_GET_ONE}"
        ) from exc
    source = f"{IDENTITY_ENV} file {path}"
    if b"OPENSSH PRIVATE KEY" in content:
        return _ssh_identity(path, content, source)
    # An age identity file (as `age-keygen -o FILE` writes it): comments, then the secret.
    for line in content.decode("utf-8", "replace").splitlines():
        if line.strip().upper().startswith(AGE_SECRET_PREFIX):
            return _age_identity(line, f"{IDENTITY_ENV} ({path})", source)
    raise IdentityError(
        f"{IDENTITY_ENV} points at {path}, which holds neither an age identity nor an OpenSSH "
        f"private key; {HOW_TO_GET_ONE}"
    )


def _from_keyring(*, required: bool) -> Identity | None:
    try:
        backend = crypto.safe_keyring(IdentityError, HOW_TO_GET_ONE)
    except IdentityError:
        if required:
            raise
        return None
    try:
        stored = backend.get_password(KEYRING_SERVICE, KEYRING_USERNAME)
    except Exception as exc:  # keyring backends raise their own error types
        if not required:
            return None
        raise IdentityError(f"the OS keyring could not be read ({exc}); {HOW_TO_GET_ONE}") from exc
    if stored is None:
        if required:
            raise IdentityError(f"no operator identity yet; {HOW_TO_GET_ONE}")
        return None
    name = crypto.backend_name(backend)
    return _age_identity(str(stored), "the identity in the OS keyring", f"keyring {name}")


def load_identity() -> Identity:
    """The operator's identity: `PITSTOP_IDENTITY` first, then a real OS keyring; else an error."""
    from_env = os.environ.get(IDENTITY_ENV)
    if from_env:
        return _from_environment(from_env)
    found = _from_keyring(required=True)
    assert found is not None
    return found


def load_identity_or_none() -> Identity | None:
    """The operator's identity, or None when they have none (a malformed one is still an error)."""
    from_env = os.environ.get(IDENTITY_ENV)
    if from_env:
        return _from_environment(from_env)
    return _from_keyring(required=False)


def with_own_recipient(recipients: list[str]) -> list[str]:
    """The recipients, and the operator's own recipient after them when they have an identity."""
    own = load_identity_or_none()
    if own is not None and own.recipient not in recipients:
        return [*recipients, own.recipient]
    return recipients


def keyring_holds_identity() -> bool:
    """Whether the OS keyring already keeps an identity (an unusable keyring is an error)."""
    backend = crypto.safe_keyring(IdentityError, HOW_TO_GET_ONE)
    return backend.get_password(KEYRING_SERVICE, KEYRING_USERNAME) is not None


def store_identity_in_keyring(identity: Identity) -> str:
    """Keep a new age identity in the OS keyring, never over an existing one; name the backend."""
    if identity.kind != "age":
        raise UsageError("only an age identity can be kept in the OS keyring")
    backend = crypto.safe_keyring(IdentityError, HOW_TO_GET_ONE)
    if backend.get_password(KEYRING_SERVICE, KEYRING_USERNAME) is not None:
        raise UsageError(
            "the OS keyring already holds a Pitstop identity; `pitstop key show` prints its "
            "recipient"
        )
    backend.set_password(KEYRING_SERVICE, KEYRING_USERNAME, identity.secret_text)
    return crypto.backend_name(backend)


@dataclass(frozen=True)
class KeyringSetup:
    """What `init_keyring` kept: the backend, and each new secret's public part (None: kept)."""

    backend: str
    master_key_id: str | None
    recipient: str | None


def init_keyring() -> KeyringSetup:
    """Keep a new master key and a new identity in the OS keyring, each only where none exists.

    An unusable keyring is the master key's error (it names PITSTOP_KEY and the keyring); a
    keyring that already holds both is a UsageError and nothing changes.
    """
    backend = crypto.safe_keyring()
    has_master = backend.get_password(crypto.KEYRING_SERVICE, crypto.KEYRING_USERNAME) is not None
    has_identity = backend.get_password(KEYRING_SERVICE, KEYRING_USERNAME) is not None
    if has_master and has_identity:
        raise UsageError(
            "the OS keyring already holds a Pitstop master key and identity; "
            "`pitstop key export` prints the key and `pitstop key show` your recipient"
        )
    master_key_id = None
    if not has_master:
        new_key = crypto.generate_key()
        crypto.store_master_key_in_keyring(new_key)
        master_key_id = crypto.key_id(new_key)
    recipient = None
    if not has_identity:
        new_identity = create_identity()
        store_identity_in_keyring(new_identity)
        recipient = new_identity.recipient
    return KeyringSetup(crypto.backend_name(backend), master_key_id, recipient)


# --- recipients ------------------------------------------------------------------------------


def _ssh_key_type(blob: bytes) -> str | None:
    try:
        key_type, _ = _read_ssh_string(blob, 0, "key type")
    except ValueError:
        return None
    return key_type.decode("ascii", "replace")


def _normalise_ssh(text: str) -> str:
    fields = text.split()
    if len(fields) < 2:
        raise UsageError(f"recipient {text!r} has no key after ssh-ed25519; {RECIPIENT_FORMS}")
    try:
        blob = base64.b64decode(fields[1], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UsageError(
            f"recipient {_short(text)} is not valid base64; {RECIPIENT_FORMS}"
        ) from exc
    key_type = _ssh_key_type(blob)
    try:
        _, offset = _read_ssh_string(blob, 0, "key type")
        public, end = _read_ssh_string(blob, offset, "key")
    except ValueError as exc:
        raise UsageError(f"recipient {_short(text)} is damaged ({exc}); {RECIPIENT_FORMS}") from exc
    if key_type != SSH_ED25519 or len(public) != 32 or end != len(blob):
        raise UsageError(f"recipient {_short(text)} is not a valid ssh-ed25519 key")
    normal = f"{SSH_ED25519} {fields[1]}"
    try:
        pyrage.ssh.Recipient.from_str(normal)
    except pyrage.RecipientError as exc:
        raise UsageError(
            f"recipient {_short(text)} is not a valid ssh-ed25519 key ({exc})"
        ) from exc
    return normal


def _short(text: str) -> str:
    one_line = " ".join(text.split())
    return repr(one_line if len(one_line) <= 40 else one_line[:37] + "…")


def normalise_recipient(text: str) -> str:
    """The normal form of a recipient string (no file is read); a bad one is a UsageError."""
    cleaned = text.strip()
    if cleaned.lower().startswith(AGE_RECIPIENT_PREFIX):
        try:
            return str(pyrage.x25519.Recipient.from_str(cleaned.lower()))
        except pyrage.RecipientError as exc:
            raise UsageError(
                f"recipient {_short(cleaned)} is not a valid age recipient ({exc}); "
                f"{RECIPIENT_FORMS}"
            ) from exc
    key_type = cleaned.split()[0] if cleaned else ""
    if key_type == SSH_ED25519:
        return _normalise_ssh(cleaned)
    if key_type.startswith(_SSH_KEY_TYPE_PREFIXES):
        raise UsageError(
            f"recipient {_short(cleaned)} is an {key_type} key; Pitstop accepts ssh-ed25519 "
            "keys only (make one with `ssh-keygen -t ed25519`) or age1… recipients"
        )
    if cleaned.upper().startswith(AGE_SECRET_PREFIX):
        raise UsageError(
            "that is an age *secret* key, not a recipient; give its public half "
            "(`pitstop key show` prints yours) and keep the secret private"
        )
    raise UsageError(f"recipient {_short(cleaned)} is not a key; {RECIPIENT_FORMS}")


def parse_recipient(text: str) -> str:
    """A recipient given as `age1…`, `ssh-ed25519 AAAA… [comment]`, or a path to a .pub file."""
    cleaned = text.strip()
    if not cleaned:
        raise UsageError(f"an empty recipient; {RECIPIENT_FORMS}")
    looks_like_key = cleaned.lower().startswith(AGE_RECIPIENT_PREFIX) or cleaned.startswith(
        _SSH_KEY_TYPE_PREFIXES
    )
    if not looks_like_key:
        path = Path(cleaned).expanduser()
        if path.is_file():
            if path.suffix != ".pub":
                raise UsageError(
                    f"{path} is not a .pub file; give a public key file, never a private one"
                )
            try:
                lines = [
                    line.strip()
                    for line in path.read_text(encoding="utf-8").splitlines()
                    if line.strip() and not line.lstrip().startswith("#")
                ]
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"cannot read the public key file {path} ({exc})") from exc
            if len(lines) != 1:
                raise UsageError(f"{path} should hold one public key; it holds {len(lines)} lines")
            return normalise_recipient(lines[0])
    return normalise_recipient(cleaned)


def parse_recipients(texts: Sequence[str]) -> list[str]:
    """Several recipients, each checked, normalised and listed once, in the order given."""
    return list(dict.fromkeys(parse_recipient(text) for text in texts))


# --- encryption to recipients ---------------------------------------------------------------


def _pyrage_recipient(recipient: str) -> Any:
    if recipient.startswith(SSH_ED25519 + " "):
        return pyrage.ssh.Recipient.from_str(recipient)
    return pyrage.x25519.Recipient.from_str(recipient)


def _pyrage_identity(identity: Identity) -> Any:
    if identity.kind == "ssh":
        return pyrage.ssh.Identity.from_buffer(identity.secret)
    return pyrage.x25519.Identity.from_str(identity.secret_text)


def wrap_for_recipients(secret: bytes, recipients: Sequence[str]) -> bytes:
    """Encrypt `secret` into one age file that each recipient's identity opens."""
    normal = sorted({normalise_recipient(recipient) for recipient in recipients})
    if not normal:
        raise UsageError(
            "nothing to encrypt to: no recipients; add one with `pitstop task share TASK "
            "--recipient KEY` or create your identity with `pitstop key init`"
        )
    encrypted = pyrage.encrypt(secret, [_pyrage_recipient(recipient) for recipient in normal])
    return bytes(encrypted)


def unwrap(blob: bytes, identity: Identity) -> bytes | None:
    """Decrypt an age file with the operator's identity; None when it was not encrypted to them."""
    if not blob.startswith(AGE_MAGIC):
        raise crypto.DecryptError(
            "the encrypted key is not an age file; it was damaged or replaced"
        )
    try:
        opened = pyrage.decrypt(blob, [_pyrage_identity(identity)])
    except pyrage.DecryptError as exc:
        if "no matching keys" in str(exc).lower():
            return None
        why = " ".join(str(exc).split())  # age's messages run over several lines
        raise crypto.DecryptError(
            f"the encrypted key failed to open ({why}): it was damaged or altered"
        ) from exc
    return bytes(opened)
