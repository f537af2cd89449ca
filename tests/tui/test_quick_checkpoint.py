"""`pitstop checkpoint TASK` answered without click (`tui.quick_checkpoint`) says exactly what the
click command says, takes the same checkpoint, and loads neither click nor the command modules.

Taking a checkpoint changes the store, so each comparison runs the two paths on two copies of
one store (the same tasks, keys and checkpoints; the same repository) with the clock frozen:
the same checkpoint is taken twice, and only the milliseconds it took may differ.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tui.test_quick_paths import git, pitstop, quick_env
from tui.quick_checkpoint import Asked, parse


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return quick_env(tmp_path, PITSTOP_FROZEN_NOW="2030-01-01T00:00:00Z")


@pytest.fixture()
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    """A task `quick` with one checkpoint, then more work: an edit, an untracked file, and an
    untracked file holding a secret (left out, and said so)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def main():\n    return 1\n")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "initial")
    for command in (
        ["task", "start", "--repo", str(repo), "--id", "quick", "--objective", "go"],
        ["task", "start", "--repo", str(repo), "--id", "over", "--objective", "finished"],
        ["task", "done", "over"],
    ):
        assert pitstop(env, "tui.cli", *command).returncode == 0
    assert pitstop(env, "tui.cli", "checkpoint", "quick", cwd=repo).returncode == 0
    (repo / "app.py").write_text("def main():\n    return 2\n")
    (repo / "notes.txt").write_text("untracked\n")
    (repo / "settings.txt").write_text("AWS_ACCESS_KEY_ID=AKIAQYLPMN5HFIQR7XYZ\n")
    return repo


def both_ways(env: dict[str, str], repo: Path, *args: str) -> tuple[bytes, bytes]:
    """Run `args` click-free on one copy of the store and through click on another; assert
    the same exit code and stderr, and return both stdouts (what differs between two takes of
    one checkpoint blanked)."""
    home = Path(env["PITSTOP_HOME"])
    copy = home.with_name(home.name + f"-click-{len(list(home.parent.iterdir()))}")
    shutil.copytree(home, copy, symlinks=True)
    quick = pitstop(env, "tui.launch", "checkpoint", *args, cwd=repo)
    full = pitstop({**env, "PITSTOP_HOME": str(copy)}, "tui.cli", "checkpoint", *args, cwd=repo)
    assert (quick.returncode, quick.stderr) == (full.returncode, full.stderr), args
    assert b"Traceback" not in quick.stderr
    return _blank_ms(quick.stdout), _blank_ms(full.stdout)


# What differs between two takes of the same checkpoint: the time it took, and what the sealed
# manifest's random nonce changes (its digest, the commit holding it, a byte of compression).
RANDOM = ("creation_ms", "manifest_sha256", "commit", "bytes_added")


def _blank_ms(text: bytes) -> bytes:
    if text.startswith(b"{"):
        return json.dumps(_without_random(json.loads(text))).encode()
    return re.sub(rb"[\d.]+ \w+ added in \d+ ms", b"N added in N ms", text)


def _without_random(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_random(v) for k, v in value.items() if k not in RANDOM}
    return value


@pytest.mark.parametrize(
    "args",
    [
        ["quick"],
        ["quick", "--json"],
        ["--json", "quick", "--note", "half way"],
        ["quick", "--note", "a \x1b[2J note", "--force"],
    ],
    ids=" ".join,
)
def test_a_checkpoint_is_the_same_both_ways(
    env: dict[str, str], repo: Path, args: list[str]
) -> None:
    quick, full = both_ways(env, repo, *args)
    assert quick == full
    if "--json" in args:
        document = json.loads(quick)
        assert document["skipped"] is False
        assert document["checkpoint"]["ref"] == "quick@2"
    else:
        assert quick.startswith(b"checkpoint quick@2 complete: 2 changed file(s), 1 left out")
        assert "left out: settings.txt — contains".encode() in quick
        assert b"\x1b" not in quick


def test_a_skipped_checkpoint_and_failures_are_the_same(env: dict[str, str], repo: Path) -> None:
    assert pitstop(env, "tui.launch", "checkpoint", "quick", cwd=repo).returncode == 0
    for args in (["quick"], ["quick", "--json"], ["nope"], ["over"], ["quick", "--note"]):
        quick, full = both_ways(env, repo, *args)
        assert quick == full, args
    skipped, _ = both_ways(env, repo, "quick")
    assert skipped.startswith(b"nothing changed since quick@2")


@pytest.mark.parametrize(
    ("args", "asked"),
    [
        (["checkpoint", "t"], Asked("t", None, False, False)),
        (["checkpoint", "--force", "t", "--json"], Asked("t", None, True, True)),
        (["checkpoint", "t", "--note", "n"], Asked("t", "n", False, False)),
        (["checkpoint", "t", "--note", ""], Asked("t", "", False, False)),
        # Everything else is click's to read, or to refuse in its own words.
        (["checkpoint"], None),
        (["checkpoint", "t", "u"], None),
        (["checkpoint", "t", "--json", "--json"], None),
        (["checkpoint", "t", "--note", "a", "--note", "b"], None),
        (["checkpoint", "t", "--note", "--force"], None),
        (["checkpoint", "t", "--note"], None),
        (["checkpoint", "t", "--note=n"], None),
        (["checkpoint", "t", "--reason", "turn"], None),
        (["checkpoint", "--", "t"], None),
        (["checkpoint", "-t"], None),
        (["checkpoints", "t"], None),
        (["--json", "checkpoint", "t"], None),
    ],
)
def test_only_the_plain_command_lines_take_this_path(args: list[str], asked: Asked | None) -> None:
    assert parse(args) == asked


PROBE = """
import os, sys
from tui.quick_checkpoint import run
code = run(sys.argv[1:])
import json
print(json.dumps({"code": code, "loaded": sorted(sys.modules)}), file=sys.stderr)
"""


def test_the_checkpoint_path_loads_no_click_and_no_typing(env: dict[str, str], repo: Path) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, "checkpoint", "quick"],
        env=env,
        cwd=repo,
        capture_output=True,
        check=False,
    )
    report = json.loads(probe.stderr.decode().splitlines()[-1])
    assert report["code"] == 0, probe.stderr
    assert probe.stdout.startswith(b"checkpoint quick@2 complete")
    never = {"click", "tui.cli", "textual", "rich", "git", "sqlite_utils", "keyring"}
    # issue 22: typing (~3 ms of start-up) and OpenSSL's hashes (~2 ms) are not loaded either
    never |= {"typing", "_hashlib", "hmac", "dataclasses", "shutil", "bz2", "lzma"}
    assert sorted(set(report["loaded"]) & never) == []
