"""Trust on the dashboard: a task's owner fingerprint and the facts refused from elsewhere.

A colleague (Alice) founds and shares a task over a real bare remote; we (Bob) fetch it; an
attacker with push access only plants facts signed by a key no roster names. After a sync the
dashboard marks the task's row, its preview says how many facts were refused and where to look,
and the task's overview names its owner by fingerprint, at 80×24.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyrage
import pytest
from remote_env import TeamRemote, environment, make_team_remote
from textual.pilot import Pilot
from textual.widgets import Static

from core.engine import CheckpointRequest, Engine
from core.ledger.fact_format import SCHEMA
from core.models import CheckpointReason
from core.security import signing
from tests.core import trustkit
from tui.app import PitstopApp
from tui.widgets.overview import CheckpointOverview
from tui.widgets.task_preview import TaskPreview
from tui.widgets.task_table import TaskTable

pytestmark = pytest.mark.usefixtures("tui_environment")

TASK = "port-search"
SIZE = (80, 24)


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def _forged(files: trustkit.Files, key: signing.SigningKey, number: int) -> None:
    plain = {"schema": SCHEMA, "kind": "event", "task": TASK, "event": f"mallory:{number}",
             "at": "2026-01-01T00:00:00.000000Z", "actor": "alice", "interface": "cli",
             "entity": "task", "entity_id": TASK, "action": "cancel",
             "from_state": "running", "to_state": "cancelled"}  # fmt: skip
    trustkit.add_fact(files, plain, key)


def _scene(tmp_path: Path) -> tuple[TeamRemote, Path, str, str]:
    """Alice's shared task fetched into our store, then two forged facts synced in; returns
    the team, our store, our identity and Alice's fingerprint."""
    team = make_team_remote(tmp_path / "team")
    alice, bob = (str(pyrage.x25519.Identity.generate()) for _ in range(2))
    with environment(PITSTOP_IDENTITY=bob):
        bob_key = signing.load_signing_key()
    bob_recipient = str(pyrage.x25519.Identity.from_str(bob).to_public())
    with environment(PITSTOP_IDENTITY=alice):
        alice_fp = signing.load_signing_key().fingerprint
        with Engine(team.colleague_store, actor="alice") as colleague:
            colleague.start_task(repo=team.colleague_repo, objective="Port search", task_id=TASK)
            colleague.share_task(TASK, [bob_recipient], signer=bob_key.public, label="bob")
            (team.colleague_repo / "search_1.py").write_text("RANK = 'new'\n", encoding="utf-8")
            colleague.checkpoint(TASK, CheckpointRequest(reason=CheckpointReason.MILESTONE))
            colleague.push([TASK], str(team.remote))
    ours = tmp_path / "mine"
    mallory = signing.create_signing_key()
    with environment(PITSTOP_IDENTITY=bob):
        with Engine(ours, actor="bob") as mine:
            mine.fetch([TASK], str(team.remote), team.clone)
        trustkit.tamper(team.remote, TASK, lambda f: [_forged(f, mallory, n) for n in (1, 2)])
        with Engine(ours, actor="bob") as mine:
            report = mine.sync([TASK], str(team.remote), team.clone)
            assert len(report["fetched"][TASK]["ledger"]["rejected"]) == 2
    return team, ours, bob, alice_fp


async def test_refused_facts_mark_the_row_and_the_overview_names_the_owner(
    tmp_path: Path,
) -> None:
    _team, ours, bob, alice_fp = _scene(tmp_path)
    with environment(PITSTOP_IDENTITY=bob):
        app = PitstopApp(ours)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            table = app.screen.query_one(TaskTable)
            assert table.remote.refused == {TASK: 2}
            row = "".join(s.text for s in table.render_line(1))
            assert "⚠2" in row and TASK[:10] in row
            preview = str(app.screen.query_one(TaskPreview).render())
            assert f"2 refused facts from elsewhere — pitstop task refused {TASK}" in preview

            await pilot.press("slash", *"refused", "enter")
            await settle(pilot)
            assert [s.task.id for s in table.shown] == [TASK]

            table.focus()
            await pilot.press("enter")
            await settle(pilot)
            overview = app.screen.query_one(CheckpointOverview)
            text = overview.text
            assert f"Owner {alice_fp} trusted on first fetch" in text
            assert "may decide: any member" in text
            assert f"⚠ 2 refused facts from elsewhere — pitstop task refused {TASK}" in text
            trust = app.screen.query_one("#overview-trust", Static)
            assert trust.display and trust.region.height >= 2
            assert trust.region.bottom <= SIZE[1] and trust.region.right <= SIZE[0]
            assert Engine(ours).get_task(TASK).status.value != "cancelled"
            if shot := os.environ.get("TRUST_SCREENSHOT"):
                app.save_screenshot(shot)


async def test_a_task_that_never_left_the_store_shows_no_trust_line(tmp_path: Path) -> None:
    team = make_team_remote(tmp_path / "team")
    with Engine(tmp_path / "mine") as mine:
        mine.start_task(repo=team.clone, objective="Local only", task_id="local-only")
        mine.checkpoint("local-only", CheckpointRequest(reason=CheckpointReason.MILESTONE))
    app = PitstopApp(tmp_path / "mine")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert not app.screen.query_one("#overview-trust", Static).display
        assert "Owner" not in app.screen.query_one(CheckpointOverview).text
