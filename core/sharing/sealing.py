"""Sealed JSON documents on a remote: the text of headers and evidence, readable by recipients.

A sealed document carries a keyed fingerprint of its plaintext alongside, so a later push can
see that nothing changed and keep the old envelope: an unchanged task adds no new objects.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from core.sharing import remote_input
from core.sharing.layout import canonical

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


def seal_json(session: Session, task_id: str, item: str, document: Any) -> tuple[str, str]:
    """Seal a JSON document for `item`: (base64 envelope, keyed fingerprint of the plaintext).

    Keyed, the fingerprint reveals nothing of the content.
    """
    plain = canonical({"v": document})
    key = session.keys.data_key(task_id, create=True)
    fingerprint = hmac.new(key, item.encode() + b"\0" + plain, hashlib.sha256).hexdigest()[:32]
    envelope = session.keys.seal(task_id, item, plain)
    return base64.b64encode(envelope).decode(), fingerprint


def open_json(session: Session, task_id: str, item: str, sealed: str, what: str) -> Any:
    """Open a document `seal_json` sealed for `item` (`what` names it in errors); what it
    holds is checked like any remote JSON before the caller checks its fields."""
    envelope = base64.b64decode(remote_input.sealed(sealed, what, len(sealed)))
    plain = session.keys.open(task_id, item, envelope, what)
    return remote_input.mapping(remote_input.parse_json(plain, what, len(plain)), what).get("v")
