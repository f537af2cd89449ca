"""The README tells the truth: its example session runs, and CI runs its test command verbatim."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.gitconfig import EMPTY_GITCONFIG

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _bash_blocks_after(marker: str) -> str:
    start = README.index(marker)
    match = re.search(r"```bash\n(.*?)```", README[start:], re.S)
    assert match, f"no bash block after {marker!r}"
    return match.group(1)


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    test_command = next(b.strip() for b in blocks if "pytest" in b and "install" in b)
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci_script.splitlines()


def test_readme_example_session_runs(tmp_path: Path) -> None:
    script = _bash_blocks_after("<!-- readme-example")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "PITSTOP_HOME": str(tmp_path / "store"),
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GITHUB_TOKEN": "ghp_readme_example_token_value",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        }
    )
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "checkpoint greet@1 complete" in result.stdout
    assert ".env  — looks like a credential file" in result.stdout
    assert (tmp_path / "greet-restored" / "app.py").read_text() == 'print("hello")\n'
    assert not (tmp_path / "greet-restored" / ".env").exists()
    for path in (tmp_path / "store").rglob("*"):
        if path.is_file():
            assert b"ghp_readme_example_token_value" not in path.read_bytes(), path


def test_readme_remote_example_runs(tmp_path: Path) -> None:
    script = _bash_blocks_after("<!-- readme-remote-example")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
            "GIT_CONFIG_NOSYSTEM": "1",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        }
    )
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "port: 1 new checkpoint(s), ledger updated" in result.stdout
    assert "remote only" in result.stdout
    assert "port: new task, 1 new checkpoint(s)" in result.stdout
    hub = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=tmp_path / "hub.git",
        capture_output=True,
        check=True,
    ).stdout
    assert b"Port the parser" not in hub and b"half done" not in hub


def test_readme_trust_commands_exist_with_the_options_shown() -> None:
    """Every `pitstop …` the Threat model and Comparing fingerprints sections show is a real
    command, and every option they give it is one it takes (the flow itself runs in
    tests/tui/test_cli_trust.py)."""
    start = README.index("### Threat model")
    section = README[start : README.index("## Where things live", start)]
    commands = re.findall(r"`(pitstop [^`]+)`", section.replace("\n   ", " "))
    assert len(commands) >= 5, commands
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITSTOP_")}
    for command in commands:
        words = command.split()[1:]
        path = [w for w in words if re.fullmatch(r"[a-z]+", w)][:2]
        if len(path) == 2 and path[0] not in ("task", "key", "remote", "approval", "effect"):
            path = path[:1]
        shown = subprocess.run(
            [sys.executable, "-m", "tui.cli", *path, "--help"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert shown.returncode == 0, (command, shown.stderr)
        for option in re.findall(r"--[a-z-]+", command):
            assert option in shown.stdout, (command, option)
