"""One real Codex session (`codex exec`) against the scripted Responses API, in a real repository.

The repository and its bare `origin` are the Claude Code sessions' (`claude_session`). Codex is
configured by the real `pitstop hook install codex --user` — Pitstop's hooks in
`$CODEX_HOME/hooks.json` and its `notify` in `$CODEX_HOME/config.toml` — plus a model provider
that points at 127.0.0.1. The same capturing hook as Claude Code's, added beside Pitstop's,
keeps every hook payload Codex sends.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.claude_session import (
    CAPTURE_HOOK,
    VENV_BIN,
    Workspace,
    client_env,
    export_capture,
    read_capture,
    user_path,
)
from tests.e2e.claude_session import require as require_client
from tests.e2e.clients import CODEX
from tests.e2e.mock_responses_api import Item, MockResponsesAPI, Script

CAPTURED_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")


def require_codex() -> Path:
    """The pinned `codex`; skipped when absent (a failure under PITSTOP_E2E_REQUIRE)."""
    return require_client(CODEX)


def codex_home(workspace: Workspace) -> Path:
    """The test's CODEX_HOME."""
    return workspace.root / "codex-home"


def configure(workspace: Workspace, base_url: str) -> None:
    """Write config.toml (the mock provider), install Pitstop's hooks and notify with the real
    `pitstop hook install codex --user`, and add the capturing hook beside them."""
    home = codex_home(workspace)
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        'model = "gpt-5-codex"\n'
        'model_provider = "e2e"\n'
        "[model_providers.e2e]\n"
        'name = "scripted Responses API"\n'
        f'base_url = "{base_url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "E2E_API_KEY"\n'
    )
    (home / "hooks.json").unlink(missing_ok=True)
    installed = subprocess.run(
        [str(VENV_BIN / "pitstop"), "hook", "install", "codex", "--user"],
        cwd=workspace.repo,
        env=client_env(CODEX_HOME=str(home)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    document = json.loads((home / "hooks.json").read_text())
    capture = f"{sys.executable} {CAPTURE_HOOK} {workspace.root / 'capture'}"
    for event in CAPTURED_EVENTS:
        document["hooks"].setdefault(event, []).append(
            {"hooks": [{"type": "command", "command": capture}]}
        )
    (home / "hooks.json").write_text(json.dumps(document, indent=2))


@dataclass
class CodexSession:
    """What one `codex exec` run left."""

    returncode: int
    stdout: str
    stderr: str
    payloads: list[dict[str, Any]]
    script: Script
    seconds: float

    def events(self) -> list[str]:
        """The hook events Codex sent, in order."""
        return [p["hook_event_name"] for p in self.payloads]

    def payload(self, event: str, index: int = 0) -> dict[str, Any]:
        """The `index`-th payload of `event`."""
        found = [p for p in self.payloads if p["hook_event_name"] == event]
        assert len(found) > index, f"no {event} #{index} in {self.events()}"
        return found[index]


def run_codex(
    workspace: Workspace, turns: list[list[Item]], *, prompt: str = "Do the scripted task."
) -> CodexSession:
    """Run the pinned `codex exec` in the repository against a scripted API; wait for it."""
    codex = require_codex()
    workspace.runs += 1
    capture = workspace.root / "capture"
    shutil.rmtree(capture, ignore_errors=True)
    script = Script(turns)
    with MockResponsesAPI(script) as api:
        configure(workspace, api.url)
        env = client_env(CODEX_HOME=str(codex_home(workspace)), E2E_API_KEY="e2e-dummy")
        env["PATH"] = user_path()
        started = time.monotonic()
        out = subprocess.run(
            [
                str(codex),
                "exec",
                "--sandbox",
                "danger-full-access",  # the push goes to a remote outside the workspace
                "--dangerously-bypass-hook-trust",  # the test wrote these hooks itself
                prompt,
            ],
            cwd=workspace.repo,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        seconds = time.monotonic() - started
    payloads, _ = read_capture(capture)
    export_capture(capture, workspace.runs)
    return CodexSession(out.returncode, out.stdout, out.stderr, payloads, script, seconds)
