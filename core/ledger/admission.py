"""Which facts from elsewhere a store takes: signed, about this task, by a key the roster admits
for that kind of fact.

A remote is writable by more people than a task trusts (any contributor, a CI token, a fork's
maintainer), so nothing fetched is applied on the strength of being there. A fact is taken only
when its signature verifies (`Fact.signature_holds`, bound to the task and schema), it names
this task, and its author may make it now:

- roster changes: an owner of the version before (`core.ledger.roster`);
- approval decisions: an approver of the roster in force (or any member when it says so);
- everything else (effect states, requests, validations, resumes, audit events, checkpoint
  attestations): a member.

Anything else is set aside with one line saying why, kept (`ledger_rejected`) and reported,
and never blocks the facts that pass. A fact this store took before stays taken: removing a
member stops their *new* facts, it does not rewrite what was already settled.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass, field

from core.ledger.fact_format import DECISION, ROSTER, Fact
from core.ledger.roster import Roster


@dataclass(frozen=True)
class Rejection:
    """One fact set aside: where it was, who signed it, and why it was not taken."""

    path: str
    uid: str
    kind: str
    author: str | None
    why: str

    def describe(self, task_id: str) -> str:
        """One line for `pitstop sync` and `task show`."""
        from core.security import signing

        who = "unsigned"
        if self.author:
            try:
                who = f"signed by {signing.fingerprint(self.author)}"
            except signing.SigningError:
                who = "signed by a malformed key"
        return f"{task_id}: refused {self.kind} fact {self.uid[:12]} ({who}): {self.why}"


@dataclass
class Admission:
    """The facts taken, and those set aside."""

    accepted: list[Fact] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


def rejection(fact: Fact, why: str) -> Rejection:
    """A Rejection for `fact`."""
    return Rejection(path=fact.path, uid=fact.uid, kind=fact.kind, author=fact.by, why=why)


def why_refused(task_id: str, fact: Fact, roster: Roster) -> str | None:
    """Why `fact` may not be taken for `task_id` under `roster` (None: it may)."""
    from core.security import signing

    if fact.get("task") != task_id:
        return f"it belongs to task {fact.get('task')!r}, not {task_id!r} (moved between tasks)"
    if fact.legacy:
        return "unsigned (written by an older Pitstop), so not verified"
    if not fact.signature_holds():
        return "its signature does not verify: it was altered or forged"
    if not roster.is_member(fact.by):
        try:
            shown = signing.fingerprint(str(fact.by))
        except signing.SigningError:
            shown = "a malformed key"
        return f"signed by {shown}, which the task's roster does not admit"
    if fact.kind == DECISION and not roster.may_decide(fact.by):
        return (
            f"a decision signed by {roster.label_of(fact.by) or 'a member'}, who is not an "
            f"approver of this task (approvers: {roster.approvers_text()})"
        )
    return None


def admit(
    task_id: str,
    incoming: Iterable[Fact],
    roster: Roster,
    known: Set[str] = frozenset(),
    roster_rejected: Iterable[tuple[Fact, str]] = (),
) -> Admission:
    """Judge every incoming fact not already taken (`known` uids) against `roster`.

    Roster facts were judged when the roster was resolved: those on its chain are taken, those
    in `roster_rejected` set aside.
    """
    result = Admission()
    refused_roster = {fact.uid: why for fact, why in roster_rejected}
    for fact in incoming:
        if fact.uid in known:
            continue
        if fact.kind == ROSTER:
            why = refused_roster.get(fact.uid)
            if why is None and not fact.signature_holds():
                why = "its signature does not verify: it was altered or forged"
        else:
            why = why_refused(task_id, fact, roster)
        if why is None:
            result.accepted.append(fact)
        else:
            result.rejected.append(rejection(fact, why))
    return result
