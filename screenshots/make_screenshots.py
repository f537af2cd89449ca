"""Render the real dashboard on the demo store into screenshots/*.svg, and PNG where possible.

    .venv/bin/python screenshots/make_screenshots.py            # every screenshot
    .venv/bin/python screenshots/make_screenshots.py dashboard-remote   # only the ones named

The web inbox's screenshots (`web-*.png`, from headless Chromium) come from
`make_web_screenshots.py`, which this runs too.

The store comes from the same builder the snapshot tests use (tests/tui/demo_env.py: frozen
clock, fixed build path), so the images match what the tests check. PNGs need `rsvg-convert`
(Debian: librsvg2-bin) or an ImageMagick `convert` that reads SVG; without either only the SVGs
are written.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "tui"), str(HERE)]

from demo_env import FROZEN_NOW, TERMINAL_SIZE, build_reproducible_demo, isolated_env  # noqa: E402
from remote_env import build_remote_scene, environment  # noqa: E402
from settling import settle  # noqa: E402

from core.demo import INVOICE_CURRENCY, RATE_LIMIT, RELEASE  # noqa: E402


@dataclass(frozen=True)
class Shot:
    """One screenshot: a file name, the theme, the task to open (if any) and keys to press;
    `remote` shots add a team remote holding tasks the store does not (tests/tui/remote_env.py)."""

    name: str
    title: str
    theme: str | None = None
    task: str | None = None
    keys: tuple[str, ...] = ()
    remote: bool = False
    size: tuple[int, int] = TERMINAL_SIZE


SHOTS = (
    Shot("dashboard", "Pitstop — every paused task, triaged"),
    Shot("dashboard-80x24", "Pitstop — at 80×24, the essential columns", size=(80, 24)),
    Shot("task-overview", "Pitstop — a task's checkpoint", task=INVOICE_CURRENCY),
    Shot("task-diff", "Pitstop — the checkpoint's diff", task=INVOICE_CURRENCY, keys=("d",)),
    Shot(
        "dashboard-light",
        "Pitstop — light theme",
        theme="pitstop-light",
        keys=("slash", *"invoicer", "enter"),
    ),
    Shot("approvals-inbox", "Pitstop — the approvals inbox", keys=("a",)),
    Shot(
        "dashboard-remote",
        "Pitstop — tasks on the team remote, one to fetch",
        keys=("j", "j"),
        remote=True,
    ),
    Shot(
        "task-evidence", "Pitstop — what the agent's commands showed", task=RATE_LIMIT, keys=("e",)
    ),
    Shot("task-effects", "Pitstop — side effects, one uncertain", task=RELEASE, keys=("s",)),
    Shot(
        "task-validation",
        "Pitstop — restore checks before a resume",
        task=RATE_LIMIT,
        keys=("v", "enter"),
    ),
    # Last: preparing the resume takes the task's lease and adds a worktree beside the demo repo.
    Shot(
        "task-resume",
        "Pitstop — the resume brief, ready to launch",
        task=RATE_LIMIT,
        keys=("u", "enter", "y"),
    ),
)


async def render(shot: Shot, store: Path) -> str:
    """The SVG of the real app after the shot's steps."""
    from tui.app import PitstopApp

    app = PitstopApp(store, theme=shot.theme)
    async with app.run_test(size=shot.size) as pilot:
        await settle(pilot)
        if shot.task:
            app.open_task(shot.task)
            await settle(pilot)
        for key in shot.keys:
            await pilot.press(key)
            await settle(pilot)
        svg = app.export_screenshot(title=shot.title)
    # Spaces are significant in a terminal; some SVG renderers collapse them otherwise.
    return svg.replace("<svg ", '<svg xml:space="preserve" ', 1)


def svg_to_png_command(svg_path: Path, png_path: Path) -> list[str] | None:
    """A command that turns the SVG into a PNG on this machine, or None if nothing can."""
    if shutil.which("rsvg-convert"):
        return ["rsvg-convert", "--format=png", "--output", str(png_path), str(svg_path)]
    convert = shutil.which("convert")
    if convert:
        formats = subprocess.run([convert, "-list", "format"], capture_output=True, text=True)
        if formats.returncode == 0 and " SVG" in formats.stdout:
            return [convert, str(svg_path), str(png_path)]
    return None


def render_remote(shot: Shot, store: Path, scratch: Path) -> str:
    """The SVG of a shot on a copy of the store beside a team remote kept under a scratch HOME
    (so the preview reads ~/team/team.git on every machine, as in the snapshot test)."""
    copy = scratch / f"{shot.name}-store"
    shutil.copytree(store, copy, symlinks=True)
    home = scratch / f"{shot.name}-home"
    home.mkdir()
    with environment(HOME=str(home)):
        build_remote_scene(copy, home / "team", FROZEN_NOW)
        return asyncio.run(render(shot, copy))


def main(names: list[str]) -> int:
    from make_web_screenshots import WEB_SHOTS
    from make_web_screenshots import main as web_main

    web_names = [name for name in names if name in {shot.name for shot in WEB_SHOTS}]
    unknown = sorted(set(names) - {shot.name for shot in SHOTS} - set(web_names))
    if unknown:
        print(f"no screenshot named {', '.join(unknown)}", file=sys.stderr)
        return 2
    if web_names or not names:  # the web inbox, from a real browser
        web_main(web_names)
        if names and web_names == names:  # only web shots were asked for
            return 0
    # A fixed scratch path (made anew each run): paths the app shows, such as a resume brief's,
    # are then the same in every regeneration.
    scratch = Path(tempfile.gettempdir()) / "pitstop-screenshots"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(mode=0o700)
    try:
        store = build_reproducible_demo(scratch / "store", scratch / "build")
        os.environ.update(isolated_env(scratch / "render"))
        converted = True
        for shot in SHOTS:
            if names and shot.name not in names:
                continue
            svg_path = HERE / f"{shot.name}.svg"
            if shot.remote:
                svg = render_remote(shot, store, scratch)
            else:
                svg = asyncio.run(render(shot, store))
            svg_path.write_text(svg, encoding="utf-8")
            written = [svg_path]
            command = svg_to_png_command(svg_path, svg_path.with_suffix(".png"))
            if command:
                subprocess.run(command, check=True)
                written.append(svg_path.with_suffix(".png"))
            converted = converted and command is not None
            print(" ".join(str(path.relative_to(ROOT)) for path in written))
        if not converted:
            print(
                "no SVG converter found (apt-get install librsvg2-bin); wrote SVGs only",
                file=sys.stderr,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
