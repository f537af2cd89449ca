"""The dashboard's remote rows over a remote an attacker wrote to: the healthy tasks show, and
the bad ones are one line each in the sync outcome, never a row or a crash.

Real stores and a real bare remote (tests/core/hostile_kit.py); no app is started, the
dashboard's own readers and workers are called as the app calls them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.engine import Engine
from tests.core.hostile_kit import (
    HEALTHY,
    TARGET,
    World,
    build_world,
    point_ref,
    raw_json,
    read,
    ref_oid,
    replace_file,
)
from tui.remotes import read_remote_view, sync_everything

BAD = ("Evil-Task", "x;rm${IFS}-rf", "a" * 65)


@pytest.fixture
def world(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> World:
    """A fresh copy of the attacked remote and a clone of it."""
    return build_world(tmp_path_factory.getbasetemp() / "hostile-world", tmp_path)


def test_remote_rows_and_sync_keep_working_beside_bad_tasks(world: World) -> None:
    healthy = ref_oid(world.remote, f"refs/pitstop/ledger/{HEALTHY}")
    for name in BAD:
        assert point_ref(world.remote, f"refs/pitstop/ledger/{name}", healthy).returncode == 0
    ledger = f"refs/pitstop/ledger/{TARGET}"
    header = dict(json.loads(read(world.remote, f"{ledger}:task.json")))
    replace_file(world.remote, ledger, "task.json", raw_json(header, tokens_used="1e309"))

    with Engine(world.tmp / "victim") as victim:
        victim.add_remote("team", world.url, world.clone)
        listed = victim.list_remote("team", world.clone)
        assert [t.task_id for t in listed.tasks] == [HEALTHY]
        assert len(listed.problems) == len(BAD) + 1

        view = read_remote_view(victim)
        assert [row.task.id for row in view.rows] == [HEALTHY]

        victim.fetch([HEALTHY], "team", world.clone)
        outcome = sync_everything(victim, lambda _step: None)
        assert outcome.lines, outcome.summary
        assert len(outcome.problems) == len(BAD) + 1, outcome.problems
        assert all("\n" not in line for line in outcome.problems)
        assert sum(TARGET in line for line in outcome.problems) == 1
        assert {t.id for t in victim.list_tasks()} == {HEALTHY}
