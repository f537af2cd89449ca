"""Benchmark `pitstop` commands' start-up against `python -c pass` and `git status`.

Issue 22's target: the commands people type to look around answer like a git command — each of
`pitstop --help`, `locate`, `task list`, `checkpoints TASK` and `show TASK@1` at most 4x a bare
Python start, on a store holding one task with one checkpoint (what these commands read is
then nothing but start-up). Every process is started as a user starts it: the installed
`pitstop` script, a new process, in the task's repository. `git status` in the same repository
is printed beside them as the feel to match.

Runs are interleaved (python, git, then every command, again and again) and medians compared,
so a slow moment of a shared machine weighs on every side. Bytecode is cached, as for an
installed package (`PYTHONDONTWRITEBYTECODE` from the caller's environment is dropped).

    .venv/bin/python bench/cli.py             # 21 interleaved runs
    .venv/bin/python bench/cli.py --runs 3    # a quick run
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

TARGET_RATIO = 4.0
TASK = "bench-task"

COMMANDS: tuple[tuple[str, list[str]], ...] = (
    ("pitstop --help", ["--help"]),
    ("pitstop locate", ["locate"]),
    ("pitstop task list", ["task", "list"]),
    ("pitstop checkpoints", ["checkpoints", TASK]),
    ("pitstop show", ["show", f"{TASK}@1"]),
)


def pitstop_program() -> list[str]:
    """The installed `pitstop` script next to this Python, as a user's shell runs it."""
    script = Path(sys.executable).with_name("pitstop")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.launch"]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode(errors='replace')}")
    return elapsed


def setup(work: Path) -> tuple[Path, dict[str, str]]:
    """A repository with one task and one checkpoint, and the environment that finds them."""
    repo = work / "repo"
    repo.mkdir()
    gitconfig = work / "gitconfig"  # an empty global config of the bench's own, never /dev/null
    gitconfig.touch()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "PITSTOP_HOME": str(work / "store"),
        "PITSTOP_CONFIG_DIR": str(work / "config"),
        "PITSTOP_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "PYTHONPYCACHEPREFIX": str(work / "pycache"),
        "NO_COLOR": "1",
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for command in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "i"]):
        subprocess.run(["git", *command], cwd=repo, env=env, check=True)
    (repo / "notes.txt").write_text("work in progress\n")
    pitstop = pitstop_program()
    for command in (
        ["task", "start", "--id", TASK, "--repo", str(repo), "--objective", "bench the CLI"],
        ["checkpoint", TASK, "--note", "one checkpoint to read"],
    ):
        proc = subprocess.run([*pitstop, *command], cwd=repo, env=env, capture_output=True)
        if proc.returncode != 0:
            raise SystemExit(f"setup failed: {proc.stderr.decode(errors='replace')}")
    return repo, env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="pitstop-bench-cli-"))
    try:
        repo, env = setup(work)
        pitstop = pitstop_program()
        sides: list[tuple[str, list[str]]] = [
            ("python -c pass", [sys.executable, "-c", "pass"]),
            ("git status", ["git", "status"]),
            *((label, [*pitstop, *command]) for label, command in COMMANDS),
        ]
        for _ in range(2):  # write the bytecode cache and warm the page cache for every side
            for _, command in sides:
                timed(command, env, repo)
        times: dict[str, list[float]] = {label: [] for label, _ in sides}
        for _ in range(args.runs):
            for label, command in sides:
                times[label].append(timed(command, env, repo))
        medians = {label: statistics.median(spent) * 1000 for label, spent in times.items()}
        base, git = medians["python -c pass"], medians["git status"]
        print(f"runs: {args.runs}, interleaved; medians; target <= {TARGET_RATIO:.0f}x python")
        print(f"{'python -c pass':<22}{base:8.1f} ms")
        print(f"{'git status':<22}{git:8.1f} ms {git / base:5.1f}x")
        ratios = {}
        for label, _ in COMMANDS:
            ratios[label] = medians[label] / base
            verdict = "met" if ratios[label] <= TARGET_RATIO else "NOT met"
            print(
                f"{label:<22}{medians[label]:8.1f} ms {ratios[label]:5.1f}x  {verdict:<8}"
                f"({medians[label] / git:.1f}x git status)"
            )
        worst = max(ratios, key=lambda label: ratios[label])
        print(
            json.dumps(
                {
                    "baseline_ms": round(base, 2),
                    "git_status_ms": round(git, 2),
                    "command_ms": {label: round(medians[label], 2) for label, _ in COMMANDS},
                    "ratio": {label: round(r, 2) for label, r in ratios.items()},
                    "worst": worst,
                    "target_met": ratios[worst] <= TARGET_RATIO,
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
