"""A task's roster as this store holds it: the pinned genesis, the version in force, and the
changes its operator signs here.

The roster is founded lazily, by the first thing that needs it (sharing or pushing a task
created here), so a store that never shares never needs a signing key. A task that came from
elsewhere takes its roster from its origin and can only be changed here by one of its owners.
"""

from __future__ import annotations

from collections.abc import Sequence

from core import clock, store
from core.errors import NotAllowedError
from core.ledger.fact_format import ROSTER, Signer, encode_fact, fact_path, fact_uid, parse_each
from core.ledger.roster import (
    Member,
    Roster,
    RosterResolution,
    TrustError,
    genesis_plain,
    next_version,
    resolve,
)
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session


def signer_of(session: Session) -> Signer:
    """The operator's signing key (loaded once per session)."""
    return session.signing_key()


def signer_or_none(session: Session) -> Signer | None:
    """The operator's signing key, None when they have none."""
    from core.security import signing

    try:
        return signer_of(session)
    except signing.SigningError:
        return None


def resolve_local(session: Session, task_id: str) -> RosterResolution:
    """The roster the store's own copy of the task's ledger stands for."""
    bodies = store.ledger_fact_bodies(session.db, task_id, kind=ROSTER)
    facts, _refused = parse_each({fact_path(uid, ROSTER): body for uid, body in bodies.items()})
    return resolve(task_id, facts, pinned=store.trusted_genesis(session.db, task_id))


def local_roster(session: Session, task_id: str) -> Roster | None:
    """The roster in force here for a task; None when it has none yet."""
    return resolve_local(session, task_id).roster


def own_member(session: Session, signer: Signer) -> Member:
    """The operator as a roster member: their label, signing key and age recipient."""
    from core.security import identity

    me = identity.load_identity_or_none()
    return Member(session.actor, signer.public, me.recipient if me else None)


def ensure_roster(session: Session, task_id: str) -> Roster:
    """The task's roster, founding it (signed by the operator, who becomes its owner) when a
    task created here has none yet."""
    found = local_roster(session, task_id)
    if found is not None:
        return found
    task = store.get_task(session.db, task_id)
    if session.keys.scope(task_id) != session.keys.store_id:
        raise TrustError(
            f"task {task_id} came from another store without a signed roster (an older "
            "Pitstop shared it); ask its owner to push it again, then fetch it"
        )
    signer = signer_of(session)
    owner = own_member(session, signer)
    readers = [
        Member(recipient_label(recipient), None, recipient)
        for recipient in store.list_task_recipients(session.db, task_id)
        if recipient != owner.recipient
    ]
    now = clock.now_iso()
    plain = genesis_plain(task_id, now, owner, readers, task.approvers)
    with write_txn(session.db):
        _record(session, task_id, plain, signer, now)
        store.pin_genesis(session.db, task_id, signer.public, "created", now)
        session.record_event(task_id, "roster", task_id, "found", None, "1", None, now)
    roster = local_roster(session, task_id)
    assert roster is not None
    return roster


def recipient_label(recipient: str) -> str:
    return f"reader {recipient[:16]}…"


def _record(session: Session, task_id: str, plain: dict[str, Any], signer: Signer, at: str) -> None:
    """Keep a roster fact signed here (inside the caller's transaction)."""
    body = encode_fact(plain, None, signer)
    store.record_ledger_facts(session.db, task_id, [(fact_uid(plain), ROSTER, body)], "local", at)


def change_roster(session: Session, task_id: str, why: str, **changes: Any) -> Roster:
    """Sign and keep the next roster version with `changes`; only an owner may."""
    roster = ensure_roster(session, task_id)
    signer = signer_of(session)
    if not roster.is_owner(signer.public):
        from core.security import signing

        raise NotAllowedError(
            f"only an owner of task {task_id} may change its roster; your key "
            f"{signing.fingerprint(signer.public)} is not one (owners: "
            f"{', '.join(signing.fingerprint(k) for k in roster.owners)})"
        )
    now = clock.now_iso()
    plain = next_version(roster, now, **changes)
    if _content(plain) == _content(next_version(roster, now)):
        return roster  # nothing changes
    with write_txn(session.db):
        _record(session, task_id, plain, signer, now)
        session.record_event(
            task_id, "roster", task_id, why, str(roster.version), str(plain["version"]), None, now
        )
    updated = local_roster(session, task_id)
    assert updated is not None
    return updated


def _content(plain: dict[str, Any]) -> dict[str, Any]:
    return {name: plain[name] for name in ("owners", "members", "approvers")}


def add_members(session: Session, task_id: str, members: Sequence[Member]) -> Roster:
    """Add (or update, by recipient or key) members of the task's roster."""
    roster = ensure_roster(session, task_id)
    kept = [
        m for m in roster.members
        if not any(_same_person(m, new) for new in members)
    ]  # fmt: skip
    return change_roster(session, task_id, "share", members=[*kept, *members])


def remove_members(session: Session, task_id: str, matches: Sequence[str]) -> tuple[Roster, int]:
    """Remove every member whose recipient, key or label is in `matches`; return the roster
    and how many were removed. An owner cannot remove themselves this way."""
    roster = ensure_roster(session, task_id)
    gone = [m for m in roster.members if {m.recipient, m.key, m.label} & set(matches)]
    if any(m.key in roster.owners for m in gone):
        raise NotAllowedError(f"an owner of task {task_id} cannot be removed from its roster")
    if not gone:
        return roster, 0
    kept = [m for m in roster.members if m not in gone]
    return change_roster(session, task_id, "unshare", members=kept), len(gone)


def _same_person(a: Member, b: Member) -> bool:
    return bool((a.key and a.key == b.key) or (a.recipient and a.recipient == b.recipient))


def pin_fetched(session: Session, task_id: str, roster: Roster, expected: bool) -> None:
    """Pin a fetched task's genesis key (inside the caller's transaction)."""
    how = "expected" if expected else "first-use"
    store.pin_genesis(session.db, task_id, roster.genesis_key, how, clock.now_iso())


def decider_name(session: Session, task_id: str, what: str) -> str:
    """The name a decision on `task_id` is recorded under, checked by key.

    Once a task has a roster, deciding is tied to the operator's signing key, not to the name
    in their config (which any process of the same user can set): the key must be an approver
    of the roster in force, and the decision is recorded under the label the owner gave that
    key. Without a roster (a task that never left this store), the configured name stands.
    """
    from core.security import signing

    roster = local_roster(session, task_id)
    if roster is None:
        return session.actor
    signer = signer_or_none(session)
    if signer is None or not roster.may_decide(signer.public):
        shown = signing.fingerprint(signer.public) if signer else "none"
        raise NotAllowedError(
            f"your signing key ({shown}) may not {what} for task {task_id}: its roster's "
            f"approvers are {roster.approvers_text()}; ask one of them, or an owner to add you "
            f"(`pitstop task approver add {task_id} …`)"
        )
    return roster.label_of(signer.public) or session.actor
