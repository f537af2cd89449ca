"""Keeping a store repository packed as checkpoints add to it, so objects and packs stay bounded.

Store repositories run with `gc.auto=0` (only Pitstop's own gc may prune). A checkpoint writes
its snapshot's new objects as one small pack (`pack_writer.batched`; one file instead of one per
object, ~18 ms of a checkpoint that changes 30 files of ansible's 5,053), and a few objects
loose (its commit, git's own writes where it takes git's way). Left alone, small packs and
loose objects pile up (one store held 25,822 loose objects, 143 MiB, that pack into 12 MB:
issue 22). So after a checkpoint, when the repository holds more than `SMALL_PACKS` small packs
(at most `SMALL_PACK_OBJECTS` objects each) or its loose objects pass `LOOSE_BOUND` (estimated
as git's `gc --auto` does, from a few of the 256 object directories), they are rolled into one
pack with `git repack -a -d --keep-unreachable`, every larger pack named with `--keep-pack` and
left as it is: the new pack's deltas are found among the many checkpoints' versions of the same
files it holds (the store stays close to a full repack), and a big pack (the base tree's) is
not rewritten each time. Past `MAX_PACKS` packs, all are consolidated into one. A command or
hook answers first: it leaves the roll-up to a detached process (`pack_later`).

Nothing is pruned here: `-d` deletes only loose objects and packs whose objects are all in the
new pack, and `--keep-unreachable` keeps what no checkpoint references (only Pitstop's own gc
decides that). Whatever reads the store meanwhile finds a packed object where the loose one was
(`core.git.reader` falls back to the packs, `cat-file` looks again). One packing at a time per
repository (a lock the OS drops with its holder); a checkpoint that finds it taken, or a
packing that fails (a full disk), only leaves the objects as they were for the next checkpoint.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from core.errors import GitError
from core.git.run import run_git

LOOSE_BOUND = 2048
"""Most loose objects (estimated) a store repository keeps before a checkpoint packs them."""
MAX_PACKS = 16
"""Most packs a store repository keeps, after rolling up its small ones, before a packing
consolidates them all into one."""
SMALL_PACK_OBJECTS = 4096
"""A pack holding at most this many objects is a small one: a checkpoint's own (a few dozen to
a few hundred objects), a push's, or a roll-up of a few dozen checkpoints."""
SMALL_PACKS = 16
"""Most small packs a store repository keeps before a packing rolls them into one."""
SAMPLED = ("17", "5a", "a3", "e8")
"""The object directories loose objects are counted in (git's `gc --auto` counts "17" alone)."""
_LOCK_NAME = "pitstop-upkeep.lock"
_REPACK_CONFIG = {
    # Bitmaps serve serving clones; a store repository is read object by object.
    "repack.writeBitmaps": "false",
    # A packing runs beside an agent's work: one thread, and bounded memory for deltas (the
    # window, the cache of deltas found, the packs mapped while reading), so `pitstop gc`'s
    # full repack of a big store stays within a couple of hundred MB (git's defaults: a
    # thread per core, each with an unbounded window, a 256 MB delta cache, 8 GB of mappings).
    "pack.threads": "1",
    "pack.windowMemory": "64m",
    "pack.deltaCacheSize": "32m",
    "core.packedGitLimit": "128m",
    "core.packedGitWindowSize": "16m",
}


def loose_estimate(store_repo: Path) -> int:
    """About how many loose objects the repository holds (the `SAMPLED` directories' count,
    scaled to all 256)."""
    found = 0
    for directory in SAMPLED:
        try:
            found += sum(1 for n in os.listdir(store_repo / "objects" / directory) if len(n) == 38)
        except OSError:
            continue
    return found * 256 // len(SAMPLED)


def pack_count(store_repo: Path) -> int:
    """How many packs the repository holds."""
    try:
        return sum(1 for n in os.listdir(store_repo / "objects" / "pack") if n.endswith(".pack"))
    except OSError:
        return 0


def pack_sizes(store_repo: Path) -> dict[str, int]:
    """Each pack's file name and how many objects its index lists (read from the index's
    fan-out table); a pack whose index cannot be read counts as large (it is left alone)."""
    directory = store_repo / "objects" / "pack"
    try:
        names = [n for n in os.listdir(directory) if n.endswith(".pack")]
    except OSError:
        return {}
    sizes: dict[str, int] = {}
    for name in names:
        try:
            with open(directory / (name[: -len(".pack")] + ".idx"), "rb") as handle:
                head = handle.read(_IDX_FANOUT_END)
        except OSError:
            head = b""
        valid = len(head) == _IDX_FANOUT_END and head[:8] == b"\xfftOc\0\0\0\2"
        sizes[name] = int.from_bytes(head[-4:], "big") if valid else SMALL_PACK_OBJECTS + 1
    return sizes


_IDX_FANOUT_END = 8 + 256 * 4  # a version-2 index: magic, version, the fan-out table


def due(store_repo: Path, bound: int | None = None) -> bool:
    """Whether the repository holds more than `SMALL_PACKS` small packs or more than `bound`
    (`LOOSE_BOUND`) loose objects (a few directory listings and index headers)."""
    limit = LOOSE_BOUND if bound is None else bound
    small = [count for count in pack_sizes(store_repo).values() if count <= SMALL_PACK_OBJECTS]
    return len(small) > SMALL_PACKS or loose_estimate(store_repo) > limit


def after_checkpoint(store_repo: Path, *, later: bool) -> None:
    """Pack what is due after a checkpoint: here, or `later` (a command or a hook answers
    first, and a detached process packs beside it)."""
    if not later:
        pack_if_due(store_repo)
    elif due(store_repo):
        pack_later(store_repo)


def pack_later(store_repo: Path) -> None:
    """`pack_if_due` in a process of its own, detached (its own session, no terminal, no
    pipes): a hook or a command that found the repository due answers now instead of after
    the roll-up (~250 ms on ansible's store, every ~17 checkpoints). It takes the same lock,
    so it never runs beside another packing; if it cannot start, the next checkpoint packs."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[2])  # where `core` is, installed or not
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "core.git.upkeep", str(store_repo)],
            cwd=store_repo,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


def pack_if_due(store_repo: Path, bound: int | None = None) -> bool:
    """Roll the small packs and loose objects into one pack when there are more than
    `SMALL_PACKS` small packs or more than `bound` (`LOOSE_BOUND`) loose objects; True when it
    packed."""
    if not due(store_repo, bound):
        return False
    sizes = pack_sizes(store_repo)
    small = [name for name, count in sizes.items() if count <= SMALL_PACK_OBJECTS]
    try:
        fd = os.open(store_repo / _LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # another checkpoint packs this repository now
        env = repack_env()
        kept = [f"--keep-pack={name}" for name in sizes if name not in small]
        everything = ["repack", "-a", "-d", "-q", "--keep-unreachable"]
        with contextlib.suppress(GitError):
            run_git([*everything, *kept], git_dir=store_repo, env=env)
            # the larger packs left as they were, roll-ups among them, grow in number
            if pack_count(store_repo) > MAX_PACKS:
                run_git(everything, git_dir=store_repo, env=env)
            return True
        return False
    finally:
        os.close(fd)


def repack_env() -> dict[str, str]:
    """The environment every repack of a store repository runs with (bounded memory)."""
    return _config_env(_REPACK_CONFIG)


def _config_env(settings: dict[str, str]) -> dict[str, str]:
    """git configuration passed through the environment (`GIT_CONFIG_COUNT`), not `-c`."""
    env = {"GIT_CONFIG_COUNT": str(len(settings))}
    for index, (key, value) in enumerate(settings.items()):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


if __name__ == "__main__":  # `pack_later`'s process: nothing to say, whatever happens
    import sys

    with contextlib.suppress(Exception):
        pack_if_due(Path(sys.argv[1]))
