"""Pilot tests of the approvals inbox: open it, decide with a reason, and check the store after."""

from __future__ import annotations

from pathlib import Path

import pytest
from settling import settle
from textual.pilot import Pilot
from textual.widgets import Input, Static

from core.demo import BUMP_DEPENDENCIES, INVOICE_CURRENCY, RATE_LIMIT
from core.engine import Engine
from core.models import ApprovalState, Interface, Risk, TaskStatus
from tui.app import PitstopApp
from tui.commands import PitstopCommands
from tui.screens.dashboard import DashboardScreen
from tui.screens.inbox import InboxScreen, InboxTable
from tui.screens.modals import ReasonModal
from tui.screens.task import TaskScreen
from tui.widgets.task_table import TaskTable

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (120, 34)


def request(
    store: Path, monkeypatch: pytest.MonkeyPatch, task_id: str, action: str, risk: Risk, at: str
) -> str:
    """Ask for an approval as an agent would, at a given moment; return its id."""
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", at)
    with Engine(store, interface=Interface.HOOK, actor="agent") as engine:
        return engine.request_approval(task_id, action, risk=risk).id


@pytest.fixture
def queue(demo_store: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Three new requests on three tasks, made out of age order; returns them oldest first."""
    made = {
        "2026-03-02T12:00:00Z": request(
            demo_store,
            monkeypatch,
            RATE_LIMIT,
            "Deploy to production",
            Risk.HIGH,
            "2026-03-02T12:00:00Z",
        ),
        "2026-03-02T09:30:00Z": request(
            demo_store,
            monkeypatch,
            BUMP_DEPENDENCIES,
            "Publish the lockfile PR",
            Risk.LOW,
            "2026-03-02T09:30:00Z",
        ),
        "2026-03-02T14:45:00Z": request(
            demo_store,
            monkeypatch,
            INVOICE_CURRENCY,
            "Run migration 0003 on staging",
            Risk.MEDIUM,
            "2026-03-02T14:45:00Z",
        ),
    }
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-03-02T15:04:05Z")
    return [made[at] for at in sorted(made)]


def pending_ids(store: Path) -> list[str]:
    with Engine(store) as engine:
        return [a.id for a in engine.list_approvals(None, pending_only=True)]


async def open_inbox(pilot: Pilot[None]) -> InboxTable:
    await settle(pilot)
    await pilot.press("a")
    await settle(pilot)
    assert isinstance(pilot.app.screen, InboxScreen)
    return pilot.app.screen.query_one(InboxTable)


async def decide(pilot: Pilot[None], table: InboxTable, approval_id: str, key: str, reason: str):
    table.move_cursor(row=table.get_row_index(approval_id), animate=False)
    await pilot.pause()
    await pilot.press(key)
    await pilot.pause()
    assert isinstance(pilot.app.screen, ReasonModal)
    pilot.app.screen.query_one("#reason-input", Input).value = reason
    await pilot.press("enter")
    await settle(pilot)


async def test_the_inbox_lists_every_pending_request_oldest_first(
    demo_store: Path, queue: list[str]
) -> None:
    expected = pending_ids(demo_store)
    assert set(queue) <= set(expected)
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_inbox(pilot)
        shown = [a.id for a in table.approvals]
        assert shown == expected  # the engine's order: oldest request first
        assert [i for i in shown if i in queue] == queue
        risk = [a.risk for a in table.approvals if a.id == queue[-1]]
        assert risk == [Risk.HIGH] or risk == [Risk.MEDIUM]
        summary = str(app.screen.query_one("#inbox-summary", Static).render())
        assert f"{len(expected)} waiting" in summary
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen)


async def test_approve_with_a_reason_is_stored_and_audited_as_tui(
    demo_store: Path, queue: list[str]
) -> None:
    oldest = queue[0]
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_inbox(pilot)
        await decide(pilot, table, oldest, "y", "lockfile diff reviewed")
        assert oldest not in [a.id for a in table.approvals]
        assert isinstance(app.screen, InboxScreen)
        await pilot.press("escape")
        await settle(pilot)
        # The dashboard under the inbox re-read the store: the task no longer waits on it.
        dashboard = app.screen
        assert isinstance(dashboard, DashboardScreen)
        [bump] = [
            s for s in dashboard.query_one(TaskTable).summaries if s.task.id == BUMP_DEPENDENCIES
        ]
        assert bump.task.status is TaskStatus.PAUSED
    with Engine(demo_store) as engine:
        decided = engine.get_approval(oldest)
        assert decided.state is ApprovalState.APPROVED
        assert decided.reason == "lockfile diff reviewed"
        events = [e for e in engine.events(decided.task_id) if e.entity_id == oldest]
        assert [(e.action, e.interface) for e in events][-1] == ("approve", Interface.TUI)


async def test_reject_with_a_reason_and_cancel_records_nothing(
    demo_store: Path, queue: list[str]
) -> None:
    newest = queue[-1]
    middle = queue[1]
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_inbox(pilot)
        # `n` then escape: the dialog closes and nothing is decided.
        table.move_cursor(row=table.get_row_index(middle), animate=False)
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, ReasonModal)
        await pilot.press("escape")
        await settle(pilot)
        assert middle in [a.id for a in table.approvals]
        # An empty reason is refused in the dialog.
        table.move_cursor(row=table.get_row_index(newest), animate=False)
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ReasonModal)
        app.screen.query_one("#reason-input", Input).value = "not before the freeze ends"
        await pilot.press("enter")
        await settle(pilot)
        assert newest not in [a.id for a in table.approvals]
    with Engine(demo_store) as engine:
        rejected = engine.get_approval(newest)
        assert rejected.state is ApprovalState.REJECTED
        assert rejected.reason == "not before the freeze ends"
        assert engine.get_approval(middle).state is ApprovalState.PENDING
        events = [e for e in engine.events(rejected.task_id) if e.entity_id == newest]
        assert events[-1].interface is Interface.TUI and events[-1].action == "reject"


async def test_a_request_decided_elsewhere_is_refused_with_a_message(
    demo_store: Path, queue: list[str]
) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_inbox(pilot)
        with Engine(demo_store, interface=Interface.CLI) as engine:
            engine.decide_approval(queue[0], False, "decided on the command line")
        await decide(pilot, table, queue[0], "y", "too late")
        assert queue[0] not in [a.id for a in table.approvals]  # re-read after the refusal
    with Engine(demo_store) as engine:
        assert engine.get_approval(queue[0]).state is ApprovalState.REJECTED


async def test_enter_opens_the_task_and_the_palette_offers_the_inbox(
    demo_store: Path, queue: list[str]
) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        labels = [label for label, _, _ in PitstopCommands(app.screen).commands()]
        assert "approvals: open inbox" in labels
        table = await open_inbox(pilot)
        table.move_cursor(row=table.get_row_index(queue[0]), animate=False)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TaskScreen)
        assert app.screen.task_id == BUMP_DEPENDENCIES
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, InboxScreen)


async def test_a_opens_the_inbox_from_a_task_screen_too(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_task(RATE_LIMIT)
        await settle(pilot)
        assert isinstance(app.screen, TaskScreen)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, InboxScreen)
        [pending] = app.screen.query_one(InboxTable).approvals  # the demo's one request
        assert pending.task_id == INVOICE_CURRENCY and pending.risk is Risk.HIGH
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, TaskScreen)
