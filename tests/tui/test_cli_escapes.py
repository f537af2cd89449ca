"""Agent-written text never drives the operator's terminal (issue #17).

An objective, a note, a label, an approval's action and a command's output carry OSC 52, CSI,
C1, BEL, backspaces and a carriage return (an effect's kind and target refuse controls when
recorded); every command that prints them runs as a real process and its stdout must hold none
of those bytes raw, only their escaped spelling.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyrage
import pytest

from tests.tui.test_cli import cli_env, ok_json, repo

__all__ = ["cli_env", "repo"]  # fixtures, shared with test_cli

HOSTILE = "go \x1b]52;c;SGVsbG8=\x07 \x1b[2J\x1b[H \x9b31m \x9d0;t\x9c \x08\x08 \rok"
RAW = [b"\x1b", b"\x07", b"\x08", b"\r", "\x9b".encode(), "\x9d".encode(), "\x9c".encode()]


def _stdout(env: dict[str, str], *args: str) -> bytes:
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", *args], env=env, capture_output=True, check=False
    )
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


@pytest.fixture()
def hostile_store(cli_env: dict[str, str], repo: Path, tmp_path: Path) -> dict[str, str]:
    env = {**cli_env, "PITSTOP_IDENTITY": str(pyrage.x25519.Identity.generate())}
    ok_json(env, "task", "start", "--repo", str(repo), "--objective", HOSTILE, "--id", "esc")
    printer = f"import sys; sys.stdout.write({HOSTILE!r} + '\\n')"
    run = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "--task", "esc", "--label", HOSTILE, "--",
         sys.executable, "-c", printer],
        env=env, capture_output=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert b"\x1b" not in run.stderr  # the evidence line on stderr quotes the label
    ok_json(env, "checkpoint", "esc", "--note", HOSTILE)
    # An effect's kind and target refuse control characters when recorded: nothing to plant.
    ok_json(env, "effect", "propose", "--task", "esc", "--key", "k", "--kind", "deploy")
    ok_json(env, "approval", "request", "--task", "esc", "--action", HOSTILE)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True, env=env)
    env["REMOTE"] = str(remote)
    assert subprocess.run(
        [sys.executable, "-m", "tui.cli", "push", "esc", "--remote", str(remote)],
        env=env, capture_output=True, check=False,
    ).returncode == 0  # fmt: skip
    return env


def _commands(env: dict[str, str], repo: Path) -> list[tuple[str, ...]]:
    return [
        ("task", "list"),
        ("task", "show", "esc"),
        ("checkpoints", "esc"),
        ("show", "esc@1"),
        ("log", "esc"),
        ("evidence", "list", "esc"),
        ("evidence", "show", "1"),
        ("evidence", "show", "1", "--lines", "5"),
        ("effect", "list", "--task", "esc"),
        ("approval", "list"),
        ("remote", "list", "--remote", env["REMOTE"], "--repo", str(repo)),
    ]


def test_no_control_byte_reaches_stdout(hostile_store: dict[str, str], repo: Path) -> None:
    leaks = []
    for args in _commands(hostile_store, repo):
        for form in ((), ("--json",)):
            out = _stdout(hostile_store, *args, *form)
            leaks += [(args, form, byte) for byte in RAW if byte in out]
    assert not leaks
    shown = _stdout(hostile_store, "task", "list").decode()
    assert "\\x1b]52;c;SGVsbG8=\\x07" in shown  # the sequence is there to read, as text
    assert "\\x9b31m" in shown and "\\rok" in shown


def test_json_still_holds_the_exact_text(hostile_store: dict[str, str]) -> None:
    (task,) = json.loads(_stdout(hostile_store, "task", "list", "--json"))
    assert task["objective"] == HOSTILE


def test_the_full_output_into_a_pipe_stays_exact(hostile_store: dict[str, str]) -> None:
    out = _stdout(hostile_store, "evidence", "show", "1", "--full")
    assert HOSTILE.encode() + b"\n" in out  # a file or a pipe gets the kept bytes
