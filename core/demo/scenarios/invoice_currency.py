"""Waiting on a high-risk approval (`invoice-currency-migration`) before a staging migration."""

from __future__ import annotations

from pathlib import Path

from core.demo.context import Demo, as_of
from core.demo.names import INVOICE_CURRENCY, STAGING_MIGRATION_KEY
from core.demo.repos import git, replace_passage, write_file
from core.engine import CheckpointRequest
from core.models import Budget, CheckpointReason, NamedVersion, Risk


def build(demo: Demo) -> None:
    """Waiting: a database migration that needs an approval before it touches staging."""
    repo = demo.start(
        INVOICE_CURRENCY,
        demo.invoicer,
        "feat/invoice-currency",
        7,
        objective="Add a currency column to invoices, backfill EUR, and export it to CSV",
        harness=NamedVersion("claude-code", "2.0.14"),
        model=NamedVersion("claude-opus-4.1"),
        budget=Budget(tokens=3_000_000, usd=40.0, minutes=480),
        credentials=("INVOICER_DATABASE_URL",),
    )
    _add_the_currency_column(demo, repo)
    _export_the_currency(demo, repo)
    _pause_before_staging(demo, repo)
    _ask_to_migrate_staging(demo, repo)


def _add_the_currency_column(demo: Demo, repo: Path) -> None:
    """The model and migration 0002, applied locally: the first milestone."""
    write_file(
        repo,
        "migrations/0002_add_currency.sql",
        "ALTER TABLE invoices ADD COLUMN currency CHAR(3);\n"
        "UPDATE invoices SET currency = 'EUR' WHERE currency IS NULL;\n"
        "ALTER TABLE invoices ALTER COLUMN currency SET NOT NULL;\n",
    )
    replace_passage(
        repo,
        "src/invoicer/models.py",
        "    amount: Mapped[Decimal] = mapped_column(Numeric(12, 2))\n",
        "    amount: Mapped[Decimal] = mapped_column(Numeric(12, 2))\n"
        '    currency: Mapped[str] = mapped_column(String(3), default="EUR")\n',
    )
    git(repo, "add", "src/invoicer/models.py", when=demo.ago(6))
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


def _export_the_currency(demo: Demo, repo: Path) -> None:
    """The currency in the CSV export, and the legacy import removed (a deleted file)."""
    replace_passage(
        repo,
        "src/invoicer/export.py",
        'COLUMNS = ("order_ref", "customer_email", "amount")',
        'COLUMNS = ("order_ref", "customer_email", "amount", "currency")',
    )
    replace_passage(
        repo,
        "src/invoicer/export.py",
        'f"{invoice.amount:.2f}"])',
        'f"{invoice.amount:.2f}",\n                         invoice.currency])',
    )
    git(repo, "rm", "--quiet", "scripts/legacy_import.py", when=demo.ago(4))
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


def _pause_before_staging(demo: Demo, repo: Path) -> None:
    """The README documents the column; the checkpoint taken before waiting."""
    replace_passage(
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


def _ask_to_migrate_staging(demo: Demo, repo: Path) -> None:
    """The staging migration proposed as a side effect, held for a high-risk approval."""
    with as_of(demo.ago(3.1)):
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
