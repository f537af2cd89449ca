"""Benchmark one `pitstop hook claude-code` call against a bare `python -c pass`.

Issue 8's target: a hook runs on every tool call the agent makes, so the common call — a
`PreToolUse` for a Bash command no rule matches — costs at most 8x a bare Python start. Each
process is started the way Claude Code starts it (a new process, the event on stdin). Runs are
interleaved (python, hook, python, hook, ...) and medians compared. The calls that must record
something (`PostToolUse` evidence, a guarded `git push`) are timed too, for information.

    .venv/bin/python bench/hook.py             # 21 interleaved runs of each
    .venv/bin/python bench/hook.py --runs 5    # a quick run
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "claude_code"
TARGET_RATIO = 8.0


def pitstop_program() -> list[str]:
    """The installed `pitstop` script next to this Python, as Claude Code would run it."""
    script = Path(sys.executable).with_name("pitstop")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.launch"]


def fixture(name: str, cwd: Path, transcript: Path) -> bytes:
    text = (FIXTURES / f"{name}.json").read_text()
    return text.replace("$CWD", str(cwd)).replace("$TRANSCRIPT", str(transcript)).encode()


def timed(argv: list[str], data: bytes, env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, input=data, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode(errors='replace')}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="pitstop-bench-hook-"))
    try:
        repo = work / "repo"
        repo.mkdir()
        git_env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Bench",
            "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "Bench",
            "GIT_COMMITTER_EMAIL": "bench@example.com",
            "GIT_CONFIG_GLOBAL": os.devnull,
        }
        for command in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "i"]):
            subprocess.run(["git", *command], cwd=repo, env=git_env, check=True)
        transcript = work / "transcript.jsonl"
        transcript.write_text("{}\n")
        env = {
            **git_env,
            "PITSTOP_HOME": str(work / "store"),
            "PITSTOP_CONFIG_DIR": str(work / "config"),
            "PITSTOP_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        }
        hook = [*pitstop_program(), "hook", "claude-code"]
        bare = [sys.executable, "-c", "pass"]
        harmless = fixture("pre_tool_use_ls", repo, transcript)
        evidence = fixture("post_tool_use_tests", repo, transcript)

        timed(
            [*hook, "--event", "SessionStart"],
            fixture("session_start", repo, transcript),
            env,
            repo,
        )
        for _ in range(2):  # warm the page cache for both sides
            timed(bare, b"", env, repo)
            timed(hook, harmless, env, repo)

        baseline: list[float] = []
        pre: list[float] = []
        post: list[float] = []
        for _ in range(args.runs):
            baseline.append(timed(bare, b"", env, repo))
            pre.append(timed([*hook, "--event", "PreToolUse"], harmless, env, repo))
            post.append(timed([*hook, "--event", "PostToolUse"], evidence, env, repo))

        base_ms = statistics.median(baseline) * 1000
        pre_ms = statistics.median(pre) * 1000
        post_ms = statistics.median(post) * 1000
        ratio = pre_ms / base_ms
        print(f"runs: {args.runs}, interleaved; medians")
        print(f"python -c pass                                  {base_ms:8.1f} ms")
        print(
            f"pitstop hook claude-code  PreToolUse (ls)       {pre_ms:8.1f} ms"
            f"   {ratio:4.1f}x  (target <= {TARGET_RATIO:.0f}x: "
            f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})"
        )
        print(
            f"pitstop hook claude-code  PostToolUse evidence  {post_ms:8.1f} ms"
            f"   {post_ms / base_ms:4.1f}x  (information: opens the store, records evidence)"
        )
        print(
            json.dumps(
                {
                    "baseline_ms": base_ms,
                    "pre_tool_use_ms": pre_ms,
                    "post_tool_use_ms": post_ms,
                    "ratio": round(ratio, 2),
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
