"""Benchmark `pitstop hook claude-code`, one call per event kind, against a bare `python -c pass`.

Issue 8's target: a hook runs on every tool call, turn and session event the agent has, so each
event kind costs at most 8x a bare Python start. Each process is started the way Claude Code
starts it (a new process, the installed `pitstop` script, the event on stdin). Runs are
interleaved (python, then every event kind in the order a session sends them, again and again)
and medians compared, so a slow moment of a shared machine weighs on both sides.

The session it simulates, once per run: a prompt, a harmless command (`ls`: decided without
opening the store), a guarded `git push` (an approval is pending: the guard reads and denies),
a test run (green: the break-even model decides whether it is a milestone, and skips it; the
same event with an `echo` is the baseline of what the decision adds, at most 10 ms) and a
failed `npm publish` (evidence, redacted and encrypted; the failed command is a
guarded one, so its side effect is looked up too), an edit (not Bash: ignored),
an idle notification (the task waits: a `before-wait` checkpoint), a stop (a `turn` checkpoint,
which the break-even model skips: a restart is cheaper), a compaction (a `milestone`
checkpoint, always taken) and the session's end (a forced `interrupt` checkpoint). A
`SessionStart` (linking the session to its task) opens each run.

Bytecode is cached (in the benchmark's own directory, `PYTHONPYCACHEPREFIX`) as it is for an
installed package; `PYTHONDONTWRITEBYTECODE` from the caller's environment is dropped, since
timing the compilation of Pitstop's sources on every call would measure the development checkout,
not what users run.

Then the hooks' share of a whole scripted session of the real Claude Code client, with hooks
and without, alternating (bench/hook_session.py; skipped with one line when the client is not
installed: `python3 tests/e2e/clients.py install`).

    .venv/bin/python bench/hook.py             # 21 interleaved runs of each, 5 sessions of each
    .venv/bin/python bench/hook.py --runs 5 --session 0   # a quick run, events only
    .venv/bin/python bench/hook.py --repo PATH --session 0  # the same on a copy of PATH

With `--repo`, the session runs in a copy of that repository (`git clone --no-hardlinks`), so
the checkpoints (`Notification`, `Stop`, `PreCompact`, `SessionEnd`) snapshot a real work
tree; a line is appended to an untracked file before each run, so each has something new.
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
DECISION_TARGET_MS = 10.0  # issue 23: a PostToolUse that decides (and skips) adds at most this

# (label, fixture, what the call does), in the order a session sends them.
EVENTS: tuple[tuple[str, str, str], ...] = (
    ("SessionStart", "session_start", "finds the task, links the session"),
    ("UserPromptSubmit", "user_prompt_submit", "the task runs again"),
    ("PreToolUse ls", "pre_tool_use_ls", "no rule matches: store not opened"),
    ("PreToolUse git push", "pre_tool_use_git_push", "guarded: approval pending, denied"),
    ("PostToolUse echo", "post_tool_use_tests:echo", "evidence: redacted, encrypted"),
    ("PostToolUse Bash", "post_tool_use_tests", "evidence; a green test run: decided, skipped"),
    ("PostToolUseFailure", "post_tool_use_failure", "evidence; a guarded command's effect"),
    ("PostToolUse Edit", "post_tool_use_edit", "not Bash: nothing to record"),
    ("Notification", "notification_idle", "the task waits for its user"),
    ("Stop", "stop", "turn checkpoint skipped (restart is cheaper)"),
    ("PreCompact", "pre_compact", "a milestone checkpoint"),
    ("SessionEnd", "session_end", "a forced interrupt checkpoint"),
)


def pitstop_program() -> list[str]:
    """The installed `pitstop` script next to this Python, as Claude Code would run it."""
    script = Path(sys.executable).with_name("pitstop")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.launch"]


def fixture(name: str, cwd: Path, transcript: Path) -> bytes:
    """A fixture's event; `NAME:echo` is NAME with its command an `echo` (no decision asked)."""
    name, _, variant = name.partition(":")
    text = (FIXTURES / f"{name}.json").read_text()
    if variant == "echo":
        text = text.replace("python -m pytest -q tests", "echo ok")
    return text.replace("$CWD", str(cwd)).replace("$TRANSCRIPT", str(transcript)).encode()


def timed(argv: list[str], data: bytes, env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, input=data, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0 or b"not recorded" in proc.stderr:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode(errors='replace')}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument(
        "--session", type=int, default=5, help="real-client sessions of each kind (0: none)"
    )
    parser.add_argument("--repo", help="run the session in a copy of this repository")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="pitstop-bench-hook-"))
    try:
        repo = work / "repo"
        git_env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Bench",
            "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "Bench",
            "GIT_COMMITTER_EMAIL": "bench@example.com",
            "GIT_CONFIG_GLOBAL": str(_empty_gitconfig(work)),
        }
        _make_repo(repo, args.repo, git_env)
        (repo / "notes.txt").write_text("work in progress\n")  # an untracked change to snapshot
        files = subprocess.run(
            ["git", "ls-files", "-z"], cwd=repo, env=git_env, check=True, capture_output=True
        ).stdout.count(b"\0")
        transcript = work / "transcript.jsonl"
        transcript.write_text("{}\n")
        env = {
            **git_env,
            "PITSTOP_HOME": str(work / "store"),
            "PITSTOP_CONFIG_DIR": str(work / "config"),
            "PITSTOP_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "PYTHONPYCACHEPREFIX": str(work / "pycache"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        hook = [*pitstop_program(), "hook", "claude-code"]
        bare = [sys.executable, "-c", "pass"]
        inputs = {name: fixture(name, repo, transcript) for _, name, _ in EVENTS}

        for _ in range(2):  # write the bytecode cache and warm the page cache for both sides
            timed(bare, b"", env, repo)
            for _, name, _ in EVENTS:
                timed(hook, inputs[name], env, repo)

        baseline: list[float] = []
        times: dict[str, list[float]] = {label: [] for label, _, _ in EVENTS}
        for number in range(args.runs):
            if args.repo:
                with (repo / "notes.txt").open("a") as notes:
                    notes.write(f"run {number}\n")
            baseline.append(timed(bare, b"", env, repo))
            for label, name, _ in EVENTS:
                times[label].append(timed(hook, inputs[name], env, repo))

        base_ms = statistics.median(baseline) * 1000
        medians = {label: statistics.median(spent) * 1000 for label, spent in times.items()}
        ratios = {label: ms / base_ms for label, ms in medians.items()}
        where = f"a copy of {args.repo}" if args.repo else "a generated one-commit repository"
        print(f"repository: {where}, {files} tracked files")
        print(f"runs: {args.runs}, interleaved; medians; target <= {TARGET_RATIO:.0f}x each")
        print(f"{'python -c pass':<24}{base_ms:8.1f} ms")
        for label, _, what in EVENTS:
            verdict = "met" if ratios[label] <= TARGET_RATIO else "NOT met"
            print(f"{label:<24}{medians[label]:8.1f} ms {ratios[label]:5.1f}x  {verdict:<8}{what}")
        worst = max(ratios, key=lambda label: ratios[label])
        decision_ms = medians["PostToolUse Bash"] - medians["PostToolUse echo"]
        verdict = "met" if decision_ms <= DECISION_TARGET_MS else "NOT met"
        print(
            f"{'the decision adds':<24}{decision_ms:8.1f} ms (PostToolUse Bash - echo; "
            f"target <= {DECISION_TARGET_MS:.0f} ms) {verdict}"
        )
        session = None
        if args.session > 0:
            sys.path.insert(0, str(ROOT))
            from bench.hook_session import report

            session = report(args.session)
        print(
            json.dumps(
                {
                    "repo_files": files,
                    "baseline_ms": round(base_ms, 2),
                    "event_ms": {label: round(ms, 2) for label, ms in medians.items()},
                    "ratio": {label: round(r, 2) for label, r in ratios.items()},
                    "worst": worst,
                    "target_met": ratios[worst] <= TARGET_RATIO,
                    "decision_ms": round(decision_ms, 2),
                    "decision_target_met": decision_ms <= DECISION_TARGET_MS,
                    "session": session,
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _make_repo(repo: Path, source: str | None, git_env: dict[str, str]) -> None:
    """A copy of `source` at `repo` (its own objects: the store may copy them), or a new
    repository with one empty commit."""
    if source:
        clone = ["clone", "-q", "--no-hardlinks", str(Path(source).resolve()), str(repo)]
        subprocess.run(["git", *clone], env=git_env, check=True)
        return
    repo.mkdir()
    for command in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "i"]):
        subprocess.run(["git", *command], cwd=repo, env=git_env, check=True)


def _empty_gitconfig(where: Path) -> Path:
    """An empty global git config of the bench's own (never /dev/null, which root's git could
    replace with a file)."""
    path = where / "gitconfig"
    path.touch()
    return path


if __name__ == "__main__":
    sys.exit(main())
