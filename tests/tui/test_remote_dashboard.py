"""Remote tasks on the dashboard: listed beside local ones, fetched and synced in workers.

Real stores, a real bare git remote on disk and real clones (tests/tui/remote_env.py); the
app drives the engine exactly as a user's keys would.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import pyrage
import pytest
from remote_env import (
    REMOTE_TASK,
    TeamRemote,
    git,
    list_team_remote,
    make_team_remote,
    push_colleague_task,
)
from textual.command import CommandPalette
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Static

from core.engine import CheckpointRequest, Engine
from core.errors import NotFoundError
from core.models import ApprovalState, CheckpointReason
from core.security import signing
from tui.app import PitstopApp
from tui.messages import RemoteFinished, RemoteProgress
from tui.remotes import RemoteSummary
from tui.screens.dashboard import DashboardScreen
from tui.widgets.task_preview import TaskPreview
from tui.widgets.task_table import TaskTable

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (120, 34)
M = TypeVar("M", bound=Message)


async def settle(pilot: Pilot[None]) -> None:
    """Let workers finish and their messages land."""
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def table_of(app: PitstopApp) -> TaskTable:
    return app.screen.query_one(TaskTable)


def line_of(table: TaskTable, task_id: str) -> str:
    """The text the table draws for `task_id`'s row (it must be on screen)."""
    row = next(i for i, s in enumerate(table.shown) if s.task.id == task_id)
    strip = table.render_line(row - round(table.scroll_y) + 1)
    return "".join(segment.text for segment in strip)


def of_type(posted: list[Message], kind: type[M]) -> list[M]:
    """Messages of one kind, each once (the hook sees a message at every dispatch)."""
    unique = {id(message): message for message in posted if isinstance(message, kind)}
    return list(unique.values())


def preview_text(app: PitstopApp) -> str:
    return str(app.screen.query_one(TaskPreview).render())


async def highlight(pilot: Pilot[None], task_id: str) -> None:
    table = table_of(pilot.app)  # type: ignore[arg-type]
    table.move_cursor(next(i for i, s in enumerate(table.shown) if s.task.id == task_id))
    await settle(pilot)


@pytest.fixture
def team(tmp_path: Path) -> TeamRemote:
    return make_team_remote(tmp_path / "team")


async def test_a_listed_remote_task_appears_beside_local_ones_with_a_badge(
    team: TeamRemote, tmp_path: Path
) -> None:
    push_colleague_task(team)
    store = tmp_path / "mine"
    with Engine(store) as mine:
        local = mine.start_task(repo=team.clone, objective="Tidy the search module").id
    list_team_remote(store, team)

    app = PitstopApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = table_of(app)
        assert {s.task.id for s in table.shown} == {local, REMOTE_TASK}
        remote_row = next(s for s in table.shown if s.task.id == REMOTE_TASK)
        assert isinstance(remote_row, RemoteSummary) and remote_row.readable
        assert "↓ remote" in line_of(table, REMOTE_TASK)
        assert "on team" in line_of(table, REMOTE_TASK)
        assert "remote" not in line_of(table, local)
        assert "↓ 1 remote" in str(app.screen.query_one("#summary", Static).render())
        # Remote-only tasks are not offered as local ones in the palette: they are fetched.
        assert set(app.known_tasks) == {local}
        assert set(app.known_remote_tasks) == {REMOTE_TASK}

        await highlight(pilot, REMOTE_TASK)
        text = preview_text(app)
        assert "lives on" in text and "team" in text and str(team.remote) in text
        assert "enter or f fetches it" in text

        await pilot.press("slash", *"remote", "enter")
        await settle(pilot)
        assert [s.task.id for s in table.shown] == [REMOTE_TASK]


async def test_f_fetches_the_remote_task_in_a_worker_and_it_becomes_local(
    team: TeamRemote, tmp_path: Path
) -> None:
    push_colleague_task(team)
    store = tmp_path / "mine"
    list_team_remote(store, team)
    posted: list[Message] = []

    app = PitstopApp(store)
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        await settle(pilot)
        await highlight(pilot, REMOTE_TASK)
        await pilot.press("f")
        await settle(pilot)

        progress = [m.text for m in of_type(posted, RemoteProgress)]
        assert any(text.startswith(f"fetching {REMOTE_TASK}") for text in progress)
        finished = of_type(posted, RemoteFinished)
        assert len(finished) == 1 and finished[0].outcome is not None
        assert finished[0].outcome.changed and not finished[0].outcome.problems
        assert not app.screen.query_one("#remote-status").display

        table = table_of(app)
        row = next(s for s in table.shown if s.task.id == REMOTE_TASK)
        assert not isinstance(row, RemoteSummary), "the task is local now"
        assert table.selected_task_id == REMOTE_TASK, "the cursor stayed on it"
        assert "Port the product search" in preview_text(app)
        assert "⇅" in line_of(table, REMOTE_TASK), "fetched tasks are shared"

        # `f` on a shared task catches up with its remote: nothing new this time.
        await pilot.press("f")
        await settle(pilot)
        again = of_type(posted, RemoteFinished)[-1].outcome
        assert again is not None and again.lines[0].startswith(f"{REMOTE_TASK}: updated, 0 new")

        await pilot.press("slash", *"shared", "enter")
        await settle(pilot)
        assert [s.task.id for s in table.shown] == [REMOTE_TASK]

    with Engine(store) as mine:
        task = mine.get_task(REMOTE_TASK)
        assert task.repo_root == str(team.clone.resolve())
        assert [c.seq for c in mine.list_checkpoints(REMOTE_TASK)] == [1]


async def test_enter_on_a_remote_task_fetches_it_rather_than_opening_it(
    team: TeamRemote, tmp_path: Path
) -> None:
    push_colleague_task(team)
    store = tmp_path / "mine"
    list_team_remote(store, team)
    app = PitstopApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await highlight(pilot, REMOTE_TASK)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen)
        assert not isinstance(table_of(app).selected_summary, RemoteSummary)
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, DashboardScreen), "a local task opens"


async def test_capital_s_pushes_a_local_change_and_pulls_a_remote_one(
    team: TeamRemote, tmp_path: Path
) -> None:
    # Ours: a task with an approval request, shared with a colleague (by their own keys) and
    # pushed to the team remote.
    bob = pyrage.x25519.Identity.generate()
    bob_key = signing.create_signing_key()
    store = tmp_path / "mine"
    with Engine(store, actor="alice") as mine:
        task_id = mine.start_task(repo=team.clone, objective="Upgrade the payment SDK").id
        (team.clone / "search_2.py").write_text("RANK = 'sdk'\n", encoding="utf-8")
        mine.checkpoint(task_id, CheckpointRequest(reason=CheckpointReason.MILESTONE))
        approval = mine.request_approval(task_id, "deploy a preview")
        mine.share_task(task_id, [str(bob.to_public())], signer=bob_key.public, label="bob")
        mine.push([task_id], str(team.remote))
    # A colleague fetches it and approves the request (a remote change)…
    with (
        pytest.MonkeyPatch.context() as as_bob,
        Engine(team.colleague_store, actor="bob", signing_key=bob_key) as colleague,
    ):
        as_bob.setenv("PITSTOP_IDENTITY", str(bob))
        colleague.fetch([task_id], str(team.remote), team.colleague_repo)
        colleague.decide_approval(approval.id, True, "preview is fine")
        colleague.sync([task_id], str(team.remote))
    # …while we checkpoint again (a local change).
    with Engine(store, actor="alice") as mine:
        (team.clone / "search_3.py").write_text("RANK = 'sdk 2'\n", encoding="utf-8")
        mine.checkpoint(task_id, CheckpointRequest(reason=CheckpointReason.MILESTONE))
        assert mine.get_approval(approval.id).state is ApprovalState.PENDING

    posted: list[Message] = []
    app = PitstopApp(store)
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        await settle(pilot)
        assert "⇅" in line_of(table_of(app), task_id), "a pushed task is marked shared"
        await pilot.press("S")
        await settle(pilot)
        progress = [m.text for m in of_type(posted, RemoteProgress)]
        assert any(text.startswith("syncing 1 task(s)") for text in progress)
        assert any(text.startswith("listing ") for text in progress)
        finished = [m.outcome for m in of_type(posted, RemoteFinished)]
        assert len(finished) == 1 and finished[0] is not None
        assert not finished[0].problems, finished[0].problems
        assert "1 pushed" in finished[0].summary

    with Engine(store) as mine:
        decided = mine.get_approval(approval.id)
        assert decided.state is ApprovalState.APPROVED and decided.decided_by == "bob"
    with Engine(team.colleague_store) as colleague:
        listing = colleague.list_remote(str(team.remote), team.colleague_repo).tasks
        assert [c.seq for c in listing[0].checkpoints] == [1, 2]


async def test_a_no_key_task_explains_why_and_how_to_get_access(
    team: TeamRemote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    push_colleague_task(team)
    # We are another operator: the colleague never shared the task with us.
    monkeypatch.setenv("PITSTOP_IDENTITY", str(pyrage.x25519.Identity.generate()))
    store = tmp_path / "stranger"
    list_team_remote(store, team)
    posted: list[Message] = []

    app = PitstopApp(store)
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        await settle(pilot)
        table = table_of(app)
        row = table.selected_summary
        assert isinstance(row, RemoteSummary) and not row.readable
        line = line_of(table, REMOTE_TASK)
        assert "↓ remote" in line and "no key" in line
        text = preview_text(app)
        assert "no key" in text and "pitstop key show" in text
        assert f"pitstop task share {REMOTE_TASK}" in text

        await pilot.press("f")
        await settle(pilot)
        assert not of_type(posted, RemoteProgress), "nothing was fetched"
        notes = [n.message for n in app._notifications]
        assert any("pitstop key show" in note for note in notes)

        await pilot.press("slash", *"no key", "enter")
        await settle(pilot)
        assert [s.task.id for s in table.shown] == [REMOTE_TASK]

    with Engine(store) as stranger, pytest.raises(NotFoundError):
        stranger.get_task(REMOTE_TASK)


async def test_sync_and_fetch_failures_are_one_line(team: TeamRemote, tmp_path: Path) -> None:
    push_colleague_task(team)
    store = tmp_path / "mine"
    list_team_remote(store, team)
    git(team.remote, "update-ref", "-d", f"refs/pitstop/ledger/{REMOTE_TASK}")  # gone since
    posted: list[Message] = []
    app = PitstopApp(store)
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        await settle(pilot)
        await highlight(pilot, REMOTE_TASK)
        await pilot.press("f")
        await settle(pilot)
        finished = of_type(posted, RemoteFinished)
        assert len(finished) == 1 and finished[0].outcome is None
        error = finished[0].error or ""
        assert "holds no task" in error and "\n" not in error
        assert not app.screen.query_one("#remote-status").display


async def test_s_lists_a_newly_named_remote_and_its_tasks_appear(
    team: TeamRemote, tmp_path: Path
) -> None:
    push_colleague_task(team)
    store = tmp_path / "mine"
    with Engine(store) as mine:
        mine.add_remote("team", str(team.remote), team.clone)  # `pitstop remote add team URL`

    app = PitstopApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert table_of(app).shown == []
        await pilot.press("S")
        await settle(pilot)
        rows = table_of(app).shown
        assert [s.task.id for s in rows] == [REMOTE_TASK]
        assert isinstance(rows[0], RemoteSummary) and rows[0].remote_name == "team"
        notes = [n.message for n in app._notifications]
        assert any("holds 1 task(s), 1 not here" in note for note in notes)


async def test_s_in_a_store_that_never_used_a_remote_is_not_offered(tmp_path: Path) -> None:
    app = PitstopApp(tmp_path / "empty")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.check_action("sync", ()) is False
        assert screen.check_action("fetch", ()) is False
        app.command_sync()  # the palette still explains
        await settle(pilot)
        notes = [n.message for n in app._notifications]
        assert any("pitstop remote add NAME URL" in note for note in notes)


async def test_palette_fetches_a_remote_task_from_the_task_screen(
    team: TeamRemote, tmp_path: Path
) -> None:
    push_colleague_task(team)
    store = tmp_path / "mine"
    with Engine(store) as mine:
        local = mine.start_task(repo=team.clone, objective="Tidy the search module").id
    list_team_remote(store, team)
    app = PitstopApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_task(local)
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*f"remote: fetch {REMOTE_TASK}")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen), "back on the dashboard"
        assert REMOTE_TASK in app.known_tasks and not app.known_remote_tasks
