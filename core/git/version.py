"""The installed git's version, for the manifest's environment identity, asked once per git.

Every harness hook is a new process; asking git for its version costs a process each time.
The answer is kept in a file keyed by the git executable itself, so git is asked again only
after git changed.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.git.run import run_git


def git_version(cache_dir: Path | None = None) -> str:
    """The installed git's version string, for the manifest's environment identity.

    With `cache_dir`, the answer is kept in a file keyed by the git executable's resolved path,
    inode, size and modification time, so that a new process (every hook is one) asks git only
    after git itself changed.
    """
    if cache_dir is None:
        return _ask_git_version()
    found = _which("git")
    try:
        info = Path(found).resolve().stat() if found else None
    except OSError:
        info = None
    if found is None or info is None:
        return _ask_git_version()
    key = f"{Path(found).resolve()}\0{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
    cache = cache_dir / "git-version"
    try:
        cached_key, _, cached = cache.read_text(encoding="utf-8").partition("\n")
        if cached_key == key and cached:
            return cached
    except (OSError, UnicodeDecodeError):
        pass
    version = _ask_git_version()
    _write_cache(cache, f"{key}\n{version}")
    return version


def _ask_git_version() -> str:
    return run_git(["--version"]).decode().strip().removeprefix("git version ")


def _write_cache(cache: Path, text: str) -> None:
    """Replace the cache file whole (owner-only); a failure only means asking git next time."""
    temp = cache.with_name(f"git-version.{os.getpid()}.tmp")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, cache)
    except OSError:
        temp.unlink(missing_ok=True)


def _which(name: str) -> str | None:
    """The first executable `name` on PATH, as `shutil.which` finds it (without loading
    shutil, ~1 ms of every hook)."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or os.curdir, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None
