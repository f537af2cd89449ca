"""Benchmark `pitstop gc`'s time and peak memory on a store of many checkpoints.

Issue 22's target: `pitstop gc` on a 250-checkpoint store runs in bounded memory (<= 200 MB):
its full repack used git's defaults (a delta window per core, a 256 MB delta cache, 8 GB of
mapped packs) and peaked at 514 MB on one such store. A generated repository (bench/snapshot.py's,
2,000 files) gets ~40 files edited before each of N checkpoints; then `git repack -a -d` with
git's defaults runs on a copy of the store's repository (what gc ran before), and `pitstop gc`
on the store itself, every object of which is made loose first (`--packed`: as the store
packed itself as it went). Peak memory is the largest resident set of the process and every process
it waited for (GNU `time`), so git's own children count;
one more gc of the same store, in one Python process, splits that into Python's own peak and its
largest git child's (`RUSAGE_SELF`, `RUSAGE_CHILDREN`).

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
BYTES_TARGET = 1.2
"""Store bytes as it packed itself, at most this times what a full repack gives (issue 22)."""


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


SPLIT = """
import json, resource, sys
from core.engine import Engine
with Engine() as engine:
    engine.gc()
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"self_mb": own / 1024, "children_mb": children / 1024}))
"""
"""`pitstop gc`'s work in one Python process that reports its own peak resident set and the
largest of the git processes it waited for (`RUSAGE_CHILDREN`): which side the bound is spent on."""


def split_peak(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(Python's own peak MB, the largest git child's peak MB) of a gc run in one process."""
    proc = subprocess.run(  # through `time`, as `peak`: a small parent to fork from
        ["/usr/bin/time", "-f", "%M", sys.executable, "-c", SPLIT],
        env=env,
        cwd=cwd,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"gc failed: {proc.stderr.decode(errors='replace')}")
    found = json.loads(proc.stdout.decode().splitlines()[-1])
    return float(found["self_mb"]), float(found["children_mb"])


def object_bytes(git_dir: Path) -> tuple[int, int]:
    """(loose objects, bytes of every object file, loose and packed) of a repository."""
    loose = total = 0
    for entry in (git_dir / "objects").rglob("*"):
        if entry.is_file():
            total += entry.stat().st_size
            loose += len(entry.parent.name) == 2 and len(entry.name) == 38
    return loose, total


def copy_of(store_repo: Path, target: Path) -> Path:
    shutil.copytree(store_repo, target, symlinks=True)
    return target


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
        loose, went_bytes = object_bytes(store_repo)  # as the store packed itself as it went
        full = copy_of(store_repo, work / "full.git")
        quiet = dict(os.environ)
        subprocess.run(["git", "--git-dir", str(full), "repack", "-adfq"], env=quiet, check=True)
        _, full_bytes = object_bytes(full)
        shutil.rmtree(full)
        if not args.packed:
            unpack(store_repo)
        env = dict(os.environ)
        baselines = {}
        for label, command in (
            ("git repack -a -d (defaults)", ["repack", "-a", "-d", "-q"]),
            ("git repack -adf (defaults)", ["repack", "-a", "-d", "-f", "-q"]),
            ("git gc (defaults)", ["gc", "-q"]),
        ):
            copy = copy_of(store_repo, work / "baseline.git")
            baselines[label] = peak(["git", "--git-dir", str(copy), *command], env, work)
            shutil.rmtree(copy)
        split_repo = copy_of(store_repo, work / "split.git")
        gc_s, gc_mb = peak([*pitstop_program(), "gc"], env, repo)
        shutil.rmtree(store_repo)  # the same store again, for the gc that reports its sides
        split_repo.rename(store_repo)
        own_mb, child_mb = split_peak(env, repo)
        verdict = "met" if gc_mb <= TARGET_MB else "NOT met"
        ratio = went_bytes / full_bytes
        state = "packed as it went" if args.packed else "all loose"
        print(f"{args.checkpoints} checkpoints, {object_count(store_repo)} objects ({state})")
        print(
            f"store as it packed itself: {loose} loose objects, {went_bytes / 2**20:.1f} MiB; "
            f"a full repack (-adf): {full_bytes / 2**20:.1f} MiB; {ratio:.2f}x "
            f"({'met' if ratio <= BYTES_TARGET else 'NOT met'}, target <= {BYTES_TARGET}x)"
        )
        for label, (seconds, mb) in baselines.items():
            print(f"{label:<30}{seconds:7.2f} s {mb:8.1f} MB peak")
        print(f"{'pitstop gc':<30}{gc_s:7.2f} s {gc_mb:8.1f} MB peak  {verdict}")
        print(f"{'  of which Python itself':<30}{'':9} {own_mb:8.1f} MB peak")
        print(f"{'  of which its largest git':<30}{'':9} {child_mb:8.1f} MB peak")
        print(
            json.dumps(
                {
                    "checkpoints": args.checkpoints,
                    "loose_objects": loose,
                    "store_bytes": went_bytes,
                    "full_repack_bytes": full_bytes,
                    "bytes_ratio": round(ratio, 3),
                    "baselines": {
                        label: {"s": round(s, 2), "peak_mb": round(mb, 1)}
                        for label, (s, mb) in baselines.items()
                    },
                    "git_repack_s": round(baselines["git repack -a -d (defaults)"][0], 2),
                    "git_repack_peak_mb": round(baselines["git repack -a -d (defaults)"][1], 1),
                    "gc_s": round(gc_s, 2),
                    "gc_peak_mb": round(gc_mb, 1),
                    "gc_self_peak_mb": round(own_mb, 1),
                    "gc_children_peak_mb": round(child_mb, 1),
                    "target_met": gc_mb <= TARGET_MB and ratio <= BYTES_TARGET,
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
