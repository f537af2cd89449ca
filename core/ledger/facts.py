"""The ledger that travels: a task's approvals, effect states, validations, resumes and audit
events as immutable facts that merge by set union, so every order of syncs converges (DESIGN §6).

A fact is one small canonical JSON document (sorted keys, no spaces). Its `uid` is the sha256 of
its *plain* part: ids, states, times, counts and operator names, which is all a merge reads.
Whatever is content (reasons, notes, approval actions, effect targets and checks, validation
findings) lives in one `sealed` field, encrypted under the task's data key and bound to
`ledger/<uid>` in the task's scope, so a fact sealed in one store opens in every store that
fetched the task and nothing in clear can be a secret or free text.

The ledger is a grow-only set (a CRDT): `merge_facts` is a union, `derive` a pure function of the
set, and `apply_facts` brings a store's rows to what `derive` says, idempotently:

- an effect's state is the one with the most knowledge: a later attempt knows more than an
  earlier one, and within an attempt `confirmed`/`failed` > `uncertain` > `in_progress` >
  `proposed`. Settled differently in two places, the settlement made first wins and the other is
  kept as a conflict; a `confirmed` effect stays confirmed (a retry elsewhere is a conflict).
- an approval's decision is the one decided first (by time, then decider, then state); a
  different decision made elsewhere is kept as a conflict and shown.
- validations, resumes and audit events are a union; a resume from another store is history
  here, never a live lease.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core import clock, store
from core.errors import StoreError
from core.ledger.approvals import effective
from core.models import (
    Approval,
    ApprovalState,
    EffectState,
    Interface,
    Risk,
    SideEffect,
    TaskStatus,
)
from core.store.db import write_txn

if TYPE_CHECKING:
    from core.session import Session

SCHEMA = "pitstop.ledger/1"

EFFECT = "effect"
REQUEST = "approval-request"
DECISION = "approval-decision"
VALIDATION = "validation"
RESUME = "resume"
EVENT = "event"
KINDS = (EFFECT, REQUEST, DECISION, VALIDATION, RESUME, EVENT)

# How much a state knows about whether the action happened; a merge never moves down this order.
KNOWLEDGE: Mapping[EffectState, int] = {
    EffectState.PROPOSED: 0,
    EffectState.IN_PROGRESS: 1,
    EffectState.UNCERTAIN: 2,
    EffectState.CONFIRMED: 3,
    EffectState.FAILED: 3,
}
_SETTLED = (EffectState.CONFIRMED.value, EffectState.FAILED.value)
# The states a fact of each kind may record; anything else is from a newer Pitstop.
_STATES: Mapping[str, frozenset[str]] = {
    EFFECT: frozenset(state.value for state in EffectState),
    DECISION: frozenset(state.value for state in ApprovalState) - {ApprovalState.PENDING.value},
}
_SYNC_REASON = "brought in by ledger sync"


class LedgerFormatError(StoreError):
    """A ledger fact that is malformed, altered or of a newer schema: refused, never half-read."""


# --- facts ------------------------------------------------------------------------------------


def canonical(document: Mapping[str, Any]) -> bytes:
    """A JSON document as facts are written and hashed: sorted keys, no spaces, UTF-8."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def fact_uid(plain: Mapping[str, Any]) -> str:
    """A fact's identity: the sha256 of its canonical plain part."""
    return hashlib.sha256(canonical(plain)).hexdigest()


def fact_path(uid: str) -> str:
    """Where a fact lives in the ledger tree."""
    return f"facts/{uid[:2]}/{uid}.json"


@dataclass(frozen=True)
class Fact:
    """One immutable ledger fact: its plain part (what merges read) and its sealed content."""

    uid: str
    plain: Mapping[str, Any]
    sealed: bytes | None = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        return str(self.plain["kind"])

    def get(self, name: str) -> Any:
        """A plain field, None when absent."""
        return self.plain.get(name)


def encode_fact(plain: Mapping[str, Any], sealed: bytes | None) -> bytes:
    """The bytes of a fact file."""
    document: dict[str, Any] = dict(plain)
    document["uid"] = fact_uid(plain)
    if sealed is not None:
        document["sealed"] = base64.b64encode(sealed).decode("ascii")
    return canonical(document)


def parse_fact(path: str, data: bytes) -> Fact:
    """Read one fact file, or refuse it with a LedgerFormatError saying why."""
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LedgerFormatError(f"ledger fact {path} is not JSON ({exc}); it was altered") from exc
    if not isinstance(document, dict):
        raise LedgerFormatError(f"ledger fact {path} is not a JSON object; it was altered")
    schema = document.get("schema")
    if schema != SCHEMA:
        raise LedgerFormatError(
            f"ledger fact {path} has schema {schema!r}, not {SCHEMA!r}: it was written by a newer "
            "Pitstop; upgrade pitstop to sync this task"
        )
    uid = document.pop("uid", None)
    sealed_text = document.pop("sealed", None)
    if uid != fact_uid(document) or path != fact_path(str(uid)):
        raise LedgerFormatError(f"ledger fact {path} does not match its uid; it was altered")
    if document.get("kind") not in KINDS:
        raise LedgerFormatError(
            f"ledger fact {path} is of unknown kind {document.get('kind')!r}: it was written by "
            "a newer Pitstop; upgrade pitstop to sync this task"
        )
    states = _STATES.get(str(document["kind"]))
    if states is not None and document.get("state") not in states:
        raise LedgerFormatError(
            f"ledger fact {path} has unknown state {document.get('state')!r}: it was written by "
            "a newer Pitstop; upgrade pitstop to sync this task"
        )
    sealed = None
    if sealed_text is not None:
        try:
            sealed = base64.b64decode(str(sealed_text), validate=True)
        except binascii.Error as exc:
            raise LedgerFormatError(f"ledger fact {path} has a damaged sealed part") from exc
    return Fact(uid=str(uid), plain=document, sealed=sealed)


def parse_facts(facts: Mapping[str, bytes]) -> list[Fact]:
    """Every fact of a ledger tree, by uid."""
    return sorted((parse_fact(path, data) for path, data in facts.items()), key=lambda f: f.uid)


def merge_facts(a: Mapping[str, bytes], b: Mapping[str, bytes]) -> dict[str, bytes]:
    """The union of two ledger trees; one path with two byte strings keeps the smaller.

    The same path means the same plain part; only the sealed part's random nonce differs, so
    keeping the smaller bytes is a deterministic choice between equal contents.
    """
    merged = dict(a)
    for path, data in b.items():
        have = merged.get(path)
        merged[path] = data if have is None else min(have, data)
    return dict(sorted(merged.items()))


# --- the derived state ------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Conflict:
    """A decision that lost a merge: what was kept, what was set aside, and why."""

    entity: str
    entity_id: str
    lost_uid: str
    kept_uid: str
    why: str
    kept_state: str | None = None
    kept_by: str | None = None
    kept_at: str | None = None
    lost_state: str | None = None
    lost_by: str | None = None
    lost_at: str | None = None

    def describe(self) -> str:
        """One line for listings."""
        kept = _said(self.kept_state, self.kept_by, self.kept_at)
        lost = _said(self.lost_state, self.lost_by, self.lost_at)
        return f"conflict: {self.why}; kept {kept}, set aside {lost}"

    def as_dict(self) -> dict[str, Any]:
        """Plain fields only (what may be stored and shown anywhere)."""
        return {
            "entity": self.entity,
            "entity_id": self.entity_id,
            "why": self.why,
            "kept": {"uid": self.kept_uid, "state": self.kept_state, "by": self.kept_by,
                     "at": self.kept_at},
            "lost": {"uid": self.lost_uid, "state": self.lost_state, "by": self.lost_by,
                     "at": self.lost_at},
        }  # fmt: skip


def _said(state: str | None, by: str | None, at: str | None) -> str:
    parts = [state or "?"]
    if by:
        parts.append(f"by {by}")
    if at:
        parts.append(f"at {at[:19].replace('T', ' ')}")
    return " ".join(parts)


@dataclass(frozen=True)
class EffectView:
    """An effect as the merged ledger knows it: the winning fact and the first proposal time."""

    key: str
    state: EffectState
    attempts: int
    uid: str
    created_at: str


@dataclass(frozen=True)
class ApprovalView:
    """An approval as the merged ledger knows it: its request and the decision made first."""

    id: str
    request_uid: str
    state: ApprovalState
    decision_uid: str | None


@dataclass(frozen=True)
class LedgerView:
    """The state a set of facts stands for; equal sets give equal views, whatever the order."""

    effects: Mapping[str, EffectView]
    approvals: Mapping[str, ApprovalView]
    validations: frozenset[str]
    resumes: Mapping[str, str]
    events: frozenset[str]
    conflicts: tuple[Conflict, ...]


def _earliest(fact: Fact, at: str = "at", by: str = "by") -> tuple[str, str, str, str]:
    return (
        str(fact.get(at) or ""),
        str(fact.get(by) or ""),
        str(fact.get("state") or ""),
        fact.uid,
    )


def _knowledge(fact: Fact) -> tuple[int, int]:
    return int(fact.get("attempts") or 0), KNOWLEDGE[EffectState(fact.get("state"))]


def _effect_conflict(kept: Fact, lost: Fact, why: str) -> Conflict:
    return Conflict(
        entity="effect",
        entity_id=str(kept.get("key")),
        lost_uid=lost.uid,
        kept_uid=kept.uid,
        why=why,
        kept_state=kept.get("state"),
        kept_at=kept.get("at"),
        lost_state=lost.get("state"),
        lost_at=lost.get("at"),
    )


def _derive_effect(facts: list[Fact]) -> tuple[Fact, list[Conflict]]:
    """The winning fact of one effect key, and the settlements it set aside."""
    conflicts: list[Conflict] = []
    set_aside: set[str] = set()
    attempts = sorted({int(f.get("attempts") or 0) for f in facts})
    for attempt in attempts:
        settled = sorted(
            (f for f in facts if f.get("attempts") == attempt and f.get("state") in _SETTLED),
            key=_earliest,
        )
        if not settled:
            continue
        first = settled[0]
        for other in settled[1:]:
            set_aside.add(other.uid)
            if other.get("state") != first.get("state"):
                conflicts.append(
                    _effect_conflict(first, other, f"attempt {attempt} settled differently")
                )
        if first.get("state") == EffectState.CONFIRMED.value:
            later = [f for f in facts if int(f.get("attempts") or 0) > attempt]
            if later:
                newest = max(later, key=lambda f: (_knowledge(f), _earliest(f)))
                conflicts.append(
                    _effect_conflict(first, newest, "confirmed is final; a retry elsewhere")
                )
            return first, conflicts
    candidates = [f for f in facts if f.uid not in set_aside]
    top = max(_knowledge(f) for f in candidates)
    winner = min((f for f in candidates if _knowledge(f) == top), key=_earliest)
    return winner, conflicts


def _approval_conflict(entity_id: str, kept: Fact, lost: Fact, why: str) -> Conflict:
    if kept.kind == REQUEST:
        return Conflict(
            entity="approval",
            entity_id=entity_id,
            lost_uid=lost.uid,
            kept_uid=kept.uid,
            why=why,
            kept_state="requested",
            kept_by=kept.get("requested_by"),
            kept_at=kept.get("requested_at"),
            lost_state="requested" if lost.kind == REQUEST else lost.get("state"),
            lost_by=lost.get("requested_by") if lost.kind == REQUEST else lost.get("decided_by"),
            lost_at=lost.get("requested_at") if lost.kind == REQUEST else lost.get("decided_at"),
        )
    return Conflict(
        entity="approval",
        entity_id=entity_id,
        lost_uid=lost.uid,
        kept_uid=kept.uid,
        why=why,
        kept_state=kept.get("state"),
        kept_by=kept.get("decided_by"),
        kept_at=kept.get("decided_at"),
        lost_state=lost.get("state"),
        lost_by=lost.get("decided_by"),
        lost_at=lost.get("decided_at"),
    )


def _derive_approvals(
    requests: list[Fact], decisions: list[Fact]
) -> tuple[dict[str, ApprovalView], list[Conflict]]:
    conflicts: list[Conflict] = []
    views: dict[str, ApprovalView] = {}
    by_id: dict[str, list[Fact]] = defaultdict(list)
    for request in requests:
        by_id[str(request.get("approval"))].append(request)
    decided: dict[str, list[Fact]] = defaultdict(list)
    for decision in decisions:
        decided[str(decision.get("request"))].append(decision)
    for approval_id, asked in sorted(by_id.items()):
        asked.sort(key=lambda f: _earliest(f, "requested_at", "requested_by"))
        request = asked[0]
        for other in asked[1:]:
            conflicts.append(
                _approval_conflict(approval_id, request, other, "requested differently")
            )
            for lost in decided.get(other.uid, []):
                conflicts.append(
                    _approval_conflict(approval_id, request, lost, "decided on a request set aside")
                )
        made = sorted(
            decided.get(request.uid, []), key=lambda f: _earliest(f, "decided_at", "decided_by")
        )
        first = made[0] if made else None
        for other in made[1:]:
            if first is not None and other.get("state") != first.get("state"):
                conflicts.append(
                    _approval_conflict(approval_id, first, other, "decided differently")
                )
        views[approval_id] = ApprovalView(
            id=approval_id,
            request_uid=request.uid,
            state=ApprovalState(first.get("state")) if first else ApprovalState.PENDING,
            decision_uid=first.uid if first else None,
        )
    return views, conflicts


def resume_identity(plain: Mapping[str, Any]) -> str:
    """What names one resume in every store: its checkpoint, start time and operator."""
    return f"{plain.get('seq')}@{plain.get('started_at')}@{plain.get('actor')}"


def _resume_progress(fact: Fact) -> tuple[bool, bool, str, str]:
    return (
        fact.get("state") != "active",
        fact.get("accepted") is not None,
        str(fact.get("finished_at") or ""),
        fact.uid,
    )


def derive(facts: Mapping[str, bytes] | Iterable[Fact]) -> LedgerView:
    """The state a set of facts stands for (pure: reads plain fields only, needs no key)."""
    parsed = parse_facts(facts) if isinstance(facts, Mapping) else list(facts)
    by_kind: dict[str, list[Fact]] = defaultdict(list)
    for fact in parsed:
        by_kind[fact.kind].append(fact)
    conflicts: list[Conflict] = []
    effects: dict[str, list[Fact]] = defaultdict(list)
    for fact in by_kind[EFFECT]:
        effects[str(fact.get("key"))].append(fact)
    effect_views: dict[str, EffectView] = {}
    for key, found in sorted(effects.items()):
        winner, lost = _derive_effect(found)
        conflicts.extend(lost)
        effect_views[key] = EffectView(
            key=key,
            state=EffectState(winner.get("state")),
            attempts=int(winner.get("attempts") or 0),
            uid=winner.uid,
            created_at=min(str(f.get("created_at")) for f in found),
        )
    approval_views, lost = _derive_approvals(by_kind[REQUEST], by_kind[DECISION])
    conflicts.extend(lost)
    resumes: dict[str, Fact] = {}
    for fact in by_kind[RESUME]:
        identity = resume_identity(fact.plain)
        have = resumes.get(identity)
        if have is None or _resume_progress(fact) > _resume_progress(have):
            resumes[identity] = fact
    return LedgerView(
        effects=effect_views,
        approvals=approval_views,
        validations=frozenset(f.uid for f in by_kind[VALIDATION]),
        resumes={identity: fact.uid for identity, fact in sorted(resumes.items())},
        events=frozenset(f.uid for f in by_kind[EVENT]),
        conflicts=tuple(sorted(set(conflicts))),
    )


# --- the local store's facts ------------------------------------------------------------------


def _plain(kind: str, task_id: str, **fields: Any) -> dict[str, Any]:
    return {"schema": SCHEMA, "kind": kind, "task": task_id, **fields}


def effect_plain(effect: SideEffect) -> dict[str, Any]:
    """The plain part of the fact that records an effect row as it stands."""
    return _plain(
        EFFECT,
        effect.task_id,
        key=effect.key,
        effect_kind=effect.kind,
        state=effect.state.value,
        attempts=effect.attempts,
        at=effect.updated_at,
        created_at=effect.created_at,
        needs_approval=effect.needs_approval,
        exit_code=effect.exit_code,
        started_at=effect.started_at,
        finished_at=effect.finished_at,
    )


def request_plain(approval: Approval) -> dict[str, Any]:
    """The plain part of the fact that records an approval request."""
    return _plain(
        REQUEST,
        approval.task_id,
        approval=approval.id,
        seq=approval.seq,
        risk=approval.risk.value,
        requested_by=approval.requested_by,
        requested_at=approval.requested_at,
        expires_at=approval.expires_at,
        effect_key=approval.effect_key,
        checkpoint_seq=approval.checkpoint_seq,
    )


def decision_plain(approval: Approval, state: ApprovalState) -> dict[str, Any]:
    """The plain part of the fact that records a stored decision on an approval."""
    return _plain(
        DECISION,
        approval.task_id,
        approval=approval.id,
        request=fact_uid(request_plain(approval)),
        state=state.value,
        decided_by=approval.decided_by,
        decided_at=approval.decided_at,
    )


_VALIDATION_PLAIN = ("seq", "verdict", "duration_ms", "at", "actor", "interface")
_RESUME_PLAIN = (
    "seq", "state", "verdict", "holder_pid", "holder_host", "launched", "lease_until",
    "restore_ms", "exit_code", "accepted", "started_at", "finished_at", "actor",
)  # fmt: skip
_RESUME_SEALED = ("workdir", "branch", "brief_path", "accept_reason")


def _row_plain(
    kind: str, task_id: str, row: Mapping[str, Any], names: Iterable[str]
) -> dict[str, Any]:
    return _plain(kind, task_id, **{name: row.get(name) for name in names})


def _local_facts(session: Session, task_id: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every fact the task's rows stand for now: (plain part, content to seal)."""
    found: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for effect in store.list_effects(session.db, task_id, (), session.keys):
        content = {"target": effect.target, "check": effect.check, "note": effect.note}
        found.append((effect_plain(effect), content))
    for approval in store.list_approvals(session.db, task_id, keys=session.keys):
        found.append((request_plain(approval), {"action": approval.action}))
        if approval.decided_at is not None and approval.state is not ApprovalState.PENDING:
            found.append((decision_plain(approval, approval.state), {"reason": approval.reason}))
    for row in store.list_validations(session.db, task_id):
        found.append(
            (_row_plain(VALIDATION, task_id, row, _VALIDATION_PLAIN), {"findings": row["findings"]})
        )
    for row in store.list_resumes(session.db, task_id, session.keys):
        content = {name: row.get(name) for name in _RESUME_SEALED}
        found.append((_row_plain(RESUME, task_id, row, _RESUME_PLAIN), content))
    uids = store.event_uids(session.db, task_id)
    own = session.keys.store_id
    for event in store.list_events(session.db, task_id, session.keys):
        plain = _plain(
            EVENT,
            task_id,
            event=uids.get(event.id) or f"{own}:{event.id}",
            at=event.at,
            actor=event.actor,
            interface=event.interface.value,
            entity=event.entity,
            entity_id=event.entity_id,
            action=event.action,
            from_state=event.from_state,
            to_state=event.to_state,
        )
        found.append((plain, {"reason": event.reason}))
    return found


def _seal(session: Session, task_id: str, uid: str, content: Mapping[str, Any]) -> bytes | None:
    if all(value is None for value in content.values()):
        return None
    return session.keys.seal(task_id, f"ledger/{uid}", canonical(content))


def _content(session: Session, task_id: str, fact: Fact) -> dict[str, Any]:
    """A fact's sealed content, opened with the task's key (empty when it has none)."""
    if fact.sealed is None:
        return {}
    opened = session.keys.open(
        task_id, f"ledger/{fact.uid}", fact.sealed, f"ledger fact {fact.uid[:12]} of {task_id}"
    )
    content = json.loads(opened)
    return dict(content) if isinstance(content, dict) else {}


def export_facts(session: Session, task_id: str) -> dict[str, bytes]:
    """The task's ledger tree: path → fact bytes, for its rows as they stand and every fact
    applied from elsewhere. Unchanged rows give the same paths and the same bytes every time."""
    store.get_task(session.db, task_id)
    known = store.ledger_fact_bodies(session.db, task_id)
    tree: dict[str, bytes] = {}
    new: list[tuple[str, str, bytes]] = []
    for plain, content in _local_facts(session, task_id):
        uid = fact_uid(plain)
        body = known.get(uid)
        if body is None:
            body = encode_fact(plain, _seal(session, task_id, uid, content))
            known[uid] = body
            new.append((uid, str(plain["kind"]), body))
        tree[fact_path(uid)] = body
    for uid, body in known.items():
        tree.setdefault(fact_path(uid), body)
    if new:
        with write_txn(session.db):
            store.record_ledger_facts(session.db, task_id, new, "local", clock.now_iso())
    return dict(sorted(tree.items()))


# --- applying ---------------------------------------------------------------------------------


@dataclass
class ApplyReport:
    """What applying a ledger changed in the local store (all zero: it was already there)."""

    task_id: str
    effects_created: int = 0
    effects_moved: int = 0
    approvals_created: int = 0
    approvals_decided: int = 0
    approvals_overruled: int = 0
    validations: int = 0
    resumes: int = 0
    events: int = 0
    new_conflicts: int = 0
    facts_recorded: int = 0
    conflicts: tuple[Conflict, ...] = ()
    skipped: list[str] = field(default_factory=list)

    @property
    def changes(self) -> int:
        """How many rows were created or changed."""
        return (
            self.effects_created + self.effects_moved + self.approvals_created
            + self.approvals_decided + self.approvals_overruled + self.validations
            + self.resumes + self.events + self.new_conflicts
        )  # fmt: skip


class _Applier:
    """Brings one task's rows to a derived view, inside the caller's write transaction."""

    def __init__(self, session: Session, task_id: str, facts: Mapping[str, Fact]) -> None:
        self.session = session
        self.db = session.db
        self.task_id = task_id
        self.facts = facts
        self.report = ApplyReport(task_id)
        self.now = clock.now_iso()

    def audit(
        self, entity: str, entity_id: str, action: str, from_state: str | None,
        to_state: str | None, reason: str,
    ) -> None:  # fmt: skip
        store.add_event(
            self.db,
            keys=self.session.keys,
            at=self.now,
            actor=self.session.actor,
            interface=Interface.SYNC,
            task_id=self.task_id,
            entity=entity,
            entity_id=entity_id,
            action=action,
            from_state=from_state,
            to_state=to_state,
            reason=reason,
        )

    def content(self, fact: Fact) -> dict[str, Any]:
        return _content(self.session, self.task_id, fact)

    # effects

    def effect(self, view: EffectView) -> None:
        winner = self.facts[view.uid]
        row = store.find_effect(self.db, self.task_id, view.key, self.session.keys)
        wanted = dict(winner.plain)
        wanted["created_at"] = view.created_at
        if row is not None:
            have = effect_plain(row)
            if have == wanted:
                return
            if fact_uid(have) not in self.facts:
                self.report.skipped.append(f"effect {view.key} changed while syncing")
                return
        content = self.content(winner)
        text = {name: content.get(name) for name in ("target", "check", "note")}
        columns: dict[str, Any] = {
            "kind": winner.get("effect_kind"),
            "needs_approval": int(bool(winner.get("needs_approval"))),
            "attempts": view.attempts,
            "exit_code": winner.get("exit_code"),
            "started_at": winner.get("started_at"),
            "finished_at": winner.get("finished_at"),
            "created_at": view.created_at,
            "updated_at": winner.get("at"),
            "runner_pid": None,
            "runner_host": None,
        }
        if row is None:
            store.insert_effect(
                self.db,
                SideEffect(
                    task_id=self.task_id,
                    key=view.key,
                    kind=str(winner.get("effect_kind")),
                    state=view.state,
                    created_at=view.created_at,
                    updated_at=str(winner.get("at")),
                    target=text["target"],
                    check=text["check"],
                    note=text["note"],
                ),
                self.session.keys,
            )
            store.move_effect(
                self.db, self.task_id, view.key, view.state, view.state, keys=self.session.keys,
                **columns,
            )  # fmt: skip
            self.report.effects_created += 1
            self.audit("effect", view.key, "sync", None, view.state.value, _SYNC_REASON)
            return
        store.move_effect(
            self.db, self.task_id, view.key, row.state, view.state, keys=self.session.keys,
            **columns, **text,
        )  # fmt: skip
        self.report.effects_moved += 1
        self.audit("effect", view.key, "sync", row.state.value, view.state.value, _SYNC_REASON)

    # approvals

    def approval(self, view: ApprovalView) -> None:
        request = self.facts[view.request_uid]
        row = store.find_approval(self.db, view.id, self.session.keys)
        if row is None or fact_uid(request_plain(row)) != view.request_uid:
            asked = Approval(
                id=view.id,
                task_id=self.task_id,
                seq=int(request.get("seq")),
                action=str(self.content(request).get("action") or ""),
                risk=Risk(request.get("risk")),
                state=ApprovalState.PENDING,
                requested_by=str(request.get("requested_by")),
                requested_at=str(request.get("requested_at")),
                effect_key=request.get("effect_key"),
                expires_at=request.get("expires_at"),
                checkpoint_seq=request.get("checkpoint_seq"),
            )
            if row is None:
                store.insert_approval(self.db, asked, self.session.keys)
                self.report.approvals_created += 1
                self.audit("approval", view.id, "sync", None, ApprovalState.PENDING.value,
                           _SYNC_REASON)  # fmt: skip
            else:
                # Two stores numbered different requests alike: the one asked first keeps the
                # number; the one asked here stays in the ledger and shows as the conflict.
                store.replace_approval_request(self.db, asked, self.session.keys)
                self.report.approvals_overruled += 1
                why = f"{_SYNC_REASON}: requested first elsewhere (see the conflict)"
                self.audit("approval", view.id, "sync", row.state.value,
                           ApprovalState.PENDING.value, why)  # fmt: skip
            row = asked
        if view.decision_uid is None:
            return
        decision = self.facts[view.decision_uid]
        if fact_uid(decision_plain(row, row.state)) == view.decision_uid:
            return
        reason = self.content(decision).get("reason")
        to_state = ApprovalState(decision.get("state"))
        if row.state is ApprovalState.PENDING:
            store.decide_approval(
                self.db,
                view.id,
                to_state,
                decided_by=decision.get("decided_by"),
                decided_at=str(decision.get("decided_at")),
                reason=reason,
                keys=self.session.keys,
            )
            self.report.approvals_decided += 1
            why = _SYNC_REASON
        else:
            store.overrule_approval(
                self.db,
                view.id,
                to_state,
                decided_by=decision.get("decided_by"),
                decided_at=str(decision.get("decided_at")),
                reason=reason,
                keys=self.session.keys,
            )
            self.report.approvals_overruled += 1
            why = f"{_SYNC_REASON}: decided first elsewhere (see the conflict)"
        self.audit("approval", view.id, "sync", row.state.value, to_state.value, why)

    def end_wait(self) -> None:
        """A task waiting here whose approvals were all decided elsewhere is paused (as a local
        decision would leave it)."""
        if not (self.report.approvals_decided or self.report.approvals_overruled):
            return
        if store.get_task(self.db, self.task_id).status is not TaskStatus.WAITING:
            return
        now = clock.now()
        approvals = store.list_approvals(self.db, self.task_id, (ApprovalState.PENDING,))
        if any(effective(a, now).state is ApprovalState.PENDING for a in approvals):
            return
        store.update_task(self.db, self.task_id, status=TaskStatus.PAUSED, updated_at=self.now)
        self.audit("task", self.task_id, "status", TaskStatus.WAITING.value,
                   TaskStatus.PAUSED.value, f"{_SYNC_REASON}: no approval pending")  # fmt: skip

    # validations, resumes and events

    def validation(self, fact: Fact) -> None:
        columns = {name: fact.get(name) for name in _VALIDATION_PLAIN}
        findings = self.content(fact).get("findings")
        new_id = store.insert_validation(
            self.db, task_id=self.task_id, findings=findings if findings is not None else "[]",
            **columns,
        )  # fmt: skip
        self.report.validations += 1
        self.audit("validation", str(new_id), "sync", None, str(fact.get("verdict")),
                   _SYNC_REASON)  # fmt: skip

    def resume(self, fact: Fact, local: Mapping[str, dict[str, Any]]) -> None:
        identity = resume_identity(fact.plain)
        columns = {name: fact.get(name) for name in _RESUME_PLAIN}
        content = self.content(fact)
        columns.update({name: content.get(name) for name in _RESUME_SEALED})
        accept_reason = columns.pop("accept_reason", None)
        row = local.get(identity)
        if row is None:
            resume_id = store.insert_resume(
                self.db, task_id=self.task_id, synced_from="ledger", **columns
            )
            if accept_reason:
                store.update_resume(
                    self.db, resume_id, keys=self.session.keys, accept_reason=accept_reason
                )
            self.audit("resume", str(resume_id), "sync", None, str(fact.get("state")),
                       _SYNC_REASON)  # fmt: skip
        else:
            store.update_resume(
                self.db, int(row["id"]), keys=self.session.keys, accept_reason=accept_reason,
                **columns,
            )  # fmt: skip
            self.audit("resume", str(row["id"]), "sync", row.get("state"),
                       str(fact.get("state")), _SYNC_REASON)  # fmt: skip
        self.report.resumes += 1

    def event(self, fact: Fact) -> None:
        try:
            interface = Interface(fact.get("interface"))
        except ValueError:
            self.report.skipped.append(f"event {fact.get('event')}: unknown interface")
            return
        store.add_event(
            self.db,
            keys=self.session.keys,
            uid=str(fact.get("event")),
            at=str(fact.get("at")),
            actor=str(fact.get("actor")),
            interface=interface,
            task_id=self.task_id,
            entity=str(fact.get("entity")),
            entity_id=str(fact.get("entity_id")),
            action=str(fact.get("action")),
            from_state=fact.get("from_state"),
            to_state=fact.get("to_state"),
            reason=self.content(fact).get("reason"),
        )
        self.report.events += 1

    def conflict(self, conflict: Conflict) -> None:
        if store.record_ledger_conflict(
            self.db,
            self.task_id,
            conflict.entity,
            conflict.entity_id,
            canonical(conflict.as_dict()["kept"]).decode(),
            canonical(conflict.as_dict()["lost"]).decode(),
            conflict.lost_uid,
            conflict.why,
            self.now,
        ):
            self.report.new_conflicts += 1
            self.audit(conflict.entity, conflict.entity_id, "conflict", conflict.lost_state,
                       conflict.kept_state, conflict.describe())  # fmt: skip


def _local_event_uids(session: Session, task_id: str) -> set[str]:
    own = session.keys.store_id
    stored = store.event_uids(session.db, task_id)
    return {uid or f"{own}:{event_id}" for event_id, uid in stored.items()}


def apply_facts(session: Session, task_id: str, facts: Mapping[str, bytes]) -> ApplyReport:
    """Bring the local store to the state of its own ledger merged with `facts`, idempotently.

    Every change is audited with interface `sync`; applying the same facts again changes nothing.
    """
    store.get_task(session.db, task_id)
    incoming = parse_facts(facts)
    foreign = [f for f in incoming if f.get("task") != task_id]
    if foreign:
        raise LedgerFormatError(
            f"ledger fact {foreign[0].uid[:12]} belongs to task {foreign[0].get('task')!r}, "
            f"not {task_id!r}; the remote ledger ref is mixed up"
        )
    merged = merge_facts(export_facts(session, task_id), facts)
    parsed = parse_facts(merged)
    view = derive(parsed)
    by_uid = {fact.uid: fact for fact in parsed}
    applier = _Applier(session, task_id, by_uid)
    with write_txn(session.db):
        known = store.ledger_fact_bodies(session.db, task_id)
        fresh = [(f.uid, f.kind, merged[fact_path(f.uid)]) for f in incoming if f.uid not in known]
        store.record_ledger_facts(session.db, task_id, fresh, "remote", applier.now)
        applier.report.facts_recorded = len(fresh)
        for effect in view.effects.values():
            applier.effect(effect)
        for approval in view.approvals.values():
            applier.approval(approval)
        applier.end_wait()
        have = {fact_uid(_row_plain(VALIDATION, task_id, row, _VALIDATION_PLAIN))
                for row in store.list_validations(session.db, task_id)}  # fmt: skip
        for uid in sorted(view.validations - have):
            applier.validation(by_uid[uid])
        local_resumes = {
            resume_identity(row): row
            for row in store.list_resumes(session.db, task_id, session.keys)
        }
        for identity, uid in view.resumes.items():
            row = local_resumes.get(identity)
            if row is None or fact_uid(_row_plain(RESUME, task_id, row, _RESUME_PLAIN)) != uid:
                applier.resume(by_uid[uid], local_resumes)
        present = _local_event_uids(session, task_id)
        for uid in sorted(view.events, key=lambda u: (str(by_uid[u].get("at")), u)):
            if str(by_uid[uid].get("event")) not in present:
                applier.event(by_uid[uid])
        for conflict in view.conflicts:
            applier.conflict(conflict)
    applier.report.conflicts = view.conflicts
    return applier.report


def describe_conflict(record: Mapping[str, Any]) -> str:
    """One line for a stored conflict (`Engine.ledger_conflicts`), as listings show it."""
    kept, lost = record["kept"], record["lost"]
    kept_text = _said(kept.get("state"), kept.get("by"), kept.get("at"))
    lost_text = _said(lost.get("state"), lost.get("by"), lost.get("at"))
    return f"conflict: {record['why']}; kept {kept_text}, set aside {lost_text}"
