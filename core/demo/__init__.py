"""A realistic demo store: real git repositories, real edits, real checkpoints.

`pitstop demo`, the snapshot tests and the screenshots all start from this store, so it is built
through the same `Engine` API a harness uses: tasks are started, files are edited, staged,
deleted and left untracked in the demo repositories between checkpoints, and tasks are finished.
Given `PITSTOP_FROZEN_NOW` the result is the same on every run (git identities and dates are
fixed, and every moment is placed relative to that frozen "now"), which is what lets SVG snapshots
of the dashboard stay stable.

The package re-exports what the command line, the tests and the screenshots use: the builder and
the demo's names. Its modules: `names` (task ids, keys, situations), `repository_files` (the
repositories' contents), `repos` (git in them), `build_log` (the long evidence), `context` (what a
scenario is given), `scenarios/` (one module per task) and `builder` (the order, and the refusals).
"""

from __future__ import annotations

from core.demo.builder import build_demo_store
from core.demo.names import (
    BUMP_DEPENDENCIES,
    CART_ROUNDING,
    CHECKOUT_ERRORS,
    DEMO_TASK_IDS,
    DEPLOY_KEY,
    INVOICE_CURRENCY,
    PR_KEY,
    RATE_LIMIT,
    RELEASE,
    RELEASE_TAG_KEY,
    SIGNED_COOKIES,
    SITUATIONS,
    STAGING_MIGRATION_KEY,
)

__all__ = [
    "BUMP_DEPENDENCIES",
    "CART_ROUNDING",
    "CHECKOUT_ERRORS",
    "DEMO_TASK_IDS",
    "DEPLOY_KEY",
    "INVOICE_CURRENCY",
    "PR_KEY",
    "RATE_LIMIT",
    "RELEASE",
    "RELEASE_TAG_KEY",
    "SIGNED_COOKIES",
    "SITUATIONS",
    "STAGING_MIGRATION_KEY",
    "build_demo_store",
]
