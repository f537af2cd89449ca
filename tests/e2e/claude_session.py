"""One real Claude Code session against the scripted Messages API, in a real repository.

What a user has is what the test builds: a git repository with a bare remote (`origin`) whose
`post-receive` hook logs every push it receives, Pitstop's hooks installed by the real
`pitstop hook install claude-code`, and the pinned `claude` run in print mode
(`claude -p … --output-format json`) with the network pointed at 127.0.0.1 and telemetry,
updates and error reports off. Beside Pitstop's hooks, a capturing hook in the test HOME's
user settings keeps every payload the client sends (`capture_hook.py`).

`PITSTOP_E2E_CAPTURE_TO=DIR` also copies each session's payloads to `DIR/<test>/`, which is how
`regenerate_fixtures.py` collects them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.clients import CLAUDE_CODE, REQUIRE_VAR, Client, binary, missing_reason
from tests.e2e.mock_messages_api import Block, MockMessagesAPI, Script

HERE = Path(__file__).resolve().parent
CAPTURE_HOOK = HERE / "capture_hook.py"
VENV_BIN = Path(sys.executable).parent
# Every event the capturing hook listens to: more than Pitstop subscribes to, to see them all.
CAPTURED_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "PreCompact",
    "SessionEnd",
)
# The client's network, telemetry and update traffic, all off: the test is offline.
OFFLINE = {
    "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
}
# Variables from whoever runs the tests (perhaps a Claude Code session itself) that would
# point the client at another account, config or parent session.
_CLIENT_VAR = re.compile(r"^(ANTHROPIC_|CLAUDE|AI_AGENT|OTEL_|CODEX_)")


def require(client: Client) -> Path:
    """The pinned client; skipped (one line) when absent, a failure under PITSTOP_E2E_REQUIRE."""
    reason = missing_reason(client)
    if reason is not None:
        if os.environ.get(REQUIRE_VAR) == "1":
            pytest.fail(f"{REQUIRE_VAR}=1 but {reason}")
        pytest.skip(reason)
    return binary(client)


def require_claude() -> Path:
    """The pinned `claude` (see `require`)."""
    return require(CLAUDE_CODE)


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` and return its stdout."""
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return out.stdout


@dataclass
class Workspace:
    """A user's repository, its bare remote, and where captured payloads land."""

    root: Path
    repo: Path
    remote: Path
    push_log: Path
    runs: int = 0

    def pushes(self) -> list[str]:
        """One line per push the remote received (`old new ref`)."""
        if not self.push_log.exists():
            return []
        return self.push_log.read_text().splitlines()

    def remote_head(self) -> str:
        """The commit `main` points at on the remote."""
        return git(self.remote, "rev-parse", "refs/heads/main").strip()


def make_workspace(root: Path) -> Workspace:
    """A repository and its `origin` (see `make_repository`), Claude Code's hooks installed."""
    workspace = make_repository(root)
    install = pitstop(workspace, "hook", "install", "claude-code")
    assert install.returncode == 0, install.stderr
    _install_capture(Path(os.environ["HOME"]), root / "capture")
    return workspace


def make_repository(root: Path) -> Workspace:
    """A repository with one commit on `main`, cloned bare as its `origin`."""
    repo = root / "demo"
    remote = root / "origin.git"
    push_log = root / "pushes.log"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# demo\n\nhello\n")
    (repo / "app.py").write_text("def main():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    git(root, "clone", "-q", "--bare", str(repo), str(remote))
    hook = remote / "hooks" / "post-receive"
    hook.write_text(f"#!/bin/sh\ncat >> '{push_log}'\n")
    hook.chmod(0o755)
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "fetch", "-q", "origin")
    git(repo, "branch", "-q", "--set-upstream-to=origin/main", "main")
    return Workspace(root, repo, remote, push_log)


def _install_capture(home: Path, directory: Path) -> None:
    """The capturing hook on every event, in the user's settings (Pitstop's are the project's)."""
    command = f"{sys.executable} {CAPTURE_HOOK} {directory}"
    hooks = {
        event: [{"hooks": [{"type": "command", "command": command}]}] for event in CAPTURED_EVENTS
    }
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": hooks}, indent=2))


def user_path(with_pitstop: bool = True) -> str:
    """PATH as a user's shell has it: with the venv's `pitstop` first, or without it."""
    parts = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != VENV_BIN]
    return os.pathsep.join([str(VENV_BIN), *parts] if with_pitstop else parts)


def client_env(**extra: str) -> dict[str, str]:
    """The test's environment without the caller's client variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not _CLIENT_VAR.match(k)}
    env["PATH"] = user_path()
    env.update(extra)
    return env


def pitstop(workspace: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    """The real `pitstop` entry point, run in the repository as the user runs it."""
    return subprocess.run(
        [str(VENV_BIN / "pitstop"), *args],
        cwd=workspace.repo,
        env=client_env(),
        capture_output=True,
        text=True,
        check=False,
    )


@dataclass
class Session:
    """What one `claude -p` run left: its result, its payloads, the API's view of it."""

    returncode: int
    result: dict[str, Any]
    stderr: str
    payloads: list[dict[str, Any]]
    environments: list[dict[str, str]]
    script: Script
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)

    def events(self) -> list[str]:
        """The hook events the client sent, in order."""
        return [p["hook_event_name"] for p in self.payloads]

    def payload(self, event: str, index: int = 0, **match: Any) -> dict[str, Any]:
        """The `index`-th payload of `event` whose top-level fields equal `match`."""
        found = [
            p
            for p in self.payloads
            if p["hook_event_name"] == event and all(p.get(k) == v for k, v in match.items())
        ]
        assert len(found) > index, f"no {event} {match} #{index} in {self.events()}"
        return found[index]

    def tool_result_texts(self) -> list[str]:
        """The text of each tool result the client sent back to the model, in order."""
        texts = []
        for block in self.script.tool_results():
            content = block.get("content")
            if isinstance(content, list):
                content = "".join(str(part.get("text", "")) for part in content)
            texts.append(str(content))
        return texts


def run_claude(
    workspace: Workspace,
    turns: list[list[Block]],
    *,
    prompt: str = "Do the scripted task.",
    with_pitstop_on_path: bool = True,
    args: tuple[str, ...] = ("--allowedTools", "Bash,Read,Edit,Write"),
    others: dict[str, list[list[Block]]] | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> Session:
    """Run the pinned `claude -p` in the repository against a scripted API; wait for it to end."""
    claude = require_claude()
    workspace.runs += 1
    capture = workspace.root / "capture"
    shutil.rmtree(capture, ignore_errors=True)
    script = Script(turns, others or {})
    with MockMessagesAPI(script) as api:
        environment = client_env(ANTHROPIC_BASE_URL=api.url, **OFFLINE, **(env or {}))
        environment["PATH"] = user_path(with_pitstop_on_path)
        # Its per-session scratch (background task output…) inside the test's directory.
        scratch = workspace.root / "claude-tmp"
        scratch.mkdir(exist_ok=True)
        environment.setdefault("CLAUDE_CODE_TMPDIR", str(scratch))
        started = time.monotonic()
        out = subprocess.run(
            [str(claude), "-p", prompt, "--output-format", "json", *args],
            cwd=cwd or workspace.repo,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        seconds = time.monotonic() - started
    lines = [line for line in out.stdout.splitlines() if line.strip().startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    payloads, environments = read_capture(capture)
    export_capture(capture, workspace.runs)
    return Session(out.returncode, result, out.stderr, payloads, environments, script, seconds)


def read_capture(directory: Path) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The captured payloads in the order they arrived, and each one's environment."""
    if not directory.exists():
        return [], []
    files = sorted(p for p in directory.glob("*.json") if not p.name.endswith(".env.json"))
    payloads = [json.loads(p.read_bytes()) for p in files]
    environments = [json.loads(p.with_suffix(".env.json").read_text()) for p in files]
    return payloads, environments


def export_capture(directory: Path, run: int) -> None:
    """Copy the payloads to PITSTOP_E2E_CAPTURE_TO/<test name>[-<run>]/ when that is set."""
    target = os.environ.get("PITSTOP_E2E_CAPTURE_TO")
    current = os.environ.get("PYTEST_CURRENT_TEST", "session").split("::")[-1].split(" ")[0]
    if not target or not directory.exists():
        return
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", current) + (f"-{run}" if run > 1 else "")
    destination = Path(target) / name
    shutil.rmtree(destination, ignore_errors=True)
    shutil.copytree(directory, destination)
