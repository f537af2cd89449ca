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
    checkpoint_ttl_days: float = 14.0
    lease_minutes: float = 120.0
    harnesses: tuple[tuple[str, dict[str, str]], ...] = ()

    def harness(self, name: str) -> dict[str, str]:
        """The `[harness.NAME]` table (resume template, version or version_command)."""
        return dict(next((table for key, table in self.harnesses if key == name), {}))


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
    validation = data.get("validation", {})
    ttl_days = validation.get("ttl_days", 14.0)
    lease_minutes = validation.get("lease_minutes", 120.0)
    for key, value in (
        ("validation.ttl_days", ttl_days),
        ("validation.lease_minutes", lease_minutes),
    ):
        if not isinstance(value, int | float) or value <= 0:
            raise UsageError(f"{file}: {key} must be a positive number")
    harness_tables = data.get("harness", {})
    if not isinstance(harness_tables, dict) or not all(
        isinstance(table, dict) for table in harness_tables.values()
    ):
        raise UsageError(f"{file}: [harness.NAME] entries must be tables")
    harnesses = tuple(
        (str(name), {str(k): str(v) for k, v in table.items()})
        for name, table in harness_tables.items()
    )
    return Config(
        checkpoint_ttl_days=float(ttl_days),
        lease_minutes=float(lease_minutes),
        harnesses=harnesses,
        operator=str(operator),
        max_file_bytes=max_file_bytes,
        theme=ui.get("theme"),
        keymap=keymap,
    )
