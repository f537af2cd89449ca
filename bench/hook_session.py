"""The hooks' share of a whole session of the real Claude Code client.

Per-event costs (bench/hook.py) say what one hook call costs; what a user feels is how much
longer a session takes with Pitstop's hooks than without. This runs the same scripted session
of the pinned `claude -p` (tests/e2e/: the scripted Messages API on 127.0.0.1) in two
repositories — one with `pitstop hook install claude-code`, one without any hook — alternating
the two, and prints the medians and the hooks' share of the hooked session's time.

The session: a prompt, a test-like command, `ls`, a new file written, a commit, a guarded `git push`
(no approval asked: it runs and is confirmed), a failing command, and the end of the turn and
of the session. The model's answers come at once, so the share shown is an upper bound: a real
model's seconds of thinking dilute it.

    .venv/bin/python bench/hook.py --session 5      # events, then 5 sessions of each kind
    .venv/bin/python bench/hook_session.py --runs 5  # the sessions alone
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.clients import CLAUDE_CODE, binary, missing_reason  # noqa: E402


def _turns(repo: Path) -> list[list[object]]:
    from tests.e2e.mock_messages_api import Text, ToolUse

    def bash(command: str) -> ToolUse:
        return ToolUse("Bash", {"command": command, "description": f"run {command[:40]}"})

    return [
        [Text("Running the tests."), bash("python3 -c 'print(\"3 passed\")'")],
        [bash("ls")],
        [ToolUse("Write", {"file_path": str(repo / "NOTES.md"), "content": "# notes\n"})],
        [bash("git add NOTES.md && git commit -qm 'notes'")],
        [bash("git push origin main")],
        [bash("false")],
    ]


@contextmanager
def _isolated(work: Path) -> Iterator[None]:
    """A private HOME, store, config and git identity, as the e2e tests have them."""
    saved = dict(os.environ)
    gitconfig = work / "gitconfig"
    gitconfig.touch()
    (work / "home").mkdir()
    (work / "config").mkdir()
    (work / "config" / "config.toml").write_text(
        "[hooks.rules.git-push]\napproval = false\n"  # the push runs; the guard still records it
    )
    os.environ.update(
        HOME=str(work / "home"),
        PITSTOP_HOME=str(work / "store"),
        PITSTOP_CONFIG_DIR=str(work / "config"),
        PITSTOP_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
        PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Bench",
        GIT_AUTHOR_EMAIL="bench@example.com",
        GIT_COMMITTER_NAME="Bench",
        GIT_COMMITTER_EMAIL="bench@example.com",
        PYTHONPYCACHEPREFIX=str(work / "pycache"),
    )
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def measure(runs: int) -> dict[str, object]:
    """Run `runs` sessions with hooks and `runs` without, alternating; the medians and share."""
    from tests.e2e.claude_session import make_repository, pitstop, run_claude

    work = Path(tempfile.mkdtemp(prefix="pitstop-bench-session-"))
    try:
        with _isolated(work):
            seconds: dict[str, list[float]] = {"with hooks": [], "without": []}
            for run in range(runs + 1):  # the first pair warms caches and is not counted
                for label in seconds:
                    workspace = make_repository(work / f"{label.replace(' ', '-')}-{run}")
                    if label == "with hooks":
                        installed = pitstop(workspace, "hook", "install", "claude-code")
                        if installed.returncode != 0:
                            raise SystemExit(f"hook install failed: {installed.stderr.strip()}")
                    session = run_claude(workspace, _turns(workspace.repo))  # type: ignore[arg-type]
                    if session.returncode != 0 or session.result.get("result") != "done":
                        raise SystemExit(f"the {label} session failed: {session.stderr[-500:]}")
                    if label == "with hooks" and len(workspace.pushes()) != 1:
                        raise SystemExit("the hooked session did not push exactly once")
                    if run:
                        seconds[label].append(session.seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    hooked = statistics.median(seconds["with hooks"])
    bare = statistics.median(seconds["without"])
    return {
        "runs": runs,
        "with_hooks_s": round(hooked, 3),
        "without_s": round(bare, 3),
        "hook_share": round((hooked - bare) / hooked, 3),
    }


def report(runs: int) -> dict[str, object] | None:
    """Print the session comparison; None (with one line) when the client is not installed."""
    reason = missing_reason(CLAUDE_CODE)
    if reason is not None:
        print(f"session: skipped ({reason}; `python3 tests/e2e/clients.py install`)")
        return None
    result = measure(runs)
    print(
        f"session of claude {CLAUDE_CODE.version} ({binary(CLAUDE_CODE).name}), {runs} runs each, "
        f"alternating; medians: with hooks {result['with_hooks_s']:.2f} s, without "
        f"{result['without_s']:.2f} s; the hooks' share {100 * float(result['hook_share']):.1f}%"  # type: ignore[arg-type]
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    result = report(args.runs)
    print(json.dumps({"session": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
