"""`key init` never makes a key that orphans the store, and says what to keep on stderr.

`eval "$(pitstop key init --print)"` in every new shell used to make a new master key each
time: the second could not read what the first encrypted, and the reminder to keep it went to
`eval` as a comment. Real processes on a real store; the null keyring (nothing kept).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitconfig import EMPTY_GITCONFIG


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A private store and config, no key at all, the null keyring."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    base.update(
        {
            "PITSTOP_HOME": str(tmp_path / "store"),
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
            "GIT_CONFIG_NOSYSTEM": "1",
        }
    )
    return base


def shell(env: dict[str, str], script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`script` in a real bash, with `pitstop` the command under test."""
    bin_dir = cwd / "bin"
    bin_dir.mkdir(exist_ok=True)
    launcher = bin_dir / "pitstop"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m tui.cli "$@"\n')
    launcher.chmod(0o755)
    env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


FIRST_SHELL = """set -e
eval "$(pitstop key init --print)"
git init -q -b main app && cd app && echo v1 > main.py && git add main.py
git -c user.name=me -c user.email=me@example.com commit -qm init
pitstop task start --repo . --objective "Port the parser" --id port > /dev/null
echo "$PITSTOP_KEY"
"""


def test_a_second_shells_eval_is_refused_on_stderr_and_sets_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    first = shell(env, FIRST_SHELL, tmp_path)
    assert first.returncode == 0, first.stderr
    # The reminder reached the terminal although stdout went to eval.
    assert "save the three exports now" in first.stderr
    key = first.stdout.strip().splitlines()[-1]

    second = shell(env, 'eval "$(pitstop key init --print)"; echo "key=${PITSTOP_KEY:-unset}"',
                   tmp_path)  # fmt: skip
    assert second.stdout.strip() == "key=unset"  # nothing for eval to set
    (line,) = second.stderr.strip().splitlines()
    assert line.startswith("pitstop: this store's data is encrypted under master key ")
    assert "not set here" in line and "backup" in line

    # With the saved key set, the store reads; asking for a new one is still refused.
    again = shell({**env, "PITSTOP_KEY": key}, "pitstop key init --print", tmp_path)
    assert again.returncode == 1 and again.stdout == ""
    assert "the one in use (environment variable PITSTOP_KEY)" in again.stderr
    assert "pitstop key export" in again.stderr
    listed = shell({**env, "PITSTOP_KEY": key}, "pitstop task show port", tmp_path)
    assert listed.returncode == 0 and "Port the parser" in listed.stdout


def test_new_is_the_deliberate_way_past_the_refusal(env: dict[str, str], tmp_path: Path) -> None:
    assert shell(env, FIRST_SHELL, tmp_path).returncode == 0
    forced = shell(env, "pitstop key init --print --new", tmp_path)
    assert forced.returncode == 0
    assert "export PITSTOP_KEY=" in forced.stdout
    assert "save the three exports now" in forced.stderr


def test_asking_on_a_machine_without_a_store_makes_no_store(
    env: dict[str, str], tmp_path: Path
) -> None:
    done = shell(env, "pitstop key init --print > /dev/null", tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "store").exists()


def test_the_keyring_form_refuses_too_when_the_keyring_lost_the_key(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`key init` (no --print) on a store keyed by a key the keyring does not hold."""
    assert shell(env, FIRST_SHELL, tmp_path).returncode == 0
    refused = shell(env, "pitstop key init", tmp_path)
    assert refused.returncode == 1
    assert "not set here" in refused.stderr and refused.stdout == ""
