"""The branch moved since the pause (`translate-checkout-errors`): a teammate's commit."""

from __future__ import annotations

from core.demo.context import Demo, as_of
from core.demo.names import CHECKOUT_ERRORS
from core.demo.repos import commit_behind_the_agents_back, replace_passage
from core.demo.repository_files import SHOPFRONT_FILES
from core.engine import CheckpointRequest
from core.models import Budget, CheckpointReason, NamedVersion


def build(demo: Demo) -> None:
    """Paused, then stale: a teammate's commit touched the same file on the task's branch."""
    repo = demo.start(
        CHECKOUT_ERRORS,
        demo.shopfront,
        "feat/checkout-error-messages",
        12,
        objective="Give checkout errors stable codes and messages the web shop can translate",
        harness=NamedVersion("gemini-cli", "0.9.0"),
        model=NamedVersion("gemini-2.5-pro"),
        budget=Budget(tokens=800_000, usd=8.0, minutes=120),
    )
    replace_passage(
        repo,
        "src/shopfront/app.py",
        '        abort(400, "the cart is empty")\n',
        '        return jsonify({"error": {"code": "cart.empty", '
        '"message": "The cart is empty."}}), 400\n',
    )
    demo.checkpoint(
        CHECKOUT_ERRORS,
        11,
        CheckpointRequest(
            reason=CheckpointReason.INTERRUPT,
            note="Paused: the error format needs the web team's sign-off",
            done=("List every checkout error", "Return cart.empty as a coded error"),
            todo=("Code the 404 for unknown SKUs", "Document the error codes"),
            tokens_used=122_000,
            usd_used=1.1,
        ),
    )
    commit_behind_the_agents_back(
        repo,
        "feat/checkout-error-messages",
        "src/shopfront/app.py",
        SHOPFRONT_FILES["src/shopfront/app.py"].replace(
            'abort(400, "the cart is empty")', 'abort(400, "Your cart is empty.")'
        ),
        "Friendlier empty-cart message (from the web team)",
        demo.ago(9),
    )
    with as_of(demo.ago(8.5)):
        demo.engine.validate(CHECKOUT_ERRORS, offline=True)  # stale: the branch moved
