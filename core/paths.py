"""Where Pitstop keeps things: the one module that decides paths.

Order of precedence for the store: an explicit directory (`--store`), then `PITSTOP_HOME`, then
the platform's user data directory. The store directory is created `0700` and its files `0600`
(invariant 9).
"""

# String annotations cost nothing: `core.records.NamedTuple` keeps them as written (no
# `ForwardRef` compile as `typing.NamedTuple` does); `typing` is for type checkers only.
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from core.errors import StoreError

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

APP_NAME = "pitstop"
STORE_ENV = "PITSTOP_HOME"
CONFIG_ENV = "PITSTOP_CONFIG_DIR"


class StorePaths(NamedTuple):
    """Every path inside one store directory."""

    root: Path

    @property
    def database(self) -> Path:
        return self.root / "pitstop.db"

    @property
    def repos(self) -> Path:
        return self.root / "repos"

    @property
    def fingerprint_key(self) -> Path:
        return self.root / "fingerprint.key"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"


def _user_dir(kind: str) -> Path:
    """The user's `data`, `config` or `cache` directory for Pitstop, as platformdirs gives it.

    On Linux the XDG rule is applied here, as platformdirs applies it: `$XDG_<KIND>_HOME` when
    it is an absolute path (the XDG spec ignores relative ones), else `~/.local/share`,
    `~/.config` or `~/.cache` — because importing platformdirs costs every harness hook a few
    milliseconds. Elsewhere platformdirs decides. A test compares both.
    """
    if sys.platform.startswith("linux"):
        fallback = {"data": "~/.local/share", "config": "~/.config", "cache": "~/.cache"}[kind]
        value = os.environ.get(f"XDG_{kind.upper()}_HOME", "")
        base = value if os.path.isabs(value) else os.path.expanduser(fallback)
        return Path(base) / APP_NAME
    import platformdirs

    finder = {
        "data": platformdirs.user_data_dir,
        "config": platformdirs.user_config_dir,
        "cache": platformdirs.user_cache_dir,
    }[kind]
    return Path(finder(APP_NAME, appauthor=False))


def default_store_root() -> Path:
    """The store directory when neither `--store` nor `PITSTOP_HOME` says otherwise."""
    return _user_dir("data")


def config_dir() -> Path:
    """The user's configuration directory (themes, keymaps, harness templates)."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override).expanduser()
    return _user_dir("config")


def default_config_dir() -> Path:
    """The configuration directory when `PITSTOP_CONFIG_DIR` does not say otherwise."""
    return _user_dir("config")


def resolve_store_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Pick the store directory: explicit argument, then `PITSTOP_HOME`, then the default."""
    if explicit:
        return Path(explicit).expanduser().absolute()
    from_env = os.environ.get(STORE_ENV)
    if from_env:
        return Path(from_env).expanduser().absolute()
    return default_store_root()


def holds_store(root: Path) -> bool:
    """Whether `root` holds a Pitstop store (its database), so a mistyped `--store` is told."""
    return StorePaths(root).database.is_file()


def ensure_private_dir(path: Path) -> None:
    """Create `path` (and parents) and make it readable by its owner only."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            path.chmod(0o700)
    except PermissionError as exc:
        raise StoreError(
            f"cannot create or secure the store directory {path}: {exc.strerror}; "
            "choose another with --store or PITSTOP_HOME"
        ) from exc
    except (NotADirectoryError, FileExistsError) as exc:  # a file (or /dev/null) is in the way
        raise StoreError(
            f"the store path {path} is not a directory; choose another with --store or PITSTOP_HOME"
        ) from exc
    except OSError as exc:  # a parent that does not take directories (/proc), a full disk…
        raise StoreError(
            f"cannot create the store directory {path}: {exc.strerror or exc}; "
            "choose another with --store or PITSTOP_HOME"
        ) from exc


def ensure_private_file(path: Path) -> None:
    """Make an existing file readable and writable by its owner only."""
    if path.exists() and stat.S_IMODE(path.stat().st_mode) & 0o077:
        path.chmod(0o600)


def demo_store_root() -> Path:
    """Where `pitstop demo` builds its store unless `--store` says otherwise (not the real one)."""
    return _user_dir("cache") / "demo-store"
