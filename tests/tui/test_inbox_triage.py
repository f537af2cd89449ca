"""The inbox as an approver clears a queue: riskiest first, narrowed by words, several decided with
one reason, the recently decided found again, ids cut with an ellipsis, every key in the footer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from settling import settle
from textual.pilot import Pilot
from textual.widgets import Footer, Input, Static

from core import clock
from core.demo import BUMP_DEPENDENCIES, INVOICE_CURRENCY, RATE_LIMIT
from core.engine import Engine
from core.models import Approval, ApprovalState, Interface, Risk
from tui.app import PitstopApp
from tui.screens.inbox import InboxScreen, InboxTable
from tui.screens.modals import ReasonModal
from tui.widgets.inbox_table import RISK_RANK, InboxSort, InboxView, visible_approvals

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (120, 34)
NOW = "2026-03-02T15:04:05Z"
LONG_TASK = "a-long-task-identifier-past-the-column-1"  # 40: the longest id


def ask(
    store: Path, monkeypatch: pytest.MonkeyPatch, task_id: str, action: str, risk: Risk, at: str
) -> str:
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", at)
    with Engine(store, interface=Interface.HOOK, actor="agent") as engine:
        return engine.request_approval(task_id, action, risk=risk).id


@pytest.fixture
def queue(demo_store: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """Requests of every risk, the oldest the least risky, plus one on a long task id."""
    made = {
        "low-old": ask(
            demo_store,
            monkeypatch,
            BUMP_DEPENDENCIES,
            "Publish the lockfile PR",
            Risk.LOW,
            "2026-03-02T09:30:00Z",
        ),
        "high-new": ask(
            demo_store,
            monkeypatch,
            RATE_LIMIT,
            "Deploy to production",
            Risk.HIGH,
            "2026-03-02T12:00:00Z",
        ),
        "medium": ask(
            demo_store,
            monkeypatch,
            INVOICE_CURRENCY,
            "Run migration 0003 on staging",
            Risk.MEDIUM,
            "2026-03-02T14:45:00Z",
        ),
    }
    repo = tmp_path / "long"
    repo.mkdir()
    import subprocess

    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "i"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )
    with Engine(demo_store, interface=Interface.HOOK, actor="agent") as engine:
        engine.start_task(repo=repo, objective="long id", task_id=LONG_TASK)
    made["long"] = ask(
        demo_store, monkeypatch, LONG_TASK, "Tag the release", Risk.LOW, "2026-03-02T13:00:00Z"
    )
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", NOW)
    return made


async def open_inbox(pilot: Pilot[None]) -> InboxTable:
    await settle(pilot)
    await pilot.press("a")
    await settle(pilot)
    assert isinstance(pilot.app.screen, InboxScreen)
    return pilot.app.screen.query_one(InboxTable)


def ids(table: InboxTable) -> list[str]:
    return [a.id for a in table.shown]


async def test_s_puts_the_riskiest_first_and_back(demo_store: Path, queue: dict[str, str]) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_inbox(pilot)
        by_age = ids(table)
        assert by_age == sorted(
            by_age, key=lambda i: next(a for a in table.shown if a.id == i).requested_at
        )
        await pilot.press("s")
        risks = [a.risk for a in table.shown]
        assert risks == sorted(risks, key=RISK_RANK.__getitem__)
        assert ids(table)[0] in {queue["high-new"]} | {
            a.id for a in table.shown if a.risk is Risk.HIGH
        }
        summary = str(app.screen.query_one("#inbox-summary", Static).render())
        assert "riskiest first" in summary
        await pilot.press("s")
        assert ids(table) == by_age


async def test_slash_narrows_by_every_word_and_escape_clears(
    demo_store: Path, queue: dict[str, str]
) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_inbox(pilot)
        everything = ids(table)
        await pilot.press("slash")
        await pilot.press(*"deploy production")
        await pilot.pause()
        assert ids(table) == [queue["high-new"]]
        summary = str(app.screen.query_one("#inbox-summary", Static).render())
        assert f"1 of {len(everything)} waiting" in summary
        await pilot.press("escape")
        await pilot.pause()
        assert ids(table) == everything
        assert app.screen.query_one("#inbox-filter", Input).value == ""
        await pilot.press("escape")  # with the filter gone, escape leaves the inbox
        await pilot.pause()
        assert not isinstance(app.screen, InboxScreen)


async def test_marked_requests_are_decided_with_one_reason_each_audited(
    demo_store: Path, queue: dict[str, str]
) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_inbox(pilot)
        for key in ("low-old", "medium"):
            table.move_cursor(row=table.get_row_index(queue[key]), animate=False)
            await pilot.press("space")
        assert table.marked == {queue["low-old"], queue["medium"]}
        await pilot.press("y")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ReasonModal)
        assert "Approve 2 requests" in modal.title_text
        assert queue["low-old"] in modal.prompt_text and queue["medium"] in modal.prompt_text
        modal.query_one("#reason-input", Input).value = "both reviewed"
        await pilot.press("enter")
        await settle(pilot)
        assert queue["high-new"] in ids(table)
        assert not {queue["low-old"], queue["medium"]} & set(ids(table))
        assert table.marked == set()
    with Engine(demo_store) as engine:
        for key in ("low-old", "medium"):
            decided = engine.get_approval(queue[key])
            assert decided.state is ApprovalState.APPROVED
            assert decided.reason == "both reviewed"
            events = [
                e
                for e in engine.events(decided.task_id)
                if e.entity_id == decided.id and e.action == "approve"
            ]
            assert len(events) == 1 and events[0].interface == "tui"
        assert engine.get_approval(queue["high-new"]).state is ApprovalState.PENDING


async def test_a_high_risk_request_in_a_bulk_decision_is_named_in_the_question(
    demo_store: Path, queue: dict[str, str]
) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_inbox(pilot)
        for key in ("high-new", "low-old"):
            table.move_cursor(row=table.get_row_index(queue[key]), animate=False)
            await pilot.press("space")
        await pilot.press("n")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ReasonModal)
        assert "1 of them HIGH risk" in modal.prompt_text
        await pilot.press("escape")  # cancelled: nothing decided
        await settle(pilot)
    with Engine(demo_store) as engine:
        assert engine.get_approval(queue["high-new"]).state is ApprovalState.PENDING


async def test_d_lists_what_was_decided_lately_with_who_and_why(
    demo_store: Path, queue: dict[str, str]
) -> None:
    with Engine(demo_store, interface=Interface.CLI, actor="dana") as engine:
        engine.decide_approval(queue["medium"], False, "not during business hours")
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_inbox(pilot)
        assert queue["medium"] not in ids(table)
        await pilot.press("d")
        await pilot.pause()
        assert table.view is InboxView.DECIDED
        assert queue["medium"] in ids(table)
        table.move_cursor(row=table.get_row_index(queue["medium"]), animate=False)
        await pilot.pause()
        detail = str(app.screen.query_one("#inbox-detail", Static).render())
        assert "rejected by dana" in detail and "not during business hours" in detail
        await pilot.press("y")  # a decided request is not decided again
        await pilot.pause()
        assert not isinstance(app.screen, ReasonModal)
        await pilot.press("d")
        assert table.view is InboxView.PENDING


async def test_long_ids_end_in_an_ellipsis_and_enter_is_in_the_footer(
    demo_store: Path, queue: dict[str, str]
) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_inbox(pilot)
        row = table.get_row_index(queue["long"])
        cell = str(table.get_row_at(row)[3])
        assert cell.endswith("…") and LONG_TASK.startswith(cell[:-1])
        footer_keys = {key for key, b in app.screen.active_bindings.items() if b.binding.show}
        assert {"enter", "y", "n", "space", "s", "slash", "d"} <= footer_keys
        assert app.screen.query_one(Footer)


# --- the order and the filter, as a property ---------------------------------------------------

START = datetime(2026, 3, 1, tzinfo=UTC)
approvals = st.lists(
    st.builds(
        lambda n, risk, minutes, action: Approval(
            id=f"t{n % 5}:{n}",
            task_id=f"t{n % 5}",
            seq=n,
            action=action,
            risk=risk,
            state=ApprovalState.PENDING,
            requested_by="agent",
            requested_at=clock.to_iso(START + timedelta(minutes=minutes)),
        ),
        st.integers(0, 10_000),
        st.sampled_from(list(Risk)),
        st.integers(0, 5000),
        st.sampled_from(["deploy api", "push tag", "run migration", "Deploy API to prod"]),
    ),
    unique_by=lambda a: a.id,
    max_size=30,
)


@given(
    approvals,
    st.sampled_from(list(InboxSort)),
    st.sampled_from(["", "deploy", "api deploy", "t3", "nothing"]),
)
def test_the_queue_is_every_match_once_in_its_order(
    pending: list[Approval], order: InboxSort, words: str
) -> None:
    shown = visible_approvals(pending, order, words, InboxView.PENDING)
    wanted = [
        a
        for a in pending
        if all(
            w in f"{a.id} {a.task_id} {a.risk.value} {a.action} {a.requested_by}".lower()
            for w in words.split()
        )
    ]
    assert sorted(a.id for a in shown) == sorted(a.id for a in wanted)
    keys = [(RISK_RANK[a.risk] if order is InboxSort.RISK else 0, a.requested_at) for a in shown]
    assert keys == sorted(keys)
