"""Reasons, notes and actions typed at the command line are sealed at rest and read back in clear.

Real `pitstop` processes against a real store: the raw database (and WAL) holds none of the
typed text; `log`, `approval list` and `effect list` show it with the key, and show a marker and
exit 0 with a missing or wrong key.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitconfig import EMPTY_GITCONFIG

UNREADABLE = "[encrypted: the key to read it is not available]"
MARKERS = {
    "target": "MARK-TARGET",
    "check": "MARK-CHECK",
    "note": "MARK-NOTE",
    "settle": "MARK-SETTLE",
    "action": "MARK-ACTION",
    "reject": "MARK-REJECT",
    "cancel": "MARK-CANCEL",
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    made = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    made.update(
        PITSTOP_HOME=str(tmp_path / "store"),
        PITSTOP_CONFIG_DIR=str(tmp_path / "config"),
        PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
        GIT_CONFIG_GLOBAL=EMPTY_GITCONFIG,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="Test",
        GIT_COMMITTER_EMAIL="test@example.com",
    )
    return made


def pitstop(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args], env=env, capture_output=True, text=True
    )


def ok(env: dict[str, str], *args: str) -> Any:
    done = pitstop(env, *args, "--json")
    assert done.returncode == 0, (args, done.stderr)
    return json.loads(done.stdout)


def test_typed_text_is_sealed_and_lists_survive_a_missing_or_wrong_key(
    env: dict[str, str], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (("init", "-q"), ("commit", "-q", "--allow-empty", "-m", "init")):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    ok(env, "task", "start", "--repo", str(repo), "--objective", "ship it", "--id", "ship")
    ok(env, "effect", "propose", "--task", "ship", "--key", "d1", "--kind", "deploy",
       "--target", MARKERS["target"], "--check", f"test -n {MARKERS['check']}")  # fmt: skip
    ok(env, "effect", "start", "--task", "ship", "--key", "d1")
    ok(env, "effect", "uncertain", "--task", "ship", "--key", "d1", "--note", MARKERS["note"])
    ok(env, "effect", "confirm", "--task", "ship", "--key", "d1", "--reason", MARKERS["settle"])
    ok(env, "approval", "request", "--task", "ship", "--action", MARKERS["action"])
    ok(env, "approval", "reject", "ship:1", "--reason", MARKERS["reject"])
    ok(env, "task", "cancel", "ship", "--reason", MARKERS["cancel"])

    store = Path(env["PITSTOP_HOME"])
    raw = b"".join(p.read_bytes() for p in store.glob("pitstop.db*"))
    assert [m for m in MARKERS.values() if m.encode() in raw] == []

    reasons = [event["reason"] for event in ok(env, "log", "ship")]
    for what in ("settle", "reject", "cancel"):
        assert MARKERS[what] in reasons
    (approval,) = ok(env, "approval", "list")
    assert (approval["action"], approval["reason"]) == (MARKERS["action"], MARKERS["reject"])
    (effect,) = ok(env, "effect", "list", "--task", "ship")
    assert (effect["target"], effect["note"]) == (MARKERS["target"], MARKERS["note"])

    wrong = {**env, "PITSTOP_KEY": base64.b64encode(os.urandom(32)).decode()}
    missing = {k: v for k, v in env.items() if k != "PITSTOP_KEY"}
    for keyless in (wrong, missing):
        (approval,) = ok(keyless, "approval", "list")
        assert (approval["action"], approval["reason"]) == (UNREADABLE, UNREADABLE)
        (effect,) = ok(keyless, "effect", "list", "--task", "ship")
        assert (effect["target"], effect["check"], effect["note"]) == (UNREADABLE,) * 3
        assert UNREADABLE in [event["reason"] for event in ok(keyless, "log", "ship")]
        human = pitstop(keyless, "approval", "list")
        assert human.returncode == 0 and "encrypted" in human.stdout, human.stderr
