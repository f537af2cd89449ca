"""Ledger sync: facts merge as a set, so every order of syncs converges and no decision is lost.

A Hypothesis test drives two real stores that hold the same task (B adopted it from A, as a
fetch does) through effect moves, operator settlements, approval requests and decisions,
validations and resumes, with syncs in random directions (directly, or through a shared remote
tree) in between. After a final round of syncs both stores derive the same view and hold the
same rows; every decision either stands or shows as a conflict, the one made first winning; and
no sync moves an effect down in knowledge. A third store that receives every ledger tree the run
shipped, in any order, ends with the same rows. Pure property tests pin merge and derive; another
test scans the exported bytes for the content they must never show in clear.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

import pyrage
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from core import clock, store
from core.engine import Engine
from core.errors import PitstopError
from core.ledger.apply import ApplyReport
from core.ledger.fact_format import (
    DECISION,
    EFFECT,
    REQUEST,
    SCHEMA,
    Fact,
    LedgerFormatError,
    encode_fact,
    fact_path,
    fact_uid,
    merge_facts,
    parse_facts,
)
from core.ledger.merge import KNOWLEDGE, derive
from core.ledger.states import TRANSITIONS
from core.models import ApprovalState, EffectState, Interface
from core.security import signing
from core.store.db import write_txn

TASK = "ship-it"
KEYS = ("deploy", "pr")
MARK = "zqxmarker"  # every piece of content below carries it; no exported byte may


# --- two stores holding one task ----------------------------------------------------------------


def _twin(a: Engine, b_root: Path, label: str = "bob") -> Engine:
    """Store B holding A's task, as a fetch leaves it: same id, content bound to A's store, and
    B's operator a member of the task's roster with a signing key of their own."""
    key = signing.create_signing_key()
    b = Engine(b_root, signing_key=key)
    recipient = str(pyrage.x25519.Identity.generate().to_public())
    a.share_task(TASK, [recipient], signer=key.public, label=label)
    task = a.get_task(TASK)
    b.adopt_task(task, origin_store=a.keys.store_id, data_key=a.keys.data_key(TASK, create=True))
    roster = {p: d for p, d in a.export_ledger(TASK).items() if p.startswith("roster/")}
    b.apply_ledger(TASK, roster)  # a fetch takes the roster first: B knows whom to trust
    return b


@pytest.fixture
def make_pair(repo: Path) -> Iterator[Callable[[], tuple[Engine, Engine]]]:
    """Factory: a fresh pair of stores (A created the task, B adopted it) per call."""
    opened: list[Engine] = []
    dirs: list[tempfile.TemporaryDirectory[str]] = []

    def factory() -> tuple[Engine, Engine]:
        root = tempfile.TemporaryDirectory()
        dirs.append(root)
        a = Engine(Path(root.name) / "a", actor="alice")
        a.start_task(repo=repo, objective=f"objective {MARK} secret plan", task_id=TASK)
        b = _twin(a, Path(root.name) / "b")
        b.actor = "bob"
        opened.extend((a, b))
        return a, b

    yield factory
    for engine in opened:
        engine.close()
    for root in dirs:
        root.cleanup()


@pytest.fixture
def make_twin() -> Iterator[Callable[[Engine], Engine]]:
    """Factory: one more store holding A's task (a third machine that fetched it)."""
    opened: list[Engine] = []
    dirs: list[tempfile.TemporaryDirectory[str]] = []

    def factory(a: Engine) -> Engine:
        root = tempfile.TemporaryDirectory()
        dirs.append(root)
        twin = _twin(a, Path(root.name) / "c", label=f"carol{len(opened)}")
        opened.append(twin)
        return twin

    yield factory
    for engine in opened:
        engine.close()
    for root in dirs:
        root.cleanup()


def _sync(src: Engine, dst: Engine) -> ApplyReport:
    return dst.apply_ledger(TASK, src.export_ledger(TASK))


def _add_validation(engine: Engine, verdict: str) -> None:
    with write_txn(engine.db):
        store.insert_validation(
            engine.db,
            task_id=TASK,
            seq=None,
            verdict=verdict,
            findings=json.dumps([{"check": "lockfiles", "detail": f"{MARK} uv.lock moved"}]),
            duration_ms=12,
            at=clock.now_iso(),
            actor=engine.actor,
            interface=Interface.CLI.value,
        )


def _add_resume(engine: Engine, finish: bool) -> None:
    now = clock.now_iso()
    with write_txn(engine.db):
        resume_id = store.insert_resume(
            engine.db,
            task_id=TASK,
            seq=1,
            state="active",
            verdict="ready",
            workdir=f"/tmp/{MARK}-work",
            holder_pid=4242,
            holder_host="elsewhere",
            lease_until="2999-01-01T00:00:00.000000Z",
            started_at=now,
            actor=engine.actor,
        )
        if finish:
            store.update_resume(
                engine.db,
                resume_id,
                keys=engine.keys,
                state="finished",
                finished_at=clock.now_iso(),
                accepted=1,
                accept_reason=f"{MARK} looks right",
            )


# --- what the run did, to check survival against ------------------------------------------------


@dataclass
class Made:
    """Decisions made during a run, as they were made."""

    approvals: list[tuple[str, str, str, str]] = field(default_factory=list)  # id, state, by, at
    settled: list[tuple[str, str, int]] = field(default_factory=list)  # key, state, attempt


def _knowledge(state: EffectState, attempts: int) -> tuple[int, int]:
    return attempts, KNOWLEDGE[state]


def _effect_rows(engine: Engine) -> dict[str, tuple[Any, ...]]:
    return {
        e.key: (e.kind, e.state, e.attempts, e.exit_code, e.created_at, e.updated_at, e.target,
                e.check, e.note, e.started_at, e.finished_at, e.needs_approval)
        for e in engine.list_effects(TASK)
    }  # fmt: skip


def _approval_rows(engine: Engine) -> dict[str, tuple[Any, ...]]:
    return {
        a.id: (a.action, a.state, a.decided_by, a.decided_at, a.reason, a.requested_at)
        for a in store.list_approvals(engine.db, TASK, keys=engine.keys)
    }


def _validation_rows(engine: Engine) -> list[tuple[Any, ...]]:
    rows = store.list_validations(engine.db, TASK)
    return sorted(
        (r["seq"] or 0, r["verdict"], r["at"], r["actor"], r["findings"], r["interface"])
        for r in rows
    )


def _resume_rows(engine: Engine) -> list[tuple[Any, ...]]:
    rows = store.list_resumes(engine.db, TASK, engine.keys)
    return sorted(
        (r["started_at"], r["actor"], r["state"], r["accepted"], r["accept_reason"], r["workdir"])
        for r in rows
    )


def _event_ids(engine: Engine) -> set[str]:
    own = engine.keys.store_id
    return {uid or f"{own}:{i}" for i, uid in store.event_uids(engine.db, TASK).items()}


def _state(engine: Engine) -> tuple[Any, ...]:
    return (
        _effect_rows(engine),
        _approval_rows(engine),
        _validation_rows(engine),
        _resume_rows(engine),
        _event_ids(engine),
    )


# --- the run --------------------------------------------------------------------------------------

ops = st.one_of(
    st.tuples(st.just("advance"), st.sampled_from(KEYS), st.integers(0, 2)),
    st.tuples(st.just("advance"), st.sampled_from(KEYS), st.integers(0, 2)),
    st.tuples(st.just("advance"), st.sampled_from(KEYS), st.integers(0, 2)),
    st.tuples(st.just("request"), st.sampled_from((None, *KEYS))),
    st.tuples(st.just("decide"), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("decide"), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("validate"), st.sampled_from(("ready", "stale"))),
    st.tuples(st.just("resume"), st.booleans()),
    st.tuples(st.just("sync"), st.sampled_from(("a>b", "b>a", "a>r", "b>r", "r>a", "r>b"))),
    st.tuples(st.just("sync"), st.sampled_from(("a>b", "b>a", "a>r", "b>r", "r>a", "r>b"))),
)
directions = st.sampled_from(("a>b", "b>a", "a>r", "b>r", "r>a", "r>b"))


def _interleave(round_: tuple[list[Any], list[Any], list[str]]) -> list[tuple[str, Any]]:
    """One round: both stores act (interleaved, neither seeing the other), then some syncs."""
    on_a, on_b, syncs = round_
    acts = [
        act
        for pair in zip_longest(on_a, on_b)
        for act in (("a", pair[0]), ("b", pair[1]))
        if act[1] is not None
    ]
    return acts + [("a", ("sync", direction)) for direction in syncs]


rounds = st.tuples(
    st.lists(ops, max_size=5), st.lists(ops, max_size=5), st.lists(directions, max_size=3)
).map(_interleave)
steps = st.lists(rounds, min_size=2, max_size=6).map(lambda found: [s for r in found for s in r])


class Run:
    """Two stores, a shared remote tree, and what was decided in each."""

    def __init__(self, a: Engine, b: Engine) -> None:
        self.stores = {"a": a, "b": b}
        self.remote: dict[str, bytes] = {}
        self.made = Made()
        self.shipped: list[dict[str, bytes]] = []  # every ledger tree that left a store

    def act(self, where: str, op: tuple[Any, ...]) -> None:
        engine = self.stores[where]
        name = op[0]
        try:
            if name == "advance":
                self.advance(engine, op[1], op[2])
            elif name == "request":  # an agent may ask wherever the task was resumed
                engine.request_approval(TASK, f"{MARK} run the deploy", effect_key=op[1])
            elif name == "decide":
                pending = engine.list_approvals(TASK, pending_only=True)
                if not pending:
                    engine.request_approval(TASK, f"{MARK} run the deploy from {where}")
                    return
                chosen = pending[op[1] % len(pending)]
                decided = engine.decide_approval(chosen.id, op[2], f"{MARK} because")
                self.made.approvals.append(
                    (decided.id, decided.state.value, str(decided.decided_by),
                     str(decided.decided_at))
                )  # fmt: skip
            elif name == "validate":
                _add_validation(engine, op[1])
            elif name == "resume":
                _add_resume(engine, op[1])
            elif name == "sync":
                self.sync(op[1])
        except PitstopError:
            pass  # a move the ledger refuses changes nothing; the run goes on

    def advance(self, engine: Engine, key: str, choice: int) -> None:
        """Move an effect along one of the transitions its state allows here."""
        if key not in {effect.key for effect in engine.list_effects(TASK)}:
            engine.propose_effect(TASK, key, "deploy", target=f"https://{MARK}.example/{key}")
            return
        state = engine.get_effect(TASK, key).state
        options = sorted(TRANSITIONS[state])
        if not options:
            return
        to_state = options[choice % len(options)]
        if state is EffectState.UNCERTAIN:  # an operator settles it, with a reason
            moved = engine.move_effect(TASK, key, to_state, reason=f"{MARK} checked by hand")
        else:
            moved = engine.move_effect(TASK, key, to_state, note=f"{MARK} note {to_state}")
        if moved.state in (EffectState.CONFIRMED, EffectState.FAILED):
            self.made.settled.append((key, moved.state.value, moved.attempts))

    def sync(self, direction: str) -> None:
        source, target = direction.split(">")
        if source == "r":
            self.apply(self.stores[target], self.remote)
        elif target == "r":
            self.shipped.append(self.stores[source].export_ledger(TASK))
            self.remote = merge_facts(self.remote, self.shipped[-1])
        else:
            self.shipped.append(self.stores[source].export_ledger(TASK))
            self.apply(self.stores[target], self.shipped[-1])

    def apply(self, engine: Engine, facts: Mapping[str, bytes]) -> None:
        before = {e.key: e for e in engine.list_effects(TASK)}
        report = engine.apply_ledger(TASK, facts)
        conflicted = {c.entity_id for c in report.conflicts if c.entity == "effect"}
        for effect in engine.list_effects(TASK):
            was = before.get(effect.key)
            if was is None or effect.key in conflicted:
                continue
            # No sync moves an effect down in knowledge (a confirmed effect stays confirmed).
            if was.state is EffectState.CONFIRMED:
                assert effect.state is EffectState.CONFIRMED
            else:
                assert effect.state is EffectState.CONFIRMED or _knowledge(
                    effect.state, effect.attempts
                ) >= _knowledge(was.state, was.attempts)
        again = engine.apply_ledger(TASK, facts)
        assert again.changes == 0, "applying the same facts twice changed the store again"

    def settle_all(self) -> None:
        a, b = self.stores["a"], self.stores["b"]
        for _ in range(3):
            self.apply(b, merge_facts(self.remote, a.export_ledger(TASK)))
            self.apply(a, b.export_ledger(TASK))


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=steps)
def test_every_order_of_syncs_converges_and_keeps_every_decision(
    make_pair: Callable[[], tuple[Engine, Engine]], steps: list[tuple[str, tuple[Any, ...]]]
) -> None:
    a, b = make_pair()
    run = Run(a, b)
    for where, op in steps:
        run.act(where, op)
    run.settle_all()

    facts_a, facts_b = a.export_ledger(TASK), b.export_ledger(TASK)
    assert facts_a.keys() == facts_b.keys()
    view = derive(facts_a)
    assert derive(facts_b) == view
    assert _state(a) == _state(b)
    assert a.apply_ledger(TASK, facts_b).changes == 0
    assert b.apply_ledger(TASK, facts_a).changes == 0

    conflicts = {
        (c.entity, c.entity_id, c.lost_state, c.lost_by, c.lost_at) for c in view.conflicts
    }
    event(f"conflicts: {sorted({c.entity for c in view.conflicts})}")
    event(f"decisions: {min(len(run.made.approvals), 2)}+")
    event(f"settlements: {min(len(run.made.settled), 2)}+")
    event(f"effects: {sorted({e.state.value for e in a.list_effects(TASK)})}")
    stored = {(c["entity"], c["entity_id"]) for c in a.ledger_conflicts(TASK)}
    assert stored == {(c.entity, c.entity_id) for c in view.conflicts}
    assert stored == {(c["entity"], c["entity_id"]) for c in b.ledger_conflicts(TASK)}

    # Every approval decision stands, agrees with the same decision made first elsewhere, or
    # shows as a conflict; the one made first wins.
    final = {x.id: x for x in a.list_approvals(TASK)}
    for approval_id, state, by, at in run.made.approvals:
        kept = final[approval_id]
        assert kept.state.value == state or ("approval", approval_id, state, by, at) in conflicts
    # (A decision on a request that lost its number to one asked first elsewhere is set aside.)
    set_aside = {
        (c.entity_id, c.lost_state, c.lost_by, c.lost_at)
        for c in view.conflicts
        if c.why == "decided on a request set aside"
    }
    for approval_id in {m[0] for m in run.made.approvals}:
        made = sorted(
            (at, by, state)
            for i, state, by, at in run.made.approvals
            if i == approval_id and (i, state, by, at) not in set_aside
        )
        kept = final[approval_id]
        if not made:
            assert kept.decided_at is None or kept.state is ApprovalState.EXPIRED
            continue
        at, by, state = made[0]
        assert (kept.state.value, kept.decided_by, kept.decided_at) == (state, by, at)
        if len({m[2] for m in made}) > 1:
            assert any(c[:2] == ("approval", approval_id) for c in conflicts)

    # Every settlement of an effect stands, was superseded by a later attempt, or its effect
    # shows a conflict (a settlement a store moved past before it ever synced is not a fact,
    # but its audit event travelled: both stores hold the same events, checked above).
    effects = {e.key: e for e in a.list_effects(TASK)}
    for key, state, attempt in run.made.settled:
        now = effects[key]
        assert (
            (now.state.value, now.attempts) == (state, attempt)
            or now.attempts > attempt
            or any(c[:2] == ("effect", key) for c in conflicts)
        )
    # A remote resume is history here, never a lease that blocks resuming.
    assert all(row["synced_from"] is None for row in store.active_resumes(b.db, TASK))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=steps, data=st.data())
def test_a_third_store_reaches_the_same_rows_whatever_order_the_ledgers_arrive_in(
    make_pair: Callable[[], tuple[Engine, Engine]],
    make_twin: Callable[[Engine], Engine],
    steps: list[tuple[str, tuple[Any, ...]]],
    data: st.DataObject,
) -> None:
    a, b = make_pair()
    run = Run(a, b)
    for where, op in steps:
        run.act(where, op)
    run.settle_all()
    settled = _state(a)[:4]
    trees = [*run.shipped, a.export_ledger(TASK), b.export_ledger(TASK)]
    for _ in range(2):
        c = make_twin(a)
        for tree in data.draw(st.permutations(trees)):
            c.apply_ledger(TASK, tree)
        assert _state(c)[:4] == settled
        event(f"trees: {min(len(trees), 6)}+")


# --- merge and derive, as pure functions ----------------------------------------------------------

paths = st.sampled_from([f"facts/{c}{c}/{c * 64}.json" for c in "0123456789abcdef"])
trees = st.dictionaries(paths, st.binary(min_size=1, max_size=6), max_size=8)


@given(a=trees, b=trees, c=trees)
def test_merge_is_a_commutative_associative_idempotent_union(
    a: dict[str, bytes], b: dict[str, bytes], c: dict[str, bytes]
) -> None:
    assert merge_facts(a, b) == merge_facts(b, a)
    assert merge_facts(merge_facts(a, b), c) == merge_facts(a, merge_facts(b, c))
    assert merge_facts(a, a) == a
    assert merge_facts(a, merge_facts(a, b)) == merge_facts(a, b)
    assert set(merge_facts(a, b)) == set(a) | set(b)


_SIGNER = signing.create_signing_key()


def _fact(kind: str, **plain: Any) -> tuple[str, bytes]:
    document = {"schema": SCHEMA, "kind": kind, "task": TASK, **plain}
    return fact_path(fact_uid(document)), encode_fact(document, None, _SIGNER)


times = st.integers(0, 50).map(lambda n: f"2026-03-01T09:{n:02d}:00.000000Z")
effect_facts = st.builds(
    lambda key, state, attempts, at: _fact(
        EFFECT, key=key, effect_kind="deploy", state=state.value, attempts=attempts, at=at,
        created_at="2026-03-01T08:00:00.000000Z", needs_approval=False, exit_code=None,
        started_at=None, finished_at=None,
    ),
    st.sampled_from(KEYS[:2]), st.sampled_from(list(EffectState)), st.integers(0, 2), times,
)  # fmt: skip
_REQUEST = _fact(
    REQUEST, approval=f"{TASK}:1", seq=1, risk="medium", requested_by="agent",
    requested_at="2026-03-01T08:00:00.000000Z", expires_at=None, effect_key=None,
    checkpoint_seq=None,
)  # fmt: skip
decision_facts = st.builds(
    lambda state, by, at: _fact(
        DECISION, approval=f"{TASK}:1", request=_REQUEST[0].rsplit("/", 1)[1][:-5],
        state=state, decided_by=by, decided_at=at,
    ),
    st.sampled_from(("approved", "rejected")), st.sampled_from(("alice", "bob")), times,
)  # fmt: skip
fact_sets = st.lists(st.one_of(effect_facts, decision_facts), max_size=10).map(dict)


def _rank(fact: Fact) -> tuple[int, int]:
    return int(fact.get("attempts")), KNOWLEDGE[EffectState(fact.get("state"))]


@given(a=fact_sets, b=fact_sets)
def test_derive_keeps_the_most_knowledge_and_the_first_decision(
    a: dict[str, bytes], b: dict[str, bytes]
) -> None:
    union = merge_facts(dict([_REQUEST]), merge_facts(a, b))
    view = derive(union)
    assert derive(merge_facts(merge_facts(b, a), dict([_REQUEST]))) == view
    parsed = parse_facts(union)
    lost = {c.lost_uid for c in view.conflicts}
    for key, effect in view.effects.items():
        facts = [f for f in parsed if f.kind == EFFECT and f.get("key") == key]
        top = max(_rank(f) for f in facts)
        won = next(f for f in facts if f.uid == effect.uid)
        if effect.state is EffectState.CONFIRMED:
            continue  # confirmed is final: later attempts elsewhere show as conflicts
        # Nothing knows more than the winner, except what was set aside as a conflict.
        assert _rank(won) == top or all(
            f.uid in lost or _rank(f) <= _rank(won) or f.get("state") == "confirmed" for f in facts
        )
    decisions = sorted(
        (f.get("decided_at"), f.get("decided_by"), f.get("state"), f.uid)
        for f in parsed
        if f.kind == DECISION
    )
    approval = view.approvals[f"{TASK}:1"]
    if decisions:
        assert approval.decision_uid == decisions[0][3]
        assert approval.state.value == decisions[0][2]
        others = {d[3] for d in decisions if d[2] != decisions[0][2]}
        assert others <= lost
    else:
        assert approval.state is ApprovalState.PENDING


def test_settled_differently_in_two_places_keeps_the_first_and_shows_the_other() -> None:
    first = _fact(
        EFFECT, key="deploy", effect_kind="deploy", state="failed", attempts=1,
        at="2026-03-01T09:00:00.000000Z", created_at="2026-03-01T08:00:00.000000Z",
        needs_approval=False, exit_code=1, started_at=None, finished_at=None,
    )  # fmt: skip
    second = _fact(
        EFFECT, key="deploy", effect_kind="deploy", state="confirmed", attempts=1,
        at="2026-03-01T09:05:00.000000Z", created_at="2026-03-01T08:00:00.000000Z",
        needs_approval=False, exit_code=0, started_at=None, finished_at=None,
    )  # fmt: skip
    view = derive(dict([first, second]))
    assert view.effects["deploy"].state is EffectState.FAILED
    (conflict,) = view.conflicts
    assert (conflict.kept_state, conflict.lost_state) == ("failed", "confirmed")
    assert "settled differently" in conflict.describe()


def test_an_altered_or_newer_fact_is_refused() -> None:
    path, data = _REQUEST
    with pytest.raises(LedgerFormatError, match="altered"):
        derive({path: data.replace(b"medium", b"high")})
    newer = json.loads(data)
    newer["schema"] = "pitstop.ledger/3"
    with pytest.raises(LedgerFormatError, match="newer Pitstop"):
        derive({path: json.dumps(newer).encode()})
    (effect_path, effect_data) = _fact(
        EFFECT, key="deploy", effect_kind="deploy", state="rolled_back", attempts=1,
        at="2026-03-01T09:00:00.000000Z", created_at="2026-03-01T08:00:00.000000Z",
        needs_approval=False, exit_code=None, started_at=None, finished_at=None,
    )  # fmt: skip
    with pytest.raises(LedgerFormatError, match="unknown state 'rolled_back'"):
        derive({effect_path: effect_data})


# --- what leaves the machine ----------------------------------------------------------------------


def test_exported_facts_show_no_content_and_re_export_adds_nothing(
    make_pair: Callable[[], tuple[Engine, Engine]],
) -> None:
    a, b = make_pair()
    a.propose_effect(TASK, "deploy", "deploy", target=f"https://{MARK}.example", check="true")
    a.move_effect(TASK, "deploy", EffectState.IN_PROGRESS, note=f"{MARK} starting")
    a.move_effect(TASK, "deploy", EffectState.UNCERTAIN, note=f"{MARK} timed out")
    a.request_approval(TASK, f"{MARK} push to production")
    a.decide_approval(f"{TASK}:1", True, f"{MARK} reviewed the diff")
    a.move_effect(TASK, "deploy", EffectState.CONFIRMED, reason=f"{MARK} saw it live")
    _add_validation(a, "ready")
    _add_resume(a, finish=True)

    exported = a.export_ledger(TASK)
    assert exported == a.export_ledger(TASK), "unchanged rows must export the same bytes"
    kinds = {json.loads(data)["kind"] for data in exported.values()}
    assert kinds == {"effect", "approval-request", "approval-decision", "validation", "resume",
                     "event", "roster"}  # fmt: skip
    for path, data in exported.items():
        assert MARK.encode() not in data, f"{path} shows content in clear"
        assert b"secret plan" not in data

    report = _sync(a, b)
    assert report.changes > 0
    assert _state(a)[:4] == _state(b)[:4]
    approval = b.get_approval(f"{TASK}:1")
    assert approval.reason == f"{MARK} reviewed the diff"
    assert b.get_effect(TASK, "deploy").target == f"https://{MARK}.example"
    sync_events = [e for e in b.events(TASK) if e.interface is Interface.SYNC]
    assert {e.entity for e in sync_events} >= {"effect", "approval", "validation", "resume"}
    assert _sync(a, b).changes == 0
    # B's export carries A's facts on (byte for byte) plus its own sync events.
    from_b = b.export_ledger(TASK)
    assert all(from_b.get(path) == data for path, data in exported.items())
    for data in from_b.values():
        assert MARK.encode() not in data


def test_an_approval_decided_differently_in_two_places_shows_the_conflict(
    make_pair: Callable[[], tuple[Engine, Engine]],
) -> None:
    a, b = make_pair()
    a.request_approval(TASK, f"{MARK} open the PR")
    _sync(a, b)
    b.decide_approval(f"{TASK}:1", False, f"{MARK} not yet")  # decided first
    a.decide_approval(f"{TASK}:1", True, f"{MARK} fine by me")
    _sync(a, b)
    _sync(b, a)
    for engine in (a, b):
        approval = engine.get_approval(f"{TASK}:1")
        assert (approval.state, approval.decided_by) == (ApprovalState.REJECTED, "bob")
        (conflict,) = engine.ledger_conflicts(TASK)
        assert conflict["entity_id"] == f"{TASK}:1"
        assert (conflict["kept"]["state"], conflict["lost"]["state"]) == ("rejected", "approved")
    # A overruled its own decision, audited as a sync by A's operator (B's sync events came too).
    overruled = [
        (e.from_state, e.to_state)
        for e in a.events(TASK)
        if e.interface is Interface.SYNC and e.actor == "alice" and e.action == "sync"
    ]
    assert overruled == [("approved", "rejected")]


def test_a_remote_active_resume_is_no_lease_here(
    make_pair: Callable[[], tuple[Engine, Engine]],
) -> None:
    a, b = make_pair()
    _add_resume(a, finish=False)
    _sync(a, b)
    assert store.active_resumes(b.db, TASK) == []
    (row,) = store.list_resumes(b.db, TASK, b.keys)
    assert (row["state"], row["synced_from"]) == ("active", "ledger")


def test_an_approval_decided_elsewhere_ends_the_wait_here(
    make_pair: Callable[[], tuple[Engine, Engine]],
) -> None:
    a, b = make_pair()
    a.request_approval(TASK, f"{MARK} merge it")
    assert a.get_task(TASK).status.value == "waiting"
    _sync(a, b)
    b.decide_approval(f"{TASK}:1", True, f"{MARK} ok")
    report = _sync(b, a)
    assert report.approvals_decided == 1
    assert a.get_task(TASK).status.value == "paused"
    (paused,) = [e for e in a.events(TASK) if e.entity == "task" and e.to_state == "paused"]
    assert (paused.interface, paused.actor) == (Interface.SYNC, "alice")
