"""Pilot tests: drive the real app on a copy of the demo store and assert on its state.

Workers read the store on their own threads; `settle` waits for them and for the messages they
post, so assertions see what a user would see once the screen has caught up.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from settling import settle
from textual.command import CommandPalette
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Input, Static, TabbedContent

from core.demo import BUMP_DEPENDENCIES, CHECKOUT_ERRORS, INVOICE_CURRENCY, RATE_LIMIT, RELEASE
from core.engine import Engine
from core.errors import UsageError
from tui.app import PitstopApp
from tui.messages import DiffLoaded, LoadFailed
from tui.screens.dashboard import DashboardScreen
from tui.screens.task import TaskScreen
from tui.widgets.diff_view import ChangedFilesTable, DiffView
from tui.widgets.overview import CheckpointOverview
from tui.widgets.summary_bar import SummaryBar
from tui.widgets.task_preview import TaskPreview
from tui.widgets.task_table import TaskTable
from tui.widgets.timeline import CheckpointTimeline

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (120, 34)


def table_ids(app: PitstopApp) -> list[str]:
    table = app.screen.query_one(TaskTable)
    return [summary.task.id for summary in table.shown]


def text_of(widget: Static) -> str:
    return str(widget.render())


async def open_task(pilot: Pilot[None], task_id: str) -> TaskScreen:
    app = pilot.app
    assert isinstance(app, PitstopApp)
    app.open_task(task_id)
    await settle(pilot)
    assert isinstance(app.screen, TaskScreen)
    return app.screen


async def test_dashboard_lists_every_task_needing_attention_first(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen)
        ids = table_ids(app)
        # By what needs a person (issue 18): the running release's uncertain deploy and blocked
        # verdict, the high-risk approval, the paused task ready to resume, then the rest.
        assert ids[:5] == [
            RELEASE,
            INVOICE_CURRENCY,
            RATE_LIMIT,
            CHECKOUT_ERRORS,
            BUMP_DEPENDENCIES,
        ]
        assert len(ids) == 7
        summary = text_of(app.screen.query_one(SummaryBar))
        assert "5 need attention" in summary
        preview = text_of(app.screen.query_one(TaskPreview))
        assert "needs you 1 uncertain effect to settle · verdict blocked" in preview
        assert "0 approvals pending · 1 uncertain" in preview
        assert "1 waiting" in summary and "1 cancelled" in summary
        assert set(app.known_tasks) == set(ids)


async def test_filter_narrows_the_table_and_escape_restores_it(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        box = app.screen.query_one("#filter", Input)
        bar = app.screen.query_one("#filter-bar")
        assert bar.display and box.has_focus
        await pilot.press(*"shopfront")
        assert len(table_ids(app)) == 5
        await pilot.press("space", *"cookie")
        assert table_ids(app) == ["signed-cookie-sessions"]
        assert "1 of 7 tasks match" in text_of(app.screen.query_one(SummaryBar))
        await pilot.press("enter")
        assert app.screen.query_one(TaskTable).has_focus
        assert bar.display  # a filter in force stays visible
        await pilot.press("escape")
        assert len(table_ids(app)) == 7
        assert not bar.display and box.value == ""


async def test_typing_q_in_the_filter_types_it_rather_than_quitting(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", "q")
        assert app.screen.query_one("#filter", Input).value == "q"
        assert app.is_running


async def test_j_k_move_and_enter_opens_the_task_then_escape_returns(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(TaskTable)
        await pilot.press("j", "j", "j")
        assert table.selected_task_id == CHECKOUT_ERRORS
        await pilot.press("k")
        assert table.selected_task_id == RATE_LIMIT
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TaskScreen) and screen.task_id == RATE_LIMIT
        timeline = screen.query_one(CheckpointTimeline)
        assert timeline.option_count == 3
        assert timeline.selected_ref == f"{RATE_LIMIT}@3"  # newest first, newest selected
        overview = screen.query_one(CheckpointOverview).text
        assert "Add per-user rate limiting to POST /checkout" in overview
        assert "✓ Tests for 429 responses" in overview
        assert "○ Open the PR" in overview
        assert "claude-code 2.0.14" in overview and "claude-sonnet-4.5" in overview
        assert "tokens" in overview and "66%" in overview  # 1.31M of 2M
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)
        assert app.screen.query_one(TaskTable).selected_task_id == RATE_LIMIT


async def test_diff_tab_shows_files_and_the_coloured_diff(demo_store: Path) -> None:
    posted: list[Message] = []
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        await settle(pilot)
        screen = await open_task(pilot, INVOICE_CURRENCY)
        await pilot.press("d")
        await settle(pilot)
        assert screen.query_one(TabbedContent).active == "diff"
        view = screen.query_one(DiffView)
        files = screen.query_one(ChangedFilesTable)
        paths = [str(row.value) for row in files.rows]
        assert paths == [
            "README.md",
            "migrations/0002_add_currency.sql",
            "scripts/legacy_import.py",
            "src/invoicer/export.py",
            "src/invoicer/models.py",
        ]
        assert set(view.offsets) == set(paths)
        body = screen.query_one("#diff-body", Static).render()
        assert "+ALTER TABLE invoices ADD COLUMN currency CHAR(3);" in str(body)
        assert "deleted file mode" in str(body)
        heading = text_of(screen.query_one("#diff-heading", Static))
        assert f"{INVOICE_CURRENCY}@3 against base commit" in heading
        loaded = [m for m in posted if isinstance(m, DiffLoaded)]
        assert [(m.ref, m.against) for m in loaded] == [(f"{INVOICE_CURRENCY}@3", "base")]

        # Against the previous checkpoint only the README changed.
        await pilot.press("b")
        await settle(pilot)
        assert [str(row.value) for row in files.rows] == ["README.md"]
        assert "against the previous checkpoint" in text_of(
            screen.query_one("#diff-heading", Static)
        )


async def test_choosing_another_checkpoint_reloads_overview_and_diff(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_task(pilot, INVOICE_CURRENCY)
        await pilot.press("d")
        await settle(pilot)
        screen.query_one(CheckpointTimeline).focus()
        await pilot.press("j", "j")  # down the list = older: #1
        await settle(pilot)
        assert screen.selected_ref == f"{INVOICE_CURRENCY}@1"
        paths = [str(row.value) for row in screen.query_one(ChangedFilesTable).rows]
        assert paths == ["migrations/0002_add_currency.sql", "src/invoicer/models.py"]
        await pilot.press("o")
        overview = screen.query_one(CheckpointOverview).text
        assert f"{INVOICE_CURRENCY}@1" in overview
        assert "Model and migration 0002 written" in overview


async def test_incomplete_checkpoint_is_marked_and_not_diffed(demo_store: Path) -> None:
    posted: list[Message] = []
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        await settle(pilot)
        screen = await open_task(pilot, BUMP_DEPENDENCIES)
        timeline = screen.query_one(CheckpointTimeline)
        assert timeline.option_count == 3
        assert "incomplete" in str(timeline.get_option(f"{BUMP_DEPENDENCIES}@2").prompt)
        assert "1 incomplete" in text_of(screen.query_one("#task-heading", Static))
        timeline.focus()
        await pilot.press("j")
        await settle(pilot)
        assert screen.selected_ref == f"{BUMP_DEPENDENCIES}@2"
        overview = screen.query_one(CheckpointOverview).text
        assert "cannot be resumed" in overview
        assert "stopped before it completed" in overview
        await pilot.press("d")
        await settle(pilot)
        assert "no verified snapshot" in text_of(screen.query_one("#diff-heading", Static))
        assert not [m for m in posted if isinstance(m, DiffLoaded)]


async def test_palette_switches_theme_and_opens_tasks(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "pitstop-dark"
        dark_running = app.theme_variables["status-running"]
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"theme: pitstop-light")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.theme == "pitstop-light"
        assert app.theme_variables["status-running"] != dark_running
        assert app.theme_variables["status-running"].upper() == "#237233"

        await pilot.press("colon")  # `:` is the command line (issue 18), not a task search
        await pilot.pause()
        assert not isinstance(app.screen, CommandPalette)
        await pilot.press(*f"task {RATE_LIMIT}")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TaskScreen) and app.screen.task_id == RATE_LIMIT


async def test_palette_filter_command_returns_to_a_filtered_dashboard(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_task(pilot, RATE_LIMIT)
        app.command_set_filter("invoicer")
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen)
        assert table_ids(app) == [INVOICE_CURRENCY, BUMP_DEPENDENCIES]
        app.command_sort("budget")
        await settle(pilot)
        # 51% (tokens) before 133% (minutes: 120 of 90 by its last checkpoint)
        assert table_ids(app) == [INVOICE_CURRENCY, BUMP_DEPENDENCIES]
        app.command_sort("budget")  # again: the other way
        await settle(pilot)
        assert table_ids(app) == [BUMP_DEPENDENCIES, INVOICE_CURRENCY]


async def test_question_mark_toggles_the_keys_panel(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.query("HelpPanel")
        await pilot.press("question_mark")
        await pilot.pause()
        assert not app.screen.query("HelpPanel")


async def test_q_quits(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_an_unknown_task_reports_a_clear_error(demo_store: Path) -> None:
    posted: list[Message] = []
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        await settle(pilot)
        app.open_task("no-such-task")
        await settle(pilot)
        failures = [m for m in posted if isinstance(m, LoadFailed)]
        assert len(failures) == 1 and "no-such-task" in failures[0].message
        assert app.is_running


async def test_an_empty_store_shows_an_empty_dashboard(tmp_path: Path) -> None:
    app = PitstopApp(tmp_path / "empty-store")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert table_ids(app) == []
        assert "nothing needs attention" in text_of(app.screen.query_one(SummaryBar))


async def test_the_app_reads_but_never_writes_the_store(demo_store: Path) -> None:
    before = Engine(demo_store)
    events_before = len(before.events())
    before.close()
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_task(pilot, INVOICE_CURRENCY)
        await pilot.press("d")
        await settle(pilot)
    with Engine(demo_store) as after:
        assert len(after.events()) == events_before


def test_theme_option_chooses_the_theme_and_refuses_unknown_ones(demo_store: Path) -> None:
    assert PitstopApp(demo_store, theme="pitstop-contrast").theme == "pitstop-contrast"
    assert PitstopApp(demo_store).theme == "pitstop-dark"
    with pytest.raises(UsageError, match=r"unknown theme 'neon'.*pitstop-dark"):
        PitstopApp(demo_store, theme="neon")


def test_config_theme_is_the_default_and_a_missing_one_is_reported(
    demo_store: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    monkeypatch.setenv("PITSTOP_CONFIG_DIR", str(config))
    (config / "config.toml").write_text('[ui]\ntheme = "pitstop-light"\n')
    assert PitstopApp(demo_store).theme == "pitstop-light"
    (config / "config.toml").write_text('[ui]\ntheme = "gone"\n')
    app = PitstopApp(demo_store)
    assert app.theme == "pitstop-dark"
    assert any("'gone'" in problem for problem in app.theme_problems)


async def test_a_user_keymap_rebinds_a_key(
    demo_store: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    monkeypatch.setenv("PITSTOP_CONFIG_DIR", str(config))
    (config / "config.toml").write_text('[ui.keymap]\n"dashboard.filter" = "f"\n')
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f")
        assert app.screen.query_one("#filter", Input).has_focus


async def test_sorting_by_age_from_the_palette_puts_the_newest_first(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *"tasks: sort by age")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert table_ids(app)[:3] == [RATE_LIMIT, RELEASE, INVOICE_CURRENCY]  # 12m, 1h, 3h
        app.command_sort("age")  # again: oldest first
        await settle(pilot)
        assert table_ids(app)[0] == "signed-cookie-sessions"


async def test_palette_jumps_to_a_checkpoint_of_the_task_on_screen(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_task(pilot, RATE_LIMIT)
        screen = app.screen
        assert isinstance(screen, TaskScreen)
        assert screen.selected_ref != f"{RATE_LIMIT}@1"  # the newest is selected on opening
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*f"checkpoint: open {RATE_LIMIT}@1")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TaskScreen)
        assert app.screen.task_id == RATE_LIMIT
        assert app.screen.selected_ref == f"{RATE_LIMIT}@1"
