"""Keeping a store repository packed as checkpoints add to it, so loose objects stay bounded.

Store repositories run with `gc.auto=0` (only Pitstop's own gc may prune), and every checkpoint
writes its new objects loose: left alone, one store held 25,822 loose objects (143 MiB) that
pack into 12 MB (issue 22). So after a checkpoint, when the repository's loose objects pass
`LOOSE_BOUND` (estimated as git's `gc --auto` does, from a few of the 256 object directories),
they are packed with `git repack -d`: one new pack holding them, its deltas found among the
many checkpoints' versions of the same files it holds (at the default bound, ~90 checkpoints'
worth: the store stays within ~1.05x of a full repack; a geometric roll-up, tried first, reuses
each small pack's whole objects and gave 2.4x). Past `MAX_PACKS` packs they are consolidated
into one (`repack -a -d --keep-unreachable`, deltas reused), which happens every ~30,000 objects, or
when loose objects no checkpoint reaches (which `repack -d` leaves loose) keep the count up.

Nothing is pruned here: `-d` deletes only loose objects and packs whose objects are all in the
new pack, and `--keep-unreachable` keeps what no checkpoint references (only Pitstop's own gc
decides that). Whatever reads the store meanwhile finds a packed object where the loose one was
(`core.git.reader` falls back to the packs, `cat-file` looks again). One packing at a time per
repository (a lock the OS drops with its holder); a checkpoint that finds it taken, or a
packing that fails (a full disk), only leaves the objects loose for the next checkpoint.
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
"""Most packs a store repository keeps before a packing consolidates them into one."""
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


def pack_if_due(store_repo: Path, bound: int | None = None) -> bool:
    """Pack the loose objects when there are more than `bound` (`LOOSE_BOUND`); True when it
    packed."""
    limit = LOOSE_BOUND if bound is None else bound
    if loose_estimate(store_repo) <= limit:
        return False
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
        with contextlib.suppress(GitError):
            run_git(["repack", "-d", "-q"], git_dir=store_repo, env=env)
            # unreachable loose objects (a failed checkpoint's) stay loose after `-d` alone
            if pack_count(store_repo) > MAX_PACKS or loose_estimate(store_repo) > limit:
                run_git(
                    ["repack", "-a", "-d", "-q", "--keep-unreachable"], git_dir=store_repo, env=env
                )
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
