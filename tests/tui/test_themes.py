"""Themes are data: the bundled TOML files, the loader's checks, and `app.tcss` in tokens only."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tui.app import PitstopApp
from tui.themes import (
    BUNDLED_THEME_DIRS,
    VARIABLE_FALLBACKS,
    ThemeError,
    load_bundled_themes,
    load_theme_dir,
    load_user_themes,
    to_textual_theme,
)

pytestmark = pytest.mark.usefixtures("tui_environment")

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ("pitstop-contrast", "pitstop-dark", "pitstop-light")


def test_three_bundled_themes_set_every_pitstop_variable() -> None:
    loaded = load_bundled_themes()
    assert loaded.problems == []
    assert sorted(loaded.themes) == list(BUNDLED)
    for theme in loaded.themes.values():
        assert set(VARIABLE_FALLBACKS) <= set(theme.variables), theme.name
        for attribute in ("background", "surface", "panel", "foreground", "success", "error"):
            assert getattr(theme, attribute), (theme.name, attribute)
    assert loaded.themes["pitstop-light"].dark is False


def test_the_wheel_ships_the_themes_where_the_loader_looks() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    force_include = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    installed_dir = BUNDLED_THEME_DIRS[0]
    assert force_include["themes"] == f"tui/{installed_dir.name}"
    assert BUNDLED_THEME_DIRS[1] == ROOT / "themes"


def test_a_user_theme_is_loaded_and_a_broken_one_reported(tmp_path: Path) -> None:
    (tmp_path / "ocean.toml").write_text(
        'name = "ocean"\nprimary = "#0077BE"\ndark = true\n'
        '[variables]\nstatus-running = "#00FF7F"\n'
    )
    (tmp_path / "broken.toml").write_text('name = "broken"\nprimary = "not-a-colour"\n')
    (tmp_path / "notes.txt").write_text("not a theme")
    loaded = load_user_themes(tmp_path)
    assert list(loaded.themes) == ["ocean"]
    assert loaded.themes["ocean"].variables == {"status-running": "#00FF7F"}
    assert len(loaded.problems) == 1 and "broken.toml" in loaded.problems[0]
    assert "not a colour" in loaded.problems[0]


def test_user_themes_come_from_the_config_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    (config / "themes").mkdir(parents=True)
    monkeypatch.setenv("PITSTOP_CONFIG_DIR", str(config))
    (config / "themes" / "paddock.toml").write_text('name = "paddock"\nprimary = "#2E8B57"\n')
    app = PitstopApp(tmp_path / "store", theme="paddock")
    assert app.theme == "paddock"
    assert "paddock" in app.pitstop_theme_names


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"primary": "#000000"}, "needs a `name`"),
        ({"name": "x"}, "needs a `primary`"),
        ({"name": "x", "primary": "#000000", "glow": "#fff"}, "unknown key"),
        ({"name": "x", "primary": "#000000", "dark": "yes"}, "`dark` must be true or false"),
        ({"name": "x", "primary": 12}, "must be a colour string"),
        ({"name": "x", "primary": "#000000", "variables": {"a": 1}}, "variable a must be"),
        ({"name": "x", "primary": "#000000", "text_alpha": "high"}, "must be a number"),
    ],
)
def test_malformed_themes_are_refused_with_the_reason(
    document: dict[str, object], message: str
) -> None:
    with pytest.raises(ThemeError, match=re.escape(message)):
        to_textual_theme(document, "test.toml")


def test_an_unreadable_theme_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("name = \n")
    loaded = load_theme_dir(tmp_path)
    assert loaded.themes == {} and "cannot read theme" in loaded.problems[0]


def test_app_tcss_uses_theme_tokens_not_hex_colours() -> None:
    tcss = (ROOT / "tui" / "app.tcss").read_text()
    without_comments = re.sub(r"/\*.*?\*/", "", tcss, flags=re.S)
    values = re.findall(r":\s*([^;{}]+);", without_comments)
    assert values, "no declarations found"
    literal = [v for v in values if "#" in v or re.search(r"\b(rgb|hsl)a?\(", v)]
    assert literal == []
    assert any("$primary" in value for value in values)


@pytest.mark.parametrize("theme", [*BUNDLED, "textual-dark", "textual-light"])
async def test_every_theme_renders_both_screens(theme: str, demo_store: Path) -> None:
    """Textual themes lack Pitstop's variables; the fallbacks must cover them."""
    app = PitstopApp(demo_store, theme=theme)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        for variable in VARIABLE_FALLBACKS:
            assert app.theme_variables.get(variable), variable
        app.open_task("rate-limit-checkout")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.press("d")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen.query_one("#diff-files").display
