"""The ledger that travels: a task's approvals, effect states, validations, resumes and audit
events as immutable facts that merge by set union, so every order of syncs converges (DESIGN §6).

The two entry points a sync uses: `export_facts` (the task's ledger tree, for a push) and
`apply_facts` (a fetched tree merged in). The parts: a fact as bytes (`core.ledger.fact_format`),
the store's rows as facts (`core.ledger.local_facts`), how a set of facts resolves
(`core.ledger.merge`) and bringing the rows to it (`core.ledger.apply`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from core import clock, store
from core.ledger.admission import Admission, Rejection, admit
from core.ledger.apply import ApplyReport, RowApplier
from core.ledger.fact_format import (
    RESUME,
    ROSTER,
    SCHEMA,
    VALIDATION,
    encode_fact,
    fact_path,
    fact_uid,
    merge_facts,
    parse_each,
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
from core.ledger.roster import Roster, TrustError, resolve
from core.ledger.trust import ensure_roster, pin_fetched
from core.store.db import write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)

if TYPE_CHECKING:
    from core.session import Session

_SIGNED = b'"schema":"' + SCHEMA.encode() + b'"'


def _signed_records(session: Session, task_id: str) -> dict[str, tuple[str, bytes]]:
    """The facts this store holds for a task that a Pitstop which signs wrote: uid → (kind,
    bytes). Unsigned ones from before are history here, never sent on."""
    return {
        uid: (kind, body)
        for uid, (kind, body) in store.ledger_fact_records(session.db, task_id).items()
        if _SIGNED in body
    }


def export_facts(session: Session, task_id: str) -> dict[str, bytes]:
    """The task's ledger tree: path → fact bytes, for its rows as they stand (signed here) and
    every fact taken from elsewhere. Unchanged rows give the same paths and bytes every time.

    A task created here founds its roster now, if it has none: that is when it first leaves.
    """
    store.get_task(session.db, task_id)
    if session.keys.scope(task_id) == session.keys.store_id:
        ensure_roster(session, task_id)
    known = _signed_records(session, task_id)
    tree: dict[str, bytes] = {}
    new: list[tuple[str, str, bytes]] = []
    for plain, content in local_facts(session, task_id):
        uid = fact_uid(plain)
        kind = str(plain["kind"])
        if uid not in known:
            sealed = seal_content(session, task_id, uid, content)
            known[uid] = (kind, encode_fact(plain, sealed, session.signing_key()))
            new.append((uid, kind, known[uid][1]))
        tree[fact_path(uid, kind)] = known[uid][1]
    for uid, (kind, body) in known.items():
        tree.setdefault(fact_path(uid, kind), body)
    if new:
        with write_txn(session.db):
            store.record_ledger_facts(session.db, task_id, new, "local", clock.now_iso())
    return dict(sorted(tree.items()))


def record_signed_fact(session: Session, task_id: str, plain: Mapping[str, object]) -> str:
    """Sign and keep one fact made here that no row stands for (a checkpoint attestation);
    return its uid. Inside or outside a transaction; a known uid keeps its bytes."""
    uid = fact_uid(plain)
    body = encode_fact(plain, None, session.signing_key())
    store.record_ledger_facts(
        session.db, task_id, [(uid, str(plain["kind"]), body)], "local", clock.now_iso()
    )
    return uid


class Screening:
    """What a set of facts from elsewhere comes to: the roster in force, the facts taken (path →
    bytes) and those set aside."""

    def __init__(self, roster: Roster, admission: Admission, taken: dict[str, bytes]) -> None:
        self.roster = roster
        self.admission = admission
        self.taken = taken

    @property
    def rejected(self) -> list[Rejection]:
        """The facts set aside, with why."""
        return self.admission.rejected


def screen_facts(
    session: Session,
    task_id: str,
    facts: Mapping[str, bytes],
    *,
    expect_fingerprint: str | None = None,
) -> Screening:
    """Judge facts from elsewhere against the task's roster without applying anything.

    The roster is resolved from the roster facts held here and those offered, from the genesis
    this store pinned (or, for a task met for the first time, its one founder). A task created
    here founds its roster first. A task with no signed roster is a TrustError.
    """
    if session.keys.scope(task_id) == session.keys.store_id and task_id in store.task_ids(
        session.db
    ):
        ensure_roster(session, task_id)
    incoming, refused = parse_each(facts)
    known = _signed_records(session, task_id)
    held, _ = parse_each(
        {fact_path(uid, ROSTER): body for uid, (kind, body) in known.items() if kind == ROSTER}
    )
    resolution = resolve(
        task_id,
        [*held, *incoming],
        pinned=store.trusted_genesis(session.db, task_id),
        expect_fingerprint=expect_fingerprint,
    )
    if resolution.roster is None:
        raise TrustError(
            f"task {task_id} has no roster signed by its owner (it was shared by an older "
            "Pitstop, or its ledger was replaced); nothing of it was taken. Ask its owner to "
            "push it again with this version"
        )
    admission = admit(task_id, incoming, resolution.roster, set(known), resolution.rejected)
    admission.rejected += [_unreadable(path, facts[path], why) for path, why in refused]
    taken = {fact.path: facts[fact.path] for fact in admission.accepted}
    return Screening(resolution.roster, admission, taken)


def _unreadable(path: str, data: bytes, why: str) -> Rejection:
    name = path.rsplit("/", 1)[-1].removesuffix(".json")
    uid = name[:64] or hashlib.sha256(data).hexdigest()
    return Rejection(path=path, uid=uid, kind="unreadable", author=None, why=why)


def keep_rejected(
    session: Session, task_id: str, facts: Mapping[str, bytes], rejected: list[Rejection]
) -> list[Rejection]:
    """Keep facts set aside (inside the caller's transaction); return those not seen before."""
    seen = store.rejected_body_hashes(session.db, task_id)
    fresh: list[Rejection] = []
    rows = []
    for item in rejected:
        digest = hashlib.sha256(facts.get(item.path, b"")).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        fresh.append(item)
        rows.append({"body_sha256": digest, "uid": item.uid, "kind": item.kind,
                     "author": item.author, "why": item.why})  # fmt: skip
    store.record_rejected_facts(session.db, task_id, rows, clock.now_iso())
    return fresh


def apply_facts(
    session: Session,
    task_id: str,
    facts: Mapping[str, bytes],
    *,
    expect_fingerprint: str | None = None,
    screening: Screening | None = None,
) -> ApplyReport:
    """Bring the local store to the state of its own ledger merged with the facts of `facts`
    its roster admits, idempotently; keep the others aside.

    Every change is audited with interface `sync`; applying the same facts again changes nothing.
    """
    store.get_task(session.db, task_id)
    if screening is None:
        screening = screen_facts(session, task_id, facts, expect_fingerprint=expect_fingerprint)
    merged = merge_facts(export_facts(session, task_id), screening.taken)
    parsed = parse_facts(merged)
    view = derive(parsed)
    applier = RowApplier(session, task_id, {fact.uid: fact for fact in parsed})
    with write_txn(session.db):
        if store.trusted_genesis(session.db, task_id) is None:
            pin_fetched(session, task_id, screening.roster, expect_fingerprint is not None)
        fresh = [(f.uid, f.kind, screening.taken[f.path]) for f in screening.admission.accepted]
        store.record_ledger_facts(session.db, task_id, fresh, "remote", applier.now)
        applier.report.facts_recorded = len(fresh)
        new_rejections = keep_rejected(session, task_id, facts, screening.rejected)
        applier.report.rejected = [r.describe(task_id) for r in new_rejections]
        applier.report.rejected_total = len(store.rejected_facts(session.db, task_id))
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
