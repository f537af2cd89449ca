"""User configuration from `config.toml` in the config directory; every key has a default.

Read once per engine; a malformed file is a clear error, never a half-applied config.
"""

from __future__ import annotations

import getpass
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import UsageError
from core.paths import config_dir
from core.snapshot import DEFAULT_MAX_FILE_BYTES


@dataclass(frozen=True)
class Config:
    """Settings that change Pitstop's behaviour, with their defaults."""

    operator: str
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    theme: str | None = None
    keymap: tuple[tuple[str, str], ...] = ()


def _operator_default() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "operator"


def load_config(path: Path | None = None) -> Config:
    """Read the config file (if any) and return settings with defaults filled in."""
    file = path or config_dir() / "config.toml"
    data: dict[str, Any] = {}
    if file.exists():
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {file}: {exc}; fix or remove that file") from exc
    operator = data.get("operator", {}).get("name") or _operator_default()
    max_file_bytes = data.get("snapshot", {}).get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)
    if not isinstance(max_file_bytes, int) or max_file_bytes <= 0:
        raise UsageError(f"{file}: snapshot.max_file_bytes must be a positive integer")
    ui = data.get("ui", {})
    keymap = tuple((str(k), str(v)) for k, v in ui.get("keymap", {}).items())
    return Config(
        operator=str(operator),
        max_file_bytes=max_file_bytes,
        theme=ui.get("theme"),
        keymap=keymap,
    )
