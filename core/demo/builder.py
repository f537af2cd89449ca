"""Build the demo store: the repositories first, then each task's scenario, once.

The build is refused rather than repeated over a store that holds other tasks or part of the demo,
so `pitstop demo` can be run again safely and never mixes the demo into real work.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from core import clock
from core.demo.context import Demo, demo_credentials
from core.demo.names import DEMO_ACTOR, DEMO_REPOS_DIR, DEMO_TASK_IDS, INVOICER, SHOPFRONT
from core.demo.repos import make_origin
from core.demo.repository_files import (
    INVOICER_FILES,
    INVOICER_HISTORY,
    SHOPFRONT_FILES,
    SHOPFRONT_HISTORY,
)
from core.demo.scenarios import (
    bump_dependencies,
    cart_rounding,
    checkout_errors,
    invoice_currency,
    rate_limit,
    release,
    signed_cookies,
)
from core.engine import Engine
from core.errors import ConflictError
from core.models import Interface

# The build order fixes every row id and every moment's neighbours: it must not change.
SCENARIOS: tuple[Callable[[Demo], None], ...] = (
    signed_cookies.build,
    cart_rounding.build,
    bump_dependencies.build,
    invoice_currency.build,
    checkout_errors.build,
    rate_limit.build,
    release.build,
)


def build_demo_store(store_root: Path) -> list[str]:
    """Build the demo repositories and tasks into `store_root`; return the demo task ids.

    Idempotent: a store that already holds the demo is left as it is. A store holding only some
    of the demo tasks (a build that was interrupted) is refused rather than half-rebuilt.
    """
    store_root = Path(store_root).expanduser().absolute()
    with Engine(store_root, interface=Interface.API, actor=DEMO_ACTOR) as engine:
        existing = {task.id for task in engine.list_tasks()} & set(DEMO_TASK_IDS)
        if existing == set(DEMO_TASK_IDS):
            return list(DEMO_TASK_IDS)
        if not existing and engine.list_tasks():
            raise ConflictError(
                f"{store_root} holds other tasks; build the demo in a new directory"
            )
        engine.keys.use_demo_key()
        if existing:
            raise ConflictError(
                f"{store_root} holds part of the demo ({', '.join(sorted(existing))}) from a "
                "build that did not finish; remove that directory or choose another"
            )
        repos = store_root / DEMO_REPOS_DIR
        if repos.exists():
            shutil.rmtree(repos)  # left by an earlier build that stopped before any task began
        repos.mkdir(parents=True)
        now = clock.now()
        demo = Demo(
            engine=engine,
            repos=repos,
            shopfront=make_origin(
                repos, SHOPFRONT, SHOPFRONT_FILES, SHOPFRONT_HISTORY, now - timedelta(days=12)
            ),
            invoicer=make_origin(
                repos, INVOICER, INVOICER_FILES, INVOICER_HISTORY, now - timedelta(days=9)
            ),
            now=now,
        )
        with demo_credentials():
            for build in SCENARIOS:
                build(demo)
    return list(DEMO_TASK_IDS)
