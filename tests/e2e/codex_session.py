"""One real Codex session (`codex exec`) against the scripted Responses API, in a real repository.

The repository and its bare `origin` are the Claude Code sessions' (`claude_session`). Codex is
configured as the README tells a user to: `notify = ["pitstop", "hook", "codex"]` in
`$CODEX_HOME/config.toml` and a `PreToolUse` hook `pitstop hook codex --event PreToolUse` in
`$CODEX_HOME/hooks.json`, plus a model provider that points at 127.0.0.1. The same capturing
hook as Claude Code's keeps every hook payload Codex sends; a capturing `notify` would need a
second program, so `notify` is Pitstop's alone and its effect is read from the store.
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
    """Write config.toml (notify, the mock provider) and hooks.json (guard and capture)."""
    home = codex_home(workspace)
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        'model = "gpt-5-codex"\n'
        'model_provider = "e2e"\n'
        'notify = ["pitstop", "hook", "codex"]\n'
        "[model_providers.e2e]\n"
        'name = "scripted Responses API"\n'
        f'base_url = "{base_url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "E2E_API_KEY"\n'
    )
    capture = f"{sys.executable} {CAPTURE_HOOK} {workspace.root / 'capture'}"
    hooks: dict[str, list[dict[str, Any]]] = {
        event: [{"hooks": [{"type": "command", "command": capture}]}] for event in CAPTURED_EVENTS
    }
    hooks["PreToolUse"].insert(
        0,
        {
            "matcher": "Bash|apply_patch",
            "hooks": [{"type": "command", "command": "pitstop hook codex --event PreToolUse"}],
        },
    )
    (home / "hooks.json").write_text(json.dumps({"hooks": hooks}, indent=2))


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
