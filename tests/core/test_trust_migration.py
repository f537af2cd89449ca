"""Tasks shared by a Pitstop that did not sign: refused as unverified until their owner pushes
again, then they travel signed (issue #14's migration)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyrage
import pytest

from core.engine import CheckpointRequest, Engine
from core.errors import PitstopError
from core.ledger.fact_format import LEGACY_SCHEMA, canonical, fact_path, fact_uid
from core.models import CheckpointReason
from core.security import signing
from tests.core import trustkit
from tests.core.corekit import git, init_repo

TASK = "legacy-task"


def _legacy(files: trustkit.Files) -> None:
    """The ledger as an older Pitstop wrote it: unsigned `pitstop.ledger/1` facts, no roster,
    an unsigned header."""
    for path in [p for p in files if p.startswith(("facts/", "roster/"))]:
        document = json.loads(files.pop(path))
        if document["kind"] == "roster":
            continue
        plain = trustkit.plain_of(document)
        plain["schema"] = LEGACY_SCHEMA
        legacy = {**plain, "uid": fact_uid(plain)}
        if "sealed" in document:
            legacy["sealed"] = document["sealed"]
        files[fact_path(legacy["uid"])] = canonical(legacy)
    header = trustkit.header(files)
    for name in ("by", "sig", "roster", "key_file_sha256"):
        header.pop(name, None)
    trustkit.set_header(files, header)


def test_an_unsigned_shared_task_is_refused_until_its_owner_pushes_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo = init_repo(tmp_path / "alice", {"app.py": "print(1)\n"})
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    bob_repo = tmp_path / "bob"
    subprocess.run(["git", "clone", "-q", str(remote), str(bob_repo)], check=True)
    alice = os.environ["PITSTOP_IDENTITY"]
    bob = str(pyrage.x25519.Identity.generate())
    bob_recipient = str(pyrage.x25519.Identity.from_str(bob).to_public())

    with Engine(tmp_path / "store-a", actor="alice") as a:
        a.start_task(repo=repo, objective="from before signing", task_id=TASK,
                     recipients=[bob_recipient])  # fmt: skip
        a.propose_effect(TASK, "deploy", "deploy")
        a.checkpoint(TASK, CheckpointRequest(reason=CheckpointReason.MILESTONE))
        a.push([TASK])
        # what an older store held: no roster, no pin, nothing signed
        a.db.execute("DELETE FROM ledger_facts WHERE task_id = ?", [TASK])
        a.db.execute("DELETE FROM task_trust WHERE task_id = ?", [TASK])
    trustkit.tamper(remote, TASK, _legacy)

    monkeypatch.setenv("PITSTOP_IDENTITY", bob)
    with Engine(tmp_path / "store-b", actor="bob") as b:
        with pytest.raises(PitstopError, match="no roster signed by its owner") as refused:
            b.fetch([TASK], repo=bob_repo)
        assert "\n" not in refused.value.message and "push it again" in refused.value.message
        assert [t.id for t in b.list_tasks()] == []

    monkeypatch.setenv("PITSTOP_IDENTITY", alice)
    alice_key = signing.load_signing_key()
    with Engine(tmp_path / "store-a", actor="alice") as a:
        assert a.push([TASK]).tasks[TASK]["ledger_updated"] is True
    files = trustkit.read_files(remote, trustkit.ledger_ref(TASK))
    assert not [d for d in trustkit.facts_in(files) if d["schema"] == LEGACY_SCHEMA]
    assert trustkit.facts_in(files, "roster")
    assert trustkit.header(files)["by"] == alice_key.public

    monkeypatch.setenv("PITSTOP_IDENTITY", bob)
    with Engine(tmp_path / "store-b", actor="bob") as b:
        fetched = b.fetch([TASK], repo=bob_repo).fetched[TASK]
        assert fetched["adopted"] is True and fetched["owner"] == alice_key.fingerprint
        assert fetched["ledger"]["rejected"] == []
        assert b.get_effect(TASK, "deploy").state.value == "proposed"
        assert b.get_task(TASK).objective == "from before signing"
