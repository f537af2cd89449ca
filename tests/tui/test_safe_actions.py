"""Nothing irreversible on one key: every dashboard action that decides or settles asks first,
with the safe choice focused, so `KEY enter` changes nothing; only the explicit choice writes.

Each test drives the real app on a copy of the demo store and reads the store afterwards with a
fresh engine: a settlement counts only once it is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_env import TERMINAL_SIZE
from textual.pilot import Pilot
from textual.widgets import Button, DataTable, Input

from core import store
from core.demo import CART_ROUNDING, INVOICE_CURRENCY
from core.engine import Engine
from core.models import ApprovalState, EffectState, Interface, Risk
from tui.app import PitstopApp
from tui.screens.modals import CheckOutputModal, ConfirmModal, ReasonModal
from tui.screens.task import TaskScreen
from tui.widgets.approvals_view import ApprovalsTable, ApprovalsView
from tui.widgets.effects_view import EffectsTable, EffectsView, printable
from tui.widgets.resume_view import ResumeView

pytestmark = pytest.mark.usefixtures("tui_environment")

TASK = INVOICE_CURRENCY
# A GitHub token the redactor knows: it must never reach the screen or the evidence in clear.
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


async def settle(pilot: Pilot[None]) -> None:
    """Let workers finish and their messages land."""
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def open_tab(pilot: Pilot[None], task_id: str, key: str) -> TaskScreen:
    """Open `task_id` from the dashboard and switch to the tab under `key`."""
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, PitstopApp)
    app.open_task(task_id)
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)
    assert isinstance(app.screen, TaskScreen)
    return app.screen


async def highlight(pilot: Pilot[None], table: DataTable[object], key: str) -> None:
    table.focus()
    table.move_cursor(row=table.get_row_index(key))
    await pilot.pause()


def uncertain_effect(store_root: Path, key: str, check: str) -> None:
    """An effect whose outcome nobody knows, with `check` as its precondition check."""
    with Engine(store_root, interface=Interface.API, actor="agent") as engine:
        engine.propose_effect(TASK, key, "deploy", target="production", check=check)
        engine.move_effect(TASK, key, EffectState.IN_PROGRESS)
        engine.move_effect(TASK, key, EffectState.UNCERTAIN, note="the runner was killed")


def effect_state(store_root: Path, key: str) -> EffectState:
    with Engine(store_root) as engine:
        return engine.get_effect(TASK, key).state


async def press_check(pilot: Pilot[None], key: str) -> EffectsView:
    """On the Side effects tab, highlight `key` and press `c`; the confirmation opens."""
    screen = await open_tab(pilot, TASK, "s")
    view = screen.query_one(EffectsView)
    await highlight(pilot, view.query_one(EffectsTable), key)
    await pilot.press("c")
    await pilot.pause()
    return view


async def test_c_then_enter_shows_the_check_and_runs_nothing(
    demo_store: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "check-ran"
    uncertain_effect(demo_store, "deploy-prod", f"touch {marker}")
    app = PitstopApp(demo_store)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        await press_check(pilot, "deploy-prod")
        dialog = app.screen
        assert isinstance(dialog, ConfirmModal)
        assert f"touch {marker}" in dialog.prompt_text  # the command is shown before it runs
        assert "exit 1" in dialog.prompt_text and "settles nothing" in dialog.prompt_text
        assert app.focused is not None and app.focused.id == "confirm-no"
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmModal)
    assert not marker.exists()
    assert effect_state(demo_store, "deploy-prod") is EffectState.UNCERTAIN


async def test_a_check_exiting_2_settles_nothing_and_keeps_its_output_as_evidence(
    demo_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", TOKEN)  # the check prints a secret it was given
    uncertain_effect(
        demo_store, "deploy-prod", 'echo "curl: (6) no network $DEPLOY_TOKEN" >&2; exit 2'
    )
    app = PitstopApp(demo_store)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        await press_check(pilot, "deploy-prod")
        await pilot.press("y")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, CheckOutputModal)
        assert not dialog.can_settle and not dialog.query("#check-failed")
        assert "curl: (6) no network" in dialog.output_text and TOKEN not in dialog.output_text
        await pilot.press("enter")  # the focused button leaves it unsettled
        await settle(pilot)
        assert not isinstance(app.screen, CheckOutputModal)
    assert effect_state(demo_store, "deploy-prod") is EffectState.UNCERTAIN
    with Engine(demo_store) as engine:
        item = engine.list_evidence(TASK)[-1]
        assert item.label == "precondition check of deploy-prod" and item.exit_code == 2
        output = b"".join(engine.evidence_output(item.id)).decode()
        assert "curl: (6) no network" in output and TOKEN not in output


async def test_a_check_exiting_1_is_shown_and_marks_failed_only_when_the_operator_says(
    demo_store: Path,
) -> None:
    uncertain_effect(demo_store, "deploy-prod", "echo 'curl: could not resolve host'; exit 1")
    app = PitstopApp(demo_store)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        await press_check(pilot, "deploy-prod")
        await pilot.press("y")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, CheckOutputModal) and dialog.can_settle
        assert "could not resolve host" in dialog.output_text
        assert app.focused is not None and app.focused.id == "check-leave"
        await pilot.press("enter")  # c, y, enter: still nobody says it did not happen
        await settle(pilot)
        assert effect_state(demo_store, "deploy-prod") is EffectState.UNCERTAIN

        view = await press_check(pilot, "deploy-prod")
        await pilot.press("y")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, CheckOutputModal)
        await pilot.click("#check-failed")  # no reason yet: refused in place
        await pilot.pause()
        assert app.screen is dialog
        dialog.query_one("#check-reason", Input).value = "the deploy job never started"
        await pilot.pause(0.3)  # a button ignores a second click while it shows the first
        await pilot.click("#check-failed")
        await settle(pilot)
        assert {e.key: e.state for e in view.effects}["deploy-prod"] is EffectState.FAILED
    with Engine(demo_store) as engine:
        assert engine.get_effect(TASK, "deploy-prod").state is EffectState.FAILED
        event = [e for e in engine.events(TASK) if e.entity_id == "deploy-prod"][-1]
        assert event.to_state == "failed" and event.interface is Interface.TUI
        assert event.reason is not None and "exit 1" in event.reason
        assert "the deploy job never started" in event.reason


async def test_a_check_exiting_0_settles_it_as_happened_once_the_operator_runs_it(
    demo_store: Path,
) -> None:
    uncertain_effect(demo_store, "deploy-prod", "echo 0.5.0")
    app = PitstopApp(demo_store)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        await press_check(pilot, "deploy-prod")
        await pilot.click("#confirm-yes")
        await settle(pilot)
        assert not isinstance(app.screen, CheckOutputModal)
    assert effect_state(demo_store, "deploy-prod") is EffectState.CONFIRMED


async def test_y_or_x_then_enter_settles_nothing(demo_store: Path) -> None:
    uncertain_effect(demo_store, "deploy-prod", "exit 2")
    app = PitstopApp(demo_store)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        screen = await open_tab(pilot, TASK, "s")
        table = screen.query_one(EffectsTable)
        for key in ("y", "x"):
            await highlight(pilot, table, "deploy-prod")
            await pilot.press(key, "enter")
            await settle(pilot)
            assert isinstance(app.screen, ReasonModal)  # an empty reason is refused in place
            await pilot.press("escape")
            await settle(pilot)
    assert effect_state(demo_store, "deploy-prod") is EffectState.UNCERTAIN


async def test_y_then_enter_approves_nothing_the_explicit_approve_does(demo_store: Path) -> None:
    with Engine(demo_store, interface=Interface.API, actor="agent") as engine:
        approval = engine.request_approval(TASK, "Deploy 0.5.0 to production", risk=Risk.HIGH)
    app = PitstopApp(demo_store)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        screen = await open_tab(pilot, TASK, "p")
        view = screen.query_one(ApprovalsView)
        await highlight(pilot, view.query_one(ApprovalsTable), approval.id)
        await pilot.press("y", "enter")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ReasonModal)
        assert "Deploy 0.5.0 to production" in dialog.prompt_text
        with Engine(demo_store) as engine:
            assert engine.get_approval(approval.id).state is ApprovalState.PENDING
        dialog.query_one(Input).value = "release window is open"
        await pilot.click("#reason-ok")
        await settle(pilot)
    with Engine(demo_store) as engine:
        assert engine.get_approval(approval.id).state is ApprovalState.APPROVED


async def test_enter_enter_does_not_resume_a_finished_task(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        screen = await open_tab(pilot, CART_ROUNDING, "u")
        screen.query_one(ResumeView).focus()
        await pilot.press("enter")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmModal)
        assert "done" in dialog.title_text and "finished" in dialog.prompt_text
        assert dialog.query_one("#confirm-yes", Button).label.plain == "Resume the finished task"
        await pilot.press("enter")
        await settle(pilot)
        assert screen.query_one(ResumeView).plan is None
    with Engine(demo_store) as engine:
        assert store.latest_resume(engine.db, CART_ROUNDING) is None


def test_printable_shows_escapes_and_says_how_many_lines_were_left_out() -> None:
    assert printable(b"\x1b[2Jcleared\r\n") == "^[[2Jcleared"
    shown = printable(b"".join(b"line %d\n" % n for n in range(300)))
    assert shown.splitlines()[0] == "… 100 earlier lines are in the evidence item"
    assert shown.splitlines()[-1] == "line 299"
