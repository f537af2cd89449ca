"""The ledger that travels: a task's approvals, effect states, validations, resumes and audit
events as immutable facts that merge by set union, so every order of syncs converges (DESIGN §6).

The two entry points a sync uses: `export_facts` (the task's ledger tree, for a push) and
`apply_facts` (a fetched tree merged in). The parts: a fact as bytes (`core.ledger.fact_format`),
the store's rows as facts (`core.ledger.local_facts`), how a set of facts resolves
(`core.ledger.merge`) and bringing the rows to it (`core.ledger.apply`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from core import clock, store
from core.ledger.apply import ApplyReport, RowApplier
from core.ledger.fact_format import (
    RESUME,
    VALIDATION,
    LedgerFormatError,
    encode_fact,
    fact_path,
    fact_uid,
    merge_facts,
    parse_facts,
)
from core.ledger.local_facts import (
    RESUME_PLAIN,
    VALIDATION_PLAIN,
    local_event_uids,
    local_facts,
    row_plain,
    seal_content,
)
from core.ledger.merge import LedgerView, derive, resume_identity
from core.store.db import write_txn

if TYPE_CHECKING:
    from core.session import Session


def export_facts(session: Session, task_id: str) -> dict[str, bytes]:
    """The task's ledger tree: path → fact bytes, for its rows as they stand and every fact
    applied from elsewhere. Unchanged rows give the same paths and the same bytes every time."""
    store.get_task(session.db, task_id)
    known = store.ledger_fact_bodies(session.db, task_id)
    tree: dict[str, bytes] = {}
    new: list[tuple[str, str, bytes]] = []
    for plain, content in local_facts(session, task_id):
        uid = fact_uid(plain)
        body = known.get(uid)
        if body is None:
            body = encode_fact(plain, seal_content(session, task_id, uid, content))
            known[uid] = body
            new.append((uid, str(plain["kind"]), body))
        tree[fact_path(uid)] = body
    for uid, body in known.items():
        tree.setdefault(fact_path(uid), body)
    if new:
        with write_txn(session.db):
            store.record_ledger_facts(session.db, task_id, new, "local", clock.now_iso())
    return dict(sorted(tree.items()))


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
    applier = RowApplier(session, task_id, {fact.uid: fact for fact in parsed})
    with write_txn(session.db):
        known = store.ledger_fact_bodies(session.db, task_id)
        fresh = [(f.uid, f.kind, merged[fact_path(f.uid)]) for f in incoming if f.uid not in known]
        store.record_ledger_facts(session.db, task_id, fresh, "remote", applier.now)
        applier.report.facts_recorded = len(fresh)
        _apply_view(session, task_id, view, applier)
    applier.report.conflicts = view.conflicts
    return applier.report


def _apply_view(session: Session, task_id: str, view: LedgerView, applier: RowApplier) -> None:
    """Bring every row the view names to its state, inside the caller's transaction."""
    by_uid = applier.facts
    for effect in view.effects.values():
        applier.effect(effect)
    for approval in view.approvals.values():
        applier.approval(approval)
    applier.end_wait()
    have = {fact_uid(row_plain(VALIDATION, task_id, row, VALIDATION_PLAIN))
            for row in store.list_validations(session.db, task_id)}  # fmt: skip
    for uid in sorted(view.validations - have):
        applier.validation(by_uid[uid])
    local_resumes = {
        resume_identity(row): row for row in store.list_resumes(session.db, task_id, session.keys)
    }
    for identity, uid in view.resumes.items():
        row = local_resumes.get(identity)
        if row is None or fact_uid(row_plain(RESUME, task_id, row, RESUME_PLAIN)) != uid:
            applier.resume(by_uid[uid], local_resumes)
    present = local_event_uids(session, task_id)
    for uid in sorted(view.events, key=lambda u: (str(by_uid[u].get("at")), u)):
        if str(by_uid[uid].get("event")) not in present:
            applier.event(by_uid[uid])
    for conflict in view.conflicts:
        applier.conflict(conflict)
