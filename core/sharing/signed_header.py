"""The task header (`task.json`) signed by a member, and checked before anything is taken from it.

The header is plain so that a store without the key can list the task, which also means anyone
with push access could rewrite it: cancel the task, change its budgets, or swap the key file for
one that wraps a key of their own (a store that adopted that key would seal its next content
for the attacker). So the header names the sha256 of the key file and the roster version it was
written under, and carries its author's signature (`by`, `sig`, bound to the task and schema);
a fetch takes status, budgets and the key file only from a header a roster member signed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from core.ledger.roster import Roster
from core.sharing.layout import TASK_SCHEMA, canonical

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


def sign_header(session: Session, task_id: str, header: Mapping[str, Any]) -> dict[str, Any]:
    """The header with its author's key and signature added."""
    key = session.signing_key()
    document = {name: value for name, value in header.items() if name not in ("by", "sig")}
    document["by"] = key.public
    document["sig"] = key.sign(TASK_SCHEMA, task_id, canonical(document))
    return document


def signature_holds(task_id: str, header: Mapping[str, Any]) -> bool:
    """Whether the header's `sig` is its `by` key's signature over the rest of it."""
    from core.security import signing

    by, sig = header.get("by"), header.get("sig")
    if not isinstance(by, str) or not isinstance(sig, str):
        return False
    body = canonical({name: value for name, value in header.items() if name != "sig"})
    return signing.verify(by, sig, TASK_SCHEMA, task_id, body)


def header_problem(
    task_id: str, header: Mapping[str, Any], roster: Roster, key_file: bytes | None
) -> str | None:
    """Why the header may not be taken (None: a member signed it and it names this key file)."""
    by, sig = header.get("by"), header.get("sig")
    if not isinstance(by, str) or not isinstance(sig, str):
        return "its task header is not signed (written by an older Pitstop, or forged)"
    if not signature_holds(task_id, header):
        return "its task header's signature does not verify: it was altered or forged"
    if header.get("task") != task_id:
        return f"its task header is about task {header.get('task')!r}"
    if not roster.is_member(by):
        return "its task header is signed by a key the task's roster does not admit"
    if key_file is not None and header.get("key_file_sha256") != key_file_digest(key_file):
        return "its key file is not the one its signed header names: it was replaced"
    return None


def key_file_digest(key_file: bytes) -> str:
    """The sha256 a header names its key file by."""
    return hashlib.sha256(key_file).hexdigest()
