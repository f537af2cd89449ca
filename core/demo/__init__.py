"""A realistic demo store: real git repositories, real edits, real checkpoints.

`pitstop demo`, the snapshot tests and the screenshots all start from this store, so it is built
through the same `Engine` API a harness uses: tasks are started, files are edited, staged,
deleted and left untracked in the demo repositories between checkpoints, and tasks are finished.
Given `PITSTOP_FROZEN_NOW` the result is the same on every run (git identities and dates are
fixed, and every moment is placed relative to that frozen "now"), which is what lets SVG snapshots
of the dashboard stay stable.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from core import clock
from core.engine import CheckpointRequest, Engine
from core.errors import ConflictError, GitError
from core.git.run import REPO_LOCATION_VARS
from core.models import (
    Budget,
    CheckpointReason,
    EffectState,
    Interface,
    NamedVersion,
    Risk,
    TaskStatus,
)

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

BUILD_LOG_LINES = 60_000  # about 4.5 MB: the evidence viewer must scroll it without loading it

# Credentials the demo tasks name; set to harmless demo values only while the demo is built so
# the manifests carry fingerprints without depending on the builder's own environment.
_DEMO_CREDENTIALS = {
    "SHOPFRONT_DEPLOY_TOKEN": "demo-deploy-token-not-a-secret",
    "INVOICER_DATABASE_URL": "postgresql://demo:demo@localhost:5432/invoicer_demo",
}

_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Dana Demo",
    "GIT_AUTHOR_EMAIL": "dana@shopfront.example",
    "GIT_COMMITTER_NAME": "Dana Demo",
    "GIT_COMMITTER_EMAIL": "dana@shopfront.example",
}


# --- the demo repositories' contents ---------------------------------------------------------

SHOPFRONT_FILES: dict[str, str] = {
    ".gitignore": "__pycache__/\n*.pyc\n.venv/\n.pytest_cache/\ndist/\n",
    "README.md": """\
# shopfront

A small storefront API: products, a cart, checkout, and session login.

```
uv sync
uv run flask --app shopfront.app run
uv run pytest
```

## Endpoints

| method | path | what |
| --- | --- | --- |
| GET | /products | the catalogue |
| POST | /cart/items | add an item to the session's cart |
| POST | /checkout | price the cart and place the order |
| POST | /login | start a session |
""",
    "pyproject.toml": """\
[project]
name = "shopfront"
version = "0.4.2"
requires-python = ">=3.11"
dependencies = [
    "flask>=3.0",
    "pyjwt>=2.8",
]

[dependency-groups]
dev = ["pytest>=8.2"]

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"
""",
    "uv.lock": """\
version = 1
requires-python = ">=3.11"

[[package]]
name = "blinker"
version = "1.8.2"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "click"
version = "8.1.7"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "flask"
version = "3.0.3"
source = { registry = "https://pypi.org/simple" }
dependencies = [
    { name = "blinker" },
    { name = "click" },
    { name = "itsdangerous" },
    { name = "jinja2" },
    { name = "werkzeug" },
]

[[package]]
name = "itsdangerous"
version = "2.2.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "jinja2"
version = "3.1.4"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "pyjwt"
version = "2.8.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "werkzeug"
version = "3.0.3"
source = { registry = "https://pypi.org/simple" }
""",
    "src/shopfront/__init__.py": (
        '"""shopfront: a small storefront API."""\n\n__version__ = "0.4.2"\n'
    ),
    "src/shopfront/app.py": """\
\"\"\"HTTP routes: thin wrappers around the cart, pricing and auth modules.\"\"\"

from flask import Flask, abort, jsonify, request

from shopfront import auth, cart, pricing

app = Flask(__name__)

CATALOGUE = {
    "mug": {"name": "Pit crew mug", "price": "12.50"},
    "cap": {"name": "Team cap", "price": "19.99"},
    "flag": {"name": "Chequered flag", "price": "7.25"},
}


@app.get("/products")
def products():
    return jsonify(CATALOGUE)


@app.post("/cart/items")
def add_item():
    user = auth.current_user(request)
    sku = request.json["sku"]
    if sku not in CATALOGUE:
        abort(404)
    cart.add(user, sku, int(request.json.get("quantity", 1)))
    return jsonify(cart.contents(user)), 201


@app.post("/checkout")
def checkout():
    user = auth.current_user(request)
    items = cart.contents(user)
    if not items:
        abort(400, "the cart is empty")
    total = pricing.total(items, CATALOGUE)
    cart.clear(user)
    return jsonify({"total": str(total), "items": items})


@app.post("/login")
def login():
    token = auth.issue_token(request.json["email"])
    return jsonify({"token": token})
""",
    "src/shopfront/cart.py": """\
\"\"\"In-memory carts keyed by user; good enough until the orders service lands.\"\"\"

from collections import defaultdict

_carts: dict[str, dict[str, int]] = defaultdict(dict)


def add(user: str, sku: str, quantity: int = 1) -> None:
    if quantity < 1:
        raise ValueError("quantity must be at least 1")
    _carts[user][sku] = _carts[user].get(sku, 0) + quantity


def contents(user: str) -> dict[str, int]:
    return dict(_carts[user])


def clear(user: str) -> None:
    _carts.pop(user, None)
""",
    "src/shopfront/pricing.py": """\
\"\"\"Cart totals, with VAT.\"\"\"

VAT_RATE = 0.2


def line_total(price: str, quantity: int) -> float:
    return float(price) * quantity


def total(items: dict[str, int], catalogue: dict[str, dict[str, str]]) -> float:
    subtotal = sum(line_total(catalogue[sku]["price"], qty) for sku, qty in items.items())
    return round(subtotal * (1 + VAT_RATE), 2)
""",
    "src/shopfront/auth.py": """\
\"\"\"Sessions as signed JWTs.\"\"\"

import os
import time

import jwt
from flask import abort

SECRET = os.environ.get("SHOPFRONT_SECRET", "dev-only-secret")
TTL_SECONDS = 3600


def issue_token(email: str) -> str:
    now = int(time.time())
    return jwt.encode({"sub": email, "iat": now, "exp": now + TTL_SECONDS}, SECRET, "HS256")


def current_user(request) -> str:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        abort(401)
    try:
        claims = jwt.decode(header.removeprefix("Bearer "), SECRET, algorithms=["HS256"])
    except jwt.PyJWTError:
        abort(401)
    return claims["sub"]
""",
    "tests/test_cart.py": """\
import pytest

from shopfront import cart


def test_add_accumulates():
    cart.clear("ana")
    cart.add("ana", "mug")
    cart.add("ana", "mug", 2)
    assert cart.contents("ana") == {"mug": 3}


def test_add_refuses_zero():
    with pytest.raises(ValueError):
        cart.add("ana", "mug", 0)
""",
    "tests/test_pricing.py": """\
from shopfront import pricing

CATALOGUE = {"mug": {"price": "12.50"}, "cap": {"price": "19.99"}}


def test_total_includes_vat():
    assert pricing.total({"mug": 2}, CATALOGUE) == 30.0
""",
}

SHOPFRONT_HISTORY = (
    (
        "Initial commit: products and cart",
        (
            "README.md",
            ".gitignore",
            "pyproject.toml",
            "uv.lock",
            "src/shopfront/__init__.py",
            "src/shopfront/cart.py",
            "tests/test_cart.py",
        ),
    ),
    ("Add pricing with VAT and checkout", ("src/shopfront/pricing.py", "tests/test_pricing.py")),
    ("Add JWT sessions and routes", ("src/shopfront/auth.py", "src/shopfront/app.py")),
)

INVOICER_FILES: dict[str, str] = {
    ".gitignore": "__pycache__/\n.venv/\n*.sqlite3\n",
    "README.md": """\
# invoicer

Issues invoices for shopfront orders and exports them for accounting.

```
uv sync
uv run invoicer migrate
uv run pytest
```
""",
    "pyproject.toml": """\
[project]
name = "invoicer"
version = "1.7.0"
requires-python = ">=3.11"
dependencies = [
    "sqlalchemy>=2.0.29",
    "psycopg[binary]>=3.1.18",
    "click>=8.1",
]

[dependency-groups]
dev = ["pytest>=8.1"]

[project.scripts]
invoicer = "invoicer.cli:main"
""",
    "uv.lock": """\
version = 1
requires-python = ">=3.11"

[[package]]
name = "click"
version = "8.1.7"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "psycopg"
version = "3.1.18"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "pytest"
version = "8.1.1"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "sqlalchemy"
version = "2.0.29"
source = { registry = "https://pypi.org/simple" }
""",
    "src/invoicer/__init__.py": '"""invoicer: invoices for shopfront orders."""\n',
    "src/invoicer/models.py": """\
\"\"\"The invoice tables.\"\"\"

from decimal import Decimal

from sqlalchemy import Numeric, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Invoice(Base):
    __tablename__ = "invoices"

    id: Mapped[int] = mapped_column(primary_key=True)
    order_ref: Mapped[str] = mapped_column(String(32), unique=True)
    customer_email: Mapped[str] = mapped_column(String(254))
    amount: Mapped[Decimal] = mapped_column(Numeric(12, 2))
""",
    "src/invoicer/export.py": """\
\"\"\"CSV export for the accountants.\"\"\"

import csv
from collections.abc import Iterable
from typing import TextIO

from invoicer.models import Invoice

COLUMNS = ("order_ref", "customer_email", "amount")


def write_csv(invoices: Iterable[Invoice], out: TextIO) -> int:
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    count = 0
    for invoice in invoices:
        writer.writerow([invoice.order_ref, invoice.customer_email, f"{invoice.amount:.2f}"])
        count += 1
    return count
""",
    "migrations/0001_create_invoices.sql": """\
CREATE TABLE invoices (
    id SERIAL PRIMARY KEY,
    order_ref VARCHAR(32) NOT NULL UNIQUE,
    customer_email VARCHAR(254) NOT NULL,
    amount NUMERIC(12, 2) NOT NULL
);
""",
    "scripts/legacy_import.py": """\
\"\"\"One-off import from the 2023 spreadsheet export. Superseded by the orders feed.\"\"\"

import csv
import sys

for row in csv.DictReader(open(sys.argv[1])):
    print(f"INSERT INTO invoices (order_ref, customer_email, amount) VALUES "
          f"('{row['ref']}', '{row['email']}', {row['total']});")
""",
    "tests/test_export.py": """\
import io
from decimal import Decimal

from invoicer.export import write_csv
from invoicer.models import Invoice


def test_write_csv_formats_amounts():
    out = io.StringIO()
    invoice = Invoice(order_ref="A-1", customer_email="a@x.test", amount=Decimal("5"))
    count = write_csv([invoice], out)
    assert count == 1
    assert out.getvalue().splitlines()[1] == "A-1,a@x.test,5.00"
""",
}

INVOICER_HISTORY = (
    (
        "Invoice model, first migration and CSV export",
        (
            "README.md",
            ".gitignore",
            "pyproject.toml",
            "uv.lock",
            "src/invoicer/__init__.py",
            "src/invoicer/models.py",
            "src/invoicer/export.py",
            "migrations/0001_create_invoices.sql",
            "tests/test_export.py",
        ),
    ),
    ("Keep the legacy spreadsheet import script", ("scripts/legacy_import.py",)),
)


# --- git in the demo repositories ----------------------------------------------------------


def _git_env(when: datetime) -> dict[str, str]:
    """A clean environment: no user or system config, a fixed identity and date."""
    env = {k: v for k, v in os.environ.items() if k not in REPO_LOCATION_VARS}
    stamp = f"@{int(when.timestamp())} +0000"
    env.update(_GIT_IDENTITY)
    env.update(
        {
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
            "LC_ALL": "C",
        }
    )
    return env


def _git(repo: Path, *args: str, when: datetime, extra_env: Mapping[str, str] | None = None) -> str:
    env = _git_env(when)
    env.update(extra_env or {})
    try:
        result = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=True)
    except subprocess.CalledProcessError as exc:
        detail = exc.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(
            f"building the demo failed: git {' '.join(args)} in {repo}: "
            f"{detail[-1] if detail else exc.returncode}"
        ) from exc
    return result.stdout.decode()


def _write(repo: Path, path: str, text: str) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def _replace(repo: Path, path: str, old: str, new: str) -> None:
    """Edit a file the way an agent does: replace one exact passage."""
    target = repo / path
    text = target.read_text(encoding="utf-8")
    if old not in text:
        raise ValueError(f"demo edit of {path} expected to find {old!r}")
    target.write_text(text.replace(old, new, 1), encoding="utf-8")


def _commit_behind_the_agents_back(
    repo: Path, branch: str, path: str, text: str, message: str, when: datetime
) -> None:
    """A teammate's commit lands on `branch` while the task is paused; the work tree is untouched.

    Plumbing only (a private index, commit-tree, update-ref), exactly what a push to the branch
    followed by a fetch into the agent's clone would leave: the branch moved, the files did not.
    """
    scratch = repo.parent / ".teammate"
    scratch.mkdir(exist_ok=True)
    content = scratch / "blob"
    content.write_text(text, encoding="utf-8")
    index = {"GIT_INDEX_FILE": str(scratch / "index")}
    blob = _git(repo, "hash-object", "-w", str(content), when=when).strip()
    _git(repo, "read-tree", branch, when=when, extra_env=index)
    _git(
        repo,
        "update-index",
        "--add",
        "--cacheinfo",
        f"100644,{blob},{path}",
        when=when,
        extra_env=index,
    )
    tree = _git(repo, "write-tree", when=when, extra_env=index).strip()
    parent = _git(repo, "rev-parse", branch, when=when).strip()
    commit = _git(repo, "commit-tree", tree, "-p", parent, "-m", message, when=when).strip()
    _git(repo, "update-ref", f"refs/heads/{branch}", commit, parent, when=when)
    shutil.rmtree(scratch)


def _build_log(path: Path, lines: int = BUILD_LOG_LINES) -> None:
    """A long, deterministic build log: compile steps, a few warnings, then success."""
    modules = ("app", "cart", "pricing", "auth", "ratelimit", "catalogue", "orders", "vat")
    with path.open("w", encoding="utf-8") as log:
        log.write("$ uv build --wheel && uv run pytest -q\nResolved 14 packages in 212ms\n")
        for step in range(1, lines + 1):
            module = modules[step % len(modules)]
            elapsed = step * 0.0052
            if step % 9973 == 0:
                log.write(
                    f"[{elapsed:9.3f}s] warning: shopfront/{module}.py:{step % 400 + 1}: "
                    "datetime.utcnow() is deprecated; use datetime.now(UTC)\n"
                )
            log.write(
                f"[{elapsed:9.3f}s] [{step:>6}/{lines}] compiling shopfront/{module}.py "
                f"chunk {step:06x} -> build/lib/shopfront/{module}.cpython-312.pyc ok\n"
            )
        log.write("Successfully built dist/shopfront-0.4.2-py3-none-any.whl\n14 passed in 0.48s\n")


def _make_origin(
    root: Path,
    name: str,
    files: Mapping[str, str],
    history: tuple[tuple[str, tuple[str, ...]], ...],
    first_commit_at: datetime,
) -> Path:
    """Create a repository whose history is the same on every run."""
    repo = root / name
    repo.mkdir(parents=True)
    _git(repo, "init", "--quiet", "--initial-branch=main", when=first_commit_at)
    for step, (message, paths) in enumerate(history):
        when = first_commit_at + timedelta(days=step, hours=step * 3)
        for path in paths:
            _write(repo, path, files[path])
        _git(repo, "add", "--", *paths, when=when)
        _git(repo, "commit", "--quiet", "-m", message, when=when)
    return repo


def _clone_for_task(origin: Path, root: Path, task_id: str, branch: str, when: datetime) -> Path:
    """The agent's own clone of the repository, on its own branch."""
    clone = root / "agents" / task_id / origin.name
    clone.parent.mkdir(parents=True)
    _git(root, "clone", "--quiet", str(origin), str(clone), when=when)
    _git(clone, "checkout", "--quiet", "-b", branch, when=when)
    return clone


# --- moments in the demo's history -----------------------------------------------------------


@contextmanager
def _at(moment: datetime) -> Iterator[None]:
    """Run engine calls as if at `moment`, by pinning the clock the engine reads."""
    previous = os.environ.get(clock.FROZEN_NOW_ENV)
    os.environ[clock.FROZEN_NOW_ENV] = clock.to_iso(moment)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(clock.FROZEN_NOW_ENV, None)
        else:
            os.environ[clock.FROZEN_NOW_ENV] = previous


@contextmanager
def _demo_credentials() -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in _DEMO_CREDENTIALS}
    os.environ.update(_DEMO_CREDENTIALS)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass(frozen=True)
class _Demo:
    """What each task builder needs: the engine, where repos go, and the clock's anchor."""

    engine: Engine
    repos: Path
    shopfront: Path
    invoicer: Path
    now: datetime

    def ago(self, hours: float) -> datetime:
        return self.now - timedelta(hours=hours)

    def checkpoint(self, task_id: str, hours_ago: float, request: CheckpointRequest) -> None:
        with _at(self.ago(hours_ago)):
            result = self.engine.checkpoint(task_id, request)
        if result.checkpoint is None:
            raise ConflictError(
                f"building the demo: checkpoint of {task_id} skipped ({result.skipped})"
            )

    def run_pytest(self, task_id: str, repo: Path, *tests: str) -> None:
        """Run the repository's own tests for real and record what they printed as evidence."""
        import importlib.util

        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
        if importlib.util.find_spec("pytest") is None:  # an install without the test extra
            argv = [sys.executable, "-c", "import shopfront.pricing, shopfront.cart"]
        saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = str(repo / "src")
        try:
            with open(os.devnull, "wb") as quiet:
                self.engine.run_command(
                    task_id,
                    argv,
                    label="pytest",
                    cwd=repo,
                    out_fd=quiet.fileno(),
                    err_fd=quiet.fileno(),
                    use_pty=False,
                    timeout=120,
                )
        finally:
            if saved is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = saved


# --- the tasks -----------------------------------------------------------------------------


def _signed_cookies(demo: _Demo) -> None:
    """Cancelled: a rewrite the reviewers rejected; a `.env` file is left out of the snapshot."""
    started = demo.ago(50)
    repo = _clone_for_task(
        demo.shopfront, demo.repos, SIGNED_COOKIES, "agent/signed-cookies", started
    )
    with _at(started):
        demo.engine.start_task(
            repo=repo,
            task_id=SIGNED_COOKIES,
            objective="Replace JWT bearer tokens with signed, HTTP-only session cookies",
            harness=NamedVersion("gemini-cli", "0.9.0"),
            model=NamedVersion("gemini-2.5-pro"),
            budget=Budget(tokens=1_000_000, usd=10.0, minutes=180),
            credentials=("SHOPFRONT_DEPLOY_TOKEN",),
        )
    _replace(
        repo,
        "src/shopfront/auth.py",
        '"""Sessions as signed JWTs."""\n\n'
        "import os\nimport time\n\nimport jwt\nfrom flask import abort\n",
        '"""Sessions as signed, HTTP-only cookies."""\n\nimport os\n\n'
        "from flask import abort\nfrom itsdangerous import BadSignature, URLSafeTimedSerializer\n",
    )
    _replace(
        repo,
        "src/shopfront/auth.py",
        "def issue_token(email: str) -> str:\n"
        "    now = int(time.time())\n"
        '    return jwt.encode({"sub": email, "iat": now, "exp": now + TTL_SECONDS}, '
        'SECRET, "HS256")\n',
        '_serializer = URLSafeTimedSerializer(SECRET, salt="session")\n\n\n'
        "def issue_token(email: str) -> str:\n"
        '    return _serializer.dumps({"sub": email})\n',
    )
    _write(
        repo,
        ".env",
        "SHOPFRONT_SECRET=9f1c2e7a4b6d8e0f1a3c5e7b9d1f3a5c\nSESSION_COOKIE_SECURE=1\n",
    )
    demo.checkpoint(
        SIGNED_COOKIES,
        49,
        CheckpointRequest(
            reason=CheckpointReason.MILESTONE,
            note="Cookie serializer in place; routes still read the Authorization header",
            done=("Survey current JWT flow", "Swap jwt for itsdangerous serializer"),
            todo=("Set the cookie in /login", "Read the cookie in current_user", "Update tests"),
            tokens_used=212_000,
            usd_used=1.85,
        ),
    )
    _replace(
        repo,
        "src/shopfront/app.py",
        '    token = auth.issue_token(request.json["email"])\n'
        '    return jsonify({"token": token})\n',
        '    response = jsonify({"ok": True})\n'
        '    response.set_cookie("session", auth.issue_token(request.json["email"]),\n'
        '                        httponly=True, secure=True, samesite="Lax")\n'
        "    return response\n",
    )
    demo.checkpoint(
        SIGNED_COOKIES,
        47,
        CheckpointRequest(
            reason=CheckpointReason.MANUAL,
            note="Checkpoint before review: mobile clients still send bearer tokens",
            done=("Set the cookie in /login",),
            tokens_used=388_000,
            usd_used=3.4,
        ),
    )
    with _at(demo.ago(46)):
        demo.engine.finish_task(
            SIGNED_COOKIES,
            TaskStatus.CANCELLED,
            "Rejected in review: the mobile app needs bearer tokens; rotate JWT keys instead",
        )


def _cart_rounding(demo: _Demo) -> None:
    """Done: a small fix with money as Decimal and a regression test."""
    started = demo.ago(30)
    repo = _clone_for_task(demo.shopfront, demo.repos, CART_ROUNDING, "fix/cart-rounding", started)
    with _at(started):
        demo.engine.start_task(
            repo=repo,
            task_id=CART_ROUNDING,
            objective="Fix checkout totals that are off by a cent (use Decimal, round half up)",
            harness=NamedVersion("codex", "0.46.0"),
            model=NamedVersion("gpt-5-codex"),
            budget=Budget(tokens=500_000, usd=5.0, minutes=60),
        )
    _write(
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
    _replace(
        repo,
        "tests/test_pricing.py",
        "from shopfront import pricing\n",
        "from decimal import Decimal\n\nfrom shopfront import pricing\n",
    )
    _replace(
        repo,
        "tests/test_pricing.py",
        '    assert pricing.total({"mug": 2}, CATALOGUE) == 30.0\n',
        '    assert pricing.total({"mug": 2}, CATALOGUE) == Decimal("30.00")\n\n\n'
        "def test_total_rounds_half_up_to_the_cent():\n"
        '    assert pricing.total({"cap": 3}, CATALOGUE) == Decimal("71.96")\n',
    )
    _git(repo, "add", "src/shopfront/pricing.py", "tests/test_pricing.py", when=demo.ago(29))
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
    with _at(demo.ago(28.8)):
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
    with _at(demo.ago(28.5)):
        demo.engine.finish_task(CART_ROUNDING, TaskStatus.DONE, "Merged as shopfront#212")


def _interrupted_writer(demo: _Demo, task_id: str, hours_ago: float, note: str) -> None:
    """A harness killed (SIGKILL) while it was writing a checkpoint: a real incomplete one.

    The child process dies at the moment the checkpoint commit would be written, after the
    checkpoint was recorded as `writing`; the store must then show it as incomplete.
    """
    script = (
        "import os, signal, sys\n"
        "from core import snapshot\n"
        "from core.engine import CheckpointRequest, Engine\n"
        "from core.models import CheckpointReason, Interface\n"
        "def killed(*args, **kwargs):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "snapshot.write_checkpoint_commit = killed\n"
        "engine = Engine(sys.argv[1], interface=Interface.API, actor=sys.argv[4])\n"
        "engine.checkpoint(sys.argv[2], CheckpointRequest(reason=CheckpointReason.MILESTONE, "
        "note=sys.argv[3]))\n"
    )
    env = dict(os.environ)
    env[clock.FROZEN_NOW_ENV] = clock.to_iso(demo.ago(hours_ago))
    project_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (project_root, env.get("PYTHONPATH"))))
    result = subprocess.run(
        [sys.executable, "-c", script, str(demo.engine.paths.root), task_id, note, DEMO_ACTOR],
        env=env,
        capture_output=True,
    )
    if result.returncode != -signal.SIGKILL:
        raise ConflictError(
            "building the demo: the interrupted checkpoint writer ended with "
            f"{result.returncode}: {result.stderr.decode(errors='replace').strip()[-300:]}"
        )


def _bump_dependencies(demo: _Demo) -> None:
    """Paused: lockfile changes, a writer killed mid-checkpoint, then an operator interrupt."""
    started = demo.ago(26)
    repo = _clone_for_task(demo.invoicer, demo.repos, BUMP_DEPENDENCIES, "chore/bump-deps", started)
    with _at(started):
        demo.engine.start_task(
            repo=repo,
            task_id=BUMP_DEPENDENCIES,
            objective="Bump SQLAlchemy to 2.0.36 and psycopg to 3.2 and fix what breaks",
            harness=NamedVersion("codex", "0.46.0"),
            model=NamedVersion("gpt-5-codex"),
            budget=Budget(tokens=300_000, usd=4.0, minutes=90),
        )
    _replace(repo, "pyproject.toml", '"sqlalchemy>=2.0.29"', '"sqlalchemy>=2.0.36"')
    _replace(repo, "pyproject.toml", '"psycopg[binary]>=3.1.18"', '"psycopg[binary]>=3.2.3"')
    _replace(
        repo,
        "uv.lock",
        'name = "sqlalchemy"\nversion = "2.0.29"',
        'name = "sqlalchemy"\nversion = "2.0.36"',
    )
    _replace(
        repo,
        "uv.lock",
        'name = "psycopg"\nversion = "3.1.18"',
        'name = "psycopg"\nversion = "3.2.3"',
    )
    demo.checkpoint(
        BUMP_DEPENDENCIES,
        25,
        CheckpointRequest(
            reason=CheckpointReason.MILESTONE,
            note="uv lock --upgrade-package sqlalchemy --upgrade-package psycopg",
            done=("Upgrade the lockfile",),
            todo=("Run the test suite", "Fix deprecation warnings", "Open the PR"),
            tokens_used=58_000,
            usd_used=0.41,
        ),
    )
    _replace(
        repo,
        "src/invoicer/models.py",
        "from sqlalchemy import Numeric, String\n",
        "from sqlalchemy import Numeric, String, UniqueConstraint\n",
    )
    _interrupted_writer(demo, BUMP_DEPENDENCIES, 24.5, "Tests green on SQLAlchemy 2.0.36")
    demo.checkpoint(
        BUMP_DEPENDENCIES,
        24,
        CheckpointRequest(
            reason=CheckpointReason.INTERRUPT,
            note="Interrupted by the operator (ctrl-c) during the full test run",
            done=("Run the test suite",),
            tokens_used=131_000,
            usd_used=0.97,
        ),
    )


def _invoice_currency(demo: _Demo) -> None:
    """Waiting: a database migration that needs an approval before it touches staging."""
    started = demo.ago(7)
    repo = _clone_for_task(
        demo.invoicer, demo.repos, INVOICE_CURRENCY, "feat/invoice-currency", started
    )
    with _at(started):
        demo.engine.start_task(
            repo=repo,
            task_id=INVOICE_CURRENCY,
            objective="Add a currency column to invoices, backfill EUR, and export it to CSV",
            harness=NamedVersion("claude-code", "2.0.14"),
            model=NamedVersion("claude-opus-4.1"),
            budget=Budget(tokens=3_000_000, usd=40.0, minutes=480),
            credentials=("INVOICER_DATABASE_URL",),
        )
    _write(
        repo,
        "migrations/0002_add_currency.sql",
        "ALTER TABLE invoices ADD COLUMN currency CHAR(3);\n"
        "UPDATE invoices SET currency = 'EUR' WHERE currency IS NULL;\n"
        "ALTER TABLE invoices ALTER COLUMN currency SET NOT NULL;\n",
    )
    _replace(
        repo,
        "src/invoicer/models.py",
        "    amount: Mapped[Decimal] = mapped_column(Numeric(12, 2))\n",
        "    amount: Mapped[Decimal] = mapped_column(Numeric(12, 2))\n"
        '    currency: Mapped[str] = mapped_column(String(3), default="EUR")\n',
    )
    _git(repo, "add", "src/invoicer/models.py", when=demo.ago(6))
    demo.checkpoint(
        INVOICE_CURRENCY,
        6,
        CheckpointRequest(
            reason=CheckpointReason.MILESTONE,
            note="Model and migration 0002 written; migration applied to the local database",
            done=("Add currency to the Invoice model", "Write migration 0002 with EUR backfill"),
            todo=(
                "Export currency in CSV",
                "Remove the superseded legacy import",
                "Apply 0002 to staging (needs approval)",
            ),
            tokens_used=740_000,
            usd_used=9.6,
        ),
    )
    _replace(
        repo,
        "src/invoicer/export.py",
        'COLUMNS = ("order_ref", "customer_email", "amount")',
        'COLUMNS = ("order_ref", "customer_email", "amount", "currency")',
    )
    _replace(
        repo,
        "src/invoicer/export.py",
        'f"{invoice.amount:.2f}"])',
        'f"{invoice.amount:.2f}",\n                         invoice.currency])',
    )
    _git(repo, "rm", "--quiet", "scripts/legacy_import.py", when=demo.ago(4))
    demo.checkpoint(
        INVOICE_CURRENCY,
        4,
        CheckpointRequest(
            reason=CheckpointReason.MILESTONE,
            note="pytest: 9 passed; legacy import removed (it wrote SQL by string formatting)",
            done=("Export currency in CSV", "Remove the superseded legacy import"),
            tokens_used=1_380_000,
            usd_used=17.25,
        ),
    )
    _replace(
        repo,
        "README.md",
        "uv run pytest\n```\n",
        "uv run pytest\n```\n\n"
        "Invoices carry an ISO 4217 `currency`; rows from before 0002 are EUR.\n",
    )
    demo.checkpoint(
        INVOICE_CURRENCY,
        3.2,
        CheckpointRequest(
            reason=CheckpointReason.BEFORE_WAIT,
            note="Waiting for approval to apply migration 0002 to the staging database",
            todo=(
                "Apply 0002 to staging (needs approval)",
                "Verify staging row counts",
                "Open the PR",
            ),
            tokens_used=1_520_000,
            usd_used=19.1,
        ),
    )
    with _at(demo.ago(3.1)):
        demo.engine.propose_effect(
            INVOICE_CURRENCY,
            STAGING_MIGRATION_KEY,
            "db-migration",
            target="invoicer staging database",
            check="psql \"$INVOICER_DATABASE_URL\" -c '\\d invoices' | grep -q currency",
            needs_approval=True,
        )
        demo.engine.request_approval(
            INVOICE_CURRENCY,
            "Apply migration 0002 to the staging database: adds invoices.currency, backfills "
            "'EUR' into 48,210 rows and makes the column NOT NULL (takes a table lock)",
            effect_key=STAGING_MIGRATION_KEY,
            risk=Risk.HIGH,
        )


def _rate_limit(demo: _Demo) -> None:
    """Running: untracked new modules, then staged and unstaged edits across three milestones."""
    started = demo.ago(5)
    repo = _clone_for_task(
        demo.shopfront, demo.repos, RATE_LIMIT, "feat/checkout-rate-limit", started
    )
    with _at(started):
        demo.engine.start_task(
            repo=repo,
            task_id=RATE_LIMIT,
            objective="Add per-user rate limiting to POST /checkout (10 per minute, 429 after)",
            harness=NamedVersion("claude-code", "2.0.14"),
            model=NamedVersion("claude-sonnet-4.5"),
            budget=Budget(tokens=2_000_000, usd=25.0, minutes=240),
        )
    _write(
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
    _git(repo, "add", "src/shopfront/ratelimit.py", when=demo.ago(2))
    _replace(
        repo,
        "src/shopfront/app.py",
        "from shopfront import auth, cart, pricing\n\napp = Flask(__name__)\n",
        "from shopfront import auth, cart, pricing\nfrom shopfront.ratelimit import RateLimiter\n\n"
        "app = Flask(__name__)\ncheckout_limiter = RateLimiter(capacity=10, per_seconds=60)\n",
    )
    _replace(
        repo,
        "src/shopfront/app.py",
        "    user = auth.current_user(request)\n    items = cart.contents(user)\n",
        "    user = auth.current_user(request)\n"
        "    if not checkout_limiter.allow(user):\n"
        '        return jsonify({"error": "too many checkouts, try again in a minute"}), 429\n'
        "    items = cart.contents(user)\n",
    )
    _write(
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
    _replace(
        repo,
        "README.md",
        "| POST | /checkout | price the cart and place the order |\n",
        "| POST | /checkout | price the cart and place the order (10 per minute per user, "
        "then 429) |\n",
    )
    _replace(
        repo,
        "tests/test_ratelimit.py",
        "def test_users_have_separate_buckets():\n",
        "def test_checkout_returns_429_when_limited(client, logged_in):\n"
        "    for _ in range(10):\n"
        '        client.post("/checkout", headers=logged_in)\n'
        '    assert client.post("/checkout", headers=logged_in).status_code == 429\n\n\n'
        "def test_users_have_separate_buckets():\n",
    )
    with _at(demo.ago(0.4)):
        log = demo.repos / "build.log"
        _build_log(log)
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
    with _at(demo.ago(0.1)):
        demo.engine.validate(RATE_LIMIT, offline=True)  # ready


def _checkout_errors(demo: _Demo) -> None:
    """Paused, then stale: a teammate's commit touched the same file on the task's branch."""
    started = demo.ago(12)
    repo = _clone_for_task(
        demo.shopfront, demo.repos, CHECKOUT_ERRORS, "feat/checkout-error-messages", started
    )
    with _at(started):
        demo.engine.start_task(
            repo=repo,
            task_id=CHECKOUT_ERRORS,
            objective="Give checkout errors stable codes and messages the web shop can translate",
            harness=NamedVersion("gemini-cli", "0.9.0"),
            model=NamedVersion("gemini-2.5-pro"),
            budget=Budget(tokens=800_000, usd=8.0, minutes=120),
        )
    _replace(
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
    _commit_behind_the_agents_back(
        repo,
        "feat/checkout-error-messages",
        "src/shopfront/app.py",
        SHOPFRONT_FILES["src/shopfront/app.py"].replace(
            'abort(400, "the cart is empty")', 'abort(400, "Your cart is empty.")'
        ),
        "Friendlier empty-cart message (from the web team)",
        demo.ago(9),
    )
    with _at(demo.ago(8.5)):
        demo.engine.validate(CHECKOUT_ERRORS, offline=True)  # stale: the branch moved


def _release(demo: _Demo) -> None:
    """Running: a tag confirmed under its key, then a production deploy nobody knows finished."""
    started = demo.ago(1.5)
    repo = _clone_for_task(demo.shopfront, demo.repos, RELEASE, "release/0.5.0", started)
    with _at(started):
        demo.engine.start_task(
            repo=repo,
            task_id=RELEASE,
            objective="Release shopfront 0.5.0 and deploy it to production",
            harness=NamedVersion("claude-code", "2.0.14"),
            model=NamedVersion("claude-sonnet-4.5"),
            budget=Budget(tokens=400_000, usd=5.0, minutes=60),
            credentials=("SHOPFRONT_DEPLOY_TOKEN",),
        )
    _replace(repo, "pyproject.toml", 'version = "0.4.2"', 'version = "0.5.0"')
    _replace(repo, "src/shopfront/__init__.py", '"0.4.2"', '"0.5.0"')
    _write(
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
    with _at(demo.ago(1.1)):
        demo.engine.propose_effect(RELEASE, RELEASE_TAG_KEY, "git-tag", target="origin v0.5.0")
        demo.engine.move_effect(RELEASE, RELEASE_TAG_KEY, EffectState.IN_PROGRESS)
        demo.engine.move_effect(
            RELEASE, RELEASE_TAG_KEY, EffectState.CONFIRMED, note="pushed tag v0.5.0 (9c1e2f4)"
        )
    with _at(demo.ago(1.0)):
        demo.engine.propose_effect(
            RELEASE,
            DEPLOY_KEY,
            "deploy",
            target="production (eu-west-1, 6 instances)",
            check="curl -fsS https://shopfront.example/version | grep -qx 0.5.0",
        )
        demo.engine.move_effect(RELEASE, DEPLOY_KEY, EffectState.IN_PROGRESS)
    with _at(demo.ago(0.8)):
        demo.engine.move_effect(
            RELEASE,
            DEPLOY_KEY,
            EffectState.UNCERTAIN,
            note="the deploy command lost its connection after 600 s; the rollout may have "
            "finished on some instances",
        )
    with _at(demo.ago(0.7)):
        demo.engine.validate(RELEASE, offline=True)  # blocked: the deploy is unsettled


_BUILDERS = (
    _signed_cookies,
    _cart_rounding,
    _bump_dependencies,
    _invoice_currency,
    _checkout_errors,
    _rate_limit,
    _release,
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
        demo = _Demo(
            engine=engine,
            repos=repos,
            shopfront=_make_origin(
                repos, SHOPFRONT, SHOPFRONT_FILES, SHOPFRONT_HISTORY, now - timedelta(days=12)
            ),
            invoicer=_make_origin(
                repos, INVOICER, INVOICER_FILES, INVOICER_HISTORY, now - timedelta(days=9)
            ),
            now=now,
        )
        with _demo_credentials():
            for build in _BUILDERS:
                build(demo)
    return list(DEMO_TASK_IDS)
