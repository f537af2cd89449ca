"""Time every git process Pitstop starts, for the benches' `--profile` breakdowns.

All of Pitstop's git calls go through `core.git.run.run_git`, which modules import by name; the
wrapper is therefore installed in `core.git.run` and in every loaded `core` module that holds the
original function, after importing the modules a bench measures.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any


def wrap_run_git(book: Callable[[Sequence[str], float], None]) -> None:
    """Replace `run_git` everywhere it is bound; `book(args, seconds)` gets each call's time."""
    from core.git import run

    original = run.run_git

    def timed_git(args: Sequence[str], **kwargs: Any) -> bytes:
        started = time.perf_counter()
        try:
            return original(args, **kwargs)
        finally:
            book(args, time.perf_counter() - started)

    for name, module in list(sys.modules.items()):
        if (name == "core" or name.startswith("core.")) and getattr(
            module, "run_git", None
        ) is original:
            module.run_git = timed_git  # type: ignore[attr-defined]
