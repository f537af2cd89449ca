"""A task's roster: who owns it, who may read and write it, and who may decide — by key.

The roster is what every other check stands on, so it is itself a chain of signed facts
(`kind: roster`). The first, the **genesis**, is signed by the task's creator, who is its first
owner; each later version names the one before it (`prev`) and is signed by an owner of that
previous version. A store pins the genesis key the first time it meets a task (trust on first
use, or `--expect-owner FINGERPRINT` from an out-of-band value), so a stranger who writes a
roster of their own into the remote founds nothing: their genesis is not the pinned one, and
their changes are not signed by an owner.

Each version is a full snapshot (owners, members, approvers), small and self-describing, so the
roster in force is simply the last version reachable from the genesis. Two owners changing the
roster at once fork the chain; the change made first (by time, then uid) is kept and the other
is set aside and reported, never merged half-way.

A member has a display `label` (a name, for people), an optional signing `key` (a member
without one can read but not write) and an optional age `recipient` (a member without one can
write but not read). Labels are only labels: every check is by key. Approvers are listed by key
or by the label the owner gave a member's key; `approvers.any` says, explicitly, that every
member may decide.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from core.errors import PitstopError
from core.ledger.fact_format import ROSTER, SCHEMA, Fact, fact_uid

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

MAX_MEMBERS = 256


class TrustError(PitstopError):
    """A task's roster cannot be trusted as it stands: no signed genesis, or competing ones."""


@dataclass(frozen=True)
class Member:
    """One person or store on a task's roster."""

    label: str
    key: str | None = None
    recipient: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The member as a roster fact writes it."""
        return {"label": self.label, "key": self.key, "recipient": self.recipient}


@dataclass(frozen=True)
class Roster:
    """The roster in force: one verified version of the chain that starts at the genesis."""

    task_id: str
    version: int
    uid: str
    genesis_key: str
    owners: tuple[str, ...]
    members: tuple[Member, ...]
    approvers_any: bool
    approver_keys: tuple[str, ...] = ()
    approver_labels: tuple[str, ...] = ()
    at: str = ""

    def member_keys(self) -> frozenset[str]:
        """Every key whose facts the task takes: owners' and members'."""
        return frozenset(self.owners) | {m.key for m in self.members if m.key}

    def is_member(self, key: str | None) -> bool:
        """Whether facts signed by `key` may be taken at all."""
        return key is not None and key in self.member_keys()

    def is_owner(self, key: str | None) -> bool:
        """Whether `key` may change the roster."""
        return key is not None and key in self.owners

    def label_of(self, key: str | None) -> str | None:
        """The label the owner gave `key`, if any."""
        return next((m.label for m in self.members if key and m.key == key), None)

    def may_decide(self, key: str | None) -> bool:
        """Whether `key` may decide an approval of this task."""
        if not self.is_member(key):
            return False
        if self.approvers_any:
            return True
        return key in self.approver_keys or self.label_of(key) in self.approver_labels

    def recipients(self) -> list[str]:
        """Every age recipient a push encrypts the task's data key to, sorted."""
        return sorted({m.recipient for m in self.members if m.recipient})

    def approvers_text(self) -> str:
        """Who may decide, for people."""
        if self.approvers_any:
            return "any member"
        return ", ".join([*self.approver_labels, *self.approver_keys]) or "nobody"


@dataclass
class RosterResolution:
    """The roster a set of roster facts stands for, and the roster facts set aside (why)."""

    roster: Roster | None
    rejected: list[tuple[Fact, str]] = field(default_factory=list)


def roster_plain(
    task_id: str,
    *,
    version: int,
    prev: str | None,
    at: str,
    owners: Sequence[str],
    members: Sequence[Member],
    approvers_any: bool,
    approver_keys: Sequence[str] = (),
    approver_labels: Sequence[str] = (),
) -> dict[str, Any]:
    """The plain part of one roster version (there is no sealed part: rosters are public)."""
    return {
        "schema": SCHEMA,
        "kind": ROSTER,
        "task": task_id,
        "version": version,
        "prev": prev,
        "at": at,
        "owners": sorted(set(owners)),
        "members": [m.as_dict() for m in sorted(set(members), key=_member_order)],
        "approvers": {
            "any": approvers_any,
            "keys": sorted(set(approver_keys)),
            "labels": sorted(set(approver_labels)),
        },
    }


def _member_order(member: Member) -> tuple[str, str, str]:
    return member.label, member.key or "", member.recipient or ""


def next_version(roster: Roster, at: str, **changes: Any) -> dict[str, Any]:
    """The plain part of the version after `roster`, with `changes` (field → new value)."""
    fields: dict[str, Any] = {
        "owners": roster.owners,
        "members": roster.members,
        "approvers_any": roster.approvers_any,
        "approver_keys": roster.approver_keys,
        "approver_labels": roster.approver_labels,
    }
    fields.update(changes)
    return roster_plain(
        roster.task_id, version=roster.version + 1, prev=roster.uid, at=at, **fields
    )


def _version_of(fact: Fact, genesis_key: str) -> Roster | None:
    """The roster one fact describes, or None when its shape is wrong."""
    plain = fact.plain
    approvers = plain.get("approvers")
    members = plain.get("members")
    owners = plain.get("owners")
    version = plain.get("version")
    if not (
        isinstance(approvers, Mapping)
        and isinstance(members, list)
        and isinstance(owners, list)
        and isinstance(version, int)
        and not isinstance(version, bool)
        and 0 < len(owners) <= MAX_MEMBERS
        and len(members) <= MAX_MEMBERS
        and all(isinstance(o, str) for o in owners)
    ):
        return None
    parsed: list[Member] = []
    for entry in members:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("label"), str):
            return None
        key, recipient = entry.get("key"), entry.get("recipient")
        if not isinstance(key, (str, type(None))) or not isinstance(recipient, (str, type(None))):
            return None
        parsed.append(Member(str(entry["label"]), key, recipient))
    keys, labels = approvers.get("keys", []), approvers.get("labels", [])
    if not (isinstance(keys, list) and isinstance(labels, list)):
        return None
    return Roster(
        task_id=str(plain.get("task")),
        version=version,
        uid=fact.uid,
        genesis_key=genesis_key,
        owners=tuple(str(o) for o in owners),
        members=tuple(parsed),
        approvers_any=approvers.get("any") is True,
        approver_keys=tuple(str(k) for k in keys),
        approver_labels=tuple(str(label) for label in labels),
        at=str(plain.get("at") or ""),
    )


def _genesis(
    task_id: str,
    facts: Sequence[Fact],
    pinned: str | None,
    expect_fingerprint: str | None,
) -> tuple[Fact | None, list[tuple[Fact, str]]]:
    """The genesis fact to start from, and the other genesis facts set aside."""
    from core.security import signing

    candidates = [
        f for f in facts
        if f.get("version") == 1 and f.get("prev") is None and f.by in (f.get("owners") or [])
    ]  # fmt: skip
    rejected = [
        (f, "a roster genesis that is not signed by an owner it names")
        for f in facts
        if f.get("version") == 1 and f not in candidates
    ]
    if pinned is not None:
        chosen = [f for f in candidates if f.by == pinned]
        why = "a roster genesis by another key than the one this store pinned for the task"
    elif expect_fingerprint is not None:
        chosen = [f for f in candidates if f.by and signing.fingerprint(f.by) == expect_fingerprint]
        why = "a roster genesis by another key than the owner you expected"
        if not chosen:
            found = sorted({signing.fingerprint(str(f.by)) for f in candidates}) or ["none"]
            raise TrustError(
                f"task {task_id} was not founded by the owner you expected "
                f"({expect_fingerprint}); its roster names {', '.join(found)}: compare "
                "fingerprints with its owner before fetching it"
            )
    else:
        founders = sorted({str(f.by) for f in candidates})
        if len(founders) > 1:
            shown = ", ".join(signing.fingerprint(key) for key in founders)
            raise TrustError(
                f"task {task_id} has {len(founders)} competing owners ({shown}); someone wrote a "
                "roster of their own into the remote. Ask the task's owner for their fingerprint "
                "and fetch with --expect-owner FINGERPRINT"
            )
        chosen = candidates
        why = "a second roster genesis"
    chosen.sort(key=lambda f: (str(f.get("at") or ""), f.uid))
    first = chosen[0] if chosen else None
    rejected += [(f, why) for f in candidates if f is not first]
    return first, rejected


def resolve(
    task_id: str,
    facts: Iterable[Fact],
    *,
    pinned: str | None = None,
    expect_fingerprint: str | None = None,
) -> RosterResolution:
    """The roster in force among `facts` (any kinds; only verified roster facts count).

    `pinned` is the genesis key this store trusts for the task; without one, a single founder
    is trusted on first use and competing founders are a TrustError. No genesis at all gives
    `roster=None`: the task was never shared by a Pitstop that signs.
    """
    roster_facts = [f for f in facts if f.kind == ROSTER]
    rejected: list[tuple[Fact, str]] = []
    sound: list[Fact] = []
    for fact in roster_facts:
        if fact.get("task") != task_id:
            rejected.append((fact, f"a roster change of another task ({fact.get('task')!r})"))
        elif not fact.signature_holds():
            rejected.append((fact, _unsigned_why(fact)))
        else:
            sound.append(fact)
    genesis, set_aside = _genesis(task_id, sound, pinned, expect_fingerprint)
    rejected += set_aside
    if genesis is None:
        return RosterResolution(None, rejected)
    current = _version_of(genesis, str(genesis.by))
    if current is None:
        return RosterResolution(None, [*rejected, (genesis, "a roster genesis of the wrong shape")])
    on_chain = {genesis.uid}
    while True:
        children = [f for f in sound if f.get("prev") == current.uid]
        by_owner = [f for f in children if current.is_owner(f.by)]
        rejected += [(f, "a roster change signed by a key that is not an owner") for f in children
                     if f not in by_owner]  # fmt: skip
        shaped = [
            (f, version)
            for f in by_owner
            if (version := _version_of(f, current.genesis_key)) is not None
            and version.version == current.version + 1
        ]
        rejected += [(f, "a roster change of the wrong shape") for f in by_owner
                     if f not in [pair[0] for pair in shaped]]  # fmt: skip
        if not shaped:
            break
        shaped.sort(key=lambda pair: (pair[1].at, pair[0].uid))
        rejected += [(f, "a roster change made at the same time as another, set aside")
                     for f, _ in shaped[1:]]  # fmt: skip
        chosen, current = shaped[0]
        on_chain.add(chosen.uid)
    judged = on_chain | {f.uid for f, _ in rejected}
    rejected += [(f, "a roster change that does not follow the task's roster")
                 for f in sound if f.uid not in judged]  # fmt: skip
    return RosterResolution(current, rejected)


def _unsigned_why(fact: Fact) -> str:
    if fact.legacy:
        return "unsigned (written by an older Pitstop), so not verified"
    return "its signature does not verify: it was altered or forged"


def genesis_plain(
    task_id: str,
    at: str,
    owner: Member,
    readers: Sequence[Member] = (),
    approver_labels: Sequence[str] = (),
) -> dict[str, Any]:
    """The plain part of a task's genesis: its creator as owner and member, and the readers."""
    assert owner.key is not None
    return roster_plain(
        task_id,
        version=1,
        prev=None,
        at=at,
        owners=[owner.key],
        members=[owner, *readers],
        approvers_any=not approver_labels,
        approver_labels=approver_labels,
    )


def roster_uid(plain: Mapping[str, Any]) -> str:
    """The uid of a roster version's fact."""
    return fact_uid(plain)
