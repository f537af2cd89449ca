"""Ready to resume (`rate-limit-checkout`): three milestones, a long build log, validated."""

from __future__ import annotations

from pathlib import Path

from core.demo.build_log import write_build_log
from core.demo.context import Demo, as_of
from core.demo.names import RATE_LIMIT
from core.demo.repos import git, replace_passage, write_file
from core.engine import CheckpointRequest
from core.models import Budget, CheckpointReason, NamedVersion


def build(demo: Demo) -> None:
    """Running: untracked new modules, then staged and unstaged edits across three milestones."""
    repo = demo.start(
        RATE_LIMIT,
        demo.shopfront,
        "feat/checkout-rate-limit",
        5,
        objective="Add per-user rate limiting to POST /checkout (10 per minute, 429 after)",
        harness=NamedVersion("claude-code", "2.0.14"),
        model=NamedVersion("claude-sonnet-4.5"),
        budget=Budget(tokens=2_000_000, usd=25.0, minutes=240),
    )
    _write_the_limiter(demo, repo)
    _wire_the_limiter_in(demo, repo)
    _finish_the_day(demo, repo)


def _write_the_limiter(demo: Demo, repo: Path) -> None:
    """A new, untracked module: the token bucket, not wired in yet."""
    write_file(
        repo,
        "src/shopfront/ratelimit.py",
        '"""A token bucket per user: `capacity` requests, refilled at `rate` per second."""\n\n'
        "import threading\nimport time\nfrom dataclasses import dataclass, field\n\n\n"
        "@dataclass\nclass Bucket:\n    tokens: float\n"
        "    updated: float = field(default_factory=time.monotonic)\n\n\n"
        "class RateLimiter:\n"
        "    def __init__(self, capacity: int = 10, per_seconds: float = 60.0) -> None:\n"
        "        self.capacity = capacity\n"
        "        self.rate = capacity / per_seconds\n"
        "        self._buckets: dict[str, Bucket] = {}\n"
        "        self._lock = threading.Lock()\n\n"
        "    def allow(self, key: str) -> bool:\n"
        "        now = time.monotonic()\n"
        "        with self._lock:\n"
        "            bucket = self._buckets.setdefault(key, Bucket(float(self.capacity), now))\n"
        "            refill = (now - bucket.updated) * self.rate\n"
        "            bucket.tokens = min(self.capacity, bucket.tokens + refill)\n"
        "            bucket.updated = now\n"
        "            if bucket.tokens < 1:\n"
        "                return False\n"
        "            bucket.tokens -= 1\n"
        "            return True\n",
    )
    demo.checkpoint(
        RATE_LIMIT,
        4.5,
        CheckpointRequest(
            reason=CheckpointReason.MILESTONE,
            note="Token bucket limiter written (not wired in yet)",
            done=("Read the checkout flow", "Write a token-bucket limiter"),
            todo=(
                "Wire the limiter into /checkout",
                "Tests for 429 responses",
                "Document the limit in README",
            ),
            tokens_used=310_000,
            usd_used=3.1,
        ),
    )


def _wire_the_limiter_in(demo: Demo, repo: Path) -> None:
    """The module staged, the route and its tests edited: the second milestone."""
    git(repo, "add", "src/shopfront/ratelimit.py", when=demo.ago(2))
    replace_passage(
        repo,
        "src/shopfront/app.py",
        "from shopfront import auth, cart, pricing\n\napp = Flask(__name__)\n",
        "from shopfront import auth, cart, pricing\nfrom shopfront.ratelimit import RateLimiter\n\n"
        "app = Flask(__name__)\ncheckout_limiter = RateLimiter(capacity=10, per_seconds=60)\n",
    )
    replace_passage(
        repo,
        "src/shopfront/app.py",
        "    user = auth.current_user(request)\n    items = cart.contents(user)\n",
        "    user = auth.current_user(request)\n"
        "    if not checkout_limiter.allow(user):\n"
        '        return jsonify({"error": "too many checkouts, try again in a minute"}), 429\n'
        "    items = cart.contents(user)\n",
    )
    write_file(
        repo,
        "tests/test_ratelimit.py",
        "from shopfront.ratelimit import RateLimiter\n\n\n"
        "def test_allows_up_to_capacity_then_refuses():\n"
        "    limiter = RateLimiter(capacity=3, per_seconds=60)\n"
        '    assert [limiter.allow("ana") for _ in range(4)] == [True, True, True, False]\n\n\n'
        "def test_users_have_separate_buckets():\n"
        "    limiter = RateLimiter(capacity=1, per_seconds=60)\n"
        '    assert limiter.allow("ana") and limiter.allow("ben")\n',
    )
    demo.checkpoint(
        RATE_LIMIT,
        2,
        CheckpointRequest(
            reason=CheckpointReason.MILESTONE,
            note="Limiter wired into /checkout; unit tests for the bucket",
            done=("Wire the limiter into /checkout",),
            tokens_used=905_000,
            usd_used=9.8,
        ),
    )


def _finish_the_day(demo: Demo, repo: Path) -> None:
    """The 429 test and README, the long build log as evidence, a pause, then validation."""
    replace_passage(
        repo,
        "README.md",
        "| POST | /checkout | price the cart and place the order |\n",
        "| POST | /checkout | price the cart and place the order (10 per minute per user, "
        "then 429) |\n",
    )
    replace_passage(
        repo,
        "tests/test_ratelimit.py",
        "def test_users_have_separate_buckets():\n",
        "def test_checkout_returns_429_when_limited(client, logged_in):\n"
        "    for _ in range(10):\n"
        '        client.post("/checkout", headers=logged_in)\n'
        '    assert client.post("/checkout", headers=logged_in).status_code == 429\n\n\n'
        "def test_users_have_separate_buckets():\n",
    )
    with as_of(demo.ago(0.4)):
        log = demo.repos / "build.log"
        write_build_log(log)
        demo.engine.add_evidence_file(
            RATE_LIMIT,
            log,
            command="uv build --wheel && uv run pytest -q",
            exit_code=0,
            duration_s=312.4,
            label="build",
        )
        log.unlink()
    demo.checkpoint(
        RATE_LIMIT,
        0.2,
        CheckpointRequest(
            reason=CheckpointReason.INTERRUPT,
            note="Paused at end of day: pytest 14 passed, build green; ready to resume",
            done=("Tests for 429 responses", "Document the limit in README"),
            todo=("Make the limit configurable per environment", "Open the PR"),
            tokens_used=1_310_000,
            usd_used=14.2,
        ),
    )
    with as_of(demo.ago(0.1)):
        demo.engine.validate(RATE_LIMIT, offline=True)  # ready
