"""Benchmark restore validation against `git status --porcelain` on the same repository.

Issue 5's target: `Engine.validate` in-process (every DESIGN §5 check, the store integrity
re-read, and the stored, audited record of the run) costs at most 3x what `git status
--porcelain` costs on the same 5,000-file repository with a paused task's ~20 changed files.
Runs are interleaved (A, B, A, B, ...) and medians compared. Nothing here asserts a time.

    .venv/bin/python bench/validate.py                # 5,000-file generated repo, 9 runs
    .venv/bin/python bench/validate.py --quick        # 300 files, 3 runs (smoke run)
    .venv/bin/python bench/validate.py --profile      # plus time per check and per git command
    .venv/bin/python bench/validate.py --upstream     # with an on-disk origin (ls-remote runs)
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.snapshot import (  # noqa: E402  (the path line above makes `bench` importable)
    CHANGED_FILE_COUNT,
    STAGED_FILE_COUNT,
    add_untracked,
    build_repo,
    edit_files,
    git,
    interleave,
    isolate_environment,
    ms,
    pick_changed_files,
    verdict,
)

TARGET_RATIO = 3.0
CREDENTIAL = "BENCH_DEPLOY_TOKEN"


def git_state(repo: Path) -> str:
    """A digest of the user-visible parts of `.git`: index, HEAD, refs, object listing."""
    digest = hashlib.sha256()
    for rel in ("index", "HEAD", "packed-refs", "config"):
        path = repo / ".git" / rel
        if path.exists():
            digest.update(path.read_bytes())
    for sub in ("objects", "refs", "worktrees"):
        for root, _dirs, files in sorted(os.walk(repo / ".git" / sub)):
            digest.update(root.encode() + repr(sorted(files)).encode())
    return digest.hexdigest()


@dataclass
class Fixture:
    repo: Path
    tracked_files: int
    changed: list[str]
    untracked: list[str]
    lockfiles: list[str]


def prepare(args: argparse.Namespace, workdir: Path) -> Fixture:
    """A generated repository with lockfiles, an optional origin, and a paused task's edits."""
    repo = workdir / "repo"
    build_repo(repo, args.files)
    lockfiles = ["uv.lock", "web/package-lock.json", "requirements-dev.txt"]
    for rel in lockfiles:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f"# {rel}\n" + "".join(f"pkg-{n}==1.{n}\n" for n in range(400)))
    git(["add", *lockfiles], repo)
    git(["commit", "-q", "-m", "lockfiles"], repo)
    if args.upstream:
        origin = workdir / "origin.git"
        git(["init", "-q", "--bare", str(origin)], workdir)
        git(["remote", "add", "origin", str(origin)], repo)
        git(["push", "-q", "-u", "origin", "main"], repo)
    changed = pick_changed_files(repo, CHANGED_FILE_COUNT)
    edit_files(repo, changed, round_number=1)
    untracked = add_untracked(repo)
    time.sleep(1.1)  # mtimes strictly before the index write: no racily-clean entries
    git(["add", "--", *changed[:STAGED_FILE_COUNT]], repo)
    git(["update-index", "-q", "--refresh"], repo)
    tracked = len([p for p in git(["ls-files", "-z"], repo).split(b"\0") if p])
    return Fixture(repo, tracked, changed, untracked, lockfiles)


# --- profiling -------------------------------------------------------------------------------


@dataclass
class Profile:
    """Per-phase durations of validation runs, from the progress callback's timestamps."""

    phases: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    git_calls: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    runs: int = 0
    recording: bool = False


def install_git_profiler(profile: Profile) -> None:
    """Book every git subprocess run by snapshot, validation and the worktree to its subcommand."""
    import core.restore.validate
    import core.restore.worktree
    import core.snapshot  # noqa: F401
    from bench.git_timing import wrap_run_git

    def book(args: Sequence[str], seconds: float) -> None:
        if profile.recording:
            words = [a for a in args if not a.startswith("-") and "=" not in a]
            profile.git_calls[" ".join(words[:1]) or args[0]].append(seconds)

    wrap_run_git(book)


def profiled_validate(engine: Any, ref: str, profile: Profile, offline: bool) -> Any:
    """One validation with phase boundaries: inputs gathered, each finding, stored + audited."""
    from core.engine import validate as validation

    marks: list[tuple[str, float]] = []
    original_inputs = validation.validation_inputs

    def inputs(*a: Any, **k: Any) -> Any:
        result = original_inputs(*a, **k)
        marks.append(("gather inputs (load, verify store, ledger, leases)", time.perf_counter()))
        return result

    validation.validation_inputs = inputs
    started = time.perf_counter()
    try:
        report = engine.validate(
            ref,
            offline=offline,
            progress=lambda f: marks.append((_phase(f.check), time.perf_counter())),
        )
    finally:
        validation.validation_inputs = original_inputs
    ended = time.perf_counter()
    previous = started
    seen: collections.Counter[str] = collections.Counter()
    for name, at in marks:
        seen[name] += 1
        label = name if seen[name] == 1 else f"{name} (#{seen[name]})"
        profile.phases[label].append(at - previous)
        previous = at
    profile.phases["store + audit the run (SQLite write)"].append(ended - previous)
    profile.runs += 1
    return report


# --- the benchmark ---------------------------------------------------------------------------


def run(args: argparse.Namespace, workdir: Path) -> int:
    isolate_environment(workdir)
    os.environ[CREDENTIAL] = "bench-secret-value"
    from core.engine import CheckpointRequest, Engine
    from core.models import NamedVersion

    profile = Profile()
    if args.profile:
        install_git_profiler(profile)

    started = time.perf_counter()
    fixture = prepare(args, workdir)
    repo = fixture.repo
    setup_seconds = time.perf_counter() - started

    engine = Engine(os.environ["PITSTOP_HOME"])
    task = engine.start_task(
        repo=repo,
        objective="benchmark validation",
        task_id="bench",
        harness=NamedVersion("claude-code", "2.0.14"),
        credentials=[CREDENTIAL],
    )
    engine.propose_effect(task.id, "pr-1", "pr", target="example/pull/1")
    engine.move_effect(task.id, "pr-1", _state("IN_PROGRESS"))
    engine.move_effect(task.id, "pr-1", _state("CONFIRMED"))
    checkpoint_started = time.perf_counter()
    checkpoint = engine.checkpoint(
        task.id, CheckpointRequest(note="paused for the benchmark", done=("a",), todo=("b",))
    ).checkpoint
    checkpoint_seconds = time.perf_counter() - checkpoint_started
    assert checkpoint is not None
    ref = checkpoint.ref

    def validate() -> Any:
        return engine.validate(ref, offline=args.offline)

    def git_status() -> bytes:
        return git(["status", "--porcelain"], repo)

    # Warm both (page cache, the store's first read) and settle the user's index.
    first_seconds = timed_once(validate)
    first_report = engine.validate(ref, offline=args.offline)
    git_status()
    os.sync()

    state_before = git_state(repo)
    validate_times, status_times = interleave(args.runs, validate, git_status)
    validate_median = statistics.median(validate_times)
    status_median = statistics.median(status_times)
    ratio = validate_median / status_median
    spawn_times = [timed_once(lambda: git(["--version"], repo)) for _ in range(max(args.runs, 9))]
    only_validate_before = git_state(repo)
    for _ in range(3):
        validate()
    repo_unchanged = git_state(repo) == only_validate_before
    status_kept_index = git_state(repo) == state_before

    if args.profile:
        profile.recording = True
        for _ in range(args.runs):
            profiled_validate(engine, ref, profile, args.offline)
        profile.recording = False
    stored = engine.db.execute("SELECT COUNT(*) FROM validations").fetchone()[0]
    engine.close()

    # --- report ------------------------------------------------------------------------------
    git_ver = git(["--version"], repo).decode().strip()
    print(
        f"Pitstop validation benchmark  ({git_ver}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs)"
    )
    print(
        f"repo: generated, {fixture.tracked_files:,} tracked files, {len(fixture.changed)} "
        f"modified ({STAGED_FILE_COUNT} staged), {len(fixture.untracked)} untracked, "
        f"{len(fixture.lockfiles)} lockfiles"
        + (", origin on disk (upstream checked)" if args.upstream else "")
        + f"; setup {setup_seconds:.1f} s, checkpoint {checkpoint_seconds * 1000:,.0f} ms"
    )
    not_passing = [
        f"{f.check} {f.status.value}" for f in first_report.findings if f.status.value != "pass"
    ]
    print(
        f"checkpoint {ref}: {checkpoint.changed_count} changed files; verdict "
        f"{first_report.verdict.value} ({', '.join(not_passing) or 'every check passes'})"
    )
    print(f"runs: {args.runs} per side, interleaved A,B,A,B; medians, [min .. max]")
    print()
    rows = [
        ("Engine.validate (in-process, stored + audited)", validate_times, "", ""),
        (
            "git status --porcelain",
            status_times,
            f"{ratio:.2f}x",
            f"<= {TARGET_RATIO:g}x  {verdict(ratio, TARGET_RATIO)}",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'median':>10}  {'range':>23}  {'ratio':>6}  target")
    print("-" * (width + 60))
    for label, samples, shown_ratio, target in rows:
        spread = f"[{ms(min(samples))} .. {ms(max(samples))}]"
        print(
            f"{label:<{width}}  {ms(statistics.median(samples)):>10}  {spread:>23}  "
            f"{shown_ratio:>6}  {target}".rstrip()
        )
    print()
    print(f"first validation after the checkpoint (cold): {ms(first_seconds)}")
    print(f"one git process spawn (`git --version`, median): {ms(statistics.median(spawn_times))}")
    print(f"validation runs stored in the validations table: {stored}")
    print(
        f"user repository .git unchanged by validation: {repo_unchanged}; "
        f"by the interleaved runs (incl. git status): {status_kept_index}"
    )

    if args.profile:
        print()
        print(f"per phase, median of {profile.runs} profiled runs (progress-callback timestamps):")
        total = sum(statistics.median(v) for v in profile.phases.values())
        label_width = max(len(name) for name in profile.phases)
        for name, samples in profile.phases.items():
            median = statistics.median(samples)
            print(f"  {name:<{label_width}} {ms(median):>10}  {median / total:>5.0%}")
        print(f"  {'sum of medians':<{label_width}} {ms(total):>10}")
        print()
        print("git subprocesses during the profiled runs, per run (wall time incl. spawn):")
        per_run_calls = sum(len(v) for v in profile.git_calls.values()) / max(profile.runs, 1)
        per_run_time = sum(sum(v) for v in profile.git_calls.values()) / max(profile.runs, 1)
        print(f"  {per_run_calls:.0f} calls, {ms(per_run_time)}")
        for name, samples in sorted(profile.git_calls.items(), key=lambda kv: -sum(kv[1])):
            print(
                f"      {name:<20} {len(samples) / profile.runs:>4.1f}x  "
                f"{ms(sum(samples) / profile.runs):>10}"
            )
    return 0


def _phase(check: str) -> str:
    """The phase a finding closes; the runtime check reports the harness under its own name."""
    if check == "harness":
        return "check runtime (OS, arch, Python, git --version, harness)"
    return f"check {check}"


def _state(name: str) -> Any:
    from core.models import EffectState

    return EffectState[name]


def timed_once(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=None, help="files (default 5000)")
    parser.add_argument("--runs", type=int, default=None, help="timed runs per side (default 9)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 300 files, 3 runs")
    parser.add_argument("--profile", action="store_true", help="per-check and per-git timings")
    parser.add_argument("--upstream", action="store_true", help="add an on-disk origin")
    parser.add_argument("--offline", action="store_true", help="validate with --offline")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.quick:
        args.files = args.files or 300
        args.runs = args.runs or 3
    args.files = args.files or 5000
    args.runs = args.runs or 9
    if args.files < 50 or args.runs < 1:
        parser.error("--files must be at least 50 and --runs at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark in a temporary directory and print its table; always exits 0."""
    args = parse_args(argv)
    saved_environ = dict(os.environ)
    workdir = Path(tempfile.mkdtemp(prefix="pitstop-bench-validate-"))
    try:
        return run(args, workdir)
    finally:
        os.environ.clear()
        os.environ.update(saved_environ)
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
