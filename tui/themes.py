"""Colour themes as data: TOML files read into Textual `Theme`s.

Pitstop's own themes live in the repository's `themes/` directory; the wheel ships the same files
as `tui/_themes`, so both places are searched. Users add themes as TOML files in
`<config dir>/themes/`. A theme sets Textual's base colours plus Pitstop's own variables (status
colours, diff colours) under `[variables]`; any variable a theme leaves out falls back to a
default derived from its base colours, so a theme written for plain Textual still works.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from core.paths import config_dir

DEFAULT_THEME = "pitstop-dark"

_PACKAGE_DIR = Path(__file__).resolve().parent
BUNDLED_THEME_DIRS = (
    _PACKAGE_DIR / "_themes",  # installed from the wheel
    _PACKAGE_DIR.parent / "themes",  # a development checkout
)

_COLOUR_KEYS = (
    "primary",
    "secondary",
    "accent",
    "background",
    "surface",
    "panel",
    "foreground",
    "boost",
    "success",
    "warning",
    "error",
)
_FLOAT_KEYS = ("luminosity_spread", "text_alpha")
_METADATA_KEYS = ("description", "author", "homepage")

# Pitstop's own theme variables and the base colour each falls back to.
VARIABLE_FALLBACKS: dict[str, str] = {
    "status-running": "success",
    "status-waiting": "warning",
    "status-paused": "secondary",
    "status-resuming": "accent",
    "status-done": "primary",
    "status-cancelled": "foreground",
    "status-expired": "foreground",
    "checkpoint-complete": "success",
    "checkpoint-incomplete": "error",
    "checkpoint-writing": "warning",
    "diff-added": "success",
    "diff-removed": "error",
    "diff-hunk": "secondary",
    "diff-header": "accent",
    "budget-bar": "primary",
    "budget-over": "error",
    "selection": "panel",
    "risk-low": "success",
    "risk-medium": "warning",
    "risk-high": "error",
    # Every list's cursor row (task table, inbox, timeline, task tabs), focused and not: a
    # background on which every coloured cell stays readable (tests/tui/test_cursor_contrast*.py
    # hold the bundled themes to 4.5:1).
    "cursor-row": "panel",
    "cursor-row-blurred": "panel",
}


class ThemeError(ValueError):
    """A theme file that cannot be used, with a message naming the file and the problem."""


@dataclass
class ThemeLoad:
    """Themes read from a directory, and one line per file that could not be used."""

    themes: dict[str, Theme] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _colour(value: Any, key: str, source: str) -> str:
    if not isinstance(value, str):
        raise ThemeError(f'{source}: {key} must be a colour string like "#F08C3A"')
    try:
        Color.parse(value)
    except ColorParseError as exc:
        raise ThemeError(f"{source}: {key} = {value!r} is not a colour ({exc})") from exc
    return value


def to_textual_theme(data: Mapping[str, Any], source: str = "theme") -> Theme:
    """Build a Textual `Theme` from a theme document, refusing unknown or malformed keys."""
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ThemeError(f"{source}: a theme needs a `name`")
    if "primary" not in data:
        raise ThemeError(f"{source}: theme {name!r} needs a `primary` colour")
    known = {"name", "dark", "variables", *_COLOUR_KEYS, *_FLOAT_KEYS, *_METADATA_KEYS}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ThemeError(f"{source}: unknown key(s) {', '.join(unknown)} in theme {name!r}")
    colours = {key: _colour(data[key], key, source) for key in _COLOUR_KEYS if key in data}
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(f"{source}: `dark` must be true or false")
    numbers: dict[str, float] = {}
    for key in _FLOAT_KEYS:
        if key in data:
            if not isinstance(data[key], int | float) or isinstance(data[key], bool):
                raise ThemeError(f"{source}: {key} must be a number")
            numbers[key] = float(data[key])
    raw_variables = data.get("variables", {})
    if not isinstance(raw_variables, Mapping):
        raise ThemeError(f'{source}: [variables] must be a table of name = "value"')
    variables = {}
    for key, value in raw_variables.items():
        if not isinstance(value, str):
            raise ThemeError(f"{source}: variable {key} must be a string")
        variables[str(key)] = value
    return Theme(
        name=name.strip(),
        primary=colours["primary"],
        secondary=colours.get("secondary"),
        accent=colours.get("accent"),
        background=colours.get("background"),
        surface=colours.get("surface"),
        panel=colours.get("panel"),
        foreground=colours.get("foreground"),
        boost=colours.get("boost"),
        success=colours.get("success"),
        warning=colours.get("warning"),
        error=colours.get("error"),
        dark=dark,
        luminosity_spread=numbers.get("luminosity_spread", 0.15),
        text_alpha=numbers.get("text_alpha", 0.95),
        variables=variables,
    )


def load_theme_file(path: Path) -> Theme:
    """Read one TOML theme file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ThemeError(f"{path}: cannot read theme ({exc})") from exc
    return to_textual_theme(data, str(path))


def load_theme_dir(directory: Path) -> ThemeLoad:
    """Every `*.toml` theme in `directory`, in name order; bad files are reported, not fatal."""
    result = ThemeLoad()
    if not directory.is_dir():
        return result
    for path in sorted(directory.glob("*.toml")):
        try:
            theme = load_theme_file(path)
        except ThemeError as exc:
            result.problems.append(str(exc))
            continue
        result.themes[theme.name] = theme
    return result


def load_bundled_themes() -> ThemeLoad:
    """Pitstop's own themes, from the wheel or the development checkout."""
    for directory in BUNDLED_THEME_DIRS:
        loaded = load_theme_dir(directory)
        if loaded.themes:
            return loaded
    return ThemeLoad(problems=["Pitstop's bundled themes are missing; reinstall pitstop"])


def user_theme_dir() -> Path:
    """Where users put their own themes."""
    return config_dir() / "themes"


def load_user_themes(directory: Path | None = None) -> ThemeLoad:
    """Themes the user added in the config directory (they may replace bundled ones by name)."""
    return load_theme_dir(directory or user_theme_dir())


def variable_defaults(theme: Theme) -> dict[str, str]:
    """Values for Pitstop's variables that `theme` does not set, from its base colours."""
    grey = "#9E9E9E" if theme.dark else "#6C757D"
    return {
        variable: getattr(theme, base, None) or (grey if base == "foreground" else theme.primary)
        for variable, base in VARIABLE_FALLBACKS.items()
    }
