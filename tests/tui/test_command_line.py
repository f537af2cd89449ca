"""The `:` command line obeys exactly: `:q` quits (never opens a task named "…-q"), `:task ID`
opens by whole id or unambiguous prefix, anything else is one line saying what is known."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from settling import settle
from textual.pilot import Pilot

from core.engine import Engine
from tui.app import PitstopApp
from tui.command_line import SPELLINGS, CommandError, CommandLine, Verb, parse, resolve
from tui.screens.command_line import CommandLineScreen
from tui.screens.inbox import InboxScreen
from tui.screens.task import TaskScreen

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (120, 34)


@given(st.text(max_size=80))
def test_any_line_is_a_command_an_error_or_nothing(line: str) -> None:
    parsed = parse(line)
    assert parsed is None or isinstance(parsed, CommandLine | CommandError)
    if isinstance(parsed, CommandError):
        assert "\n" not in parsed.message and parsed.message
    if parsed is None:
        assert not " ".join(line.strip().removeprefix(":").split())


@pytest.mark.parametrize(
    ("line", "wanted"),
    [
        (":q", CommandLine(Verb.QUIT)),
        ("q", CommandLine(Verb.QUIT)),
        (" :qa! ", CommandLine(Verb.QUIT)),
        (":inbox", CommandLine(Verb.INBOX)),
        (":task  deploy-3f2a ", CommandLine(Verb.TASK, "deploy-3f2a")),
        (":t dep", CommandLine(Verb.TASK, "dep")),
        (":theme pitstop-light", CommandLine(Verb.THEME, "pitstop-light")),
        (":filter waiting  deploy", CommandLine(Verb.FILTER, "waiting deploy")),
        (":filter", CommandLine(Verb.FILTER)),
        (":", None),
        ("   ", None),
    ],
)
def test_lines_mean_what_they_say(line: str, wanted: CommandLine | None) -> None:
    assert parse(line) == wanted


@pytest.mark.parametrize("line", [":qq", ":fix-q", ":task", ":theme", ":inbox now", ":q later"])
def test_nothing_is_guessed(line: str) -> None:
    parsed = parse(line)
    assert isinstance(parsed, CommandError), parsed


def test_every_spelling_is_one_verb() -> None:
    seen: dict[str, Verb] = {}
    for verb, names in SPELLINGS.items():
        for name in names:
            assert seen.setdefault(name, verb) is verb, name


def test_a_whole_id_wins_over_a_prefix_and_an_ambiguous_prefix_is_refused() -> None:
    ids = ["fix", "fix-q", "fix-login", "deploy-3f2a"]
    assert resolve("fix", ids, "task") == "fix"
    assert resolve("dep", ids, "task") == "deploy-3f2a"
    ambiguous = resolve("fix-", ids, "task")
    assert isinstance(ambiguous, CommandError) and "could be 2 tasks" in ambiguous.message
    assert isinstance(resolve("nope", ids, "task"), CommandError)


# --- in the app --------------------------------------------------------------------------------


@pytest.fixture
def store_with_q_task(demo_store: Path, tmp_path: Path) -> Path:
    """The demo store plus a task whose id ends in `-q`, the one `:q` used to open."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "i"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )
    with Engine(demo_store) as engine:
        engine.start_task(repo=repo, objective="fix the query", task_id="fix-q")
    return demo_store


async def type_line(pilot: Pilot[None], text: str) -> None:
    await pilot.press("colon")
    await pilot.pause()
    assert isinstance(pilot.app.screen, CommandLineScreen)
    await pilot.press(*text)
    await pilot.press("enter")
    await settle(pilot)


async def test_colon_q_quits_and_opens_no_task(store_with_q_task: Path) -> None:
    app = PitstopApp(store_with_q_task)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_line(pilot, "q")
        assert not any(isinstance(screen, TaskScreen) for screen in app.screen_stack)
    assert app.return_code == 0 and not app.is_running


async def test_task_inbox_and_an_unknown_command(store_with_q_task: Path) -> None:
    app = PitstopApp(store_with_q_task)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_line(pilot, "task fix-q")
        assert isinstance(app.screen, TaskScreen) and app.screen.task_id == "fix-q"
        await type_line(pilot, "inbox")
        assert isinstance(app.screen, InboxScreen)
        await type_line(pilot, "dashboard")
        await type_line(pilot, "bogus")
        messages = [n.message for n in app._notifications]
        assert any(m.startswith("unknown command :bogus") for m in messages)
        assert app.is_running
        await pilot.press("colon")
        await pilot.pause()
        await pilot.press("escape")  # closed, nothing run
        await pilot.pause()
        assert not isinstance(app.screen, CommandLineScreen)
