"""Photograph the real web inbox (`pitstop serve`) in headless Chromium into screenshots/web-*.png.

    .venv/bin/python screenshots/make_web_screenshots.py                 # every web screenshot
    .venv/bin/python screenshots/make_web_screenshots.py web-inbox-phone # only the ones named

`make_screenshots.py` runs this too. The store is the demo store the dashboard's screenshots and
snapshot tests use (tests/tui/demo_env.py: frozen clock), served by a real `pitstop serve`
process; each browser is paired through its own one-time link, as an approver's phone is. Phone
and desktop sizes, light and dark colour schemes (the page follows the device's preference).
Needs Chromium and chromedriver from Debian's packages (apt: chromium chromium-driver).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "tui")]

from demo_env import build_reproducible_demo, isolated_env  # noqa: E402

from core.demo import INVOICE_CURRENCY, RELEASE  # noqa: E402
from tests.e2e.browser import DESKTOP, PHONE, browser_paths, chromium, serve  # noqa: E402


class WebShot(NamedTuple):
    """One screenshot: a file name, the window size, dark or light, and the page to open."""

    name: str
    size: tuple[int, int]
    dark: bool
    path: str = "/"
    run_check: bool = False  # on the page of an effect whose check exits 1, press Run the check


def _approval_path() -> str:
    return f"/approvals/{INVOICE_CURRENCY}%3A1"


WEB_SHOTS = (
    WebShot("web-inbox-phone", PHONE, dark=False),
    WebShot("web-inbox-phone-dark", PHONE, dark=True),
    WebShot("web-approval-phone-dark", PHONE, dark=True, path=_approval_path()),
    WebShot("web-effect-phone", PHONE, dark=False, path=f"/effects/{RELEASE}/"),
    WebShot("web-inbox-desktop", DESKTOP, dark=False),
    WebShot("web-inbox-desktop-dark", DESKTOP, dark=True),
    # Last: it adds an effect to the store (the shots above show the demo store as it is).
    WebShot("web-effect-checked-phone-dark", PHONE, dark=True, run_check=True),
)
MAIL_KEY = "email:release-notes-0.5.0"


def _add_mail_effect(store: Path) -> str:
    """An uncertain release mail whose check says it was not sent (exit 1); its page."""
    from core.engine import Engine
    from core.models import EffectState

    check = (
        "printf 'outbox: no message tagged release-0.5.0\\n"
        "last sent: release-0.4.2 on 2026-02-11\\n'; exit 1"
    )
    with Engine(store) as engine:
        engine.propose_effect(
            RELEASE, MAIL_KEY, "email", target="customers: release notes 0.5.0", check=check
        )
        engine.move_effect(RELEASE, MAIL_KEY, EffectState.IN_PROGRESS)
        engine.move_effect(RELEASE, MAIL_KEY, EffectState.UNCERTAIN, note="the mailer timed out")
    return f"/effects/{RELEASE}/{quote(MAIL_KEY, safe='')}"


def _pair(driver: Any, link: str) -> None:
    from tests.e2e.browser import wait_until

    driver.get(link)
    if not driver.find_elements("id", "pair"):
        said = driver.find_element("tag name", "body").text
        raise SystemExit(f"the pairing page refused: {said}")
    driver.find_element("id", "pair").click()
    wait_until(lambda: "Waiting for you" in driver.page_source, "the inbox after pairing")


def _run_check(driver: Any) -> None:
    """Press Run the check and scroll to what it printed."""
    from tests.e2e.browser import wait_until

    driver.find_element("id", "check").click()
    wait_until(lambda: driver.find_elements("id", "check-output"), "the check's output")
    heading = "document.getElementById('check-detail').previousElementSibling"
    driver.execute_script(f"{heading}.scrollIntoView(); window.scrollBy(0, -60)")  # the top bar


def _effect_path(store: Path) -> str:
    """The page of the demo's uncertain effect (the release tag whose push timed out)."""
    from core.engine import Engine
    from core.models import EffectState

    with Engine(store) as engine:
        [effect, *_] = engine.list_effects(RELEASE, (EffectState.UNCERTAIN,))
    return f"/effects/{RELEASE}/{effect.key}"


def shoot(shots: tuple[WebShot, ...], store: Path) -> list[Path]:
    """Serve the store and photograph every shot; the PNGs written. The first browser pairs
    through the link the server printed; the others carry that device's cookie (pairing more
    would meet the server's rate limit on pairing attempts)."""
    from web.guard import COOKIE

    written = []
    cookie: dict[str, Any] | None = None
    with serve(dict(os.environ)) as served:
        for shot in shots:
            path = _effect_path(store) if shot.path.startswith("/effects/") else shot.path
            if shot.run_check:
                path = _add_mail_effect(store)
            with chromium(shot.size, dark=shot.dark) as driver:
                if cookie is None:
                    _pair(driver, served.link)
                    cookie = driver.get_cookie(COOKIE)
                else:
                    driver.get(served.base + "/static/pitstop.css")
                    driver.add_cookie({"name": COOKIE, "value": cookie["value"], "path": "/"})
                driver.get(served.base + path)
                if shot.run_check:
                    _run_check(driver)
                target = HERE / f"{shot.name}.png"
                driver.save_screenshot(str(target))
                written.append(target)
    return written


def main(names: list[str]) -> int:
    unknown = sorted(set(names) - {shot.name for shot in WEB_SHOTS})
    if unknown:
        print(f"no web screenshot named {', '.join(unknown)}", file=sys.stderr)
        return 2
    if browser_paths() is None:
        print("no headless Chromium (apt-get install chromium chromium-driver)", file=sys.stderr)
        return 1
    scratch = Path(tempfile.gettempdir()) / "pitstop-web-screenshots"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(mode=0o700)
    try:
        store = build_reproducible_demo(scratch / "store", scratch / "build")
        os.environ.update(isolated_env(scratch / "render"))
        os.environ["PITSTOP_HOME"] = str(store)
        shots = tuple(shot for shot in WEB_SHOTS if not names or shot.name in names)
        for path in shoot(shots, store):
            print(path.relative_to(ROOT))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
