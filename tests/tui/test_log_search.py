"""`/` search in the full log and the diff, follow mode, and evidence recorded since the newest
checkpoint: on real stores, with logs chunked small enough that lines span chunks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from core.engine import CheckpointRequest, Engine
from core.evidence.items import EvidenceLimits
from core.models import Interface
from tui.app import PitstopApp
from tui.screens.task import TaskScreen
from tui.widgets.diff_view import DiffView
from tui.widgets.evidence_view import EvidenceView
from tui.widgets.lazy_log import ChunkedLog, clean_line, search_log
from tui.widgets.search_bar import Matches, SearchBar, find_matches, line_matches

pytestmark = pytest.mark.usefixtures("tui_environment")

SIZE = (120, 34)
TASK = "log-search"
LINES = 3000


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=cwd,
                   check=True, capture_output=True)  # fmt: skip


def log_text(count: int = LINES) -> str:
    return "".join(
        f"step {n:05d} {'TIMEOUT waiting for db' if n % 700 == 0 else 'ok'} {'x' * (n % 37)}\n"
        for n in range(1, count + 1)
    )


@pytest.fixture
def searchable(demo_store: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A task with a chunked log (lines crossing chunk borders) and a diff, checkpointed."""
    repo = tmp_path / "calc"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("".join(f"def f{n}():\n    return {n}\n" for n in range(60)))
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "start")
    (repo / "calc.py").write_text(
        "".join(f"def f{n}():\n    return {n * 2 if n % 20 == 0 else n}\n" for n in range(60))
    )
    log = tmp_path / "run.log"
    log.write_text(log_text())
    with Engine(demo_store, interface=Interface.API, actor="agent") as engine:
        engine.start_task(repo=repo, objective="Search the log", task_id=TASK)
        engine.add_evidence_file(TASK, log, command="make", exit_code=0, label="build",
                                 limits=EvidenceLimits(chunk_bytes=4096))  # fmt: skip
        engine.checkpoint(TASK, CheckpointRequest(note="built"))
    return demo_store, repo


# --- matching ------------------------------------------------------------------------------------


def test_smart_case_and_wrapping_matches() -> None:
    lines = ["Error here", "error there", "fine", "ERROR"]
    assert find_matches(lines, "error") == [0, 1, 3]
    assert find_matches(lines, "Error") == [0]
    assert not line_matches("anything", "")
    found = Matches("error", [0, 1, 3])
    assert found.start_at(2) == 3
    assert found.step(True) == 0 and found.step(False) == 3  # wraps both ways
    assert found.label() == "match 3 of 3 for 'error' · n/N"
    assert Matches("x", []).label() == "no line holds 'x'"


@pytest.mark.parametrize("chunk_bytes", [512, 1000, 4096, 65536])
def test_searching_the_stored_chunks_finds_what_the_whole_text_holds(
    demo_store: Path, tmp_path: Path, chunk_bytes: int
) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "i")
    text = log_text()
    log = tmp_path / "a.log"
    log.write_text(text)
    with Engine(demo_store) as engine:
        engine.start_task(repo=repo, objective="chunks", task_id="chunks")
        item = engine.add_evidence_file("chunks", log, exit_code=0,
                                        limits=EvidenceLimits(chunk_bytes=chunk_bytes))  # fmt: skip
        index = ChunkedLog(engine.evidence_chunk_index(item.id))
        for needle in ("TIMEOUT", "step 0299", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "nowhere"):
            found = search_log(
                index, lambda seq: engine.evidence_chunk(item.id, seq), needle, lambda: False
            )
            expected = find_matches([clean_line(line.encode()) for line in text.splitlines()],
                                    needle)  # fmt: skip
            assert found == expected, (needle, chunk_bytes)


# --- in the app --------------------------------------------------------------------------------


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def open_tab(pilot: Pilot[None], key: str) -> TaskScreen:
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, PitstopApp)
    app.open_task(TASK)
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)
    assert isinstance(app.screen, TaskScreen)
    return app.screen


async def search(pilot: Pilot[None], words: str) -> None:
    await pilot.press("slash")
    await pilot.pause()
    await pilot.press(*("space" if c == " " else c for c in words))
    await pilot.press("enter")
    await settle(pilot)


async def test_slash_in_the_full_log_finds_each_line_and_n_walks_them(
    searchable: tuple[Path, Path],
) -> None:
    app = PitstopApp(searchable[0])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tab(pilot, "e")
        view = screen.query_one(EvidenceView)
        await search(pilot, "TIMEOUT")
        log = view.query_one("#evidence-log")
        assert view.has_class("full-log")  # `/` opened the full log to search it
        wanted = [n - 1 for n in range(700, LINES + 1, 700)]
        assert log.matches.lines == wanted  # type: ignore[attr-defined]
        first = log.matches.line  # type: ignore[attr-defined]
        assert first in wanted
        top = int(log.scroll_offset.y)
        assert top <= first < top + log.size.height  # scrolled into view
        await pilot.press("n")
        await settle(pilot)
        assert log.matches.line == wanted[(wanted.index(first) + 1) % len(wanted)]  # type: ignore[attr-defined]
        status = str(view.query_one("#evidence-log-status").render())
        assert f"of {len(wanted)} for 'TIMEOUT'" in status
        assert not log.following  # type: ignore[attr-defined]
        await pilot.press("F")  # follow again: back to the end
        await settle(pilot)
        assert log.following and log.is_vertical_scroll_end  # type: ignore[attr-defined]


async def test_slash_in_the_diff_marks_and_scrolls_to_each_hit(
    searchable: tuple[Path, Path],
) -> None:
    app = PitstopApp(searchable[0])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tab(pilot, "d")
        diff = screen.query_one(DiffView)
        assert diff.shown_lines
        await search(pilot, "return 80")
        hits = [n for n, line in enumerate(diff.shown_lines) if "return 80" in line]
        assert hits and diff.matches.lines == hits
        await search(pilot, "return")
        many = diff.matches.lines
        assert len(many) > 3
        before = diff.matches.line
        await pilot.press("N")
        assert diff.matches.line == many[(many.index(before) - 1) % len(many)]
        bar = diff.query_one(SearchBar)
        await pilot.press("slash")
        await pilot.press("escape")  # closes the search and forgets the words
        await settle(pilot)
        assert not bar.has_class("open") and diff.matches.needle == ""
        assert diff.query_one(SearchBar).query_one(Input).value == ""


async def test_evidence_since_the_newest_checkpoint_is_listed_and_followed_as_it_grows(
    searchable: tuple[Path, Path], tmp_path: Path
) -> None:
    store_root, repo = searchable
    release = tmp_path / "go-on"
    script = (
        "import os, sys, time\n"
        "for n in range(400): print(f'first {n:04d} ' + 'y' * 30)\n"
        "sys.stdout.flush()\n"
        f"while not os.path.exists({str(release)!r}): time.sleep(0.05)\n"
        "for n in range(400): print(f'second {n:04d} ' + 'z' * 30)\n"
    )
    # An agent's `pitstop run`, in its own process, storing its output in small chunks as it
    # goes (the CLI's chunks are larger than this test's output).
    runner_code = (
        "import os, sys\n"
        "from core.engine import Engine\n"
        "from core.evidence.items import EvidenceLimits\n"
        f"with Engine({str(store_root)!r}) as engine:\n"
        f"    engine.run_command({TASK!r}, [sys.executable, '-c', {script!r}], label='slow',\n"
        f"        cwd={str(repo)!r}, out_fd=os.open(os.devnull, os.O_WRONLY),\n"
        "        limits=EvidenceLimits(chunk_bytes=2048))\n"
    )
    runner = subprocess.Popen([sys.executable, "-c", runner_code], env=os.environ.copy())
    # Wait for the run's item to be listed. Its output is handed to the store in batches
    # (`core.evidence.recorder.BATCH_BYTES`) and cut into chunks, so this run's first half
    # stays unstored until the run ends: the log grows once, at the end.
    with Engine(store_root) as engine:
        deadline = time.monotonic() + 30
        while not [i for i in engine.list_evidence(TASK) if i.label == "slow"]:
            assert time.monotonic() < deadline, "the run's evidence item was never listed"
            time.sleep(0.05)
    app = PitstopApp(store_root)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tab(pilot, "e")
        view = screen.query_one(EvidenceView)
        slow = [item for item in view.items if item.label == "slow"]
        assert slow and slow[0].checkpoint_seq is None  # listed: recorded since @1
        heading = str(view.query_one("#evidence-heading").render())
        assert f"1 since {TASK}@1" in heading
        assert view.shown is not None and view.shown.label == "slow"  # newest first
        await pilot.press("f")
        await settle(pilot)
        log = view.query_one("#evidence-log")
        before = log.log_index.line_count  # type: ignore[attr-defined]
        assert log.following  # type: ignore[attr-defined]
        release.touch()
        assert runner.wait(30) == 0
        for _ in range(40):  # the follow tick reads the index again each second
            await pilot.pause(0.1)
            if log.log_index.line_count > before:  # type: ignore[attr-defined]
                break
        await settle(pilot)
        assert log.log_index.line_count > before  # type: ignore[attr-defined]
        assert log.is_vertical_scroll_end  # type: ignore[attr-defined]
