"""Fields typed at the command line — `--objective`, `--harness`, `--model`, `--label`, `--kind`,
`--target` — are redacted and sealed at rest, and the lists show them opened (DESIGN §6.6).

Real `pitstop` processes against a real store: the raw database (and WAL) holds none of the
planted secrets or words; `task list`, `task show`, `evidence list` and `effect list` show the
values with the key, and the marker (exit 0) with a missing or wrong key.
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
GITHUB = "ghp_" + "F1eldS3cr3tT0k3nAbCdEfGhIjKlMnOpQrSt"
SLACK = "xoxb-" + "1234567890123-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
WORDS = ("Zeppelin", "Saffron", "Juniper", "Tangerine", "Periwinkle", "Cinnamon")


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


def test_typed_fields_are_sealed_and_lists_show_them_opened_or_marked(
    env: dict[str, str], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (("init", "-q"), ("commit", "-q", "--allow-empty", "-m", "init")):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    ok(env, "task", "start", "--repo", str(repo), "--id", "ship",
       "--objective", f"Rotate the Zeppelin keys {GITHUB}",
       "--harness", f"Saffron-cli@2.0-{SLACK}", "--model", "Juniper-model")  # fmt: skip
    ran = pitstop(env, "run", "--task", "ship", "--label", "Tangerine suite", "--", "true")
    assert ran.returncode == 0, ran.stderr
    ok(env, "effect", "propose", "--task", "ship", "--key", "d1", "--kind", "Periwinkle",
       "--target", f"https://Cinnamon.example.invalid/?t={SLACK}")  # fmt: skip

    store = Path(env["PITSTOP_HOME"])
    raw = b"".join(p.read_bytes() for p in store.glob("pitstop.db*"))
    planted = (GITHUB, SLACK, *WORDS)
    assert [w for w in planted if w.encode() in raw or w.lower().encode() in raw] == []

    (listed,) = ok(env, "task", "list")
    assert listed["objective"] == "Rotate the Zeppelin keys [REDACTED:github-token]"
    shown = ok(env, "task", "show", "ship")
    assert shown["harness"] == {"name": "Saffron-cli", "version": "2.0-[REDACTED:slack-token]"}
    assert shown["model"] == {"name": "Juniper-model", "version": None}
    (item,) = ok(env, "evidence", "list", "ship")
    assert item["label"] == "Tangerine suite"
    (effect,) = ok(env, "effect", "list", "--task", "ship")
    assert (effect["kind"], effect["target"]) == (
        "Periwinkle",
        "https://Cinnamon.example.invalid/?t=[REDACTED:slack-token]",
    )
    human = pitstop(env, "task", "list")
    assert human.returncode == 0 and "Rotate the Zeppelin keys" in human.stdout

    wrong = {**env, "PITSTOP_KEY": base64.b64encode(os.urandom(32)).decode()}
    missing = {k: v for k, v in env.items() if k != "PITSTOP_KEY"}
    for keyless in (wrong, missing):
        (listed,) = ok(keyless, "task", "list")
        assert (listed["objective"], listed["status"]) == (UNREADABLE, "running")
        shown = ok(keyless, "task", "show", "ship")
        assert shown["harness"] == {"name": UNREADABLE, "version": None}
        assert [i["label"] for i in ok(keyless, "evidence", "list", "ship")] == [UNREADABLE]
        (effect,) = ok(keyless, "effect", "list", "--task", "ship")
        assert (effect["kind"], effect["target"]) == (UNREADABLE, UNREADABLE)
        for args in (("task", "list"), ("task", "show", "ship")):
            human = pitstop(keyless, *args)
            assert human.returncode == 0 and "encrypted" in human.stdout, human.stderr
