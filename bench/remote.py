"""Benchmark Pitstop's push, fetch and remote list against the git commands they stand beside.

Issue 7's target: sharing a checkpoint through the repository's own remote costs about what
sharing the same change as a branch costs. This script measures, in one run on one machine:

- push:   `Engine.push` of a new checkpoint (20 files changed)  vs  `git push` of a branch
          holding the same change                                (target <= 1.5x)
- fetch:  `Engine.fetch` of it into a second store              vs  `git fetch` of that branch
          into a second clone                                    (target <= 1.3x, issue 22)
- list:   `Engine.list_remote` with 2,000 tasks on the remote   vs  `git ls-remote` + `git fetch`
          of the same ledger refs (the floor of any listing)     (information)

Every run starts from the same state: the remote, the stores and the clones are restored from
copies made during setup, outside the timing. Runs are interleaved (A, B, A, B, ...) and medians
compared. Nothing here asserts a time.

    .venv/bin/python bench/remote.py               # 5,000-file repo, 2,000 remote tasks, 9 runs
    .venv/bin/python bench/remote.py --quick       # 300 files, 100 tasks, 3 runs (smoke run)
    .venv/bin/python bench/remote.py --profile     # plus cProfile and git processes per operation
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.snapshot import (  # noqa: E402
    CHANGED_FILE_COUNT,
    build_repo,
    edit_files,
    git,
    interleave,
    isolate_environment,
    ms,
    pick_changed_files,
    timed,
    verdict,
)

PUSH_TARGET = 1.5
FETCH_TARGET = 1.3  # issue 22 (issue 7 had 1.5)
BRANCH = "feature"
STATUSES = ("running", "waiting", "paused", "done", "done", "cancelled")


# --- isolation -----------------------------------------------------------------------------


def isolate(workdir: Path) -> None:
    """The snapshot bench's isolation, plus a private HOME and an operator identity."""
    import pyrage

    isolate_environment(workdir)
    home = workdir / "home"
    home.mkdir()
    os.environ["HOME"] = str(home)
    os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
    os.environ["XDG_DATA_HOME"] = str(home / ".local" / "share")
    os.environ["XDG_CACHE_HOME"] = str(home / ".cache")
    # One operator on two machines: store A pushes to them, store B reads with the same identity.
    os.environ["PITSTOP_IDENTITY"] = str(pyrage.x25519.Identity.generate())
    os.environ.pop("PITSTOP_FROZEN_NOW", None)


# --- restoring state between runs ------------------------------------------------------------


def restore(saved: Path, live: Path) -> None:
    """Replace `live` with a fresh copy of `saved` (`cp -a`: modes, times and links kept)."""
    if live.exists():
        shutil.rmtree(live)
    subprocess.run(["cp", "-a", str(saved), str(live)], check=True)


def settle() -> None:
    """Flush the copy to disk now, so no timed run pays for the previous restore's writeback."""
    os.sync()


# --- the world ------------------------------------------------------------------------------


@dataclass
class World:
    """The remote, the clones, the two stores, and the saved states each run starts from."""

    workdir: Path
    remote: Path  # the one remote URL everybody uses (`origin`); restored before each run
    author: Path  # the repository the agent works in (store A's task)
    other: Path  # a second machine's clone (store B fetches into it)
    author_git: Path  # a byte-identical clone where the change is committed as a branch
    store_a: Path
    store_b: Path
    saved: Path
    task_id: str
    changed: list[str]
    tracked_files: int
    equivalent_trees: bool

    def saved_path(self, name: str) -> Path:
        return self.saved / name


def prepare(args: argparse.Namespace, workdir: Path) -> World:
    """Build the repository, clone it twice, warm both stores, make the change, save states."""
    from core.engine import CheckpointRequest, Engine

    remote = workdir / "remote.git"
    author = workdir / "author"
    other = workdir / "other"
    author_git = workdir / "author-git"
    saved = workdir / "saved"
    saved.mkdir()
    build_repo(author, args.files)
    git(["init", "-q", "--bare", "-b", "main", str(remote)], workdir)
    git(["remote", "add", "origin", str(remote)], author)
    git(["push", "-q", "origin", "main"], author)
    git(["fetch", "-q", "origin"], author)
    git(["clone", "-q", str(remote), str(other)], workdir)
    git(["clone", "-q", str(remote), str(author_git)], workdir)
    tracked = len([p for p in git(["ls-files", "-z"], author).split(b"\0") if p])

    # Warm store A: a task whose first checkpoint is already on the remote, as an operator's
    # store would be after the task's first push (the store repo holds the base commit, depth 1).
    store_a, store_b = workdir / "store-a", workdir / "store-b"
    with Engine(store_a) as engine_a:
        task = engine_a.start_task(
            repo=author, objective="benchmark remote checkpoints", task_id="bench-remote"
        )
        engine_a.checkpoint(task.id, CheckpointRequest(force=True))
        engine_a.push([task.id])
    # Warm store B: it fetched that first checkpoint on the other machine.
    with Engine(store_b) as engine_b:
        engine_b.fetch([task.id], repo=other)

    # The 20-file change: a second checkpoint in store A; the same bytes committed on a branch
    # in the baseline clone.
    changed = pick_changed_files(author, CHANGED_FILE_COUNT)
    edit_files(author, changed, round_number=1)
    edit_files(author_git, changed, round_number=1)
    for path in changed:
        if (author / path).read_bytes() != (author_git / path).read_bytes():
            raise SystemExit(f"bench: the baseline clone's {path} differs from the author's")
    with Engine(store_a) as engine_a:
        checkpoint = engine_a.checkpoint(task.id, CheckpointRequest(force=True)).checkpoint
        assert checkpoint is not None
        worktree_tree = checkpoint.worktree_tree
    git(["checkout", "-q", "-b", BRANCH], author_git)
    git(["commit", "-q", "-a", "-m", "the same 20-file change"], author_git)
    branch_tree = git(["rev-parse", f"{BRANCH}^{{tree}}"], author_git).decode().strip()
    git(["repack", "-adq"], other)  # a clone is packed; keep it so after each restore

    for live in (remote, store_a, store_b):
        subprocess.run(["cp", "-a", str(live), str(saved / live.name)], check=True)
    subprocess.run(["cp", "-a", str(other / ".git"), str(saved / "other.git")], check=True)
    return World(
        workdir,
        remote,
        author,
        other,
        author_git,
        store_a,
        store_b,
        saved,
        task.id,
        changed,
        tracked,
        worktree_tree == branch_tree,
    )


# --- push and fetch ----------------------------------------------------------------------------


class Operations:
    """The four timed operations, each with its untimed restore of the state it starts from."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.engine: Any = None
        self.results: list[Any] = []

    def _open(self, store: Path) -> None:
        from core.engine import Engine

        self.engine = Engine(store)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None

    # push: both sides start from the remote holding main and the task's first checkpoint.
    def before_pitstop_push(self) -> None:
        self.close()
        restore(self.world.saved_path("remote.git"), self.world.remote)
        restore(self.world.saved_path("store-a"), self.world.store_a)
        self._open(self.world.store_a)
        settle()

    def pitstop_push(self) -> None:
        self.results.append(self.engine.push([self.world.task_id]))

    def before_git_push(self) -> None:
        self.close()
        restore(self.world.saved_path("remote.git"), self.world.remote)
        subprocess.run(
            ["git", "update-ref", "-d", f"refs/remotes/origin/{BRANCH}"],
            cwd=self.world.author_git,
            check=False,
            capture_output=True,
        )
        settle()

    def git_push(self) -> None:
        git(["push", "-q", "origin", BRANCH], self.world.author_git)

    # fetch: both sides start from the remote holding the new checkpoint and the branch.
    def before_pitstop_fetch(self) -> None:
        self.close()
        restore(self.world.saved_path("remote-pushed.git"), self.world.remote)
        restore(self.world.saved_path("store-b"), self.world.store_b)
        self._open(self.world.store_b)
        settle()

    def pitstop_fetch(self) -> None:
        self.results.append(self.engine.fetch([self.world.task_id], repo=self.world.other))

    def before_git_fetch(self) -> None:
        self.close()
        restore(self.world.saved_path("remote-pushed.git"), self.world.remote)
        restore(self.world.saved_path("other.git"), self.world.other / ".git")
        settle()

    def git_fetch(self) -> None:
        git(["fetch", "-q", "origin", BRANCH], self.world.other)


def time_pair(
    runs: int,
    before_a: Callable[[], None],
    a: Callable[[], Any],
    before_b: Callable[[], None],
    b: Callable[[], Any],
) -> tuple[list[float], list[float]]:
    """Interleave `a` and `b`, each after its own untimed restore."""
    before_a()
    return interleave(runs, a, b, after_a=before_b, after_b=before_a)


# --- 2,000 tasks on the remote -------------------------------------------------------------------


def ledger_template(remote: Path, task_id: str) -> tuple[dict[str, Any], dict[str, str], str]:
    """The real task's ledger on the remote: its header, its other entries, its checkpoint tip."""
    env = {"GIT_DIR": str(remote)}
    ledger = f"refs/pitstop/ledger/{task_id}"
    header = json.loads(git(["cat-file", "blob", f"{ledger}:task.json"], remote, env=env))
    entries: dict[str, str] = {}
    for line in git(["ls-tree", ledger], remote, env=env).decode().splitlines():
        meta, name = line.split("\t", 1)
        if name != "task.json":
            entries[name] = meta.split()[0] + " " + meta.split()[2]  # "mode oid"
    checkpoint = (
        git(["rev-parse", f"refs/pitstop/checkpoints/{task_id}"], remote, env=env).decode().strip()
    )
    return header, entries, checkpoint


def fabricate_tasks(remote: Path, template_task: str, count: int) -> float:
    """Add `count` tasks to the remote with one `git fast-import`; return the seconds it took.

    Each gets what `remote list` reads, built from the real task's ledger: its own ledger commit
    whose `task.json` is the real header with a new id, times and status, and its own random
    `keys/data-key.age` of the real one's size (wrapped keys differ per task); the facts tree is
    the real task's. Its checkpoint ref points at the real task's checkpoint chain, so the remote
    advertises two refs per task, as a real one does (listing never reads those commits).
    """
    header, entries, checkpoint = ledger_template(remote, template_task)
    env = {"GIT_DIR": str(remote)}
    key_mode_oid = entries.pop("keys", None)
    key_size = 0
    if key_mode_oid:
        key_size = int(
            git(
                ["cat-file", "-s", f"refs/pitstop/ledger/{template_task}:keys/data-key.age"],
                remote,
                env=env,
            ).decode()
        )
    rng = random.Random(7)
    stream = io.BytesIO()

    def data(payload: bytes) -> None:
        stream.write(b"data %d\n" % len(payload) + payload + b"\n")

    base_time = 1_767_225_600  # 2026-01-01T00:00:00Z
    for number in range(count):
        task_id = f"fab-{number:05d}"
        moment = base_time + number * 97
        created = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(moment))
        updated = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(moment + 3_600))
        fabricated = {
            **header,
            "task": task_id,
            "created_at": created,
            "updated_at": updated,
            "status": rng.choice(STATUSES),
        }
        stream.write(f"commit refs/pitstop/ledger/{task_id}\n".encode())
        stream.write(f"committer Pitstop <pitstop@localhost> {moment} +0000\n".encode())
        data(f"pitstop ledger {task_id}".encode())
        for name, mode_oid in sorted(entries.items()):
            mode, oid = mode_oid.split()
            stream.write(f"M {mode} {oid} {name}\n".encode())
        stream.write(b"M 100644 inline task.json\n")
        data(json.dumps(fabricated, sort_keys=True, separators=(",", ":")).encode())
        if key_size:
            stream.write(b"M 100644 inline keys/data-key.age\n")
            data(rng.randbytes(key_size))
        stream.write(f"reset refs/pitstop/checkpoints/{task_id}\nfrom {checkpoint}\n\n".encode())
    started = time.perf_counter()
    git(["fast-import", "--quiet", "--done"], remote, input=stream.getvalue() + b"done\n", env=env)
    return time.perf_counter() - started


class Listing:
    """`remote list` from store B against the floor: ls-remote + fetch of the same ledger refs."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.engine: Any = None
        self.floor_repo = world.workdir / "floor.git"
        self.counts: list[int] = []
        from core import snapshot

        source = snapshot.resolve_source_repo(world.other)
        self.store_repo_name = source.store_repo_name

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None

    def before_pitstop(self) -> None:
        from core.engine import Engine

        self.close()
        restore(self.world.saved_path("store-b"), self.world.store_b)
        self.engine = Engine(self.world.store_b)
        settle()

    def pitstop(self) -> None:
        listing = self.engine.list_remote(repo=self.world.other).tasks
        self.counts.append(len(listing))

    def before_floor(self) -> None:
        self.close()
        # The same starting point as store B's own repository (it knows the first task only).
        restore(self.world.saved_path("store-b") / "repos" / self.store_repo_name, self.floor_repo)
        settle()

    def floor(self) -> None:
        url = str(self.world.remote)
        env = {"GIT_DIR": str(self.floor_repo)}
        git(["ls-remote", url, "refs/pitstop/*"], self.floor_repo, env=env)
        git(
            [
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                url,
                "+refs/pitstop/ledger/*:refs/pitstop/remotes/floor/ledger/*",
            ],
            self.floor_repo,
            env=env,
        )


# --- profiling -------------------------------------------------------------------------------


class GitTimes:
    """Wall time of every git process started while a phase is set, by phase and subcommand.

    Installed only with `--profile`: it wraps `subprocess.Popen` so a process's time runs from
    its start to the `wait()` that reaps it (`subprocess.run` and the batch readers both wait).
    """

    def __init__(self) -> None:
        self.phase: str | None = None
        self.totals: dict[str, dict[str, list[float]]] = collections.defaultdict(
            lambda: collections.defaultdict(list)
        )
        self._original_init = subprocess.Popen.__init__
        self._original_wait = subprocess.Popen.wait

    def install(self) -> None:
        times = self
        original_init, original_wait = self._original_init, self._original_wait

        def init(popen: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
            if (
                times.phase is not None
                and isinstance(args, list | tuple)
                and args
                and str(args[0]) == "git"
            ):
                words = [str(a) for a in args[1:] if not str(a).startswith("-")]
                if len(words) > 1 and words[0].startswith("/"):  # `git -C DIR subcommand`
                    words = words[1:]
                popen._bench_git = (times.phase, words[0] if words else "?", time.perf_counter())
            original_init(popen, args, *rest, **kwargs)

        def wait(popen: Any, timeout: float | None = None) -> int:
            code = original_wait(popen, timeout)
            started = getattr(popen, "_bench_git", None)
            if started is not None:
                phase, name, at = started
                times.totals[phase][name].append(time.perf_counter() - at)
                popen._bench_git = None
            return code

        subprocess.Popen.__init__ = init  # type: ignore[method-assign, assignment]
        subprocess.Popen.wait = wait  # type: ignore[method-assign, assignment]

    def uninstall(self) -> None:
        subprocess.Popen.__init__ = self._original_init  # type: ignore[method-assign]
        subprocess.Popen.wait = self._original_wait  # type: ignore[method-assign]

    @contextmanager
    def during(self, phase: str | None) -> Iterator[None]:
        previous, self.phase = self.phase, phase
        try:
            yield
        finally:
            self.phase = previous

    def wrap(self, phase: str, action: Callable[[], Any]) -> Callable[[], Any]:
        def phased() -> Any:
            with self.during(phase):
                return action()

        return phased

    def report(self, phase: str, runs: int, samples: Sequence[float]) -> None:
        commands = self.totals.get(phase, {})
        in_git = sum(sum(v) for v in commands.values()) / runs
        calls = sum(len(v) for v in commands.values()) / runs
        print(
            f"  {phase}: {calls:.0f} git processes, {ms(in_git)} in git; "
            f"{ms(statistics.mean(samples) - in_git)} outside git (mean per run)"
        )
        for name, times in sorted(commands.items(), key=lambda kv: -sum(kv[1])):
            print(f"      {name:<16} {len(times) / runs:>4.1f}x  {ms(sum(times) / runs):>10}")


def profile_once(
    label: str, before: Callable[[], None], action: Callable[[], Any], lines: int
) -> None:
    """Run `action` once more under cProfile; print its top functions by cumulative time."""
    before()
    profiler = cProfile.Profile()
    profiler.enable()
    action()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(lines)
    print()
    print(f"cProfile: {label}, one run, top {lines} by cumulative time")
    body = out.getvalue()
    start = body.find("   ncalls")
    print(body[start:].rstrip() if start >= 0 else body.rstrip())


# --- the benchmark -------------------------------------------------------------------------


def signing_costs(count: int) -> dict[str, float]:
    """Seconds per fact to write and read `count` ledger facts, with signing and verifying and
    without (the canonical JSON and uid alone), measured side by side in this run."""
    from core.ledger.fact_format import (
        SCHEMA,
        canonical,
        encode_fact,
        fact_path,
        fact_uid,
        parse_fact,
    )
    from core.security import signing

    key = signing.create_signing_key()
    plains = [
        {"schema": SCHEMA, "kind": "effect", "task": "bench-task", "key": f"deploy-{n}",
         "effect_kind": "deploy", "state": "confirmed", "attempts": 1,
         "at": "2026-01-01T00:00:00.000000Z", "created_at": "2026-01-01T00:00:00.000000Z",
         "needs_approval": False, "exit_code": 0, "started_at": None, "finished_at": None}
        for n in range(count)
    ]  # fmt: skip
    started = time.perf_counter()
    unsigned = [canonical({**plain, "uid": fact_uid(plain)}) for plain in plains]
    plain_write = time.perf_counter() - started
    started = time.perf_counter()
    signed = [encode_fact(plain, None, key) for plain in plains]
    signed_write = time.perf_counter() - started
    paths = [fact_path(fact_uid(plain)) for plain in plains]
    started = time.perf_counter()
    for data in unsigned:
        json.loads(data)
    plain_read = time.perf_counter() - started
    started = time.perf_counter()
    for path, data in zip(paths, signed, strict=True):
        if not parse_fact(path, data).signature_holds():
            raise SystemExit("bench: a fact signed here does not verify")
    signed_read = time.perf_counter() - started
    return {
        "write_plain": plain_write / count,
        "write_signed": signed_write / count,
        "read_plain": plain_read / count,
        "read_verified": signed_read / count,
    }


def report_signing_costs(count: int) -> None:
    """Print what signing and verifying cost per ledger fact."""
    costs = signing_costs(count)
    print(f"ledger facts, per fact ({count:,} facts, Ed25519):")
    print(
        f"  write: {costs['write_signed'] * 1e6:8.1f} us signed   vs "
        f"{costs['write_plain'] * 1e6:6.1f} us canonical JSON alone  "
        f"(signing adds {(costs['write_signed'] - costs['write_plain']) * 1e6:.1f} us)"
    )
    print(
        f"  read:  {costs['read_verified'] * 1e6:8.1f} us verified vs "
        f"{costs['read_plain'] * 1e6:6.1f} us JSON parse alone       "
        f"(verifying adds {(costs['read_verified'] - costs['read_plain']) * 1e6:.1f} us)"
    )


def paired_ratio(pitstop: Sequence[float], floor: Sequence[float]) -> float:
    """The median of each back-to-back pair's ratio: the machine's load drifts over a run
    (shared, 2 cores), and a pair's two runs see the same load where two medians need not."""
    return statistics.median(a / b for a, b in zip(pitstop, floor, strict=True))


def row(label: str, samples: Sequence[float], ratio: str = "", target: str = "") -> str:
    spread = f"[{ms(min(samples))} .. {ms(max(samples))}]"
    return (
        f"{label:<44}  {ms(statistics.median(samples)):>11}  {spread:>25}  {ratio:>6}  "
        f"{target}".rstrip()
    )


def run(args: argparse.Namespace, workdir: Path) -> int:
    isolate(workdir)
    started = time.perf_counter()
    world = prepare(args, workdir)
    setup_seconds = time.perf_counter() - started
    git_times = GitTimes()
    if args.profile:
        git_times.install()

    ops = Operations(world)
    # Warm-up (untimed): one of each. The pushes leave the remote holding the new checkpoint
    # and the branch, which is the state every fetch starts from.
    ops.before_pitstop_push()
    first_push = timed(ops.pitstop_push)[0]
    ops.close()
    git(["push", "-q", "origin", BRANCH], world.author_git)
    subprocess.run(
        ["cp", "-a", str(world.remote), str(world.saved_path("remote-pushed.git"))], check=True
    )
    ops.before_pitstop_fetch()
    ops.pitstop_fetch()
    ops.before_git_fetch()
    ops.git_fetch()
    ops.results.clear()

    push_pitstop, push_git = time_pair(
        args.runs,
        ops.before_pitstop_push,
        git_times.wrap("Pitstop push", ops.pitstop_push),
        ops.before_git_push,
        git_times.wrap("git push", ops.git_push),
    )
    pushed = [r.tasks[world.task_id]["checkpoints_sent"] for r in ops.results]
    ops.results.clear()
    fetch_pitstop, fetch_git = time_pair(
        args.runs,
        ops.before_pitstop_fetch,
        git_times.wrap("Pitstop fetch", ops.pitstop_fetch),
        ops.before_git_fetch,
        git_times.wrap("git fetch", ops.git_fetch),
    )
    fetched = [r.fetched[world.task_id]["checkpoints"] for r in ops.results]
    ops.results.clear()
    ops.close()
    if any(n != 1 for n in pushed + fetched):
        raise SystemExit(
            f"bench: expected one checkpoint per push and fetch, got {pushed} "
            f"pushed and {fetched} fetched"
        )

    # The listing: the pushed remote plus fabricated tasks (listing only reads the remote).
    restore(world.saved_path("remote-pushed.git"), world.remote)
    fabricate_seconds = fabricate_tasks(world.remote, world.task_id, args.tasks - 1)
    remote_env = {"GIT_DIR": str(world.remote)}
    git(["repack", "-adq"], world.remote, env=remote_env)
    git(["pack-refs", "--all"], world.remote, env=remote_env)
    refs_on_remote = len(
        git(
            ["for-each-ref", "--format=%(refname)", "refs/pitstop/"], world.remote, env=remote_env
        ).split()
    )
    listing = Listing(world)
    listing.before_pitstop()
    listing.pitstop()  # warm-up
    list_label = f"Pitstop remote list ({args.tasks:,} tasks)"
    list_pitstop, list_floor = time_pair(
        args.runs,
        listing.before_pitstop,
        git_times.wrap(list_label, listing.pitstop),
        listing.before_floor,
        git_times.wrap("git ls-remote + fetch", listing.floor),
    )
    # The same listing again, nothing new on the remote (what the dashboard's refresh costs).
    listing.before_pitstop()
    listing.pitstop()
    relist_action = git_times.wrap("Pitstop remote list again", listing.pitstop)
    relist = [timed(relist_action)[0] for _ in range(args.runs)]
    listing.close()
    git_times.uninstall()
    if any(n != args.tasks for n in listing.counts):
        raise SystemExit(
            f"bench: remote list returned {sorted(set(listing.counts))} tasks, "
            f"expected {args.tasks}"
        )

    # --- report --------------------------------------------------------------------------
    push_ratio = paired_ratio(push_pitstop, push_git)
    fetch_ratio = paired_ratio(fetch_pitstop, fetch_git)
    list_ratio = paired_ratio(list_pitstop, list_floor)
    git_ver = git(["--version"], workdir).decode().strip()
    print(
        f"Pitstop remote benchmark  ({git_ver}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs)"
    )
    print(
        f"repo: generated, {world.tracked_files:,} tracked files; change: "
        f"{len(world.changed)} files edited; everything on {args.where}; "
        f"setup {setup_seconds:.1f} s"
    )
    print(
        f"runs: {args.runs} per side, interleaved A,B,A,B, each from a restored state; "
        "medians, [min .. max]; a ratio is the median of the back-to-back pairs' ratios"
    )
    print()
    print(f"{'measure':<44}  {'median':>11}  {'range':>25}  {'ratio':>6}  target")
    print("-" * 108)
    print(row("push: Pitstop push (checkpoint + ledger)", push_pitstop))
    print(
        row(
            f"push: git push origin {BRANCH}",
            push_git,
            f"{push_ratio:.2f}x",
            f"<= {PUSH_TARGET}x  {verdict(push_ratio, PUSH_TARGET)}",
        )
    )
    print(row("fetch: Pitstop fetch (into store B)", fetch_pitstop))
    print(
        row(
            f"fetch: git fetch origin {BRANCH}",
            fetch_git,
            f"{fetch_ratio:.2f}x",
            f"<= {FETCH_TARGET}x  {verdict(fetch_ratio, FETCH_TARGET)}",
        )
    )
    print(row(f"list: Pitstop remote list, {args.tasks:,} tasks", list_pitstop))
    print(
        row(
            "list: git ls-remote + fetch of the ledgers",
            list_floor,
            f"{list_ratio:.2f}x",
            "information",
        )
    )
    print(row("list again, nothing new (information)", relist))
    print()
    report_signing_costs(args.facts)
    print()
    print("notes:")
    print(
        f"  - the branch's tree is identical to the checkpoint's worktree/ tree: "
        f"{world.equivalent_trees}"
    )
    print(f"  - first push of the new checkpoint (warm-up, untimed above): {ms(first_push)}")
    print("  - push: store A already pushed the task's first checkpoint (its repository holds")
    print("    the base commit at depth 1); Pitstop push builds the checkpoint's remote commit,")
    print("    merges and sends the ledger, moves both refs (--atomic). git push sends a commit.")
    print("  - fetch: store B already fetched the first checkpoint; Pitstop fetch reads the")
    print("    refs, fetches, unwraps the data key, imports the checkpoint, merges the ledger.")
    print(
        f"  - list: {refs_on_remote:,} refs under refs/pitstop/ on the remote; "
        f"{args.tasks - 1:,} of the {args.tasks:,} tasks"
    )
    print(
        f"    fabricated from the real task's ledger with git fast-import "
        f"({fabricate_seconds:.1f} s). Store B starts"
    )
    print("    knowing one task; the floor lists the same refs and fetches the same ledgers")
    print("    into a copy of store B's repository.")

    if args.profile:
        print()
        print("git processes (started and reaped inside each operation, all timed runs):")
        git_times.report("Pitstop push", args.runs, push_pitstop)
        git_times.report("git push", args.runs, push_git)
        git_times.report("Pitstop fetch", args.runs, fetch_pitstop)
        git_times.report("git fetch", args.runs, fetch_git)
        git_times.report(list_label, args.runs, list_pitstop)
        git_times.report("git ls-remote + fetch", args.runs, list_floor)
        git_times.report("Pitstop remote list again", args.runs, relist)
        # One more run of each under cProfile (the remote as each timed run found it).
        listed_remote = world.saved_path("remote-listed.git")
        subprocess.run(["cp", "-a", str(world.remote), str(listed_remote)], check=True)
        ops = Operations(world)
        profile_once("Pitstop push", ops.before_pitstop_push, ops.pitstop_push, args.profile_lines)
        profile_once(
            "Pitstop fetch", ops.before_pitstop_fetch, ops.pitstop_fetch, args.profile_lines
        )
        ops.close()
        restore(listed_remote, world.remote)
        listing = Listing(world)
        profile_once(list_label, listing.before_pitstop, listing.pitstop, args.profile_lines)
        listing.close()
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--files", type=int, default=None, help="files in the generated repository (default 5000)"
    )
    parser.add_argument(
        "--tasks",
        type=int,
        default=None,
        help="tasks on the remote for `remote list` (default 2000)",
    )
    parser.add_argument("--runs", type=int, default=None, help="timed runs per side (default 9)")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 300 files, 100 tasks, 3 runs"
    )
    parser.add_argument(
        "--profile", action="store_true", help="also run each Pitstop operation once under cProfile"
    )
    parser.add_argument(
        "--profile-lines", type=int, default=25, help="functions shown per profile (default 25)"
    )
    parser.add_argument(
        "--tmpfs",
        action="store_true",
        help="work in /dev/shm: no disk flushes, so process and CPU costs show",
    )
    parser.add_argument(
        "--facts", type=int, default=2000, help="ledger facts to sign and verify (default 2000)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.quick:
        args.files = args.files or 300
        args.tasks = args.tasks or 100
        args.runs = args.runs or 3
    args.files = args.files or 5000
    args.tasks = args.tasks or 2000
    args.runs = args.runs or 9
    if args.files < 50 or args.runs < 1 or args.tasks < 1:
        parser.error("--files must be at least 50, --runs and --tasks at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark in a temporary directory and print its table; always exits 0."""
    args = parse_args(argv)
    saved_environ = dict(os.environ)
    shm = Path("/dev/shm")
    on_tmpfs = args.tmpfs and shm.is_dir() and os.access(shm, os.W_OK)
    if args.tmpfs and not on_tmpfs:
        print("bench: no writable /dev/shm; running on the temp directory's disk")
    workdir = Path(tempfile.mkdtemp(prefix="pitstop-bench-remote-", dir=shm if on_tmpfs else None))
    args.where = "tmpfs (/dev/shm)" if on_tmpfs else "the temp directory's disk"
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
