"""Bringing a task's rows to what the merged ledger says: every change audited as `sync`.

Applying is idempotent: a row that already stands as its winning fact says is left alone, and a
row changed here while the sync ran (its fact is not in the merged set) is skipped, not
overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from core import clock, store
from core.ledger.approvals import effective
from core.ledger.fact_format import Fact, canonical, fact_uid
from core.ledger.local_facts import (
    LEGACY_EFFECT_KIND,
    RESUME_PLAIN,
    RESUME_SEALED,
    VALIDATION_PLAIN,
    decision_plain,
    effect_plain,
    open_content,
    request_plain,
)
from core.ledger.merge import ApprovalView, Conflict, EffectView, resume_identity
from core.ledger.states import MAX_KIND_CHARS
from core.models import Approval, ApprovalState, Interface, Risk, SideEffect, TaskStatus
from core.redaction import free_text

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from core.session import Session

SYNC_REASON = "brought in by ledger sync"


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
    rejected: list[str] = field(default_factory=list)
    rejected_total: int = 0

    @property
    def changes(self) -> int:
        """How many rows were created or changed."""
        return (
            self.effects_created + self.effects_moved + self.approvals_created
            + self.approvals_decided + self.approvals_overruled + self.validations
            + self.resumes + self.events + self.new_conflicts
        )  # fmt: skip


def _effect_kind(said: object, row: SideEffect | None) -> str:
    """The kind to store for an effect a fact brings: another store's word, redacted before
    it is stored (invariant 2); the row's own when the fact says none."""
    if isinstance(said, str) and said.strip():
        return free_text.persistable(said)[:MAX_KIND_CHARS]
    return row.kind if row is not None else "unknown"


class RowApplier:
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
        """Record one change the sync made, as interface `sync`."""
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
        """A fact's sealed content, opened."""
        return open_content(self.session, self.task_id, fact)

    # effects

    def effect(self, view: EffectView) -> None:
        """Bring one effect row to its winning fact (created when missing)."""
        winner = self.facts[view.uid]
        row = store.find_effect(self.db, self.task_id, view.key, self.session.keys)
        wanted = dict(winner.plain)
        legacy_kind = wanted.pop(LEGACY_EFFECT_KIND, None)  # an older Pitstop's plain kind
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
        kind = _effect_kind(content.get("kind") or legacy_kind, row)
        columns: dict[str, Any] = {
            "kind": kind,
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
                    kind=kind,
                    state=view.state,
                    created_at=view.created_at,
                    updated_at=str(winner.get("at")),
                    target=text["target"],
                    check=text["check"],
                    note=text["note"],
                    check_foreign=bool(text["check"]),  # another store's: shown before it runs
                ),
                self.session.keys,
            )
            store.move_effect(
                self.db, self.task_id, view.key, view.state, view.state, keys=self.session.keys,
                **columns,
            )  # fmt: skip
            self.report.effects_created += 1
            self.audit("effect", view.key, "sync", None, view.state.value, SYNC_REASON)
            return
        if text["check"] != row.check:  # another store's check: shown before it runs
            columns["check_foreign"] = bool(text["check"])
        store.move_effect(
            self.db, self.task_id, view.key, row.state, view.state, keys=self.session.keys,
            **columns, **text,
        )  # fmt: skip
        self.report.effects_moved += 1
        self.audit("effect", view.key, "sync", row.state.value, view.state.value, SYNC_REASON)

    # approvals

    def approval(self, view: ApprovalView) -> None:
        """Bring one approval to its view: the request asked first, then the first decision."""
        row = self._request(view)
        if view.decision_uid is not None:
            self._decision(view, row)

    def _request(self, view: ApprovalView) -> Approval:
        """The approval's row, created or replaced to match the request that won."""
        request = self.facts[view.request_uid]
        row = store.find_approval(self.db, view.id, self.session.keys)
        if row is not None and fact_uid(request_plain(row)) == view.request_uid:
            return row
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
                       SYNC_REASON)  # fmt: skip
        else:
            # Two stores numbered different requests alike: the one asked first keeps the
            # number; the one asked here stays in the ledger and shows as the conflict.
            store.replace_approval_request(self.db, asked, self.session.keys)
            self.report.approvals_overruled += 1
            why = f"{SYNC_REASON}: requested first elsewhere (see the conflict)"
            self.audit("approval", view.id, "sync", row.state.value,
                       ApprovalState.PENDING.value, why)  # fmt: skip
        return asked

    def _decision(self, view: ApprovalView, row: Approval) -> None:
        """Record the decision made first, unless the row already holds it."""
        assert view.decision_uid is not None
        decision = self.facts[view.decision_uid]
        if fact_uid(decision_plain(row, row.state)) == view.decision_uid:
            return
        reason = self.content(decision).get("reason")
        to_state = ApprovalState(decision.get("state"))
        pending = row.state is ApprovalState.PENDING
        record = store.decide_approval if pending else store.overrule_approval
        record(
            self.db,
            view.id,
            to_state,
            decided_by=decision.get("decided_by"),
            decided_at=str(decision.get("decided_at")),
            reason=reason,
            keys=self.session.keys,
        )
        if pending:
            self.report.approvals_decided += 1
            why = SYNC_REASON
        else:
            self.report.approvals_overruled += 1
            why = f"{SYNC_REASON}: decided first elsewhere (see the conflict)"
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
                   TaskStatus.PAUSED.value, f"{SYNC_REASON}: no approval pending")  # fmt: skip

    # validations, resumes and events

    def validation(self, fact: Fact) -> None:
        """Record a validation run elsewhere."""
        columns = {name: fact.get(name) for name in VALIDATION_PLAIN}
        findings = self.content(fact).get("findings")
        new_id = store.insert_validation(
            self.db, task_id=self.task_id, findings=findings if findings is not None else "[]",
            **columns,
        )  # fmt: skip
        self.report.validations += 1
        self.audit("validation", str(new_id), "sync", None, str(fact.get("verdict")),
                   SYNC_REASON)  # fmt: skip

    def resume(self, fact: Fact, local: Mapping[str, dict[str, Any]]) -> None:
        """Record or update a resume as history (never a live lease here)."""
        identity = resume_identity(fact.plain)
        columns = {name: fact.get(name) for name in RESUME_PLAIN}
        content = self.content(fact)
        columns.update({name: content.get(name) for name in RESUME_SEALED})
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
                       SYNC_REASON)  # fmt: skip
        else:
            store.update_resume(
                self.db, int(row["id"]), keys=self.session.keys, accept_reason=accept_reason,
                **columns,
            )  # fmt: skip
            self.audit("resume", str(row["id"]), "sync", row.get("state"),
                       str(fact.get("state")), SYNC_REASON)  # fmt: skip
        self.report.resumes += 1

    def event(self, fact: Fact) -> None:
        """Record an audit event from elsewhere (one of an unknown interface is skipped)."""
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
        """Keep a conflict the merge found, once."""
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
