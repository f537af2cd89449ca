"""The redactor measured on corpora (issue 16): the vendored gitleaks cases and a corpus built
from public token formats (bench/secret_corpus.py), held to the targets bench/redact.py prints.

- a secret row counts only if nothing of its secret survives (six characters in a row);
- every token format is caught verbatim and bare when it has a shape, and after its name;
- look-alikes (masks, templates, placeholders, digests, code) come out unchanged;
- the corpora are part of the repository: a missing one fails, never skips.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
import redactkit

from bench import secret_corpus
from core.redaction.redact import redact_text


def test_token_formats_are_caught_in_every_variant_and_look_alikes_are_not() -> None:
    table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses: list[str] = []
    rows = [*secret_corpus.token_rows(), *secret_corpus.look_alike_rows()]
    for row in rows:
        out = redact_text(row.text)[0]
        ok = not secret_corpus.survivors(out, row.parts) if row.secret else out == row.text
        table[row.variant][0] += ok
        table[row.variant][1] += 1
        if not ok:
            misses.append(f"{row.family}/{row.variant} {row.provider}: {row.text[:100]!r}")
    recall = {variant: ok / n for variant, (ok, n) in table.items()}
    print("\n" + ", ".join(f"{v} {r:.1%}" for v, r in sorted(recall.items())))
    print("\n".join(misses))
    assert recall["verbatim"] == 1.0
    assert recall["bare"] == 1.0
    assert recall["keyed"] >= 0.99
    assert recall["look-alike"] >= 0.99


def test_every_family_of_the_rule_files_is_in_the_format_corpus() -> None:
    from core.redaction.rules import build

    families = {family.name for family in build.load_families()}
    corpus = {fmt.family for fmt in secret_corpus.formats()}
    # the context families are measured through the formats they carry (URLs, headers)
    assert families - corpus <= {"generic", "http-auth"}


def test_a_missing_corpus_fails_instead_of_skipping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redactkit, "CORPUS_FILE", tmp_path / "gitleaks_rule_cases.jsonl")
    with pytest.raises(pytest.fail.Exception, match="corpus is missing"):
        redactkit.load_corpus()
    (tmp_path / "gitleaks_rule_cases.jsonl").write_text('{"text": "x", "label": "secret"}\n')
    with pytest.raises(pytest.fail.Exception, match="has 1 rows"):
        redactkit.load_corpus()


def test_the_gitleaks_corpus_is_vendored_with_its_licence() -> None:
    directory = redactkit.CORPUS
    assert directory == Path(__file__).resolve().parents[1] / "fixtures" / "secrets"
    assert "MIT License" in (directory / "LICENSE-gitleaks.txt").read_text()
    assert len(redactkit.load_corpus()) == 259
