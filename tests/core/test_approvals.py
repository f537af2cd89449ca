"""Approvals: decided once, by an allowed operator, with a reason; expiry is visible; all audited.

A Hypothesis state machine requests and decides approvals as several operators while time moves
(through `PITSTOP_FROZEN_NOW`), and checks every answer against a model. The other tests pin the
gate between approvals and side effects, the before-wait checkpoint and input validation.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from core import clock
from core.engine import Engine
from core.errors import (
    ApprovalRequiredError,
    ConflictError,
    NotAllowedError,
    NotFoundError,
    UsageError,
)
from core.ledger.approvals import parse_approval_id, parse_duration
from core.ledger.guard import GuardRequest
from core.models import (
    ApprovalState,
    CheckpointReason,
    EffectState,
    Interface,
    Risk,
    TaskStatus,
)
from core.store.sealed_text import UNREADABLE

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
OPERATORS = ("alice", "bob", "mallory")
APPROVERS = {"strict": ("alice", "bob"), "open": ()}


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> datetime:
    """Time stands still at START until a test moves it with `_at`."""
    _at(monkeypatch, START)
    return START


def _at(monkeypatch: pytest.MonkeyPatch, moment: datetime) -> None:
    monkeypatch.setenv(clock.FROZEN_NOW_ENV, clock.to_iso(moment))


def test_approvals_state_machine(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random requests, decisions and time: only legal decisions are accepted, each audited."""

    class Inbox(RuleBasedStateMachine):
        approvals = Bundle("approvals")

        def __init__(self) -> None:
            super().__init__()
            self.root = Path(tempfile.mkdtemp(prefix="inbox-"))
            self.now = START
            _at(monkeypatch, self.now)
            self.engines = {
                name: Engine(self.root / "store", actor=name, interface=Interface.TUI)
                for name in (*OPERATORS, "agent")
            }
            agent = self.engines["agent"]
            for task_id, approvers in APPROVERS.items():
                agent.start_task(repo=repo, objective=task_id, task_id=task_id, approvers=approvers)
            # id -> (task, state as stored, expires_at); the model of the store.
            self.model: dict[str, tuple[str, ApprovalState, datetime | None]] = {}
            self.status = {task_id: TaskStatus.RUNNING for task_id in APPROVERS}
            self.events = len(agent.events())  # the task starts (and their `share` events)

        def teardown(self) -> None:
            for engine in self.engines.values():
                engine.close()
            shutil.rmtree(self.root, ignore_errors=True)

        def _effective(self, approval_id: str) -> ApprovalState:
            _, state, expires = self.model[approval_id]
            if state is ApprovalState.PENDING and expires is not None and expires <= self.now:
                return ApprovalState.EXPIRED
            return state

        def _pending(self, task_id: str) -> list[str]:
            return [
                a
                for a, (t, _, _) in self.model.items()
                if t == task_id and self._effective(a) is ApprovalState.PENDING
            ]

        @rule(
            target=approvals,
            task_id=st.sampled_from(sorted(APPROVERS)),
            expires=st.sampled_from([None, 60, 3600]),
            risk=st.sampled_from(list(Risk)),
        )
        def request(self, task_id: str, expires: int | None, risk: Risk) -> str:
            made = self.engines["agent"].request_approval(
                task_id,
                "deploy to staging",
                risk=risk,
                expires_in=f"{expires}s" if expires else None,
            )
            assert made.id == f"{task_id}:{made.seq}"
            assert made.state is ApprovalState.PENDING and made.requested_by == "agent"
            # A request writes down the task's expiries that have passed, one event each.
            for approval_id, (t, state, expires_at) in list(self.model.items()):
                expired = self._effective(approval_id) is ApprovalState.EXPIRED
                if t == task_id and expired and state is ApprovalState.PENDING:
                    self.model[approval_id] = (t, ApprovalState.EXPIRED, expires_at)
                    self.events += 1
            self.model[made.id] = (
                task_id,
                ApprovalState.PENDING,
                self.now + timedelta(seconds=expires) if expires else None,
            )
            self.events += 1
            if self.status[task_id] is not TaskStatus.WAITING:
                self.status[task_id] = TaskStatus.WAITING
                self.events += 1
            return made.id

        @rule(seconds=st.sampled_from([30, 90, 7200]))
        def time_passes(self, seconds: int) -> None:
            self.now += timedelta(seconds=seconds)
            _at(monkeypatch, self.now)

        @rule(
            approval_id=approvals,
            actor=st.sampled_from(OPERATORS),
            approve=st.booleans(),
            reason=st.sampled_from(["", "checked the plan"]),
        )
        def decide(self, approval_id: str, actor: str, approve: bool, reason: str) -> None:
            task_id = self.model[approval_id][0]
            before = self._effective(approval_id)
            try:
                decided = self.engines[actor].decide_approval(approval_id, approve, reason)
            except UsageError:
                assert reason == ""
                return
            except NotAllowedError:
                assert actor not in ("alice", "bob") and APPROVERS[task_id]
                return
            except ConflictError as refused:
                assert before is not ApprovalState.PENDING
                assert ("expired" in refused.message) == (before is ApprovalState.EXPIRED)
                return
            assert reason and before is ApprovalState.PENDING
            assert not APPROVERS[task_id] or actor in APPROVERS[task_id]
            wanted = ApprovalState.APPROVED if approve else ApprovalState.REJECTED
            assert (decided.state, decided.decided_by, decided.reason) == (wanted, actor, reason)
            self.model[approval_id] = (task_id, wanted, self.model[approval_id][2])
            self.events += 1
            if self.status[task_id] is TaskStatus.WAITING and not self._pending(task_id):
                self.status[task_id] = TaskStatus.PAUSED
                self.events += 1

        @rule(approval_id=st.sampled_from(["open:99", "nope:1", "bad id"]))
        def decide_unknown(self, approval_id: str) -> None:
            with pytest.raises((NotFoundError, UsageError)):
                self.engines["alice"].decide_approval(approval_id, True, "ok")

        @invariant()
        def store_matches_model(self) -> None:
            listed = {a.id: a.state for a in self.engines["bob"].list_approvals()}
            assert listed == {a: self._effective(a) for a in self.model}
            pending = {a.id for a in self.engines["bob"].list_approvals(pending_only=True)}
            assert pending == {a for a in self.model if self._effective(a) is ApprovalState.PENDING}
            for task_id, status in self.status.items():
                assert self.engines["agent"].get_task(task_id).status is status

        @invariant()
        def the_inbox_page_is_the_riskiest_then_oldest_pending(self) -> None:
            rank = {Risk.HIGH: 0, Risk.MEDIUM: 1, Risk.LOW: 2}
            expected = sorted(
                self.engines["bob"].list_approvals(pending_only=True),
                key=lambda a: (rank[a.risk], a.requested_at, a.task_id, a.seq),
            )
            for limit in (1, 3, 1000):
                shown, total = self.engines["bob"].pending_approvals(limit)
                assert [a.id for a in shown] == [a.id for a in expected[:limit]]
                assert total == len(expected)
                assert all(a.action != UNREADABLE for a in shown)

        @invariant()
        def every_decision_is_audited_once(self) -> None:
            events = self.engines["agent"].events()
            assert len(events) == self.events
            decisions = [e for e in events if e.action in ("approve", "reject")]
            for event in decisions:
                assert event.from_state == "pending" and event.reason
                assert event.interface is Interface.TUI
                assert event.actor in OPERATORS
            decided = [
                a
                for a, (_, s, _) in self.model.items()
                if s in (ApprovalState.APPROVED, ApprovalState.REJECTED)
            ]
            assert sorted(e.entity_id for e in decisions) == sorted(decided)

    run_state_machine_as_test(
        Inbox,
        settings=settings(
            max_examples=30,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


# --- single behaviours --------------------------------------------------------------------------


@pytest.fixture
def task_id(engine: Engine, repo: Path) -> str:
    return engine.start_task(repo=repo, objective="approvals", task_id="ap").id


def test_an_approval_gates_its_side_effect(
    engine: Engine, task_id: str, store_root: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "migrated"
    run = GuardRequest(task_id=task_id, key="mig", argv=("touch", str(marker)))
    engine.propose_effect(task_id, "mig", "migration", needs_approval=True)
    with pytest.raises(ApprovalRequiredError, match="needs an approval"):
        engine.guard_effect(run)
    with pytest.raises(ApprovalRequiredError, match="needs an approval"):
        engine.move_effect(task_id, "mig", EffectState.IN_PROGRESS)
    first = engine.request_approval(task_id, "apply 0002 to staging", effect_key="mig")
    with pytest.raises(ApprovalRequiredError, match=f"waits for approval {first.id}"):
        engine.guard_effect(run)
    engine.decide_approval(first.id, False, "not during the freeze")
    with pytest.raises(ApprovalRequiredError, match="was rejected"):
        engine.guard_effect(run)
    second = engine.request_approval(task_id, "apply 0002 to staging, again", effect_key="mig")
    engine.decide_approval(second.id, True, "freeze is over")
    assert not marker.exists()
    assert engine.guard_effect(run).effect.state is EffectState.CONFIRMED
    assert marker.exists()


def test_requesting_an_approval_for_an_effect_gates_it_too(engine: Engine, task_id: str) -> None:
    engine.propose_effect(task_id, "pr", "pull-request")
    engine.request_approval(task_id, "open the PR", effect_key="pr")
    with pytest.raises(ApprovalRequiredError):
        engine.move_effect(task_id, "pr", EffectState.IN_PROGRESS)


def test_an_expired_approval_is_visible_and_cannot_be_decided(
    engine: Engine, task_id: str, frozen: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = engine.request_approval(task_id, "rotate the key", expires_in="30m", risk=Risk.HIGH)
    assert made.expires_at == clock.to_iso(START + timedelta(minutes=30))
    _at(monkeypatch, START + timedelta(minutes=31))
    assert engine.get_approval(made.id).state is ApprovalState.EXPIRED
    assert engine.list_approvals(pending_only=True) == []
    before = engine.events(task_id)
    with pytest.raises(ConflictError, match="expired at"):
        engine.decide_approval(made.id, True, "too late")
    assert engine.events(task_id) == before
    # The next request on the task writes the expiry down, with its own event.
    engine.request_approval(task_id, "rotate the key, take two")
    expiry = [e for e in engine.events(task_id) if e.action == "expire"]
    assert [(e.entity_id, e.from_state, e.to_state) for e in expiry] == [
        (made.id, "pending", "expired")
    ]


def test_request_with_checkpoint_takes_a_before_wait_checkpoint(
    engine: Engine, task_id: str, repo: Path
) -> None:
    (repo / "README.md").write_text("changed before waiting\n")
    made = engine.request_approval(task_id, "merge the PR", checkpoint=True)
    assert made.checkpoint_seq == 1
    taken = engine.get_checkpoint(f"{task_id}@1")
    assert taken.reason is CheckpointReason.BEFORE_WAIT
    assert taken.note == "waiting for approval: merge the PR"
    assert engine.get_task(task_id).status is TaskStatus.WAITING
    engine.decide_approval(made.id, True, "green CI")
    assert engine.get_task(task_id).status is TaskStatus.PAUSED


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({"action": " "}, UsageError, "--action is empty"),
        ({"action": "x", "effect_key": "nope"}, NotFoundError, "no side effect 'nope'"),
        ({"action": "x", "expires_in": "soon"}, UsageError, "invalid --expires-in"),
        ({"action": "x", "expires_in": "0m"}, UsageError, "longer than zero"),
        ({"action": "x", "checkpoint": True, "effect_key": "nope"}, NotFoundError, "nope"),
    ],
)
def test_bad_requests_change_nothing(
    engine: Engine, task_id: str, kwargs: dict[str, object], error: type[Exception], fragment: str
) -> None:
    before = engine.events(task_id)
    with pytest.raises(error, match=fragment):
        engine.request_approval(task_id, **kwargs)  # type: ignore[arg-type]
    assert engine.events(task_id) == before
    assert engine.list_approvals(task_id) == []
    assert engine.list_checkpoints(task_id) == []


def test_finished_tasks_ask_for_nothing(engine: Engine, task_id: str) -> None:
    engine.finish_task(task_id, TaskStatus.DONE)
    with pytest.raises(ConflictError, match="done"):
        engine.request_approval(task_id, "anything")


def test_approver_names_are_checked(engine: Engine, repo: Path) -> None:
    with pytest.raises(UsageError, match="invalid approver"):
        engine.start_task(repo=repo, objective="x", task_id="x", approvers=["alice smith"])
    made = engine.start_task(repo=repo, objective="x", task_id="y", approvers=["a", "b", "a"])
    assert made.approvers == ("a", "b")
    assert engine.get_task("y").approvers == ("a", "b")


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("30m", 1800), ("2h", 7200), ("1.5d", 129600)]
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


def test_approval_ids() -> None:
    assert parse_approval_id("deploy-3f2a:12") == ("deploy-3f2a", 12)
    for bad in ("deploy", "deploy:x", ":1", "Bad:1"):
        with pytest.raises(UsageError):
            parse_approval_id(bad)


SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def test_free_text_is_redacted_and_exact_text_with_a_secret_is_refused(
    engine: Engine, task_id: str, store_root: Path
) -> None:
    with pytest.raises(UsageError, match="looks like a secret"):
        engine.propose_effect(task_id, f"deploy-{SECRET}", "deploy")
    with pytest.raises(UsageError, match="--check holds what looks like a secret"):
        engine.propose_effect(task_id, "deploy", "deploy", check=f"curl -u me:{SECRET} x")
    engine.propose_effect(task_id, "deploy", "deploy", target=f"https://x?token={SECRET}")
    engine.move_effect(task_id, "deploy", EffectState.IN_PROGRESS, note=f"used {SECRET}")
    made = engine.request_approval(task_id, f"push with {SECRET}", effect_key="deploy")
    engine.decide_approval(made.id, False, f"never paste {SECRET}")
    shown = engine.get_effect(task_id, "deploy")
    assert "[REDACTED:" in (shown.target or "") and "[REDACTED:" in (shown.note or "")
    assert engine.get_approval(made.id).action == "push with [REDACTED:github-token]"
    engine.close()
    for path in store_root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
