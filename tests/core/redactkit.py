"""What the redaction tests share: the gitleaks corpus and feeding a stream in chunks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.redaction.redact import StreamRedactor

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "secrets"
CORPUS_FILE = CORPUS / "gitleaks_rule_cases.jsonl"


def load_corpus() -> list[dict[str, str]]:
    """The gitleaks rule cases (vendored in tests/fixtures/secrets), one dict per line.

    A missing or short corpus fails the test that asked for it: a redaction test that quietly
    skips in a fresh clone proves nothing.
    """
    if not CORPUS_FILE.exists():
        pytest.fail(f"the gitleaks corpus is missing: {CORPUS_FILE} (it is part of the repository)")
    rows = [json.loads(line) for line in CORPUS_FILE.read_text().splitlines() if line.strip()]
    if len(rows) < 250:
        pytest.fail(f"the gitleaks corpus at {CORPUS_FILE} has {len(rows)} rows, not 259")
    return rows


def stream(
    data: bytes, sizes: list[int], accelerate: bool | None = None
) -> tuple[bytes, StreamRedactor]:
    """Feed ``data`` in chunks of the given sizes (cycled), then flush."""
    redactor = StreamRedactor(accelerate=accelerate)
    out: list[bytes] = []
    i = k = 0
    while i < len(data):
        size = max(1, sizes[k % len(sizes)])
        out.append(redactor.feed(data[i : i + size]))
        i += size
        k += 1
    out.append(redactor.flush())
    return b"".join(out), redactor
