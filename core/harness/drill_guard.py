"""The guard's rules as a drill's screen: a drill never replays a command a rule catches.

The rules (`core.harness.rules`, changed by `[hooks.rules]` in config.toml) and their matcher
live with the harness adapters, above the engine; `Engine.drill` takes this screen from its
caller so the engine never reaches up for them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.harness.commands import match_command
from core.harness.rules import load_rules


def guard_screen(config_path: Path | None = None) -> Callable[[str], str | None]:
    """Why a guard rule catches a command line (`it matches the guard rule git-push`), or None."""
    rules = load_rules(config_path)

    def screen(command: str) -> str | None:
        found = match_command(command, rules)
        return f"it matches the guard rule {found.rule.name}" if found else None

    return screen
