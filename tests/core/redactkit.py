"""What the redaction tests share: the gitleaks corpus and feeding a stream in chunks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.redaction.redact import StreamRedactor

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "secrets"
CORPUS_FILE = CORPUS / "gitleaks_rule_cases.jsonl"


def load_corpus() -> list[dict[str, str]]:
    """The gitleaks rule cases, one dict per line (the test is skipped without them)."""
    if not CORPUS_FILE.exists():
        pytest.skip(f"corpus not found: {CORPUS_FILE}")
    return [json.loads(line) for line in CORPUS_FILE.read_text().splitlines() if line.strip()]


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
