"""Trust: who a task's roster admits, who may decide, and what was refused — for the CLI, the
dashboard and the web inbox alike.

The roster itself (signed versions, the pinned genesis) lives in `core.ledger.roster` and
`core.ledger.trust`; these entries shape it for people: fingerprints they can compare by voice,
labels, and one line per refused fact.
"""

from __future__ import annotations

from core import store
from core.errors import UsageError
from core.session import Session
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any


def roster(session: Session, task_id: str) -> dict[str, Any] | None:
    """The task's roster in force, for people (None: it never left this store)."""
    from core.ledger.trust import local_roster
    from core.security import signing

    store.get_task(session.db, task_id)
    found = local_roster(session, task_id)
    if found is None:
        return None
    pins = store.trust_pins(session.db).get(task_id, {})

    def shown(key: str | None) -> str | None:
        return signing.fingerprint(key) if key else None

    return {
        "version": found.version,
        "owner": shown(found.genesis_key),
        "pinned": pins.get("how"),
        "owners": [shown(key) for key in found.owners],
        "members": [
            {
                "label": m.label,
                "fingerprint": shown(m.key),
                "key": m.key,
                "recipient": m.recipient,
                "owner": m.key in found.owners,
                "approver": found.may_decide(m.key) if m.key else False,
            }
            for m in found.members
        ],
        "approvers": found.approvers_text(),
    }


def rejected_facts(session: Session, task_id: str) -> list[dict[str, Any]]:
    """The facts from elsewhere this store refused for a task, oldest first, with why."""
    from core.security import signing

    store.get_task(session.db, task_id)
    rows = store.rejected_facts(session.db, task_id)
    for row in rows:
        try:
            row["signed_by"] = signing.fingerprint(row["author"]) if row["author"] else None
        except signing.SigningError:
            row["signed_by"] = "malformed key"
    return rows


def rejected_counts(session: Session) -> dict[str, int]:
    """How many facts were refused per task (for lists and the dashboard)."""
    return store.rejected_counts(session.db)


def set_approvers(
    session: Session, task_id: str, add: list[str], remove: list[str]
) -> dict[str, Any]:
    """Add or remove approvers (labels of members, or `ed25519:` keys): a roster change signed
    by an owner. With none left, the roster says plainly that any member may decide."""
    from core.ledger.approvals import validate_operator_names
    from core.ledger.trust import change_roster, ensure_roster
    from core.security import signing

    if not add and not remove:
        raise UsageError("name an approver to add or remove")
    # Every name is checked before the roster is read: founding it is a write, and a
    # refused change must leave nothing behind.
    added_keys: list[str] = []
    added_labels: list[str] = []
    for text in add:
        if text.startswith(signing.PUBLIC_PREFIX) or text.startswith("ssh-ed25519 "):
            added_keys.append(signing.parse_public_key(text))
        else:
            added_labels.extend(validate_operator_names([text]))
    removed = [
        text if not text.startswith("ssh-") else signing.parse_public_key(text) for text in remove
    ]
    current = ensure_roster(session, task_id)
    keys = set(current.approver_keys) | set(added_keys)
    labels = set(current.approver_labels) | set(added_labels)
    for text, parsed in zip(remove, removed, strict=True):
        keys.discard(parsed)
        labels.discard(text)
    change_roster(
        session,
        task_id,
        "approvers",
        approver_keys=sorted(keys),
        approver_labels=sorted(labels),
        approvers_any=not keys and not labels,
    )
    with_labels = sorted(labels)
    with write_txn(session.db):
        store.set_task_approvers(session.db, task_id, with_labels)
    shown = roster(session, task_id)
    assert shown is not None
    return shown


def signing_identity() -> dict[str, Any]:
    """The operator's signing key: its public half, fingerprint and where it comes from."""
    from core.security import signing

    key = signing.load_signing_key()
    return {"public": key.public, "fingerprint": key.fingerprint, "source": key.source}
