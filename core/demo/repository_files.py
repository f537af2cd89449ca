"""The demo repositories' contents: every file of `shopfront` and `invoicer`, and their histories.

Data only (a table of file texts and the commits that add them), kept out of the builders so a
scenario reads as what the agent did, not as what the repository held before it started.
"""

from __future__ import annotations

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
