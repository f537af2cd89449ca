"""Benchmark `pitstop gc`'s time and peak memory on a store of many checkpoints.

Issue 22's target: `pitstop gc` on a 250-checkpoint store runs in bounded memory (<= 200 MB):
its full repack used git's defaults (a delta window per core, a 256 MB delta cache, 8 GB of
mapped packs) and peaked at 514 MB on one such store. A generated repository (bench/snapshot.py's,
2,000 files) gets ~40 files edited before each of N checkpoints; then `git repack -a -d` with
git's defaults runs on a copy of the store's repository (what gc ran before), and `pitstop gc`
on the store itself, every object of which is made loose first (`--packed`: as the store
packed itself as it went). Peak memory is the largest resident set of the process and every process
it waited for (GNU `time`), so git's own children count.

    .venv/bin/python bench/gc.py                      # 250 checkpoints
    .venv/bin/python bench/gc.py --checkpoints 20     # a quick run
    .venv/bin/python bench/gc.py --packed             # the store as it packs itself
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.cli import pitstop_program
from bench.snapshot import build_repo, edit_files, isolate_environment, pick_changed_files

TARGET_MB = 200.0


def peak(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Run `argv` to its end: (seconds, peak resident MB of it and of what it waited for).

    Through GNU `time`, a small process: a child forked from this one would count this
    interpreter's pages until it execs.
    """
    started = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *argv], env=env, cwd=cwd, capture_output=True, check=False
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode(errors='replace')}")
    return elapsed, int(proc.stderr.decode().strip().splitlines()[-1]) / 1024


def fill(repo: Path, checkpoints: int) -> Path:
    """Take `checkpoints` checkpoints of `repo`, editing files before each; the store repo."""
    from core.engine import CheckpointRequest, Engine

    with Engine() as engine:
        engine.start_task(repo=repo, objective="bench gc", task_id="bench-gc")
        for round_number in range(checkpoints):
            edit_files(repo, pick_changed_files(repo, 40)[round_number % 4 :: 2], round_number)
            engine.checkpoint("bench-gc", CheckpointRequest(force=True))
        [store_repo] = (engine.paths.repos).glob("*.git")
    return store_repo


def unpack(store_repo: Path) -> None:
    """Every object loose again, as in a store written before stores packed as they go (the
    514 MB one held 25,822 loose objects): the full repack then finds every delta itself."""
    env = {**os.environ, "GIT_DIR": str(store_repo)}
    for pack in sorted((store_repo / "objects" / "pack").glob("*.pack")):
        data = pack.read_bytes()
        for sibling in pack.parent.glob(pack.stem + ".*"):
            sibling.unlink()
        subprocess.run(["git", "unpack-objects", "-q"], input=data, env=env, check=True)


def object_count(store_repo: Path) -> int:
    out = subprocess.run(
        ["git", "count-objects", "-v"],
        env={**os.environ, "GIT_DIR": str(store_repo)},
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    counts = dict(line.split(": ", 1) for line in out.splitlines())
    return int(counts["count"]) + int(counts["in-pack"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--checkpoints", type=int, default=250)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument(
        "--packed", action="store_true", help="leave the store as it packed itself as it went"
    )
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="pitstop-bench-gc-"))
    try:
        isolate_environment(work)
        repo = work / "repo"
        build_repo(repo, args.files)
        store_repo = fill(repo, args.checkpoints)
        if not args.packed:
            unpack(store_repo)
        copy = work / "baseline.git"
        shutil.copytree(store_repo, copy, symlinks=True)
        env = dict(os.environ)
        git_s, git_mb = peak(["git", "--git-dir", str(copy), "repack", "-a", "-d", "-q"], env, work)
        gc_s, gc_mb = peak([*pitstop_program(), "gc"], env, repo)
        verdict = "met" if gc_mb <= TARGET_MB else "NOT met"
        state = "packed as it went" if args.packed else "all loose"
        print(f"{args.checkpoints} checkpoints, {object_count(store_repo)} objects ({state})")
        print(f"{'git repack -a -d (defaults)':<30}{git_s:7.2f} s {git_mb:8.1f} MB peak")
        print(f"{'pitstop gc':<30}{gc_s:7.2f} s {gc_mb:8.1f} MB peak  {verdict}")
        print(
            json.dumps(
                {
                    "checkpoints": args.checkpoints,
                    "git_repack_s": round(git_s, 2),
                    "git_repack_peak_mb": round(git_mb, 1),
                    "gc_s": round(gc_s, 2),
                    "gc_peak_mb": round(gc_mb, 1),
                    "target_met": gc_mb <= TARGET_MB,
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
