"""SVG snapshots of the main screens on the demo store, with a frozen clock.

Regenerate after an intended change with `pytest tests/tui/test_snapshots.py --snapshot-update`
and look at the report before committing the new SVGs.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from demo_env import FROZEN_NOW, TERMINAL_SIZE
from remote_env import build_remote_scene
from settling import settle
from textual.pilot import Pilot

from core.demo import BUMP_DEPENDENCIES, INVOICE_CURRENCY
from tui.app import PitstopApp

pytestmark = pytest.mark.usefixtures("tui_environment")

SnapCompare = Callable[..., bool]


def steps(*keys: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    """Settle, then press each key and settle again."""

    async def run(pilot: Pilot[None]) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run


def open_task(task_id: str, *keys: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    """Open `task_id` from the dashboard, then press `keys`."""

    async def run(pilot: Pilot[None]) -> None:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, PitstopApp)
        app.open_task(task_id)
        await steps(*keys)(pilot)

    return run


def test_dashboard(snap_compare: SnapCompare, demo_store: Path) -> None:
    assert snap_compare(PitstopApp(demo_store), terminal_size=TERMINAL_SIZE, run_before=steps())


def test_dashboard_filtered_in_the_light_theme(snap_compare: SnapCompare, demo_store: Path) -> None:
    assert snap_compare(
        PitstopApp(demo_store, theme="pitstop-light"),
        terminal_size=TERMINAL_SIZE,
        run_before=steps("slash", *"shopfront", "enter", "j"),
    )


def test_task_overview(snap_compare: SnapCompare, demo_store: Path) -> None:
    assert snap_compare(
        PitstopApp(demo_store), terminal_size=TERMINAL_SIZE, run_before=open_task(INVOICE_CURRENCY)
    )


def test_task_diff(snap_compare: SnapCompare, demo_store: Path) -> None:
    assert snap_compare(
        PitstopApp(demo_store),
        terminal_size=TERMINAL_SIZE,
        run_before=open_task(INVOICE_CURRENCY, "d"),
    )


def test_incomplete_checkpoint_in_the_contrast_theme(
    snap_compare: SnapCompare, demo_store: Path
) -> None:
    assert snap_compare(
        PitstopApp(demo_store, theme="pitstop-contrast"),
        terminal_size=TERMINAL_SIZE,
        run_before=open_task(BUMP_DEPENDENCIES, "j"),
    )


def test_approvals_inbox(snap_compare: SnapCompare, demo_store: Path) -> None:
    assert snap_compare(PitstopApp(demo_store), terminal_size=TERMINAL_SIZE, run_before=steps("a"))


def test_dashboard_with_remote_tasks(snap_compare: SnapCompare, demo_store: Path) -> None:
    # Under HOME, so the preview shows the remote as ~/team/team.git on every machine.
    build_remote_scene(demo_store, Path(os.environ["HOME"]) / "team", FROZEN_NOW)
    assert snap_compare(
        PitstopApp(demo_store), terminal_size=TERMINAL_SIZE, run_before=steps("j", "j")
    )


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (220, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_dashboard_fits_the_terminal(
    snap_compare: SnapCompare, demo_store: Path, size: tuple[int, int]
) -> None:
    """80×24 keeps status, task, approvals, uncertain effects and verdict; wider grows."""
    assert snap_compare(PitstopApp(demo_store), terminal_size=size, run_before=steps())


# At 220×60 the overview shows each credential's keyed fingerprint: the demo build pins the
# fingerprint key where the engine reads it (`core.security.fingerprint`), so it is the same on
# every machine.
@pytest.mark.parametrize("size", [(80, 24), (120, 40), (220, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_task_screen_fits_the_terminal(
    snap_compare: SnapCompare, demo_store: Path, size: tuple[int, int]
) -> None:
    """Every tab's label shows (or scrolls) at 80×24; a long objective takes two lines at most."""
    assert snap_compare(PitstopApp(demo_store), terminal_size=size, run_before=steps("enter"))
