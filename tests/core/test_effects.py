"""The side-effect ledger: only legal moves are accepted, each audited, and the guard runs once.

A Hypothesis state machine drives proposals, hand moves and real guarded commands against a real
store and compares every outcome with a model of the ledger; the other tests pin single
behaviours (exit codes, environment, locks, migrations) that the machine does not name.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from core.engine import Engine
from core.engine.ledgers import effect_ledger
from core.errors import (
    ConflictError,
    EffectBusyError,
    NeedsSettlingError,
    NotAllowedError,
    NotFoundError,
    PitstopError,
    UsageError,
)
from core.ledger import states
from core.ledger.action import EXIT_TIMEOUT
from core.ledger.checks import CheckVerdict
from core.ledger.guard import GuardRequest
from core.ledger.locks import KeyLocks
from core.ledger.states import TRANSITIONS
from core.models import EffectState, Interface, TaskStatus
from core.store.db import open_database
from core.store.migrations import migrations

KEYS = ("deploy-preview", "open-pr", "post comment #1")
MOVE_TARGETS = (
    EffectState.IN_PROGRESS,
    EffectState.CONFIRMED,
    EffectState.FAILED,
    EffectState.UNCERTAIN,
)
# The oracle: the moves DESIGN §1 and the issue allow, written out independently of
# core.ledger.states.
LEGAL = {
    (EffectState.PROPOSED, EffectState.IN_PROGRESS),
    (EffectState.IN_PROGRESS, EffectState.CONFIRMED),
    (EffectState.IN_PROGRESS, EffectState.FAILED),
    (EffectState.IN_PROGRESS, EffectState.UNCERTAIN),
    (EffectState.UNCERTAIN, EffectState.CONFIRMED),
    (EffectState.UNCERTAIN, EffectState.FAILED),
    (EffectState.FAILED, EffectState.IN_PROGRESS),
}
# The action a guard runs, and what it should turn an effect into.
ACTIONS = {
    "succeeds": (("true",), EffectState.CONFIRMED, 0),
    "fails": (("sh", "-c", "exit 7"), EffectState.FAILED, 7),
    "killed": (("sh", "-c", "kill -TERM $$"), EffectState.UNCERTAIN, 128 + 15),
}
CHECKS = {
    None: None,
    "happened": "exit 0",
    "not_happened": "exit 1",
    "unknown": "exit 5",
}


def _effect_events(engine: Engine, task_id: str) -> list[tuple[str, str, str | None, str | None]]:
    return [
        (e.entity_id, e.action, e.from_state, e.to_state)
        for e in engine.events(task_id)
        if e.entity == "effect"
    ]


def test_ledger_state_machine(repo: Path) -> None:
    """Random sequences of proposals, moves and guards: the ledger always matches the model."""

    class Ledger(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.root = Path(tempfile.mkdtemp(prefix="ledger-"))
            self.engine = Engine(self.root / "store", interface=Interface.HOOK, actor="agent")
            self.engine.start_task(repo=repo, objective="ledger machine", task_id="t1")
            self.engine.start_task(repo=repo, objective="ledger twin", task_id="t2")
            self.model: dict[tuple[str, str], EffectState] = {}
            self.recorded_check: dict[tuple[str, str], str | None] = {}
            self.attempts: Counter[tuple[str, str]] = Counter()
            self.expected_events = 0

        def teardown(self) -> None:
            self.engine.close()
            shutil.rmtree(self.root, ignore_errors=True)

        @rule(
            task=st.sampled_from(["t1", "t2"]),
            key=st.sampled_from(KEYS),
            kind=st.text("ab", min_size=1, max_size=3),
        )
        def propose(self, task: str, key: str, kind: str) -> None:
            result = self.engine.propose_effect(task, key, kind)
            if (task, key) in self.model:
                assert not result.created
                assert result.effect.state is self.model[(task, key)]
            else:
                assert result.created and result.effect.state is EffectState.PROPOSED
                self.model[(task, key)] = EffectState.PROPOSED
                self.recorded_check[(task, key)] = None
                self.expected_events += 1

        @rule(
            task=st.sampled_from(["t1", "t2"]),
            key=st.sampled_from(KEYS),
            to_state=st.sampled_from(MOVE_TARGETS),
            reason=st.sampled_from([None, "seen in the console"]),
        )
        def move(self, task: str, key: str, to_state: EffectState, reason: str | None) -> None:
            current = self.model.get((task, key))
            try:
                moved = self.engine.move_effect(task, key, to_state, reason=reason)
            except NotFoundError:
                assert current is None
                return
            except ConflictError:
                assert current is not None and (current, to_state) not in LEGAL
                return
            except UsageError:
                assert current is EffectState.UNCERTAIN and reason is None
                return
            assert current is not None and (current, to_state) in LEGAL, (current, to_state)
            assert current is not EffectState.UNCERTAIN or reason is not None
            assert moved.state is to_state
            if to_state is EffectState.IN_PROGRESS:
                self.attempts[(task, key)] += 1
            self.model[(task, key)] = to_state
            self.expected_events += 1

        @rule(
            task=st.sampled_from(["t1", "t2"]),
            key=st.sampled_from(KEYS),
            action=st.sampled_from(sorted(ACTIONS)),
            check=st.sampled_from(list(CHECKS)),
        )
        def guard(self, task: str, key: str, action: str, check: str | None) -> None:
            argv, after_run, exit_code = ACTIONS[action]
            request = GuardRequest(
                task_id=task, key=key, argv=argv, kind="cmd", check=CHECKS[check]
            )
            current = self.model.get((task, key))
            # The guard's --check wins; otherwise the one recorded when the effect was proposed.
            command = CHECKS[check] or self.recorded_check.get((task, key), CHECKS[check])
            try:
                outcome = self.engine.guard_effect(request)
            except NeedsSettlingError:
                assert current in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN)
                assert command in (None, CHECKS["unknown"])
                return
            if current is None:
                self.expected_events += 1  # proposed by the guard, with its check recorded
                self.recorded_check[(task, key)] = CHECKS[check]
                current = EffectState.PROPOSED
            if current is EffectState.CONFIRMED:
                assert not outcome.ran and outcome.exit_code == 0
                return
            if current in (EffectState.IN_PROGRESS, EffectState.UNCERTAIN):
                assert command in (CHECKS["happened"], CHECKS["not_happened"])
                self.expected_events += 1
                if command == CHECKS["happened"]:
                    assert not outcome.ran and outcome.exit_code == 0
                    self.model[(task, key)] = EffectState.CONFIRMED
                    return
            assert outcome.ran
            assert outcome.exit_code == exit_code
            assert outcome.effect.state is after_run
            self.attempts[(task, key)] += 1
            assert outcome.effect.attempts == self.attempts[(task, key)]
            self.model[(task, key)] = after_run
            self.expected_events += 2  # start, then the outcome

        @invariant()
        def ledger_matches_model(self) -> None:
            stored = {(e.task_id, e.key): e.state for e in self.engine.list_effects()}
            assert stored == self.model

        @invariant()
        def every_accepted_move_is_audited_and_legal(self) -> None:
            last: dict[tuple[str, str], str | None] = {}
            count = 0
            for task in ("t1", "t2"):
                for key, action, before, after in _effect_events(self.engine, task):
                    count += 1
                    assert before == last.get((task, key)), (key, action, before, after)
                    if before is None:
                        assert after == EffectState.PROPOSED.value
                    else:
                        assert after is not None
                        assert (EffectState(before), EffectState(after)) in LEGAL
                    last[(task, key)] = after
            assert count == self.expected_events
            assert {k: EffectState(v) for k, v in last.items() if v} == self.model

        @invariant()
        def events_name_the_actor_and_interface(self) -> None:
            for event in self.engine.events():
                assert event.actor == "agent" and event.interface is Interface.HOOK

    run_state_machine_as_test(
        Ledger,
        settings=settings(
            max_examples=30,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


# --- single behaviours --------------------------------------------------------------------------


@pytest.fixture
def task_id(engine: Engine, repo: Path) -> str:
    return engine.start_task(repo=repo, objective="effects", task_id="fx").id


def test_propose_is_idempotent_and_warns_on_differences(engine: Engine, task_id: str) -> None:
    first = engine.propose_effect(task_id, "pr", "pull-request", target="org/repo")
    assert first.created and not first.warnings
    again = engine.propose_effect(task_id, "pr", "pull-request", target="org/repo")
    assert not again.created and not again.warnings
    assert again.effect == first.effect
    changed = engine.propose_effect(task_id, "pr", "deploy", target="elsewhere")
    assert not changed.created
    assert len(changed.warnings) == 2
    assert "kind 'pull-request', not 'deploy'" in changed.warnings[0]
    assert engine.get_effect(task_id, "pr").kind == "pull-request"
    assert [e.action for e in engine.events(task_id) if e.entity == "effect"] == ["propose"]


def test_keys_are_unique_per_task_not_per_store(engine: Engine, repo: Path, task_id: str) -> None:
    other = engine.start_task(repo=repo, objective="other", task_id="other").id
    engine.propose_effect(task_id, "deploy", "deploy")
    assert engine.propose_effect(other, "deploy", "deploy").created
    engine.move_effect(task_id, "deploy", EffectState.IN_PROGRESS)
    assert engine.get_effect(other, "deploy").state is EffectState.PROPOSED


@pytest.mark.parametrize(
    ("key", "kind", "fragment"),
    [
        ("", "deploy", "--key is empty"),
        ("a\nb", "deploy", "control characters"),
        ("x" * 201, "deploy", "longer than 200"),
        ("ok", " ", "--kind is empty"),
    ],
)
def test_bad_keys_and_kinds_are_refused(
    engine: Engine, task_id: str, key: str, kind: str, fragment: str
) -> None:
    with pytest.raises(UsageError, match=fragment):
        engine.propose_effect(task_id, key, kind)
    assert engine.list_effects(task_id) == []


def test_unknown_task_and_key_are_refused(engine: Engine, task_id: str) -> None:
    with pytest.raises(NotFoundError, match="no task 'nope'"):
        engine.propose_effect("nope", "k", "deploy")
    with pytest.raises(NotFoundError, match="has no side effect 'k'"):
        engine.move_effect(task_id, "k", EffectState.IN_PROGRESS)
    with pytest.raises(NotFoundError, match="pass --kind"):
        engine.guard_effect(GuardRequest(task_id=task_id, key="k", argv=("true",)))


def test_settling_an_uncertain_effect_needs_a_reason_and_an_approver(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    engine.start_task(repo=repo, objective="guarded", task_id="g", approvers=["alice"])
    engine.propose_effect("g", "pay", "payment")
    engine.move_effect("g", "pay", EffectState.IN_PROGRESS)
    engine.move_effect("g", "pay", EffectState.UNCERTAIN, note="the call timed out")
    with pytest.raises(UsageError, match="needs --reason"):
        engine.move_effect("g", "pay", EffectState.CONFIRMED)
    with pytest.raises(NotAllowedError, match="only alice may"):
        engine.move_effect("g", "pay", EffectState.CONFIRMED, reason="looks paid")
    with Engine(store_root, actor="alice", interface=Interface.TUI) as alice:
        settled = alice.move_effect("g", "pay", EffectState.CONFIRMED, reason="in the ledger")
    assert settled.state is EffectState.CONFIRMED
    last = engine.events("g")[-1]
    assert (last.action, last.actor, last.interface, last.reason) == (
        "settle",
        "alice",
        Interface.TUI,
        "in the ledger",
    )
    assert (last.from_state, last.to_state) == ("uncertain", "confirmed")


def test_guard_runs_once_and_reports_exit_codes(
    engine: Engine, task_id: str, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    script = f"echo $PITSTOP_TASK $PITSTOP_EFFECT_KEY $PITSTOP_EFFECT_ATTEMPT >> {marker}"
    request = GuardRequest(task_id=task_id, key="k1", argv=("sh", "-c", script), kind="note")
    first = engine.guard_effect(request)
    assert (first.ran, first.exit_code, first.effect.state) == (True, 0, EffectState.CONFIRMED)
    again = engine.guard_effect(request)
    assert (again.ran, again.exit_code) == (False, 0)
    assert "already confirmed" in again.message
    assert marker.read_text() == "fx k1 1\n"

    failing = GuardRequest(task_id=task_id, key="k2", argv=("sh", "-c", "exit 3"), kind="x")
    failed = engine.guard_effect(failing)
    assert (failed.exit_code, failed.effect.state, failed.effect.exit_code) == (
        3,
        EffectState.FAILED,
        3,
    )
    retried = engine.guard_effect(GuardRequest(task_id=task_id, key="k2", argv=("true",)))
    assert retried.effect.state is EffectState.CONFIRMED and retried.effect.attempts == 2

    slow = GuardRequest(task_id=task_id, key="k3", argv=("sleep", "5"), kind="x", timeout=0.3)
    timed_out = engine.guard_effect(slow)
    assert (timed_out.exit_code, timed_out.effect.state) == (EXIT_TIMEOUT, EffectState.UNCERTAIN)
    with pytest.raises(NeedsSettlingError, match="its outcome is unknown"):
        engine.guard_effect(GuardRequest(task_id=task_id, key="k3", argv=("true",)))


def test_guard_refuses_a_missing_command_without_changing_anything(
    engine: Engine, task_id: str
) -> None:
    before = engine.events(task_id)
    with pytest.raises(UsageError, match="no such command"):
        engine.guard_effect(
            GuardRequest(task_id=task_id, key="k", argv=("no-such-cmd-x",), kind="x")
        )
    with pytest.raises(UsageError, match="nothing to run"):
        engine.guard_effect(GuardRequest(task_id=task_id, key="k", argv=(), kind="x"))
    assert engine.events(task_id) == before
    assert engine.list_effects(task_id) == []


def test_finished_tasks_start_nothing_but_can_still_be_settled(
    engine: Engine, task_id: str
) -> None:
    engine.propose_effect(task_id, "a", "deploy")
    engine.propose_effect(task_id, "b", "deploy")
    engine.move_effect(task_id, "b", EffectState.IN_PROGRESS)
    engine.finish_task(task_id, TaskStatus.CANCELLED)
    with pytest.raises(ConflictError, match="cancelled"):
        engine.move_effect(task_id, "a", EffectState.IN_PROGRESS)
    with pytest.raises(ConflictError, match="cancelled"):
        engine.guard_effect(GuardRequest(task_id=task_id, key="a", argv=("true",)))
    assert engine.move_effect(task_id, "b", EffectState.FAILED).state is EffectState.FAILED


def test_a_stale_in_progress_is_settled_by_its_check(
    engine: Engine, task_id: str, tmp_path: Path
) -> None:
    engine.propose_effect(task_id, "pr", "pr", check="test -e " + str(tmp_path / "opened"))
    engine.move_effect(task_id, "pr", EffectState.IN_PROGRESS)  # then the agent died
    stale = engine.get_effect(task_id, "pr")
    assert stale.needs_settling and not stale.runner_alive
    assert [e.key for e in engine.unsettled_effects(task_id)] == ["pr"]

    (tmp_path / "opened").write_text("")
    outcome = engine.guard_effect(GuardRequest(task_id=task_id, key="pr", argv=("false",)))
    assert (outcome.ran, outcome.exit_code) == (False, 0)
    assert outcome.effect.state is EffectState.CONFIRMED
    assert engine.unsettled_effects(task_id) == []


def test_effect_check_settles_both_ways_and_refuses_when_it_cannot_tell(
    engine: Engine, task_id: str
) -> None:
    for key in ("yes", "no", "maybe"):
        engine.propose_effect(task_id, key, "call")
        engine.move_effect(task_id, key, EffectState.IN_PROGRESS)
        engine.move_effect(task_id, key, EffectState.UNCERTAIN)
    assert engine.check_effect(task_id, "yes", "exit 0").effect.state is EffectState.CONFIRMED
    assert engine.check_effect(task_id, "no", "exit 1").effect.state is EffectState.FAILED
    with pytest.raises(NeedsSettlingError, match="exited 9"):
        engine.check_effect(task_id, "maybe", "exit 9")
    with pytest.raises(UsageError, match="no precondition check"):
        engine.check_effect(task_id, "maybe")
    with pytest.raises(ConflictError, match="only an in_progress or uncertain"):
        engine.check_effect(task_id, "yes", "exit 0")
    assert engine.get_effect(task_id, "maybe").state is EffectState.UNCERTAIN
    reasons = [e.reason for e in engine.events(task_id) if e.entity_id == "yes"]
    assert reasons[-1] == "precondition check: already happened (check exit 0)"


def test_a_dashboard_check_settles_by_exit_0_alone_and_keeps_the_output_as_evidence(
    engine: Engine, task_id: str
) -> None:
    checks = {
        "yes": "echo up; exit 0",
        "no": "echo 'no route to host' >&2; exit 1",
        "maybe": "exit 2",
    }
    for key, check in checks.items():
        engine.propose_effect(task_id, key, "deploy", check=check)
        engine.move_effect(task_id, key, EffectState.IN_PROGRESS)
        engine.move_effect(task_id, key, EffectState.UNCERTAIN)
    happened = engine.run_effect_check(task_id, "yes")
    assert happened.settled and happened.effect.state is EffectState.CONFIRMED
    not_happened = engine.run_effect_check(task_id, "no")  # an operator decides this one
    assert not not_happened.settled and not_happened.result.exit_code == 1
    assert not_happened.result.output == b"no route to host\n"
    unknown = engine.run_effect_check(task_id, "maybe")  # no exception: the caller shows it
    assert not unknown.settled and unknown.result.exit_code == 2
    states = {e.key: e.state for e in engine.list_effects(task_id)}
    assert (states["no"], states["maybe"]) == (EffectState.UNCERTAIN, EffectState.UNCERTAIN)
    item = engine.get_evidence(not_happened.evidence_id or 0)
    assert (item.exit_code, item.label) == (1, "precondition check of no")
    assert b"".join(engine.evidence_output(item.id)) == b"no route to host\n"
    assert engine.run_effect_check(task_id, "no", settle=frozenset(CheckVerdict)).settled


def test_a_live_guard_holds_the_key(engine: Engine, task_id: str) -> None:
    engine.propose_effect(task_id, "deploy", "deploy")
    engine.move_effect(task_id, "deploy", EffectState.IN_PROGRESS)
    ledger = effect_ledger(engine)
    with ledger.locks.hold(task_id, "deploy", wait=0.0):  # as a running guard would
        assert engine.get_effect(task_id, "deploy").runner_alive
        assert not engine.get_effect(task_id, "deploy").needs_settling
        with pytest.raises(EffectBusyError, match="being run right now"):
            engine.move_effect(task_id, "deploy", EffectState.FAILED)
        with pytest.raises(EffectBusyError):
            engine.guard_effect(
                GuardRequest(
                    task_id=task_id, key="deploy", argv=("true",), check="exit 0", wait=0.2
                )
            )
    assert engine.get_effect(task_id, "deploy").state is EffectState.IN_PROGRESS
    assert not engine.get_effect(task_id, "deploy").runner_alive


def test_an_effect_lock_lives_only_while_held_and_stays_one_lock(
    engine: Engine, task_id: str, store_root: Path
) -> None:
    """Moves and guards leave no lock file per key behind (so `pitstop doctor` has nothing to
    say of a store used normally), and one who waited for a removed file locks the new one."""
    import threading

    engine.propose_effect(task_id, "deploy", "deploy")
    engine.move_effect(task_id, "deploy", EffectState.IN_PROGRESS)
    engine.move_effect(task_id, "deploy", EffectState.CONFIRMED, reason="done")
    engine.guard_effect(GuardRequest(task_id=task_id, key="g1", argv=("true",), kind="x"))
    lock_dir = store_root / "tmp" / "locks" / "effects"
    assert list(lock_dir.glob("*.lock")) == []
    assert not [f for f in Engine.doctor().remaining if f.kind == "lock-files"]

    locks = effect_ledger(engine).locks
    waited = threading.Event()
    release = threading.Event()

    def second_holder() -> None:  # another process, in effect: a connection of its own
        mine = KeyLocks(open_database(store_root / "pitstop.db"), locks.lock_dir, engine.keys)
        with mine.hold(task_id, "k", wait=10.0):
            waited.set()
            release.wait(10)

    with locks.hold(task_id, "k", wait=0.0):
        other = threading.Thread(target=second_holder)
        other.start()
        time.sleep(0.2)  # it waits for our lock on the file we are about to remove
    assert waited.wait(10)
    # its lock is the key's lock, not a removed file's
    with pytest.raises(EffectBusyError), locks.hold(task_id, "k", wait=0.0):
        pass
    release.set()
    other.join(10)
    assert list(lock_dir.glob("*.lock")) == []


def test_transitions_table_is_the_documented_one() -> None:
    table = {(before, after) for before, nexts in TRANSITIONS.items() for after in nexts}
    assert table == LEGAL
    assert states.allowed(EffectState.FAILED, EffectState.IN_PROGRESS)
    assert not states.allowed(EffectState.PROPOSED, EffectState.CONFIRMED)


def test_audit_events_cannot_be_deleted(engine: Engine, task_id: str) -> None:
    engine.propose_effect(task_id, "k", "x")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        engine.db.execute("DELETE FROM events")


def test_a_store_from_before_the_ledger_migrates(tmp_path: Path, repo: Path) -> None:
    root = tmp_path / "old-store"
    root.mkdir(mode=0o700)
    db = open_database(root / "pitstop.db")
    migrations.apply(db, stop_before="0002_effects_approvals")
    db.execute(
        "INSERT INTO tasks (id, repo_root, store_repo, objective, status, created_at, updated_at)"
        " VALUES ('old', ?, 'r', 'from 0001', 'paused', '2026-01-01T00:00:00Z', "
        "'2026-01-01T00:00:00Z')",
        [str(repo)],
    )
    db.close()
    with Engine(root) as engine:
        old = engine.get_task("old")
        assert old.approvers == ()
        assert engine.propose_effect("old", "k", "deploy").created
        assert engine.list_approvals("old") == []


def test_the_guard_leaves_the_environment_of_the_caller_alone(engine: Engine, task_id: str) -> None:
    engine.guard_effect(GuardRequest(task_id=task_id, key="env", argv=("true",), kind="x"))
    assert "PITSTOP_EFFECT_KEY" not in os.environ


def test_pitstop_errors_carry_distinct_exit_codes() -> None:
    codes = {
        cls.__name__: cls.exit_code
        for cls in (NeedsSettlingError, EffectBusyError, NotAllowedError, ConflictError)
    }
    assert codes == {
        "NeedsSettlingError": 3,
        "EffectBusyError": 5,
        "NotAllowedError": 1,
        "ConflictError": 1,
    }
    assert issubclass(NeedsSettlingError, PitstopError)


def test_checkpoint_manifests_carry_the_ledger_and_pending_approvals(
    engine: Engine, task_id: str, repo: Path
) -> None:
    engine.propose_effect(task_id, "preview", "deploy", target="https://preview.example")
    engine.guard_effect(GuardRequest(task_id=task_id, key="preview", argv=("true",)))
    engine.propose_effect(task_id, "prod", "deploy", needs_approval=True)
    asked = engine.request_approval(task_id, "deploy to production", effect_key="prod")
    (repo / "README.md").write_text("waiting\n")
    made = engine.request_approval(task_id, "merge", checkpoint=True)
    document = engine.get_checkpoint(f"{task_id}@{made.checkpoint_seq}").manifest
    assert document is not None
    assert [(e["key"], e["state"], e["attempts"]) for e in document["side_effects"]] == [
        ("preview", "confirmed", 1),
        ("prod", "proposed", 0),
    ]
    assert document["side_effects"][0]["target"] == "https://preview.example"
    # The checkpoint is taken before the new request is recorded: only the earlier one waits.
    assert [(a["id"], a["effect"]) for a in document["pending_approvals"]] == [(asked.id, "prod")]


SIGNAL_WHILE_STARTING = """
import os, signal, subprocess, sys
from core.ledger import action

class SignalledAsItStarts(subprocess.Popen):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # before the guard's next line runs

subprocess.Popen = SignalledAsItStarts
lock = os.open(os.devnull, os.O_RDONLY)
result = action.run_action(["sh", "-c", sys.argv[1]], dict(os.environ), 30, lock, False)
print(result.interrupted_by, result.returncode)
"""


def test_a_signal_as_the_action_starts_is_passed_on_not_lost(tmp_path: Path) -> None:
    """A SIGTERM that reaches the guard the moment its action started (CI saw one) is passed
    on: the guard reports it and the action cleans up. It used to end the guard before its
    handlers were in place, leaving the action running and nothing recorded."""
    import subprocess
    import sys

    stopped = tmp_path / "stopped"
    action = (
        f"trap 'touch {stopped}; exit 9' TERM; "
        "i=0; while [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done"
    )
    done = subprocess.run(
        [sys.executable, "-c", SIGNAL_WHILE_STARTING, action],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, (done.returncode, done.stderr)  # the guard lived on
    interrupted_by, returncode = done.stdout.split()
    assert interrupted_by == "15"
    # The action got the SIGTERM: killed by it, or (trap already set) cleaned up and exit 9.
    # Had it not, it would have looped to its end and exited 0.
    assert returncode in ("-15", "9")
    assert stopped.exists() is (returncode == "9")
