"""The remote key file (`keys/data-key.age`): every data key of a task, age-encrypted to its
recipients.

A task whose key was never rotated has one key, and its file holds the bare 32 bytes, as every
Pitstop before key rotation wrote and reads it. Once rotated (a recipient was removed), the
file holds every key, so the remaining recipients open what each key sealed, and says which
one is current, so they seal what they write after with it:

    {"schema": "pitstop.task-keys/1", "current": "<key id>", "keys": {"<key id>": "<base64>"}}

The plain task header carries `data_keys`: the current key's id and a digest of the whole set
(keys are random 256-bit values, so the digest reveals nothing). A fetch takes a key file only
when it matches the header it came with, so whatever vouches for the header (its signature)
vouches for the keys; a key file that was swapped alone is refused.

Everything read is bounded and checked before use: a damaged or hostile file is one clear
`KeyFileError`, never a traceback.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping, Sequence

from core.security import crypto, identity
from core.sharing.layout import RemoteFormatError

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    from core.security.keys import TaskKeys

KEYS_SCHEMA = "pitstop.task-keys/1"
HEADER_FIELD = "data_keys"  # the task header's summary of the key file
MAX_KEY_FILE_BYTES = 256 * 1024
MAX_KEYS = 1024
_KEY_ID = re.compile(r"[0-9a-f]{12}")


class KeyFileError(RemoteFormatError):
    """A remote key file is damaged, malformed or does not match its task header."""


class TaskKeySet(NamedTuple):
    """Every data key of a task (key id → key) and the id of the current one."""

    keys: dict[str, bytes]
    current: str


def _checked(keys: Mapping[str, bytes], current_id: str) -> dict[str, bytes]:
    """The key set as a dict, refused unless each id is its key's id and `current_id` is one."""
    if not keys or len(keys) > MAX_KEYS:
        raise KeyFileError(f"a key file holds {len(keys)} keys, not 1 to {MAX_KEYS}")
    for kid, key in keys.items():
        if len(key) != crypto.KEY_BYTES or crypto.key_id(key) != kid:
            raise KeyFileError(
                f"a key file's key {kid[:12]!r} is not the key its id names; it was altered"
            )
    if current_id not in keys:
        raise KeyFileError(f"a key file names current key {current_id[:12]!r}, which it lacks")
    return dict(keys)


def _payload(keys: Mapping[str, bytes], current_id: str) -> bytes:
    """What the age file holds: the bare key for a single key, else the JSON document."""
    if len(keys) == 1:
        return keys[current_id]
    document = {
        "schema": KEYS_SCHEMA,
        "current": current_id,
        "keys": {kid: crypto.encode_key(key) for kid, key in sorted(keys.items())},
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def encode_key_file(keys: Mapping[str, bytes], current_id: str, recipients: Sequence[str]) -> bytes:
    """The key file of a task: its keys (`current_id` the current one), age-encrypted to
    `recipients`."""
    checked = _checked(keys, current_id)
    return identity.wrap_for_recipients(_payload(checked, current_id), recipients)


def decode_key_file(blob: bytes, me: identity.Identity) -> TaskKeySet | None:
    """The keys a key file holds, opened with `me`; None when it was not encrypted to `me`."""
    if len(blob) > MAX_KEY_FILE_BYTES:
        raise KeyFileError(
            f"a key file is {len(blob)} bytes, over the {MAX_KEY_FILE_BYTES} a key file may be; "
            "the remote is damaged"
        )
    try:
        plain = identity.unwrap(blob, me)
    except crypto.DecryptError as exc:
        raise KeyFileError(f"a key file cannot be read: {exc.message}") from exc
    if plain is None:
        return None
    return parse_payload(plain)


def parse_payload(plain: bytes) -> TaskKeySet:
    """The key set of a decrypted key file: a bare key (older Pitstops) or the JSON document."""
    if len(plain) == crypto.KEY_BYTES:  # no key document is this short
        kid = crypto.key_id(plain)
        return TaskKeySet({kid: plain}, kid)
    try:
        document = json.loads(plain)
    except (ValueError, UnicodeDecodeError) as exc:
        raise KeyFileError(
            "a key file holds neither a key nor a key document; it was damaged or replaced"
        ) from exc
    if not isinstance(document, dict) or document.get("schema") != KEYS_SCHEMA:
        schema = document.get("schema") if isinstance(document, dict) else None
        raise KeyFileError(
            f"a key file uses schema {str(schema)[:40]!r}, not {KEYS_SCHEMA!r}; upgrade pitstop"
        )
    current, entries = document.get("current"), document.get("keys")
    if not isinstance(current, str) or not isinstance(entries, dict):
        raise KeyFileError("a key file lacks its current key id or its keys; it was damaged")
    keys = {_key_id(kid): _key(value) for kid, value in entries.items()}
    return TaskKeySet(_checked(keys, current), current)


def _key_id(kid: Any) -> str:
    if not isinstance(kid, str) or not _KEY_ID.fullmatch(kid):
        raise KeyFileError(f"a key file has a malformed key id {str(kid)[:20]!r}; it was damaged")
    return kid


def _key(value: Any) -> bytes:
    if not isinstance(value, str) or len(value) > 64:
        raise KeyFileError("a key file has a malformed key; it was damaged")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise KeyFileError("a key file has a key that is not base64; it was damaged") from exc


def header_entry(keys: Mapping[str, bytes], current_id: str) -> dict[str, str]:
    """What the plain task header says of the key file: the current id and the set's digest."""
    digest = hashlib.sha256(b"pitstop-task-keys\0" + _payload_for_digest(keys, current_id))
    return {"current": current_id, "digest": digest.hexdigest()}


def header_entry_of(keys: TaskKeys, task_id: str) -> dict[str, str]:
    """The task header's `data_keys` for a task of this store (its key made if it has none)."""
    current = keys.data_key_id(task_id)
    return header_entry(keys.all_keys(task_id), current)


def _payload_for_digest(keys: Mapping[str, bytes], current_id: str) -> bytes:
    pairs = [f"{kid}={crypto.encode_key(key)}" for kid, key in sorted(keys.items())]
    return "\n".join([current_id, *pairs]).encode()


def open_key_file(
    blob: bytes, me: identity.Identity, header: Mapping[str, Any], task_id: str
) -> TaskKeySet | None:
    """The keys of a fetched task's key file, checked against its header (None: not for `me`).

    A header from before key rotation names no key set; its file then holds one bare key.
    """
    found = decode_key_file(blob, me)
    if found is None:
        return None
    expected = header.get(HEADER_FIELD)
    if expected is None:
        if len(found.keys) != 1:
            raise KeyFileError(
                f"the key file of task {task_id} holds several keys but its header names none; "
                "it was replaced"
            )
        return found
    if expected != header_entry(found.keys, found.current):
        raise KeyFileError(
            f"the key file of task {task_id} does not match its header: it was replaced or "
            "damaged; ask the task's owner to push it again"
        )
    return found


def rotated_since(keys: TaskKeys, task_id: str, header: Mapping[str, Any]) -> bool:
    """True when the task's key was rotated after `header` was written: its current key is
    one of ours that is retired now.

    The recipients such a header lists are not carried over: the rotation was made to leave
    one of them out.
    """
    entry = header.get(HEADER_FIELD)
    if not isinstance(entry, dict) or not isinstance(entry.get("current"), str):
        return False
    return entry["current"] in keys.old_keys(task_id)
