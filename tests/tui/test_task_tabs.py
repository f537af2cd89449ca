"""Pilot tests of the task screen's Evidence, Side effects, Approvals, Validation and Resume tabs.

Each test drives the real app on a copy of the demo store and then reads the store with a fresh
engine: a decision or a settled effect counts only once it is written, audited as the TUI.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyrage
import pytest
from demo_env import TERMINAL_SIZE
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Markdown, TabbedContent

from core import store
from core.demo import INVOICE_CURRENCY
from core.engine import CheckpointRequest, Engine
from core.evidence.storage import EvidenceLimits
from core.models import ApprovalState, EffectState, Interface, Risk, Task
from core.security import signing
from tui.app import PitstopApp
from tui.screens.modals import CheckOutputModal, ConfirmModal, ReasonModal
from tui.screens.task import TaskScreen
from tui.widgets.approvals_view import ApprovalsTable, ApprovalsView
from tui.widgets.effects_view import EffectsTable, EffectsView
from tui.widgets.evidence_view import ChunkedLog, EvidenceView, LazyLogView
from tui.widgets.resume_view import ResumeView
from tui.widgets.validation_view import ValidationView

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = TERMINAL_SIZE
OWN_TASK = "tabs-demo"
BIG_LOG_LINES = 120_000  # about 4.6 MiB: five stored chunks


async def settle(pilot: Pilot[None]) -> None:
    """Let workers finish and their messages land."""
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def open_task(pilot: Pilot[None], task_id: str, *keys: str) -> TaskScreen:
    """Open `task_id` from the dashboard, press `keys`, and return the task screen."""
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, PitstopApp)
    app.open_task(task_id)
    await settle(pilot)
    for key in keys:
        await pilot.press(key)
        await settle(pilot)
    assert isinstance(app.screen, TaskScreen)
    return app.screen


async def give_reason(pilot: Pilot[None], reason: str) -> None:
    """Answer the open reason modal (typing is covered once; here it would only cost time)."""
    modal = pilot.app.screen
    assert isinstance(modal, ReasonModal)
    modal.query_one(Input).value = reason
    await pilot.press("enter")
    await settle(pilot)


def add_ledger(store_root: Path) -> None:
    """Side effects in every state and two approvals on the waiting demo task, as an agent."""
    with Engine(store_root, interface=Interface.API, actor="agent") as engine:
        task = INVOICE_CURRENCY
        engine.propose_effect(task, "notify-finance", "email", target="finance@invoicer.example")
        engine.propose_effect(
            task, "apply-0002-staging", "migration", target="staging-db", check="exit 2"
        )
        engine.move_effect(task, "apply-0002-staging", EffectState.IN_PROGRESS)
        engine.move_effect(
            task, "apply-0002-staging", EffectState.UNCERTAIN, note="the connection dropped"
        )
        engine.propose_effect(task, "tag-release", "git", target="v2.4.0", check="true")
        engine.move_effect(task, "tag-release", EffectState.IN_PROGRESS)
        engine.move_effect(task, "tag-release", EffectState.UNCERTAIN, note="killed mid-push")
        engine.request_approval(
            task, "Apply migration 0002 to the staging database", risk=Risk.HIGH
        )
        engine.request_approval(task, "Email finance about the currency switch", risk=Risk.LOW)


@pytest.fixture
def ledger_store(demo_store: Path) -> Path:
    """The demo store with side effects and pending approvals on the waiting task."""
    add_ledger(demo_store)
    return demo_store


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def own_task_store(demo_store: Path, tmp_path: Path) -> Path:
    """The demo store plus a task on a private repository: evidence, then one checkpoint."""
    repo = tmp_path / "work" / "calc"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b + 0\n")
    big = tmp_path / "build.log"
    with big.open("w") as handle:
        for number in range(1, BIG_LOG_LINES + 1):
            handle.write(f"build line {number:06d} compiling module_{number % 97:02d}.c ok\n")
    tests = tmp_path / "tests.log"
    tests.write_text("test_add PASSED\ntest_sub FAILED\n===== 1 failed, 1 passed in 0.12s =====\n")
    with Engine(demo_store, interface=Interface.API, actor="agent") as engine:
        engine.start_task(repo=repo, objective="Fix calc rounding", task_id=OWN_TASK)
        engine.add_evidence_file(OWN_TASK, big, command="make", exit_code=0, label="build")
        engine.add_evidence_file(OWN_TASK, tests, command="pytest", exit_code=1, label="tests")
        engine.checkpoint(OWN_TASK, CheckpointRequest(note="tests fail on sub"))
    return demo_store


# --- modals ------------------------------------------------------------------------------------


class ModalHost(App[None]):
    """Nothing but a screen to open the modals on."""


async def test_reason_modal_refuses_an_empty_reason_and_cancels_with_none() -> None:
    app = ModalHost()
    answers: list[str | bool | None] = []
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ReasonModal("Approve", "Why?"), answers.append)
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ReasonModal), "an empty reason must not dismiss"
        await pilot.press("escape")
        await pilot.pause()
        app.push_screen(ReasonModal("Approve", "Why?"), answers.append)
        await pilot.pause()
        await pilot.press(*" ok ", "enter")
        await pilot.pause()
        app.push_screen(ConfirmModal("Sure?", "Really?"), answers.append)
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        app.push_screen(ConfirmModal("Sure?", "Really?"), answers.append)
        await pilot.pause()
        await pilot.click("#confirm-yes")
        await pilot.pause()
    assert answers == [None, "ok", False, True]


# --- approvals -----------------------------------------------------------------------------------


async def highlight(pilot: Pilot[None], table: DataTable[object], key: str) -> None:
    """Put the table's cursor on the row keyed `key` (the demo's own rows come first)."""
    table.focus()
    table.move_cursor(row=table.get_row_index(key))
    await pilot.pause()


MIGRATION = "Apply migration 0002 to the staging database"
EMAIL = "Email finance about the currency switch"


async def test_approving_with_a_reason_writes_a_decision_audited_as_the_tui(
    ledger_store: Path,
) -> None:
    app = PitstopApp(ledger_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, INVOICE_CURRENCY, "p")
        assert screen.query_one(TabbedContent).active == "approvals"
        view = screen.query_one(ApprovalsView)
        mine = {a.action: a.id for a in view.approvals if a.action in (MIGRATION, EMAIL)}
        assert len(mine) == 2
        table = view.query_one(ApprovalsTable)
        await highlight(pilot, table, mine[MIGRATION])
        await pilot.click("#approval-approve")  # the mouse works too; escape decides nothing
        await pilot.pause()
        assert isinstance(app.screen, ReasonModal)
        await pilot.press("escape")
        await settle(pilot)
        assert all(
            a.state is ApprovalState.PENDING for a in view.approvals if a.id in mine.values()
        )
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, ReasonModal)
        await pilot.press(*"staging only", "enter")
        await settle(pilot)
        decided = {a.id: a.state for a in view.approvals}  # the tab read the store again
        assert decided[mine[MIGRATION]] is ApprovalState.APPROVED
        await highlight(pilot, table, mine[EMAIL])
        await pilot.press("n")
        await pilot.pause()
        await give_reason(pilot, "finance is told by the release notes")
    with Engine(ledger_store) as engine:
        approvals = {a.id: a for a in engine.list_approvals(INVOICE_CURRENCY)}
        migration, email = approvals[mine[MIGRATION]], approvals[mine[EMAIL]]
        assert (migration.state, migration.reason) == (ApprovalState.APPROVED, "staging only")
        assert (email.state, email.reason) == (
            ApprovalState.REJECTED,
            "finance is told by the release notes",
        )
        assert migration.decided_by == email.decided_by == engine.actor
        decisions = [
            e
            for e in engine.events(INVOICE_CURRENCY)
            if e.action in ("approve", "reject") and e.entity_id in mine.values()
        ]
        assert len(decisions) == 2
        assert {e.interface for e in decisions} == {Interface.TUI}


async def test_an_approval_requested_meanwhile_appears_when_the_store_changes(
    ledger_store: Path,
) -> None:
    app = PitstopApp(ledger_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, INVOICE_CURRENCY, "p")
        view = screen.query_one(ApprovalsView)
        before = len(view.approvals)
        with Engine(ledger_store, interface=Interface.API, actor="agent") as engine:
            engine.request_approval(INVOICE_CURRENCY, "Drop the legacy currency table")
        app.reload_open_screens()  # what the live watcher does when the database changes
        await settle(pilot)
        assert len(view.approvals) == before + 1
        assert view.approvals[-1].action == "Drop the legacy currency table"


_BOB_KEY = signing.create_signing_key()  # the second store's operator is a person of their own


def _shared(here: Engine, there: Engine) -> Task:
    """The demo's invoice task, adopted by a second store with its data key (as a fetch does),
    its operator a member of the task's roster by their own signing key."""
    bob = str(pyrage.x25519.Identity.generate().to_public())
    here.share_task(INVOICE_CURRENCY, [bob], signer=there.signing_key().public, label="bob")
    task = here.get_task(INVOICE_CURRENCY)
    key = here.keys.data_key(task.id, create=False)
    there.adopt_task(task, origin_store=here.keys.scope(task.id), data_key=key)
    return task


async def test_an_approval_decided_differently_elsewhere_shows_the_conflict(
    ledger_store: Path, tmp_path: Path
) -> None:
    with (
        Engine(ledger_store, actor="alice") as here,
        Engine(tmp_path / "b", actor="bob", signing_key=_BOB_KEY) as there,
    ):
        task = _shared(here, there)
        there.apply_ledger(task.id, here.export_ledger(task.id))
        (asked,) = [a for a in here.list_approvals(task.id) if a.action == EMAIL]
        # The clock is frozen here: decided at the same instant, the decider's name breaks the tie.
        there.decide_approval(asked.id, False, "told by the release notes")
        here.decide_approval(asked.id, True, "send it")
        here.apply_ledger(task.id, there.export_ledger(task.id))
    app = PitstopApp(ledger_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, INVOICE_CURRENCY, "p")
        view = screen.query_one(ApprovalsView)
        await highlight(pilot, view.query_one(ApprovalsTable), asked.id)
        detail = str(view.query_one("#approvals-detail").render())
        assert "conflict: decided differently; kept approved by alice" in detail
        assert "set aside rejected by bob" in detail


async def test_an_effect_settled_differently_elsewhere_shows_the_conflict(
    ledger_store: Path, tmp_path: Path
) -> None:
    with (
        Engine(ledger_store, actor="alice") as here,
        Engine(tmp_path / "b", actor="bob", signing_key=_BOB_KEY) as there,
    ):
        task = _shared(here, there)
        here.move_effect(task.id, "notify-finance", EffectState.IN_PROGRESS)
        here.move_effect(task.id, "notify-finance", EffectState.UNCERTAIN)
        there.apply_ledger(task.id, here.export_ledger(task.id))
        there.move_effect(task.id, "notify-finance", EffectState.FAILED, reason="bounced")
        here.move_effect(task.id, "notify-finance", EffectState.CONFIRMED, reason="in the inbox")
        here.apply_ledger(task.id, there.export_ledger(task.id))
    app = PitstopApp(ledger_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, INVOICE_CURRENCY, "s")
        view = screen.query_one(EffectsView)
        await highlight(pilot, view.query_one(EffectsTable), "notify-finance")
        detail = str(view.query_one("#effects-detail").render())
        # Settled at the same (frozen) instant: the state's name breaks the tie.
        assert "conflict: attempt 1 settled differently; kept confirmed" in detail
        assert "set aside failed" in detail


# --- side effects -----------------------------------------------------------------------------


def effect_states(view: EffectsView) -> dict[str, EffectState]:
    return {effect.key: effect.state for effect in view.effects}


async def test_confirming_an_uncertain_effect_settles_it_with_the_reason(
    ledger_store: Path,
) -> None:
    app = PitstopApp(ledger_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, INVOICE_CURRENCY, "s")
        view = screen.query_one(EffectsView)
        keys = [e.key for e in view.effects]
        assert keys[-3:] == ["notify-finance", "apply-0002-staging", "tag-release"]
        table = view.query_one(EffectsTable)
        await highlight(pilot, table, "notify-finance")
        await pilot.press("y")  # proposed: nothing to settle, so no modal
        await pilot.pause()
        assert not isinstance(app.screen, ReasonModal)
        await highlight(pilot, table, "apply-0002-staging")
        await pilot.press("y")
        await pilot.pause()
        await give_reason(pilot, "row 0002 is in schema_migrations")
        assert effect_states(view)["apply-0002-staging"] is EffectState.CONFIRMED
    with Engine(ledger_store) as engine:
        effect = engine.get_effect(INVOICE_CURRENCY, "apply-0002-staging")
        assert effect.state is EffectState.CONFIRMED
        events = [e for e in engine.events(INVOICE_CURRENCY) if e.entity_id == effect.key]
        assert events[-1].reason == "row 0002 is in schema_migrations"
        assert events[-1].interface is Interface.TUI


async def test_failing_an_effect_and_running_a_precondition_check(ledger_store: Path) -> None:
    app = PitstopApp(ledger_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, INVOICE_CURRENCY, "s")
        view = screen.query_one(EffectsView)
        table = view.query_one(EffectsTable)
        await highlight(pilot, table, "apply-0002-staging")
        await pilot.press("c", "y")  # its check exits 2: it cannot tell, nothing changes
        await settle(pilot)
        assert isinstance(app.screen, CheckOutputModal) and not app.screen.can_settle
        await pilot.press("escape")
        await settle(pilot)
        assert effect_states(view)["apply-0002-staging"] is EffectState.UNCERTAIN
        await pilot.press("x")
        await pilot.pause()
        await give_reason(pilot, "no row in schema_migrations")
        await highlight(pilot, table, "tag-release")
        await pilot.click("#effect-check")  # `true`: the tag push did happen
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
    with Engine(ledger_store) as engine:
        states = {e.key: e.state for e in engine.list_effects(INVOICE_CURRENCY)}
        assert states["notify-finance"] is EffectState.PROPOSED
        assert states["apply-0002-staging"] is EffectState.FAILED
        assert states["tag-release"] is EffectState.CONFIRMED


# --- validation ---------------------------------------------------------------------------------


async def test_validation_runs_in_a_worker_shows_each_finding_and_is_stored(
    own_task_store: Path,
) -> None:
    app = PitstopApp(own_task_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, OWN_TASK, "v")
        view = screen.query_one(ValidationView)
        await pilot.press("enter")
        await settle(pilot)
        assert view.verdict is not None
        assert view.findings
        assert 1 <= view.progress_shown <= len(view.findings)  # live, possibly coalesced
        shown = str(view.query_one("#validation-list").render())
        assert all(f.check in shown for f in view.findings)
        assert "Verdict:" in str(view.query_one("#validation-verdict").render())
    with Engine(own_task_store) as engine:
        row = store.latest_validation(engine.db, OWN_TASK, 1)
        assert row is not None
        assert row["verdict"] == view.verdict.value
        assert row["interface"] == "tui"
        assert len(row["findings"]) == len(view.findings)


# --- evidence -----------------------------------------------------------------------------------


async def test_evidence_lists_items_shows_the_tail_and_reads_the_full_log_lazily(
    own_task_store: Path,
) -> None:
    app = PitstopApp(own_task_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, OWN_TASK, "e")
        view = screen.query_one(EvidenceView)
        assert [item.label for item in view.items] == ["build", "tests"]
        assert view.shown is not None and view.shown.label == "tests"  # newest first
        facts = str(view.query_one("#evidence-facts").render())
        assert "exit 1" in facts and "1 failed, 1 passed" in facts
        assert "test_sub FAILED" in str(view.query_one("#evidence-tail").render())
        await pilot.press("j")  # the build log
        await settle(pilot)
        assert "build line 120000" in str(view.query_one("#evidence-tail").render())
        await pilot.press("f")
        await settle(pilot)
        log = view.query_one(LazyLogView)
        assert log.has_focus and log.log_index is not None
        assert len(log.log_index.segments) >= 4
        # It opens at its end, following it (issue 18): only the last chunk was read.
        assert log.following
        assert log.loaded_chunks == [log.log_index.segments[-1].chunk_seq]
        await pilot.press("g")
        await settle(pilot)
        assert not log.following  # reading back stops following
        assert log.line_text(0) == "build line 000001 compiling module_01.c ok"
        assert log.loaded_chunks[-1] == 0  # only what is on screen was read
        await pilot.press("G")
        await settle(pilot)
        assert log.loaded_chunks[-1] == log.log_index.segments[-1].chunk_seq
        assert not {1, 2} & set(log.loaded_chunks), "the middle of the log was never read"
        last = f"build line {BIG_LOG_LINES:06d} compiling module_{BIG_LOG_LINES % 97:02d}.c ok"
        assert log.line_text(BIG_LOG_LINES - 1) == last
        assert log.log_index.line_count == BIG_LOG_LINES  # no empty line after the last
        await pilot.press("v")  # a tab key works with the focus inside another tab
        await settle(pilot)
        assert screen.query_one(TabbedContent).active == "validation"
        await pilot.press("e", "f")
        await pilot.pause()
        assert not view.has_class("full-log")


async def test_a_truncated_log_shows_where_its_middle_was_dropped(own_task_store: Path) -> None:
    noisy = own_task_store.parent / "soak.log"
    with noisy.open("w") as handle:  # hex noise: it does not compress, so the cap bites
        for number in range(1, 4001):
            handle.write(f"soak {number:05d} {os.urandom(24).hex()}\n")
    limits = EvidenceLimits(cap_bytes=48 * 1024, chunk_bytes=8 * 1024)
    with Engine(own_task_store, interface=Interface.API, actor="agent") as engine:
        item = engine.add_evidence_file(OWN_TASK, noisy, exit_code=0, label="soak", limits=limits)
        engine.checkpoint(OWN_TASK, CheckpointRequest(note="soaked", force=True))
    assert item.truncated
    app = PitstopApp(own_task_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, OWN_TASK, "e")
        view = screen.query_one(EvidenceView)
        assert view.shown is not None and view.shown.label == "soak"
        assert "truncated" in str(view.query_one("#evidence-facts").render())
        await pilot.press("f")
        await settle(pilot)
        log = view.query_one(LazyLogView)
        assert log.log_index is not None
        gaps = [segment for segment in log.log_index.segments if segment.chunk_seq is None]
        assert len(gaps) == 1
        marker = log.line_text(gaps[0].first_line)
        assert marker is not None and marker.startswith("[… ") and "omitted" in marker
        await pilot.press("g")  # the log opened at its end; its head is read on the way up
        await settle(pilot)
        assert (log.line_text(0) or "").startswith("soak 00001 ")


def test_chunked_log_maps_lines_across_chunks_and_marks_a_dropped_middle() -> None:
    chunks = [
        {"seq": 0, "offset": 0, "raw_len": 10, "first_line": 0, "line_count": 2},
        {"seq": 1, "offset": 10, "raw_len": 10, "first_line": 2, "line_count": 1},
        {"seq": 3, "offset": 40, "raw_len": 10, "first_line": 7, "line_count": 2},
    ]
    index = ChunkedLog(chunks)
    # chunk 0 starts the stream (1 + 2 lines), chunk 1 adds 1, the gap is 1, chunk 3 starts a run.
    assert index.line_count == 3 + 1 + 1 + 3
    assert index.locate(3)[0].chunk_seq == 1
    gap, _ = index.locate(4)
    assert gap.chunk_seq is None and gap.gap_bytes == 20
    assert index.locate(5)[0].starts_run
    assert index.next_seq == {0: 1}


# --- resume ---------------------------------------------------------------------------------------


async def test_resume_asks_first_prepares_the_worktree_shows_the_brief_then_launches(
    own_task_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The generic harness runs $SHELL in the worktree: a script stands in for the agent.
    agent = tmp_path / "agent.sh"
    agent.write_text('#!/bin/sh\necho "resumed $PITSTOP_CHECKPOINT" > launched.txt\n')
    agent.chmod(0o755)
    monkeypatch.setenv("SHELL", str(agent))
    app = PitstopApp(own_task_store)
    suspended: list[bool] = []

    @contextmanager
    def suspend() -> Iterator[None]:  # the headless test driver cannot give the terminal away
        suspended.append(True)
        yield

    monkeypatch.setattr(app, "suspend", suspend)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, OWN_TASK, "u")
        view = screen.query_one(ResumeView)
        await pilot.press("L")  # nothing prepared yet: nothing launches
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")
        await settle(pilot)
        assert view.plan is None and not suspended
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        plan = view.plan
        assert plan is not None, str(view.query_one("#resume-heading").render())
        assert plan.workdir.is_dir() and (plan.workdir / "calc.py").read_text().endswith("+ 0\n")
        markdown = view.query_one("#resume-brief", Markdown)
        assert "Fix calc rounding" in plan.brief_md.read_text()
        assert "Fix calc rounding" in markdown.source
        with Engine(own_task_store) as engine:
            latest = store.latest_resume(engine.db, OWN_TASK)
            assert latest is not None and latest["state"] == "active"
        await pilot.press("L")
        await settle(pilot)
        assert suspended == [True]
        assert (plan.workdir / "launched.txt").read_text() == f"resumed {OWN_TASK}@1\n"
        assert view.plan is None
    with Engine(own_task_store) as engine:
        latest = store.latest_resume(engine.db, OWN_TASK)
        assert latest is not None
        assert (latest["state"], latest["exit_code"]) == ("done", 0)


# --- snapshots ------------------------------------------------------------------------------------

SnapCompare = Callable[..., bool]


def open_tab(task_id: str, *keys: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run(pilot: Pilot[None]) -> None:
        await open_task(pilot, task_id, *keys)

    return run


def test_side_effects_tab_snapshot(snap_compare: SnapCompare, ledger_store: Path) -> None:
    assert snap_compare(
        PitstopApp(ledger_store),
        terminal_size=SIZE,
        run_before=open_tab(INVOICE_CURRENCY, "s"),
    )


def test_approvals_tab_snapshot(snap_compare: SnapCompare, ledger_store: Path) -> None:
    assert snap_compare(
        PitstopApp(ledger_store), terminal_size=SIZE, run_before=open_tab(INVOICE_CURRENCY, "p")
    )


async def test_another_stores_check_is_shown_and_not_run_on_cancel(
    ledger_store: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "foreign-check-ran"
    check = f"touch {marker}"
    with (
        Engine(ledger_store, actor="alice") as here,
        Engine(tmp_path / "b", actor="bob", signing_key=_BOB_KEY) as there,
    ):
        task = _shared(here, there)
        there.apply_ledger(task.id, here.export_ledger(task.id))
        there.propose_effect(task.id, "purge-cache", "cdn", target="cdn", check=check)
        there.move_effect(task.id, "purge-cache", EffectState.IN_PROGRESS)
        there.move_effect(task.id, "purge-cache", EffectState.UNCERTAIN)
        here.apply_ledger(task.id, there.export_ledger(task.id))
        assert here.get_effect(task.id, "purge-cache").check_foreign
    app = PitstopApp(ledger_store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(pilot, INVOICE_CURRENCY, "s")
        view = screen.query_one(EffectsView)
        table = view.query_one(EffectsTable)
        await highlight(pilot, table, "purge-cache")
        await pilot.press("c")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmModal)
        assert "another store" in dialog.prompt_text and check in dialog.prompt_text
        await pilot.press("enter")  # the focused button is No: enter runs nothing
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmModal)
        assert not marker.exists()
        assert effect_states(view)["purge-cache"] is EffectState.UNCERTAIN
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
    assert marker.exists()
    with Engine(ledger_store) as engine:
        assert engine.get_effect(INVOICE_CURRENCY, "purge-cache").state is EffectState.CONFIRMED
