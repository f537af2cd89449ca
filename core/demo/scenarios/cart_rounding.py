"""The finished task (`fix-cart-rounding`): real test evidence and a confirmed pull request."""

from __future__ import annotations

from pathlib import Path

from core.demo.context import Demo, as_of
from core.demo.names import CART_ROUNDING, PR_KEY
from core.demo.repos import git, replace_passage, write_file
from core.engine import CheckpointRequest
from core.models import Budget, CheckpointReason, EffectState, NamedVersion, TaskStatus


def build(demo: Demo) -> None:
    """Done: a small fix with money as Decimal and a regression test."""
    repo = demo.start(
        CART_ROUNDING,
        demo.shopfront,
        "fix/cart-rounding",
        30,
        objective="Fix checkout totals that are off by a cent (use Decimal, round half up)",
        harness=NamedVersion("codex", "0.46.0"),
        model=NamedVersion("gpt-5-codex"),
        budget=Budget(tokens=500_000, usd=5.0, minutes=60),
    )
    _switch_pricing_to_decimal(demo, repo)
    _add_the_regression_test(demo, repo)
    _open_the_pull_request(demo, repo)


def _switch_pricing_to_decimal(demo: Demo, repo: Path) -> None:
    """Pricing rewritten in exact decimals, before its tests follow."""
    write_file(
        repo,
        "src/shopfront/pricing.py",
        '"""Cart totals, with VAT, in exact decimal arithmetic."""\n\n'
        "from decimal import ROUND_HALF_UP, Decimal\n\n"
        'VAT_RATE = Decimal("0.20")\nCENT = Decimal("0.01")\n\n\n'
        "def line_total(price: str, quantity: int) -> Decimal:\n"
        "    return Decimal(price) * quantity\n\n\n"
        "def total(items: dict[str, int], catalogue: dict[str, dict[str, str]]) -> Decimal:\n"
        '    lines = (line_total(catalogue[sku]["price"], qty) for sku, qty in items.items())\n'
        '    subtotal = sum(lines, Decimal("0"))\n'
        "    return (subtotal * (1 + VAT_RATE)).quantize(CENT, rounding=ROUND_HALF_UP)\n",
    )
    demo.checkpoint(
        CART_ROUNDING,
        29.5,
        CheckpointRequest(
            reason=CheckpointReason.MANUAL,
            note="Pricing moved to Decimal; tests not yet updated",
            done=("Reproduce the off-by-one-cent total (3 x 19.99)", "Switch pricing to Decimal"),
            todo=("Regression test for 3 x 19.99", "Run the suite"),
            tokens_used=96_000,
            usd_used=0.62,
        ),
    )


def _add_the_regression_test(demo: Demo, repo: Path) -> None:
    """The regression test for 3 x 19.99, staged with the fix: the suite passes."""
    replace_passage(
        repo,
        "tests/test_pricing.py",
        "from shopfront import pricing\n",
        "from decimal import Decimal\n\nfrom shopfront import pricing\n",
    )
    replace_passage(
        repo,
        "tests/test_pricing.py",
        '    assert pricing.total({"mug": 2}, CATALOGUE) == 30.0\n',
        '    assert pricing.total({"mug": 2}, CATALOGUE) == Decimal("30.00")\n\n\n'
        "def test_total_rounds_half_up_to_the_cent():\n"
        '    assert pricing.total({"cap": 3}, CATALOGUE) == Decimal("71.96")\n',
    )
    git(repo, "add", "src/shopfront/pricing.py", "tests/test_pricing.py", when=demo.ago(29))
    demo.checkpoint(
        CART_ROUNDING,
        29,
        CheckpointRequest(
            reason=CheckpointReason.MILESTONE,
            note="pytest: 4 passed in 0.21s",
            done=("Regression test for 3 x 19.99", "Run the suite"),
            todo=(),
            tokens_used=141_000,
            usd_used=0.93,
        ),
    )


def _open_the_pull_request(demo: Demo, repo: Path) -> None:
    """The tests run for real, the pull request opened under its key, the task done."""
    with as_of(demo.ago(28.8)):
        demo.run_pytest(CART_ROUNDING, repo, "tests/test_pricing.py", "tests/test_cart.py")
        demo.engine.propose_effect(
            CART_ROUNDING, PR_KEY, "pull-request", target="github.com/shopfront/shopfront"
        )
        demo.engine.move_effect(CART_ROUNDING, PR_KEY, EffectState.IN_PROGRESS)
        demo.engine.move_effect(
            CART_ROUNDING,
            PR_KEY,
            EffectState.CONFIRMED,
            note="opened shopfront#212",
            reason="gh pr create printed the PR URL",
        )
    with as_of(demo.ago(28.5)):
        demo.engine.finish_task(CART_ROUNDING, TaskStatus.DONE, "Merged as shopfront#212")
