"""User configuration from `config.toml` in the config directory; every key has a default.

Read once per engine; a malformed file is a clear error, never a half-applied config.
"""

# String annotations cost nothing: `core.records.NamedTuple` keeps them as written (no
# `ForwardRef` compile as `typing.NamedTuple` does); `typing` is for type checkers only.
from __future__ import annotations

import os
from pathlib import Path

from core.errors import UsageError
from core.paths import config_dir

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple, TypeVar
else:
    from core.records import NamedTuple

# Files larger than this are left out of snapshots (and listed as left out).
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024


class EconomicsSettings(NamedTuple):
    """`[economics]`: what replaying and checkpointing a real task cost (DESIGN §4)."""

    p_interrupt: float = 0.05
    reorientation_minutes: float = 20.0
    human_usd_per_hour: float = 90.0
    machine_usd_per_hour: float = 1.0
    usd_per_million_tokens: float = 10.0  # used only when a task recorded tokens but no money
    create_usd: float = 0.10
    storage_usd_per_gib_month: float = 0.10
    restore_usd: float = 0.10
    validation_usd: float = 0.10


class PolicySettings(NamedTuple):
    """`[policy]`: when a checkpoint request is skipped, and what a hook's decision weighs
    (core.economics.decide): P(interruption) per hour of work, the machine and human rates."""

    min_interval_seconds: float = 300.0
    p_interrupt_per_hour: float = 0.05
    machine_usd_per_hour: float = 1.0
    human_usd_per_hour: float = 90.0
    trivial_restart_usd: float = 0.0  # a session's end below this exposure: no checkpoint; 0: off


class RetentionSettings(NamedTuple):
    """`[retention]`: when `pitstop gc` expires checkpoints; byte caps are off when unset."""

    ttl_days: float = 14.0
    keep_last: int = 10
    finished_keep_days: float = 1.0
    max_task_bytes: int | None = None
    max_store_bytes: int | None = None


class HookSettings(NamedTuple):
    """`[hooks]`: how long a hook holds a prompt open for a decision made in Pitstop."""

    permission_wait_seconds: float = 60.0  # a Claude Code permission prompt; 0: never
    guard_wait_seconds: float = 0.0  # a guarded command awaiting its approval; 0: deny at once


# A hook's timeout as installed: no wait may come near it, or the harness kills the hook first.
MAX_HOOK_WAIT_SECONDS = 540.0


def _hook_settings(file: Path, data: dict[str, Any]) -> HookSettings:
    """The `[hooks]` numbers (its `[hooks.rules.NAME]` tables are the guard's, read there)."""
    table = data.get("hooks", {})
    if not isinstance(table, dict):
        raise UsageError(f"{file}: [hooks] must be a table")
    numbers = {key: value for key, value in table.items() if key != "rules"}
    settings = _section(file, {"hooks": numbers}, "hooks", HookSettings())
    for key, value in settings._asdict().items():
        if value > MAX_HOOK_WAIT_SECONDS:
            raise UsageError(
                f"{file}: hooks.{key} is {value:g}; at most {MAX_HOOK_WAIT_SECONDS:g} seconds "
                "(the harness stops a hook that runs longer)"
            )
    return settings


if TYPE_CHECKING:
    _Settings = TypeVar(
        "_Settings", EconomicsSettings, PolicySettings, RetentionSettings, HookSettings
    )


def _section(file: Path, data: dict[str, Any], name: str, defaults: _Settings) -> _Settings:
    """A settings table: known keys only, each a non-negative number (caps may be omitted)."""
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise UsageError(f"{file}: [{name}] must be a table")
    known = list(defaults._fields)
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise UsageError(f"{file}: unknown key {name}.{key}; known: {', '.join(known)}")
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise UsageError(f"{file}: {name}.{key} must be a non-negative number")
        wants_int = key.startswith("max_") or key == "keep_last"
        values[key] = int(value) if wants_int else float(value)
    for probability in ("p_interrupt", "p_interrupt_per_hour"):
        if values.get(probability, 0) > 1:
            raise UsageError(f"{file}: {name}.{probability} is a probability between 0 and 1")
    return defaults._replace(**values)


class Config(NamedTuple):
    """Settings that change Pitstop's behaviour, with their defaults."""

    operator: str
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    theme: str | None = None
    keymap: tuple[tuple[str, str], ...] = ()
    checkpoint_ttl_days: float = 14.0
    lease_minutes: float = 120.0
    harnesses: tuple[tuple[str, dict[str, str]], ...] = ()
    economics: EconomicsSettings = EconomicsSettings()
    policy: PolicySettings = PolicySettings()
    retention: RetentionSettings = RetentionSettings()
    hooks: HookSettings = HookSettings()

    def harness(self, name: str) -> dict[str, str]:
        """The `[harness.NAME]` table (resume template, version or version_command)."""
        return dict(next((table for key, table in self.harnesses if key == name), {}))


def _operator_default() -> str:
    """The login name, found as `getpass.getuser()` finds it (without importing getpass and
    termios on every hook call)."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if user := os.environ.get(name):
            return user
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (KeyError, OSError, ImportError):
        return "operator"


def load_config(path: Path | None = None) -> Config:
    """Read the config file (if any) and return settings with defaults filled in."""
    file = path or config_dir() / "config.toml"
    data: dict[str, Any] = {}
    if file.exists():
        import tomllib  # only when there is a file to read

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
        economics=_section(file, data, "economics", EconomicsSettings()),
        policy=_section(file, data, "policy", PolicySettings()),
        retention=_section(file, data, "retention", RetentionSettings()),
        hooks=_hook_settings(file, data),
    )
