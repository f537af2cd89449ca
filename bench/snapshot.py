"""Benchmark Pitstop's snapshot, checkpoint and checkout against the git commands they replace.

Pitstop's promise (issue 2) is that an exact checkpoint costs about what `git stash create`
costs, that it stores only what changed, and that restoring one costs about what
`git worktree add` costs. This script measures all three in one run on one machine:

- snapshot:  `core.snapshot.take_snapshot` in-process  vs  `git stash create`   (target <= 1.3x)
- storage:   `Checkpoint.bytes_added` for ~20 edited files  vs  their zlib size (target <= 2x)
- checkout:  `Engine.checkout(ref, into)`               vs  `git worktree add`  (target <= 1.1x)
- secrets:   the scan every snapshot makes of its changed and untracked files (issue 16), alone
             and beside `git stash create`; then a snapshot with secrets planted (left out,
             sealed)                                  vs  `git stash create`   (target <= 3x)

Runs are interleaved (A, B, A, B, ...) and medians compared. Nothing here asserts a time.

    .venv/bin/python bench/snapshot.py                 # 5,000-file repo, 7 runs
    .venv/bin/python bench/snapshot.py --quick         # 300 files, 3 runs (smoke test)
    .venv/bin/python bench/snapshot.py --repo ~/src/x  # a copy of a real repository
    .venv/bin/python bench/snapshot.py --profile       # plus per-git-command totals
"""

from __future__ import annotations

import argparse
import base64
import collections
import hashlib
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SEED = 20240602
CHANGED_FILE_COUNT = 20
STAGED_FILE_COUNT = 2
BINARY_FILE_COUNT = 12
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Bench Author",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench Author",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


# --- isolation -----------------------------------------------------------------------------


def isolate_environment(workdir: Path) -> None:
    """Point Pitstop and git at throwaway places: no user setting skews or receives anything."""
    os.environ["PITSTOP_HOME"] = str(workdir / "store")
    os.environ["PITSTOP_CONFIG_DIR"] = str(workdir / "config")
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    # Checkpoint content is encrypted at rest: a throwaway master key for the bench's store.
    os.environ["PITSTOP_KEY"] = base64.b64encode(secrets.token_bytes(32)).decode()
    # an empty file of the bench's own, never /dev/null (a `git config --global` run as root
    # would replace /dev/null with a file)
    gitconfig = workdir / "gitconfig"
    gitconfig.touch()
    os.environ["GIT_CONFIG_GLOBAL"] = str(gitconfig)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    os.environ["GIT_TERMINAL_PROMPT"] = "0"
    os.environ.update(GIT_IDENTITY)
    from core.git.run import REPO_LOCATION_VARS

    for name in REPO_LOCATION_VARS:
        os.environ.pop(name, None)


def git(
    args: Sequence[str], cwd: Path, *, input: bytes | None = None, env: dict[str, str] | None = None
) -> bytes:
    """Run a setup or baseline git command; failures stop the benchmark with git's message."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(
            f"bench: git {' '.join(args)} failed in {cwd}: "
            f"{proc.stderr.decode(errors='replace').strip()}"
        )
    return proc.stdout


# --- a realistic repository ----------------------------------------------------------------

_WORD_LIST = (
    "account adapter alert api archive audit auth backend batch bill cache client cluster "
    "codec config context cursor daemon data debug device digest event export feature fetch "
    "filter format graph handler hook image index job kernel layout ledger limit loader log "
    "mapper metric model module network node order packet parser path payment plugin policy "
    "pool query queue record render report request resolver route runner schema scope search "
    "session shard signal sink source state storage stream sync task tenant token trace "
    "transform user util validator vault view worker"
)
WORDS = _WORD_LIST.split()

TEMPLATES = (
    "def {a}_{b}({c}, {d}=None):",
    '    """Return the {a} {b} for the given {c}."""',
    '    {a}_{b} = {c}.get("{d}", {n})',
    "    if {a} is None or {b} > {n}:",
    '        raise ValueError(f"invalid {a}: {{{b}!r}}")',
    "    for {a} in {b}_{c}s:",
    "        {a}.{b}_{c}({d}, timeout={n})",
    '    return {{"{a}": {b}, "{c}": {d}_{a}}}',
    "class {A}{B}({C}Base):",
    "    {a}_{b}: int = {n}",
    "# {a} {b} must stay in sync with the {c} {d} ({n} max)",
    "import {a}.{b} as {c}_{d}",
    "from {a}.{b} import {C}{D}, {a}_{c}",
    '        logger.debug("{a} %s {b} %d", {c}, len({d}))',
    "    {a} = [{b} for {b} in {c} if {b}.{d} != {n}]",
    "export function {a}{B}({c}: {C}, {d}: number): {D} {{",
    "  const {a}{B} = await {c}.{d}({n});",
    '  if (!{a}) {{ throw new Error("{b} {c} missing"); }}',
    "}}",
    "static int {a}_{b}(struct {c} *{d}, size_t n) {{ return {d}->{a} + {n}; }}",
    "",
    "",
)


class TextFactory:
    """Source-like lines drawn from a fixed pool, so files compress like real code."""

    def __init__(self, rng: random.Random, pool_size: int = 6000) -> None:
        self.rng = rng
        self.pool = [self.fresh_line() for _ in range(pool_size)]

    def fresh_line(self) -> str:
        w = [self.rng.choice(WORDS) for _ in range(4)]
        return self.rng.choice(TEMPLATES).format(
            a=w[0],
            b=w[1],
            c=w[2],
            d=w[3],
            A=w[0].title(),
            B=w[1].title(),
            C=w[2].title(),
            D=w[3].title(),
            n=self.rng.randint(0, 4096),
        )

    def text(self, approx_bytes: int, header: str) -> str:
        lines = [header]
        size = len(header)
        while size < approx_bytes:
            line = self.rng.choice(self.pool)
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines) + "\n"


EXTENSIONS = {
    "src": (".py", ".py", ".py", ".pyi", ".c", ".h"),
    "lib": (".py", ".go", ".rs"),
    "web": (".ts", ".tsx", ".ts", ".css", ".json"),
    "tests": (".py",),
    "docs": (".md", ".rst"),
    "tools": (".py", ".sh"),
}


def build_repo(repo: Path, file_count: int) -> None:
    """Create, commit and pack a repository of `file_count` files in nested directories."""
    rng = random.Random(SEED)
    factory = TextFactory(rng)
    repo.mkdir(parents=True)
    git(["init", "-q", "-b", "main"], repo)
    directories: list[str] = []
    seen: set[str] = set()
    while len(directories) < max(file_count // 18, 4):
        area = rng.choice(tuple(EXTENSIONS))
        depth = rng.choice((1, 2, 2, 3, 3, 4))
        parts = [area, *(rng.choice(WORDS) for _ in range(depth))]
        path = "/".join(parts)
        if path not in seen:
            seen.add(path)
            directories.append(path)
    weights = [1 / (rank + 1) ** 0.6 for rank in range(len(directories))]
    text_count = file_count - BINARY_FILE_COUNT
    names: set[str] = set()
    for number in range(text_count):
        directory = rng.choices(directories, weights)[0]
        ext = rng.choice(EXTENSIONS[directory.split("/", 1)[0]])
        stem = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{number}"
        if directory.startswith("tests"):
            stem = "test_" + stem
        rel = f"{directory}/{stem}{ext}"
        names.add(rel)
        size = int(min(max(rng.lognormvariate(8.1, 0.9), 120), 96_000))  # median ~3.3 KB
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(factory.text(size, f"# {rel} (generated for the Pitstop benchmark)"))
    for number in range(BINARY_FILE_COUNT):
        rel = f"assets/img/{rng.choice(WORDS)}_{number}.{rng.choice(('png', 'woff2', 'ico'))}"
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(rng.randbytes(rng.randint(4_000, 300_000)))
    (repo / ".gitignore").write_text("__pycache__/\n*.pyc\nbuild/\n.venv/\n")
    (repo / "README.md").write_text("# bench repo\n\nGenerated by bench/snapshot.py.\n")
    (repo / "tools").mkdir(exist_ok=True)
    script = repo / "tools" / "run.sh"
    script.write_text('#!/bin/sh\nexec python -m src "$@"\n')
    script.chmod(0o755)
    # Ignored files a real checkout has lying around (listed, never stored, by Pitstop).
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_bytes(rng.randbytes(20_000))
    pycache = repo / "src" / "__pycache__"
    pycache.mkdir(parents=True, exist_ok=True)
    (pycache / "mod.cpython-311.pyc").write_bytes(rng.randbytes(3_000))
    # Let every mtime fall strictly before the index's, so no entry is "racily clean" and
    # neither side has to re-hash unchanged files on every run.
    time.sleep(1.1)
    git(["add", "-A"], repo)
    git(["commit", "-q", "-m", "initial import"], repo)
    git(["repack", "-adq"], repo)  # a cloned repository is packed, not 5,000 loose objects
    git(["prune-packed"], repo)


def copy_repo(source: Path, target: Path) -> None:
    """Copy a work tree with its `.git` and refresh the copy's index (inodes and ctimes moved)."""
    if not (source / ".git").is_dir():
        raise SystemExit(
            f"bench: {source} must be a work tree with a .git directory "
            "(linked worktrees and submodules cannot be copied)"
        )
    shutil.copytree(source, target, symlinks=True)
    time.sleep(1.1)
    subprocess.run(
        ["git", "update-index", "-q", "--refresh"], cwd=target, capture_output=True, check=False
    )


def pick_changed_files(repo: Path, count: int) -> list[str]:
    """~`count` tracked text files, a few per directory, as an agent editing one area would."""
    listing = git(["ls-files", "-z", "-s"], repo).split(b"\0")
    by_dir: dict[str, list[str]] = collections.defaultdict(list)
    for entry in listing:
        if not entry.startswith(b"100644"):
            continue
        path = entry.split(b"\t", 1)[1].decode("utf-8", errors="surrogateescape")
        full = repo / path
        try:
            size = full.lstat().st_size
        except FileNotFoundError:
            continue
        if not 300 <= size <= 200_000 or not full.is_file():
            continue
        with full.open("rb") as handle:
            if b"\0" in handle.read(8192):
                continue
        by_dir[path.rsplit("/", 1)[0] if "/" in path else ""].append(path)
    rng = random.Random(SEED + 1)
    directories = sorted(d for d, files in by_dir.items() if len(files) >= 4)
    rng.shuffle(directories)
    chosen: list[str] = []
    for directory in directories:
        chosen.extend(sorted(by_dir[directory])[:4])
        if len(chosen) >= count:
            break
    if len(chosen) < count:  # a small repo: take whatever text files remain
        rest = sorted(p for files in by_dir.values() for p in files if p not in chosen)
        chosen.extend(rest[: count - len(chosen)])
    return chosen[:count]


def edit_files(repo: Path, paths: Sequence[str], round_number: int) -> None:
    """Rewrite a few lines of each file and append a new function, as an agent's edit would."""
    rng = random.Random(SEED + 100 + round_number)
    factory = TextFactory(rng, pool_size=400)
    for path in paths:
        full = repo / path
        lines = full.read_text(errors="surrogateescape").split("\n")
        for _ in range(max(1, len(lines) // 25)):
            lines[rng.randrange(len(lines))] = factory.fresh_line()
        lines += [f"def edited_in_round_{round_number}(value):"]
        lines += ["    " + factory.fresh_line() for _ in range(12)]
        full.write_text("\n".join(lines) + "\n", errors="surrogateescape")


# Shapes the redactor catches (issue 16's snapshot tests use the same), planted in the last phase.
PLANTED_SECRETS = {
    "config/deploy.yaml": "github:\n  token: ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\n",
    "notes-aws.txt": "aws_access_key_id = AKIA" + "QWERTYUIOPASDFGH\n"
    "aws_secret_access_key = Zq7Lm3Rt5Wx2Np4Kv6Hy8Jb1Fc9Gd0Sa3Ue5Ti7O\n",
}
PLANTED_IN_TRACKED = (
    "\nSLACK_TOKEN = 'xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx'\n"
)
PLANTED_TRACKED_COUNT = 3


def plant_secrets(repo: Path, changed: Sequence[str]) -> None:
    """Untracked files holding secrets (left out) and tracked edits holding one (sealed)."""
    for rel, text in PLANTED_SECRETS.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    for rel in changed[-PLANTED_TRACKED_COUNT:]:
        with (repo / rel).open("a") as handle:
            handle.write(PLANTED_IN_TRACKED)


def bench_sealing() -> Any:
    """A throwaway task key for snapshots taken outside a task (`take_snapshot` alone)."""
    from core import snapshot
    from core.security import crypto

    key = crypto.generate_key()

    def seal(item: str, data: bytes) -> bytes:
        return crypto.seal(key, data, crypto.associated_data("bench-store", "bench", item))

    return snapshot.Sealing(seal, crypto.key_id(key))


def judged_paths(repo: Path) -> list[str]:
    """What a snapshot reads and judges for secrets: changed tracked and untracked files."""
    out = git(["status", "--porcelain", "-z", "--untracked-files=all"], repo)
    paths = []
    for record in out.split(b"\0"):
        if len(record) > 3 and record[1:2] != b"D":
            path = record[3:].decode("utf-8", errors="surrogateescape")
            if (repo / path).is_file():
                paths.append(path)
    return paths


def scan_files(repo: Path, paths: Sequence[str]) -> int:
    """Read and judge `paths` as a snapshot does; return how many hold a secret."""
    from core.snapshot import first_secret

    return sum(1 for rel in paths if first_secret((repo / rel).read_bytes()) is not None)


def add_untracked(repo: Path) -> list[str]:
    """A few new files an agent would create and not yet `git add`."""
    created = {
        "src/new_feature/__init__.py": '"""A new feature package."""\n',
        "src/new_feature/engine.py": TextFactory(random.Random(SEED + 7)).text(5_000, "# new"),
        "docs/NOTES-agent.md": "# Working notes\n\n- try the cache first\n- then the parser\n",
        "tests/test_new_feature.py": "def test_new_feature():\n    assert True\n",
    }
    for rel, text in created.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return list(created)


@dataclass
class Fixture:
    """The repository Pitstop snapshots, a byte-identical copy for the git baseline, and facts."""

    repo: Path
    baseline_repo: Path
    base_commit: str
    tracked_files: int
    changed: list[str]
    untracked: list[str]


def prepare(args: argparse.Namespace, workdir: Path) -> Fixture:
    """Build or copy the repository, apply the edits, and copy it once more for the baseline."""
    repo = workdir / "repo"
    if args.repo:
        source = Path(args.repo).expanduser().resolve()
        copy_repo(source, repo)
    else:
        build_repo(repo, args.files)
    changed = pick_changed_files(repo, CHANGED_FILE_COUNT)
    edit_files(repo, changed, round_number=1)
    untracked = add_untracked(repo)
    time.sleep(1.1)  # the staged files' mtimes must precede the index write (not racy)
    git(["add", "--", *changed[:STAGED_FILE_COUNT]], repo)
    baseline_repo = workdir / "baseline-repo"
    copy_repo(repo, baseline_repo)
    base_commit = git(["rev-parse", "HEAD"], repo).decode().strip()
    tracked = len([p for p in git(["ls-files", "-z"], repo).split(b"\0") if p])
    return Fixture(repo, baseline_repo, base_commit, tracked, changed, untracked)


# --- measuring -----------------------------------------------------------------------------


@dataclass
class GitProfile:
    """Per-phase totals of every git subprocess Pitstop ran, by subcommand."""

    phase: str | None = None
    totals: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: collections.defaultdict(lambda: collections.defaultdict(list))
    )

    def discard(self, phase: str) -> None:
        self.totals.pop(phase, None)

    @contextmanager
    def during(self, phase: str | None) -> Iterator[None]:
        previous, self.phase = self.phase, phase
        try:
            yield
        finally:
            self.phase = previous


def install_git_profiler(profile: GitProfile) -> None:
    """Book each git call's wall time to the current phase, by subcommand."""
    import core.engine.checkpoint
    import core.snapshot  # noqa: F401
    from bench.git_timing import wrap_run_git

    def book(args: Sequence[str], seconds: float) -> None:
        if profile.phase is not None:
            words = [a for a in args if not a.startswith("-") and "=" not in a]
            name = " ".join(words[:1]) or args[0]
            if name in ("cat-file", "diff-tree", "ls-tree", "rev-parse", "rev-list"):
                name += " " + " ".join(a for a in args[1:3] if a.startswith("-"))
            profile.totals[profile.phase][name.strip()].append(seconds)

    wrap_run_git(book)


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def interleave(
    runs: int,
    a: Callable[[], Any],
    b: Callable[[], Any],
    after_a: Callable[[], None] | None = None,
    after_b: Callable[[], None] | None = None,
) -> tuple[list[float], list[float]]:
    """Time `a` and `b` alternately `runs` times each, cleaning up (untimed) after each."""
    times_a: list[float] = []
    times_b: list[float] = []
    for _ in range(runs):
        elapsed, _result = timed(a)
        times_a.append(elapsed)
        if after_a:
            after_a()
        elapsed, _result = timed(b)
        times_b.append(elapsed)
        if after_b:
            after_b()
    return times_a, times_b


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def kib(count: int) -> str:
    return f"{count / 1024:,.1f} KiB"


def verdict(value: float, target: float) -> str:
    return "meets target" if value <= target else "MISSES target"


def object_sizes(store_repo: Path, oids: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Type and on-disk size of objects in the store's repository."""
    if not oids:
        return {}
    out = git(
        ["cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize:disk)"],
        store_repo,
        input=("\n".join(oids) + "\n").encode(),
        env={"GIT_DIR": str(store_repo)},
    )
    sizes = {}
    for line in out.decode().splitlines():
        oid, kind, size = line.split()
        sizes[oid] = (kind, int(size))
    return sizes


def new_objects_between(store_repo: Path, old_tree: str, new_tree: str) -> list[str]:
    """Blobs and trees `new_tree` has that `old_tree` does not (what a checkpoint must add)."""
    if old_tree == new_tree:
        return []
    raw = git(
        ["diff-tree", "-r", "-t", "-z", old_tree, new_tree],
        store_repo,
        env={"GIT_DIR": str(store_repo)},
    )
    oids = [new_tree]
    fields = raw.split(b"\0")
    for index in range(0, len(fields) - 1, 2):
        meta = fields[index].decode()
        if meta.startswith(":"):
            new_oid = meta.split(" ")[3]
            if new_oid != "0" * 40:
                oids.append(new_oid)
    return list(dict.fromkeys(oids))


def checkpoint_metadata_objects(store_repo: Path, commit: str) -> list[str]:
    """The commit, its root tree and the header and manifest blobs of one checkpoint."""
    env = {"GIT_DIR": str(store_repo)}
    root = git(["rev-parse", f"{commit}^{{tree}}"], store_repo, env=env).decode().strip()
    entries = git(["ls-tree", commit], store_repo, env=env).decode().splitlines()
    blobs = [
        line.split()[2]
        for line in entries
        if line.split("\t")[1] in ("pitstop.json", "manifest.enc")
    ]
    return [commit, root, *blobs]


def assert_no_planted_secret(store: Path) -> None:
    """Stop the benchmark if a planted secret reached the store in clear (files or objects)."""
    planted = [b"A1b2C3d4E5f6G7h8I9j0", b"Zq7Lm3Rt5Wx2Np4Kv6Hy8", b"1234567890123-AbCdEf"]
    for root, _dirs, files in os.walk(store):
        for name in files:
            data = Path(root, name).read_bytes()
            if any(marker in data for marker in planted):
                raise SystemExit(f"bench: a planted secret reached {Path(root, name)} in clear")
    for repo in (store / "repos").glob("*.git"):
        env = {"GIT_DIR": str(repo)}
        objects = git(["cat-file", "--batch-all-objects", "--batch"], repo, env=env)
        if any(marker in objects for marker in planted):
            raise SystemExit(f"bench: a planted secret reached an object of {repo} in clear")


def checkout_roots(workdir: Path, no_tmpfs: bool) -> list[tuple[str, Path]]:
    """Where checkouts are written: the work directory's disk, and tmpfs when available."""
    disk = workdir / "checkouts"
    disk.mkdir()
    roots = [("disk", disk)]
    shm = Path("/dev/shm")
    if not no_tmpfs and shm.is_dir() and os.access(shm, os.W_OK):
        roots.append(("tmpfs", Path(tempfile.mkdtemp(prefix="pitstop-bench-", dir=shm))))
    return roots


def time_checkouts(
    engine: Any,
    ref: str,
    baseline_repo: Path,
    base_commit: str,
    checkouts: Path,
    runs: int,
    profile: GitProfile,
    label: str,
) -> tuple[list[float], list[float]]:
    """Interleave `Engine.checkout` with `git worktree add`, removing each result untimed."""
    counter = iter(range(10_000))
    targets: dict[str, Path] = {}

    def pitstop_checkout() -> int:
        targets["pitstop"] = checkouts / f"pitstop-{next(counter)}"
        with profile.during(f"checkout ({label})"):
            return int(engine.checkout(ref, targets["pitstop"]))

    def worktree_add() -> bytes:
        targets["git"] = checkouts / f"worktree-{next(counter)}"
        return git(
            ["worktree", "add", "-q", "--detach", str(targets["git"]), base_commit], baseline_repo
        )

    def remove_pitstop() -> None:
        shutil.rmtree(targets["pitstop"])
        os.sync()  # flush now, so no run pays for the previous run's writeback

    def remove_worktree() -> None:
        git(["worktree", "remove", "--force", str(targets["git"])], baseline_repo)
        os.sync()

    pitstop_checkout()  # warm-up, untimed and left out of the profile
    profile.discard(f"checkout ({label})")
    remove_pitstop()
    worktree_add()
    remove_worktree()
    return interleave(runs, pitstop_checkout, worktree_add, remove_pitstop, remove_worktree)


# --- the benchmark -------------------------------------------------------------------------


def run(args: argparse.Namespace, workdir: Path) -> int:
    isolate_environment(workdir)
    from core import snapshot
    from core.engine import CheckpointRequest, Engine

    profile = GitProfile()
    if args.profile:
        install_git_profiler(profile)

    started = time.perf_counter()
    fixture = prepare(args, workdir)
    setup_seconds = time.perf_counter() - started
    repo, baseline_repo = fixture.repo, fixture.baseline_repo

    engine = Engine(os.environ["PITSTOP_HOME"])
    source = snapshot.resolve_source_repo(repo)
    store_repo = snapshot.ensure_store_repo(engine.paths.repos, source)
    limits = snapshot.SnapshotLimits()
    scratch = engine.paths.tmp

    sealing = bench_sealing()

    def pitstop_snapshot() -> snapshot.Snapshot:
        return snapshot.take_snapshot(source, store_repo, scratch, limits, None, sealing=sealing)

    def stash_create() -> bytes:
        return git(["stash", "create"], baseline_repo)

    def git_state(path: Path) -> str:
        """A digest of the user-visible parts of `.git` (index, HEAD, refs, object listing)."""
        digest = hashlib.sha256()
        for rel in ("index", "HEAD", "packed-refs"):
            if (path / ".git" / rel).exists():
                digest.update((path / ".git" / rel).read_bytes())
        for root, _dirs, files in sorted(os.walk(path / ".git" / "objects")):
            digest.update(root.encode() + repr(sorted(files)).encode())
        for root, _dirs, files in sorted(os.walk(path / ".git" / "refs")):
            digest.update(root.encode() + repr(sorted(files)).encode())
        return digest.hexdigest()

    repo_state_before = git_state(repo)
    baseline_index_before = (baseline_repo / ".git" / "index").read_bytes()

    # 1. First-time costs: the base commit enters the store (depth 1) once per source repository.
    with profile.during("snapshot (first, incl. depth-1 base fetch)"):
        first_seconds, first_snap = timed(pitstop_snapshot)
    first_stash_seconds, _ = timed(stash_create)

    # 2. Steady state, interleaved.
    os.sync()  # setup wrote two copies of the repository; keep their writeback out of the runs
    with profile.during("snapshot"):
        snap_times, stash_times = interleave(args.runs, pitstop_snapshot, stash_create)
    snap_median, stash_median = statistics.median(snap_times), statistics.median(stash_times)
    spawn_times = [timed(lambda: git(["--version"], repo))[0] for _ in range(max(args.runs, 9))]
    repo_unchanged = git_state(repo) == repo_state_before
    baseline_index_unchanged = (
        baseline_repo / ".git" / "index"
    ).read_bytes() == baseline_index_before

    # 3. Full checkpoints end to end (snapshot + manifest + commit + verify + SQLite).
    task = engine.start_task(repo=repo, objective="benchmark checkpoints", task_id="bench")
    with profile.during("checkpoint (first of the task)"):
        first_checkpoint_seconds, _ = timed(
            lambda: engine.checkpoint(task.id, CheckpointRequest(force=True))
        )
    checkpoint_times = []
    with profile.during("checkpoint"):
        for _ in range(args.runs):
            elapsed, _ = timed(lambda: engine.checkpoint(task.id, CheckpointRequest(force=True)))
            checkpoint_times.append(elapsed)
    previous = engine.get_checkpoint(f"{task.id}@latest")

    # 4. Bytes: edit the same files again, checkpoint, compare with their compressed size.
    time.sleep(1.1)
    edit_files(repo, fixture.changed, round_number=2)
    edited = engine.checkpoint(task.id, CheckpointRequest(force=True)).checkpoint
    assert edited is not None and previous.worktree_tree and edited.worktree_tree
    contents = [(repo / p).read_bytes() for p in fixture.changed]
    compressed = sum(len(zlib.compress(data)) for data in contents)
    raw_bytes = sum(len(data) for data in contents)
    snapshot_objects = new_objects_between(store_repo, previous.worktree_tree, edited.worktree_tree)
    if previous.index_tree != edited.index_tree and previous.index_tree and edited.index_tree:
        snapshot_objects += new_objects_between(store_repo, previous.index_tree, edited.index_tree)
    sizes = object_sizes(store_repo, snapshot_objects)
    blob_bytes = sum(size for kind, size in sizes.values() if kind == "blob")
    tree_bytes = sum(size for kind, size in sizes.values() if kind == "tree")
    tree_count = sum(1 for kind, _size in sizes.values() if kind == "tree")
    meta_sizes = object_sizes(
        store_repo, checkpoint_metadata_objects(store_repo, edited.commit or "")
    )
    edited_meta_bytes = sum(size for _kind, size in meta_sizes.values())

    unchanged = engine.checkpoint(task.id, CheckpointRequest(force=True)).checkpoint
    assert unchanged is not None
    unchanged_meta = object_sizes(
        store_repo, checkpoint_metadata_objects(store_repo, unchanged.commit or "")
    )
    unchanged_meta_bytes = sum(size for _kind, size in unchanged_meta.values())

    # 5. Checkout: materialise the newest checkpoint vs `git worktree add` of the base commit,
    #    on the work directory's disk and, where there is one, on tmpfs, where writing files is
    #    nearly free and any fixed cost on top shows.
    checkout_results: list[tuple[str, list[float], list[float]]] = []
    for label, checkouts in checkout_roots(workdir, args.no_tmpfs):
        pitstop_times, git_times = time_checkouts(
            engine,
            unchanged.ref,
            baseline_repo,
            fixture.base_commit,
            checkouts,
            args.runs,
            profile,
            label,
        )
        checkout_results.append((label, pitstop_times, git_times))
        shutil.rmtree(checkouts, ignore_errors=True)
    git(["worktree", "prune"], baseline_repo)

    # 6. Secrets (issue 16): the scan of what a snapshot judges, alone and beside stash create;
    #    then secrets planted (untracked files left out, tracked edits sealed) in both copies.
    judged = judged_paths(repo)
    scan_files(repo, judged)  # warm-up: the redaction rules compile on first use
    with profile.during(None):
        scan_times, scan_stash_times = interleave(
            args.runs, lambda: scan_files(repo, judged), stash_create
        )
    judged_bytes = sum((repo / rel).stat().st_size for rel in judged)
    time.sleep(1.1)
    for copy in (repo, baseline_repo):
        plant_secrets(copy, fixture.changed)
    time.sleep(1.1)
    secret_snap = pitstop_snapshot()
    with profile.during("snapshot (secrets planted)"):
        secret_times, secret_stash_times = interleave(args.runs, pitstop_snapshot, stash_create)
    secret_checkpoint = engine.checkpoint(task.id, CheckpointRequest(force=True)).checkpoint
    assert secret_checkpoint is not None and secret_checkpoint.manifest is not None
    assert_no_planted_secret(workdir / "store")
    engine.close()

    # --- report --------------------------------------------------------------------------
    snap_ratio = snap_median / stash_median
    bytes_ratio = (edited.bytes_added or 0) / compressed
    git_ver = git(["--version"], repo).decode().strip()
    rows: list[tuple[str, list[float], str, str]] = [
        ("snapshot: Pitstop take_snapshot", snap_times, "", ""),
        (
            "snapshot: git stash create",
            stash_times,
            f"{snap_ratio:.2f}x",
            f"<= 1.3x  {verdict(snap_ratio, 1.3)}",
        ),
    ]
    for label, pitstop_times, git_times in checkout_results:
        checkout_ratio = statistics.median(pitstop_times) / statistics.median(git_times)
        rows += [
            (f"checkout ({label}): Pitstop checkout --into", pitstop_times, "", ""),
            (
                f"checkout ({label}): git worktree add",
                git_times,
                f"{checkout_ratio:.2f}x",
                f"<= 1.1x  {verdict(checkout_ratio, 1.1)}",
            ),
        ]
    rows.append(("checkpoint end to end (info)", checkpoint_times, "", ""))
    scan_ratio = statistics.median(scan_times) / statistics.median(scan_stash_times)
    secret_ratio = statistics.median(secret_times) / statistics.median(secret_stash_times)
    rows += [
        ("secrets: scan of judged files alone", scan_times, "", ""),
        ("secrets: git stash create", scan_stash_times, f"{scan_ratio:.2f}x", "(added cost)"),
        ("secrets: take_snapshot, secrets planted", secret_times, "", ""),
        (
            "secrets: git stash create",
            secret_stash_times,
            f"{secret_ratio:.2f}x",
            f"<= 3x  {verdict(secret_ratio, 3.0)}",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(
        f"Pitstop snapshot benchmark  ({git_ver}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs)"
    )
    print(
        f"repo: {'copy of ' + args.repo if args.repo else 'generated'}, "
        f"{fixture.tracked_files:,} tracked files, {len(fixture.changed)} modified "
        f"({STAGED_FILE_COUNT} of them staged), {len(fixture.untracked)} untracked; "
        f"setup {setup_seconds:.1f} s"
    )
    print(f"runs: {args.runs} per side, interleaved A,B,A,B; medians, [min .. max]")
    print()
    print(f"{'measure':<{width}}  {'median':>11}  {'range':>25}  {'ratio':>6}  target")
    print("-" * (width + 64))
    for label, samples, ratio, target in rows:
        spread = f"[{ms(min(samples))} .. {ms(max(samples))}]"
        print(
            f"{label:<{width}}  {ms(statistics.median(samples)):>11}  {spread:>25}  "
            f"{ratio:>6}  {target}".rstrip()
        )
    print()
    print("first-time costs (once per source repository / task):")
    print(
        f"  first snapshot incl. depth-1 base fetch into the store: {ms(first_seconds)}, "
        f"{kib(first_snap.bytes_added)} added"
    )
    print(f"  first git stash create (cold):                          {ms(first_stash_seconds)}")
    print(
        f"  first checkpoint of the task (end to end):              {ms(first_checkpoint_seconds)}"
    )
    print(
        f"  one git process spawn (`git --version`, median):        "
        f"{ms(statistics.median(spawn_times))}"
    )
    print()
    print(f"storage for a checkpoint after editing the same {len(fixture.changed)} files again:")
    print(f"  changed files: {kib(raw_bytes)} raw, {kib(compressed)} zlib-compressed")
    print(
        f"  Checkpoint.bytes_added: {kib(edited.bytes_added or 0)}  = "
        f"{bytes_ratio:.2f}x the compressed files  (target <= 2x: "
        f"{verdict(bytes_ratio, 2.0)})"
    )
    print(
        f"    of which file blobs {kib(blob_bytes)}, {tree_count} trees {kib(tree_bytes)}, "
        f"commit + root tree + pitstop.json + manifest.enc (sealed) {kib(edited_meta_bytes)}"
    )
    other = (edited.bytes_added or 0) - blob_bytes - tree_bytes - edited_meta_bytes
    if other:
        print(f"    unaccounted: {other:,} bytes")
    print(
        f"  forced checkpoint with nothing changed: {unchanged.bytes_added or 0:,} bytes added; "
        f"its commit + root tree + header + manifest are {unchanged_meta_bytes:,} bytes, so "
        f"unchanged files cost {(unchanged.bytes_added or 0) - unchanged_meta_bytes:,} bytes"
    )
    print()
    print("secrets in snapshots (issue 16):")
    print(
        f"  every snapshot judges {len(judged)} changed/untracked files "
        f"({kib(judged_bytes)}) with the redactor's rules: {ms(statistics.median(scan_times))}, "
        f"{scan_ratio:.2f}x git stash create "
        f"({judged_bytes / 1e6 / max(statistics.median(scan_times), 1e-9):,.0f} MB/s)"
    )
    print(
        f"  with {len(PLANTED_SECRETS)} untracked files and {PLANTED_TRACKED_COUNT} tracked "
        f"edits holding a secret: {len(secret_snap.left_out) - len(first_snap.left_out)} more "
        f"left out, {len(secret_snap.sealed)} sealed; checkpoint "
        f"{secret_checkpoint.ref} lists {len(secret_checkpoint.manifest['snapshot']['sealed'])} "
        "sealed; no planted secret anywhere in the store (raw files and objects)"
    )
    print()
    print("notes:")
    print("  - Pitstop snapshots the repository itself; git stash create runs on a byte-identical")
    print("    copy (same files, same index, same packed history) so neither writes into the")
    print("    other's .git. stash create records no untracked files; Pitstop records them and")
    print("    lists ignored ones. take_snapshot is timed without previous trees, i.e. diffing")
    print("    against the base commit (a task's first checkpoint on a known repository).")
    print(
        f"  - user repository .git unchanged by every Pitstop snapshot: {repo_unchanged}; "
        f"baseline copy's index unchanged by stash create: {baseline_index_unchanged}"
    )
    print("  - checkout materialises the newest checkpoint (tracked + untracked files) into a new")
    print("    directory; git worktree add checks out the base commit from the baseline copy.")
    print("    Both targets are removed (and the disk synced) after each run, outside the timing.")

    if args.profile:
        print()
        print("git subprocesses run by core.snapshot, per run (wall time incl. spawn):")
        for phase, commands in profile.totals.items():
            per = 1 if "first" in phase else args.runs
            total = sum(sum(v) for v in commands.values()) / per
            calls = sum(len(v) for v in commands.values()) / per
            print(f"  {phase}: {calls:.0f} calls, {ms(total)}")
            for name, samples in sorted(commands.items(), key=lambda kv: -sum(kv[1])):
                print(f"      {name:<34} {len(samples) / per:>4.1f}x  {ms(sum(samples) / per):>10}")
        python_side = (
            sum(snap_times) - sum(sum(v) for v in profile.totals["snapshot"].values())
        ) / args.runs
        print(
            f"  snapshot time outside git subprocesses (mean; Python, stats, index copy): "
            f"{ms(python_side)}"
        )
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--files", type=int, default=None, help="files in the generated repository (default 5000)"
    )
    parser.add_argument("--runs", type=int, default=None, help="timed runs per side (default 7)")
    parser.add_argument("--repo", help="benchmark a copy of this work tree instead")
    parser.add_argument("--quick", action="store_true", help="smoke run: 300 files, 3 runs")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print time per git subcommand run by core.snapshot",
    )
    parser.add_argument(
        "--no-tmpfs", action="store_true", help="time checkouts on the work directory's disk only"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.quick:
        args.files = args.files or 300
        args.runs = args.runs or 3
    args.files = args.files or 5000
    args.runs = args.runs or 7
    if args.files < 50 or args.runs < 1:
        parser.error("--files must be at least 50 and --runs at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark in a temporary directory and print its table; always exits 0."""
    args = parse_args(argv)
    saved_environ = dict(os.environ)
    workdir = Path(tempfile.mkdtemp(prefix="pitstop-bench-"))
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
