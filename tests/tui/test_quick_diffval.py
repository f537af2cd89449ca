"""`pitstop diff TASK@SEQ` and `pitstop validate TASK@SEQ --offline` answered without click
(`tui.quick_diffval`) print the same bytes and exit with the same codes as click's commands,
and load neither click nor the command modules.

A validation is stored, and a first diff may record its verification, so each comparison runs
the two paths on two copies of one store with the clock frozen; only the milliseconds a
validation took may differ.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.corekit import make_objects_loose
from tests.tui.test_quick_paths import git, pitstop, quick_env
from tui.quick_diffval import Asked, parse


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return quick_env(tmp_path, PITSTOP_FROZEN_NOW="2030-01-01T00:00:00Z")


@pytest.fixture()
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    """A task `quick` with two checkpoints (the second's file holds an escape sequence) and a
    task `empty` with none."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def main():\n    return 1\n")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "initial")
    for command in (
        ["task", "start", "--repo", str(repo), "--id", "quick", "--objective", "go"],
        ["task", "start", "--repo", str(repo), "--id", "empty", "--objective", "none yet"],
    ):
        assert pitstop(env, "tui.cli", *command).returncode == 0
    (repo / "app.py").write_text("def main():\n    return 2\n")
    (repo / "notes.txt").write_text("untracked\n")
    assert pitstop(env, "tui.cli", "checkpoint", "quick", cwd=repo).returncode == 0
    (repo / "app.py").write_text("def main():\n    return '\x1b[31mred'\n")
    assert pitstop(env, "tui.cli", "checkpoint", "quick", cwd=repo).returncode == 0
    return repo


def both_ways(env: dict[str, str], repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run `args` click-free on one copy of the store and through click on another; assert
    the same exit code, stdout and stderr (a validation's milliseconds blanked)."""
    home = Path(env["PITSTOP_HOME"])
    copy = home.with_name(home.name + f"-click-{len(list(home.parent.iterdir()))}")
    shutil.copytree(home, copy, symlinks=True)
    quick = pitstop(env, "tui.launch", *args, cwd=repo)
    full = pitstop({**env, "PITSTOP_HOME": str(copy)}, "tui.cli", *args, cwd=repo)
    assert (quick.returncode, _blank_ms(quick.stdout), quick.stderr) == (
        full.returncode,
        _blank_ms(full.stdout),
        full.stderr,
    ), args
    assert b"Traceback" not in quick.stderr
    return quick


def _blank_ms(text: bytes) -> bytes:
    return re.sub(rb"\(\d+ ms\)", b"(N ms)", text)


def test_diffs_are_the_same_both_ways(env: dict[str, str], repo: Path) -> None:
    first = both_ways(env, repo, "diff", "quick@1")
    assert first.returncode == 0
    assert b"+    return 2" in first.stdout and b"+untracked" in first.stdout
    previous = both_ways(env, repo, "diff", "quick@2", "--against", "previous")
    assert b"-    return 2" in previous.stdout and b"notes.txt" not in previous.stdout
    escaped = both_ways(env, repo, "diff", "quick@2", "--against", "base")
    assert b"red" in escaped.stdout and b"\x1b" not in escaped.stdout  # click strips it
    both_ways(env, repo, "diff", "quick", "--against", "previous")
    both_ways(env, repo, "diff", "--against", "previous", "quick@latest")


def test_validations_are_the_same_both_ways(env: dict[str, str], repo: Path) -> None:
    ready = both_ways(env, repo, "validate", "quick@2", "--offline")
    assert ready.returncode == 0 and b"verdict: ready" in ready.stdout
    assert "✓ complete".encode() in ready.stdout
    both_ways(env, repo, "validate", "--offline", "quick@1")
    (repo / "app.py").write_text("def main():\n    return 3\n")
    git(repo, env, "commit", "-q", "-am", "the branch changes the checkpoint's file")
    stale = both_ways(env, repo, "validate", "quick@2", "--offline")
    assert stale.returncode == 3 and b"verdict: stale" in stale.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["diff", "nope@1"],
        ["diff", "quick@9"],
        ["diff", "empty"],
        ["diff", "not a ref"],
        ["validate", "nope@1", "--offline"],
        ["validate", "quick@9", "--offline"],
        ["validate", "quick@x", "--offline"],
    ],
    ids=" ".join,
)
def test_refusals_are_the_same_both_ways(env: dict[str, str], repo: Path, args: list[str]) -> None:
    refused = both_ways(env, repo, *args)
    assert refused.returncode != 0
    assert refused.stdout == b"" and len(refused.stderr.splitlines()) == 1, refused


def test_a_damaged_checkpoint_is_refused_the_same_both_ways(
    env: dict[str, str], repo: Path
) -> None:
    (store,) = (Path(env["PITSTOP_HOME"]) / "repos").glob("*.git")
    listed = pitstop(env, "tui.cli", "checkpoints", "quick", "--json")
    tree = json.loads(listed.stdout)[0]["worktree_tree"]
    blob = git(store, {**env, "GIT_DIR": str(store)}, "rev-parse", f"{tree}:notes.txt")
    make_objects_loose(store)  # a checkpoint packs its objects: one file each, to lose one
    target = store / "objects" / blob[:2] / blob[2:]
    target.chmod(0o600)
    target.unlink()
    diff = both_ways(env, repo, "diff", "quick@1")
    assert diff.stderr.startswith(b"pitstop: checkpoint quick@1 is damaged: ")
    validate = both_ways(env, repo, "validate", "quick@1", "--offline")
    assert validate.returncode == 4 and b"verdict: blocked" in validate.stdout


@pytest.mark.parametrize(
    ("args", "asked"),
    [
        (["diff", "t@1"], Asked("diff", "t@1", "base", False)),
        (["diff", "t@1", "--against", "previous"], Asked("diff", "t@1", "previous", False)),
        (["diff", "--against", "base", "t"], Asked("diff", "t", "base", False)),
        (["validate", "t@1", "--offline"], Asked("validate", "t@1", "base", True)),
        (["validate", "t@1"], Asked("validate", "t@1", "base", False)),
        # Everything else is click's to read, or to refuse in its own words.
        (["diff"], None),
        (["diff", "t@1", "u@1"], None),
        (["diff", "t@1", "--stat"], None),
        (["diff", "t@1", "--json"], None),
        (["diff", "t@1", "--against"], None),
        (["diff", "t@1", "--against", "other"], None),
        (["diff", "t@1", "--against", "base", "--against", "base"], None),
        (["diff", "t@1", "--against=base"], None),
        (["diff", "--", "t@1"], None),
        (["validate", "t@1", "--offline", "--offline"], None),
        (["validate", "t@1", "--into", "dir"], None),
        (["validate", "t@1", "--json"], None),
        (["validate", "--help"], None),
        (["checkout", "t@1"], None),
    ],
)
def test_only_the_plain_command_lines_take_this_path(args: list[str], asked: Asked | None) -> None:
    assert parse(args) == asked


PROBE = """
import sys
from tui.quick_diffval import run
code = run(sys.argv[1:])
import json
print(json.dumps({"code": code, "loaded": sorted(sys.modules)}), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["diff", "quick@1"], ["validate", "quick@1", "--offline"]])
def test_the_diff_and_validate_paths_load_no_click(
    env: dict[str, str], repo: Path, args: list[str]
) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, cwd=repo, capture_output=True, check=False
    )
    report = json.loads(probe.stderr.decode().splitlines()[-1])
    assert report["code"] == 0, probe.stderr
    assert probe.stdout
    never = {"click", "tui.cli", "textual", "rich", "git", "sqlite_utils", "keyring"}
    # what start-up work took out (issue 21): `typing`, `dataclasses` (the findings are
    # records), and for a diff OpenSSL's hashes (git peels the base commit itself)
    never |= {"typing", "dataclasses", "inspect"}
    if args[0] == "diff":
        never |= {"hashlib", "_hashlib"}
        # a checkpoint read before: its one git process is started without `subprocess`
        never |= {"subprocess", "threading", "selectors"}
    assert sorted(set(report["loaded"]) & never) == []
