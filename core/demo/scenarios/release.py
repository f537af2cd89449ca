"""The uncertain deploy (`release-shopfront-0-5`): a production deploy nobody knows finished."""

from __future__ import annotations

from core.demo.context import Demo, as_of
from core.demo.names import DEPLOY_KEY, RELEASE, RELEASE_TAG_KEY
from core.demo.repos import replace_passage, write_file
from core.engine import CheckpointRequest
from core.models import Budget, CheckpointReason, EffectState, NamedVersion


def build(demo: Demo) -> None:
    """Running: a tag confirmed under its key, then a production deploy nobody knows finished."""
    repo = demo.start(
        RELEASE,
        demo.shopfront,
        "release/0.5.0",
        1.5,
        objective="Release shopfront 0.5.0 and deploy it to production",
        harness=NamedVersion("claude-code", "2.0.14"),
        model=NamedVersion("claude-sonnet-4.5"),
        budget=Budget(tokens=400_000, usd=5.0, minutes=60),
        credentials=("SHOPFRONT_DEPLOY_TOKEN",),
    )
    replace_passage(repo, "pyproject.toml", 'version = "0.4.2"', 'version = "0.5.0"')
    replace_passage(repo, "src/shopfront/__init__.py", '"0.4.2"', '"0.5.0"')
    write_file(
        repo,
        "CHANGELOG.md",
        "# Changelog\n\n## 0.5.0\n\n- Checkout totals in exact decimals (#212)\n"
        "- Per-user checkout rate limit: 10 a minute, then 429\n",
    )
    demo.checkpoint(
        RELEASE,
        1.2,
        CheckpointRequest(
            reason=CheckpointReason.MILESTONE,
            note="Version 0.5.0 and changelog ready; tagging and deploying next",
            done=("Bump the version", "Write the changelog"),
            todo=("Tag v0.5.0", "Deploy to production", "Smoke-test /products"),
            tokens_used=64_000,
            usd_used=0.7,
        ),
    )
    with as_of(demo.ago(1.1)):
        demo.engine.propose_effect(RELEASE, RELEASE_TAG_KEY, "git-tag", target="origin v0.5.0")
        demo.engine.move_effect(RELEASE, RELEASE_TAG_KEY, EffectState.IN_PROGRESS)
        demo.engine.move_effect(
            RELEASE, RELEASE_TAG_KEY, EffectState.CONFIRMED, note="pushed tag v0.5.0 (9c1e2f4)"
        )
    with as_of(demo.ago(1.0)):
        demo.engine.propose_effect(
            RELEASE,
            DEPLOY_KEY,
            "deploy",
            target="production (eu-west-1, 6 instances)",
            check="curl -fsS https://shopfront.example/version | grep -qx 0.5.0",
        )
        demo.engine.move_effect(RELEASE, DEPLOY_KEY, EffectState.IN_PROGRESS)
    with as_of(demo.ago(0.8)):
        demo.engine.move_effect(
            RELEASE,
            DEPLOY_KEY,
            EffectState.UNCERTAIN,
            note="the deploy command lost its connection after 600 s; the rollout may have "
            "finished on some instances",
        )
    with as_of(demo.ago(0.7)):
        demo.engine.validate(RELEASE, offline=True)  # blocked: the deploy is unsettled
