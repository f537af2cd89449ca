"""Signals stay true on screen: an out-of-date verdict is marked in its column and the preview,
and the Validation tab opens on the stored result with its time instead of a blank page."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from demo_env import TERMINAL_SIZE
from rich.style import Style
from textual.pilot import Pilot

from core.engine import Engine, TaskSummary
from core.models import Interface, Task, TaskStatus
from core.store.dashboard import TriageFacts
from tui.app import PitstopApp
from tui.screens.task import TaskScreen
from tui.widgets.task_cells import row_cells
from tui.widgets.task_preview import TaskPreview, triage_lines
from tui.widgets.task_table import TaskTable
from tui.widgets.validation_view import ValidationView

pytestmark = pytest.mark.usefixtures("tui_environment")

TASK = "verdict-signals"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture
def validated_store(demo_store: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The demo store plus a task on a private repository, checkpointed and validated."""
    repo = tmp_path / "work" / "parser"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "parse.py").write_text("def parse(text):\n    return text\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start")
    (repo / "parse.py").write_text("def parse(text):\n    return text.strip()\n")
    with Engine(demo_store, interface=Interface.CLI, actor="dana") as engine:
        engine.start_task(repo=repo, objective="Tidy the parser", task_id=TASK)
        engine.checkpoint(TASK)
        engine.validate(f"{TASK}@1", offline=True)
    return demo_store, repo


def colours(variable: str) -> Style:
    return Style(color={"foreground-muted": "grey50", "success": "green"}.get(variable, "red"))


def a_summary(outdated: bool, verdict: str = "ready") -> TaskSummary:
    task = Task(
        id="t-1",
        repo_root="/r",
        store_repo="s",
        objective="o",
        status=TaskStatus.PAUSED,
        created_at="2026-12-01T00:00:00.000000Z",
        updated_at="2026-12-01T00:00:00.000000Z",
    )
    facts = TriageFacts(verdict_outdated=outdated, validated_branch="main", branch_moved=outdated)
    return TaskSummary(task, 1, task.updated_at, 0, 0, verdict, facts)


@pytest.mark.parametrize(
    ("verdict", "current", "outdated"),
    [
        ("ready", "ready", "ready?"),
        ("ready_with_warnings", "warn", "warn?"),
        ("stale", "stale", "stale?"),
        ("blocked", "blocked", "block?"),
        ("unsupported", "unsup", "unsup?"),
    ],
)
def test_an_out_of_date_verdict_is_marked_in_its_column(
    verdict: str, current: str, outdated: str
) -> None:
    """Marked by a sign (not by colour alone) and muted; it still fits the 7-cell column."""
    fresh = row_cells(a_summary(False, verdict), colours)[8]
    old = row_cells(a_summary(True, verdict), colours)[8]
    assert fresh[0] == current
    assert old[0] == outdated and len(outdated) <= 7
    assert old[1] == colours("foreground-muted")
    assert fresh[1] != old[1]


def test_the_preview_names_the_branch_that_moved() -> None:
    text = "\n".join(triage_lines(a_summary(True)))
    assert "out of date: branch main moved since; validate again" in text
    assert "out of date" not in "\n".join(triage_lines(a_summary(False)))


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def open_validation(pilot: Pilot[None]) -> ValidationView:
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, PitstopApp)
    app.open_task(TASK)
    await settle(pilot)
    await pilot.press("v")
    await settle(pilot)
    assert isinstance(app.screen, TaskScreen)
    return app.screen.query_one(ValidationView)


async def test_the_validation_tab_opens_on_the_stored_result_with_its_time(
    validated_store: tuple[Path, Path],
) -> None:
    store_root, _ = validated_store
    with Engine(store_root) as engine:
        stored = engine.stored_validation(f"{TASK}@1")
    assert stored is not None
    app = PitstopApp(store_root)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        view = await open_validation(pilot)
        listed = str(view.query_one("#validation-list").render())
        verdict = str(view.query_one("#validation-verdict").render())
    assert [f.check for f in view.findings] == [f.check for f in stored.findings]
    assert all(f.check in listed for f in stored.findings)
    assert "Verdict:" in verdict
    assert f"({stored.at})" in verdict and "stored" in verdict and "ago" in verdict
    assert "by dana via cli" in verdict


async def test_a_never_validated_checkpoint_opens_on_the_invitation(
    demo_store: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start")
    with Engine(demo_store) as engine:
        engine.start_task(repo=repo, objective="Never validated", task_id=TASK)
        engine.checkpoint(TASK)
    app = PitstopApp(demo_store)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        view = await open_validation(pilot)
        assert view.findings == ()
        assert str(view.query_one("#validation-verdict").render()) == ""
        assert "press enter" in str(view.query_one("#validation-heading").render())


async def test_the_dashboard_marks_the_verdict_once_the_branch_moves(
    validated_store: tuple[Path, Path],
) -> None:
    store_root, repo = validated_store
    app = PitstopApp(store_root)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        await settle(pilot)
        before = {s.task.id: s for s in app.screen.query_one(TaskTable).summaries}[TASK]
    assert not before.triage.verdict_outdated
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "more")
    app = PitstopApp(store_root)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        await settle(pilot)
        after = {s.task.id: s for s in app.screen.query_one(TaskTable).summaries}[TASK]
    assert after.triage.branch_moved and after.triage.verdict_outdated


async def test_an_empty_store_says_how_to_start(tmp_path: Path) -> None:
    """A first run: the demo, a harness hook and `task start`, each a command that exists."""
    store_root = tmp_path / "empty-store"
    with Engine(store_root):
        pass
    app = PitstopApp(store_root)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        await settle(pilot)
        text = str(app.screen.query_one(TaskPreview).render())
    assert "No tasks in this store yet" in text
    assert str(store_root) in text or "~" in text
    for command in ("pitstop demo", "pitstop hook install claude-code", "pitstop task start"):
        assert command in text
    from click.testing import CliRunner

    from tui.cli import cli

    for argv in (
        ["demo", "--help"],
        ["hook", "install", "claude-code", "--help"],
        ["task", "start", "--help"],
    ):
        assert CliRunner().invoke(cli, argv).exit_code == 0, argv


async def test_a_store_with_tasks_never_shows_the_first_run_hint(demo_store: Path) -> None:
    app = PitstopApp(demo_store)
    async with app.run_test(size=TERMINAL_SIZE) as pilot:
        await settle(pilot)
        text = str(app.screen.query_one(TaskPreview).render())
    assert "No tasks in this store yet" not in text
