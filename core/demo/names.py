"""The demo's names: its repositories, its seven tasks, their side-effect keys and situations.

Tests, screenshots and the TUI's own checks look the demo's tasks up by these names, so they live
apart from how the tasks are built: importing them costs nothing.
"""

from __future__ import annotations

DEMO_ACTOR = "demo"
DEMO_REPOS_DIR = "demo-repos"

SHOPFRONT = "shopfront"
INVOICER = "invoicer"

# The demo's tasks, in the order they are built (oldest first).
SIGNED_COOKIES = "signed-cookie-sessions"
CART_ROUNDING = "fix-cart-rounding"
BUMP_DEPENDENCIES = "bump-dependencies"
INVOICE_CURRENCY = "invoice-currency-migration"
RATE_LIMIT = "rate-limit-checkout"
CHECKOUT_ERRORS = "translate-checkout-errors"
RELEASE = "release-shopfront-0-5"
DEMO_TASK_IDS = (
    SIGNED_COOKIES,
    CART_ROUNDING,
    BUMP_DEPENDENCIES,
    INVOICE_CURRENCY,
    CHECKOUT_ERRORS,
    RATE_LIMIT,
    RELEASE,
)

# Which demo task shows which situation an operator meets (DESIGN §7, issue 6).
SITUATIONS = {
    "ready to resume": RATE_LIMIT,
    "waiting on a high-risk approval": INVOICE_CURRENCY,
    "uncertain deploy": RELEASE,
    "branch moved since the pause": CHECKOUT_ERRORS,
    "incomplete checkpoint": BUMP_DEPENDENCIES,
    "finished": CART_ROUNDING,
}

# Keys of the demo's side effects (idempotency keys, as a harness would choose them).
STAGING_MIGRATION_KEY = "migrate:invoicer:staging:0002"
RELEASE_TAG_KEY = "git-tag:shopfront:v0.5.0"
DEPLOY_KEY = "deploy:shopfront:0.5.0:production"
PR_KEY = "pull-request:shopfront:fix-cart-rounding"
