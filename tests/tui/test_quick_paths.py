"""The click-free paths (`tui.quick`) answer exactly as the click group does, and load little.

`pitstop --help`, `locate`, `task list`, `checkpoints` and `show` skip click (issue 22); each is
run here both ways on one store — `python -m tui.launch` (the installed `pitstop`) and `python
-m tui.cli` (the click group alone) — and stdout, stderr and the exit code must be the same
bytes, for text, `--json`, and every kind of failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.corekit import make_objects_loose
from tests.gitconfig import EMPTY_GITCONFIG

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def quick_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment the quick-path tests run `pitstop` in: a private store and config, git
    identity and config of its own, no terminal width; `extra` on top."""
    found = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    found.pop("COLUMNS", None)
    return {
        **found,
        **GIT_ENV,
        "PITSTOP_HOME": str(tmp_path / "store"),
        "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "PITSTOP_KEY": os.environ["PITSTOP_KEY"],
        **extra,
    }


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return quick_env(tmp_path)


def pitstop(
    env: dict[str, str], module: str, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", module, *args], env=env, cwd=cwd, capture_output=True, check=False
    )


def git(repo: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return done.stdout.decode().strip()


@pytest.fixture()
def store(tmp_path: Path, env: dict[str, str]) -> Path:
    """Two tasks (one with two checkpoints, agent text holding escapes; one with none)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, env, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def main():\n    return 1\n")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "initial")
    for command in (
        ["task", "start", "--repo", str(repo), "--id", "quick", "--objective", "go \x1b[2Jfast"],
        ["task", "start", "--repo", str(repo), "--id", "empty", "--objective", "nothing yet"],
    ):
        assert pitstop(env, "tui.cli", *command).returncode == 0
    (repo / "app.py").write_text("def main():\n    return 2\n")
    (repo / "notes.txt").write_text("untracked\n")
    (repo / "leak.env").write_text("AWS_ACCESS_KEY_ID=AKIAQYLPMN5HFIQR7XYZ\n")
    made = pitstop(env, "tui.cli", "checkpoint", "quick", "--note", "half\x07way", "--done", "a")
    assert made.returncode == 0, made.stderr
    (repo / "app.py").write_text("def main():\n    return 3\n")
    assert pitstop(env, "tui.cli", "checkpoint", "quick", "--todo", "b").returncode == 0
    return repo


def assert_same(env: dict[str, str], *args: str, cwd: Path | None = None) -> bytes:
    env = {**env, "PITSTOP_FROZEN_NOW": "2030-01-01T00:00:00Z"}  # ages read the same both runs
    quick = pitstop(env, "tui.launch", *args, cwd=cwd)
    full = pitstop(env, "tui.cli", *args, cwd=cwd)
    assert (quick.returncode, quick.stdout, quick.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    ), args
    assert b"Traceback" not in quick.stderr
    return quick.stdout + quick.stderr


LOOKS = [
    ["locate"],
    ["task", "list"],
    ["checkpoints", "quick"],
    ["checkpoints", "empty"],
    ["show", "quick@1"],
    ["show", "quick@2"],
    ["show", "quick"],
    ["show", "quick@latest"],
]

FAILURES = [
    ["checkpoints", "nope"],
    ["show", "nope@1"],
    ["show", "quick@9"],
    ["show", "empty"],
    ["show", "bad ref"],
    ["show", "quick@99999999999999999999999"],
    ["show", "quick@1", "extra"],
    ["checkpoints"],
    ["locate", "--jsn"],
    ["--json", "locate"],
    ["task", "--json", "list"],
]

ODD = [
    ["task", "list", "--json", "--json"],
    ["show", "--json", "quick@1"],
    ["show", "--", "quick@1"],
    ["show", "quick@1", "--json", "--json"],
]
"""Command lines click reads though the quick paths leave them to it."""


@pytest.mark.parametrize("args", LOOKS, ids=" ".join)
def test_each_look_prints_the_same_both_ways(
    env: dict[str, str], store: Path, args: list[str]
) -> None:
    text = assert_same(env, *args, cwd=store)
    assert b"\x1b" not in text and b"\x07" not in text  # agent-written escapes shown, not obeyed
    document = assert_same(env, *args, "--json", cwd=store)
    json.loads(document)
    assert assert_same(env, "--json", *args, cwd=store) != b""  # --json first goes to click


@pytest.mark.parametrize("args", ODD, ids=" ".join)
def test_odd_command_lines_are_the_same(env: dict[str, str], store: Path, args: list[str]) -> None:
    assert_same(env, *args, cwd=store)


def test_the_looks_read_what_the_store_holds(env: dict[str, str], store: Path) -> None:
    listed = assert_same(env, "task", "list", cwd=store).decode()
    assert "go \\x1b[2Jfast" in listed and "empty" in listed
    shown = assert_same(env, "show", "quick@1", cwd=store).decode()
    assert "half\\x07way" in shown and "leak.env" in shown
    rows = json.loads(assert_same(env, "checkpoints", "quick", "--json", cwd=store))
    assert [row["ref"] for row in rows] == ["quick@1", "quick@2"]


@pytest.mark.parametrize("args", FAILURES, ids=" ".join)
def test_each_failure_is_the_same_line_and_code(
    env: dict[str, str], store: Path, args: list[str]
) -> None:
    said = assert_same(env, *args, cwd=store).decode()
    assert said.startswith("pitstop: ") or said.startswith("Usage"), said


def test_a_damaged_checkpoint_is_reported_the_same(env: dict[str, str], store: Path) -> None:
    [store_repo] = (Path(env["PITSTOP_HOME"]) / "repos").glob("*.git")
    blob = git(store, env, "hash-object", "app.py")  # return 3: only the second checkpoint's
    make_objects_loose(store_repo)  # a checkpoint packs its objects: one file each, to lose one
    (store_repo / "objects" / blob[:2] / blob[2:]).unlink()
    said = assert_same(env, "show", "quick@2", cwd=store)
    assert b"is damaged" in said
    assert pitstop(env, "tui.launch", "show", "quick@2").returncode == 1
    assert b"is damaged" in assert_same(env, "show", "quick@2", "--json", cwd=store)
    assert b"is damaged" not in assert_same(env, "show", "quick@1", cwd=store)


def test_a_packed_store_is_verified_the_same(env: dict[str, str], store: Path) -> None:
    [store_repo] = (Path(env["PITSTOP_HOME"]) / "repos").glob("*.git")
    git(store_repo, {**env, "GIT_DIR": str(store_repo)}, "repack", "-adfq")
    for ref in ("quick@1", "quick@2"):
        assert b"is damaged" not in assert_same(env, "show", ref, cwd=store)


def test_an_empty_store_and_a_fresh_one(env: dict[str, str], tmp_path: Path) -> None:
    assert b"no tasks yet" in assert_same(env, "task", "list")
    assert assert_same(env, "task", "list", "--json").strip() == b"[]"
    assert_same({**env, "PITSTOP_HOME": str(tmp_path / "another")}, "locate")
    assert_same({**env, "PITSTOP_HOME": ""}, "locate", "--json")


def test_a_store_option_click_refuses_is_left_to_click(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    said = assert_same({**env, "PITSTOP_HOME": str(tmp_path / "a-file")}, "locate")
    assert b"is a file" in said
    assert_same(env, "--store", str(tmp_path / "elsewhere"), "locate")


def test_a_stdout_in_another_encoding_is_left_to_click(env: dict[str, str], store: Path) -> None:
    ascii_out = {**env, "PYTHONIOENCODING": "ascii"}
    for args in (["--help"], ["task", "list"], ["show", "quick@1"]):
        said = assert_same(ascii_out, *args, cwd=store)
        assert b"internal error" not in said


@pytest.mark.parametrize("columns", [None, "80", "200", "60"])
def test_help_is_clicks_own(env: dict[str, str], columns: str | None) -> None:
    wide = env if columns is None else {**env, "COLUMNS": columns}
    said = assert_same(wide, "--help")
    assert b"Commands:" in said and b"checkpoints" in said


PROBE = """
import sys
from tui.quick import run
code = run(sys.argv[1:])
loaded = sorted(sys.modules)
import json
sys.stdout.flush()
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""

NEVER = {
    "click",
    "tui.cli",
    "textual",
    "rich",
    "git",
    "sqlite_utils",
    "dataclasses",
    "inspect",
    "threading",
    "core.engine.checkpoint",
    "core.engine.approvals",
    "core.snapshot.take",
    "core.snapshot.source",
    "core.snapshot.sealed_files",
    "core.redaction",
    "core.store.events",
    "core.store.devices",
    "core.store.drills",
    "core.store.effects",
    "core.store.trust",
    "keyring",
    "platformdirs",
    "base64",
}
"""What none of the click-free paths loads (each was on one of them before issue 22)."""

OPENS_NOTHING = {"cryptography", "hashlib", "subprocess", "core.git.run", "core.snapshot"}
"""What `--help` and `locate` load neither: they open no sealed text and read no git."""

UNTYPED = {"typing", "cryptography.exceptions"}
"""What `--help`, `locate` and `task list` load neither (issue 22): `typing` is ~3 ms of a ~10 ms
Python start, and records are built without it (`core.records`); `cryptography.exceptions`
loads `typing` and is needed only once a decryption failed. `checkpoints` and `show` load
neither too."""


@pytest.mark.parametrize(
    ("args", "also_never"),
    [
        (["--help"], OPENS_NOTHING | UNTYPED | {"core.engine", "sqlite3", "json", "pathlib"}),
        (["locate"], OPENS_NOTHING | UNTYPED),
        (["locate", "--json"], OPENS_NOTHING | UNTYPED),
        # A store with no validated task reads no branch tips: no git module at all.
        (["task", "list"], {"hashlib", "subprocess", "core.git", "core.snapshot"} | UNTYPED),
        (
            ["task", "list", "--json"],
            {"hashlib", "subprocess", "core.git", "core.snapshot"} | UNTYPED,
        ),
        (
            ["checkpoints", "quick"],
            {"hashlib", "subprocess", "core.git.run"} | UNTYPED,
        ),
        # A small checkpoint is verified from the repository's files, with no git process.
        (["show", "quick@2"], {"hashlib", "subprocess"} | UNTYPED),
        (["show", "quick@2", "--json"], {"hashlib", "subprocess"} | UNTYPED),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_the_quick_paths_load_only_what_they_use(
    env: dict[str, str], store: Path, args: list[str], also_never: set[str]
) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, cwd=store, capture_output=True, check=False
    )
    report = json.loads(probe.stderr.decode().splitlines()[-1])
    assert report["code"] == 0, probe.stderr
    assert probe.stdout
    loaded = set(report["loaded"])
    assert sorted(loaded & (NEVER | also_never)) == []


def test_a_typed_store_without_a_store_is_refused_unless_init(
    env: dict[str, str], store: Path, tmp_path: Path
) -> None:
    (tmp_path / "empty-dir").mkdir()
    for where in (tmp_path / "typo", tmp_path / "empty-dir"):
        for args in (["locate"], ["task", "list"], ["show", "quick@1"], ["locate", "--json"]):
            quick = pitstop(env, "tui.launch", "--store", str(where), *args, cwd=store)
            said = assert_same(env, "--store", str(where), *args, cwd=store)
            assert quick.returncode == 2 and quick.stdout == b""
            line = f"pitstop: no Pitstop store at {where}; pass --init to create one there\n"
            assert said == line.encode()
        dashboard = pitstop(env, "tui.cli", "--store", str(where), cwd=store)
        assert dashboard.returncode == 2 and b"pass --init" in dashboard.stderr
        assert not where.exists() or list(where.iterdir()) == []  # nothing made there
    made = pitstop(env, "tui.launch", "--store", str(tmp_path / "typo"), "--init", "locate")
    assert made.returncode == 0 and (tmp_path / "typo" / "pitstop.db").is_file()
    assert_same(env, "--store", str(tmp_path / "typo"), "task", "list")  # now it holds one
    assert b"quick" in assert_same(env, "--store", env["PITSTOP_HOME"], "task", "list")
