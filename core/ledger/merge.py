"""How a set of ledger facts resolves: the winning fact of each effect and approval, and the
conflicts it sets aside (DESIGN §6).

The ledger is a grow-only set (a CRDT): the union of facts is the merge, and `derive` is a pure
function of the set (plain fields only, no key), so every order of syncs converges:

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

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from core.ledger.fact_format import (
    DECISION,
    EFFECT,
    EVENT,
    REQUEST,
    RESUME,
    VALIDATION,
    Fact,
    parse_facts,
)
from core.models import ApprovalState, EffectState

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

# How much a state knows about whether the action happened; a merge never moves down this order.
KNOWLEDGE: Mapping[EffectState, int] = {
    EffectState.PROPOSED: 0,
    EffectState.IN_PROGRESS: 1,
    EffectState.UNCERTAIN: 2,
    EffectState.CONFIRMED: 3,
    EffectState.FAILED: 3,
}
_SETTLED = (EffectState.CONFIRMED.value, EffectState.FAILED.value)


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


def describe_conflict(record: Mapping[str, Any]) -> str:
    """One line for a stored conflict (`Engine.ledger_conflicts`), as listings show it."""
    kept, lost = record["kept"], record["lost"]
    kept_text = _said(kept.get("state"), kept.get("by"), kept.get("at"))
    lost_text = _said(lost.get("state"), lost.get("by"), lost.get("at"))
    return f"conflict: {record['why']}; kept {kept_text}, set aside {lost_text}"
