"""Upgrade drills for Pitstop's own formats: every release's fixture store still opens, migrates,
validates, drills and resumes with the current code (issue 20).

Each archive under `tests/fixtures/stores/` was made by `make_store.py` of its release; older
ones stay. The archive's repository moved with it, so the one path the database records of it is
pointed at where it was unpacked — what a person does who moves a store with its repository.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import sys
import tarfile
from pathlib import Path

import pytest

from core.drill.compare import DrillVerdict
from core.engine import Engine
from core.harness.drill_guard import guard_screen
from core.store.migrations import migrations

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"
ARCHIVES = sorted(FIXTURES.glob("pitstop-*.tar.gz"))


def _fixture_key() -> str:
    spec = importlib.util.spec_from_file_location("make_store", FIXTURES / "make_store.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.FIXTURE_KEY)


def test_this_release_has_its_fixture() -> None:
    from importlib.metadata import version

    assert FIXTURES / f"pitstop-{version('pitstop')}.tar.gz" in ARCHIVES, (
        "run `python tests/fixtures/stores/make_store.py` for this release"
    )


@pytest.mark.parametrize("archive", ARCHIVES, ids=[path.name for path in ARCHIVES])
def test_a_stored_release_opens_migrates_validates_drills_and_resumes(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tarfile.open(archive) as opened:
        opened.extractall(tmp_path, filter="data")
    facts = json.loads((tmp_path / "fixture.json").read_text())
    store_root, repo = tmp_path / "store", tmp_path / "repo"
    with sqlite3.connect(store_root / "pitstop.db") as db:
        db.execute("UPDATE tasks SET repo_root = ?", [str(repo)])
    monkeypatch.setenv("PITSTOP_HOME", str(store_root))
    monkeypatch.setenv("PITSTOP_KEY", _fixture_key())
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")

    with Engine() as engine:
        assert migrations.applied(engine.db) == migrations.names()
        calc = facts["tasks"]["calc"]
        report = engine.validate(f"calc@{calc['seq']}", offline=True)
        assert report.verdict.value in ("ready", "ready_with_warnings"), report.as_dict()
        assert engine.validate("wait", offline=True).verdict.value == "blocked"

        for task_id, expected in facts["tasks"].items():
            drilled = engine.drill(task_id, screen=guard_screen(), offline=True)
            assert drilled.verdict is DrillVerdict(expected["drill"]), drilled.reason
        assert engine.metrics().fidelity is not None

        plan = engine.resume(f"calc@{calc['seq']}", into=tmp_path / "resumed", offline=True)
        assert (plan.workdir / "notes.md").read_text() == "next: multiplication\n"
        assert (plan.workdir / "calc.py").exists()
