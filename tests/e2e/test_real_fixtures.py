"""What the real Claude Code sent (tests/fixtures/claude_code/real/), through `pitstop hook`.

`regenerate_fixtures.py` writes these from the e2e sessions (`codex_*`: Codex's hooks); this
test needs no client, so every run of the suite checks that what the pinned clients really send
is answered without an error by the real entry point (`pitstop hook claude-code|codex`), and
that the write into Pitstop's config and Codex's `git push` are refused or guarded.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.claude_session import VENV_BIN, client_env, git

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "real"
NAMES = sorted(p.stem for p in REAL.glob("*.json"))
# A session starts first and ends last; the rest in name order.
ORDER = sorted(NAMES, key=lambda n: (n != "session_start", n == "session_end", n))


def test_the_real_fixtures_are_there() -> None:
    assert {"session_start", "post_tool_use_bash", "stop", "session_end"} <= set(NAMES)


def test_every_real_payload_is_answered(tmp_path: Path) -> None:
    repo = tmp_path / "ws" / "demo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# demo\n\nhello\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text('{"type":"user","message":{"role":"user","content":"go"}}\n')
    # Nobody answers the permission prompt: it is handed back after a second, not the default
    # minute (this test's own config directory)
    config = Path(os.environ["PITSTOP_CONFIG_DIR"])
    (config / "config.toml").write_text("[hooks]\npermission_wait_seconds = 1\n")
    places = {
        "$TRANSCRIPT": str(transcript),
        "$CLAUDE_TMP": str(tmp_path / "claude"),
        "$CWD": str(repo),
        "$CONFIG": os.environ["PITSTOP_CONFIG_DIR"],
        "$HOME": os.environ["HOME"],
        "$TMP": str(tmp_path),
    }
    answers = {}
    told = {}
    for name in ORDER:
        text = (REAL / f"{name}.json").read_text()
        for placeholder, value in places.items():
            text = text.replace(placeholder, value)
        event = json.loads(text)["hook_event_name"]
        harness = "codex" if name.startswith("codex_") else "claude-code"
        out = subprocess.run(
            [str(VENV_BIN / "pitstop"), "hook", harness, "--event", event],
            input=text,
            capture_output=True,
            text=True,
            cwd=repo,
            env=client_env(),
            check=False,
        )
        assert out.returncode == 0, (name, out.stderr)
        assert "Traceback" not in out.stderr, (name, out.stderr)
        answers[name] = json.loads(out.stdout) if out.stdout.strip() else {}
        told[name] = out.stderr
    assert answers["permission_request"] == {}  # no decision: Claude Code asks the user itself
    assert "nobody answered" in told["permission_request"], told["permission_request"]
    denied = answers["pre_tool_use_write_config"]["hookSpecificOutput"]
    assert denied["permissionDecision"] == "deny"
    # A push needs approval by default: the guard asks for it and refuses the call meanwhile.
    for name in ("pre_tool_use_git_push", "codex_pre_tool_use_git_push"):
        decision = answers[name]["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny", (name, decision)
        assert "waiting for approval" in decision["permissionDecisionReason"], decision


@pytest.mark.parametrize("name", NAMES)
def test_no_test_path_is_left_in_a_real_fixture(name: str) -> None:
    text = (REAL / f"{name}.json").read_text()
    assert "pytest-of-" not in text and "/tmp/" not in text and "-tmp-" not in text
