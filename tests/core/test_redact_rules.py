"""The rule files (core/redaction/rules/*.toml): each rule's own examples, and the built table.

Issue 16: rules live as data, one file per family, each rule with positive and negative examples
that a test runs. Every positive example must be redacted under its own rule's name with nothing
of its generated characters left; every negative example must come out unchanged; the table the
redactor loads must be exactly what the files build; a changed rule set needs a new version.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from test_redact import brute_force_findings, gated_findings

from core.redaction.redact import RULES, RULESET_VERSION, redact_bytes, redact_text, rule_names
from core.redaction.rules import build

FAMILIES = build.load_families()
POSITIVE = list(build.examples(FAMILIES, "positive"))
NEGATIVE = list(build.examples(FAMILIES, "negative"))


def _survivors(out: str, generated: list[str], width: int = 6) -> list[str]:
    """Pieces of the generated runs (``width`` characters or more) still in ``out``."""
    left: list[str] = []
    for run in generated:
        if len(run) < width:
            continue
        pieces = [run[i : i + width] for i in range(len(run) - width + 1)]
        left += [piece for piece in pieces if piece in out]
    return left


@pytest.mark.parametrize(("family", "rule", "text", "generated"), POSITIVE)
def test_positive_examples_are_redacted_whole_by_their_rule(
    family: str, rule: str, text: str, generated: list[str]
) -> None:
    out, findings = redact_text(text)
    assert rule in {f.rule for f in findings}, (family, out, findings)
    assert not _survivors(out, generated), (family, out)


@pytest.mark.parametrize(("family", "rule", "text", "generated"), NEGATIVE)
def test_negative_examples_are_left_alone(
    family: str, rule: str, text: str, generated: list[str]
) -> None:
    assert redact_text(text) == (text, []), (family, rule)


def test_every_rule_has_examples_both_ways() -> None:
    with_positive = {rule for _, rule, _, _ in POSITIVE}
    with_negative = {rule for _, rule, _, _ in NEGATIVE}
    assert set(rule_names()) == with_positive
    assert set(rule_names()) == with_negative


def test_gate_finds_what_trying_every_rule_everywhere_finds_on_the_examples() -> None:
    for _, _, text, _ in POSITIVE + NEGATIVE:
        assert gated_findings(text) == brute_force_findings(text), text


def test_table_is_what_the_rule_files_build() -> None:
    current = build.TABLE.read_text()
    assert current == build.render(RULESET_VERSION), (
        "core/redaction/rules/table.py is stale: run `python -m core.redaction.rules.build`"
    )
    assert [r.name for r in RULES] == [r["name"] for f in FAMILIES for r in f.rules]


def test_a_changed_rule_file_needs_a_new_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build refuses to write a table for changed rules under the version already built."""
    for path in build.RULES_DIR.glob("*.toml"):
        shutil.copy(path, tmp_path / path.name)
    shutil.copy(build.TABLE, tmp_path / "table.py")
    monkeypatch.setattr(build, "RULES_DIR", tmp_path)
    monkeypatch.setattr(build, "TABLE", tmp_path / "table.py")
    generic = tmp_path / "generic.toml"
    generic.write_text(generic.read_text().replace("password = hunter2", "password = hunter3"))
    with pytest.raises(build.RuleFileError, match="bump it"):
        build.build(RULESET_VERSION)
    assert "2099.1.1" in build.build("2099.1.1")


def test_a_broken_rule_file_says_which_rule_and_why(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text(
        'family = "x"\ndescription = "d"\n[[rule]]\nname = "r"\ndescription = "d"\n'
        'keywords = ["ABC"]\npattern = "abc"\npositive = []\n'
    )
    with pytest.raises(build.RuleFileError, match=r"x.toml: rule 'r': keyword 'ABC'"):
        build.load_families(tmp_path)
    (tmp_path / "x.toml").write_text('family = "y"\ndescription = "d"\n')
    with pytest.raises(build.RuleFileError, match="family must be 'x'"):
        build.load_families(tmp_path)


def test_a_log_saying_task_underscore_is_no_start_for_the_sk_underscore_keys() -> None:
    """`task_`, `disk_` and `risk_` hold `sk_`; ElevenLabs and Recharge keys are tried only where
    one of theirs can start (`sk_` and two hex digits; `sk_1x`…, `sk_test_`), on both gates,
    and a real key beside such words is still found."""
    from core.redaction import hyperscan_gate
    from core.redaction.literal_gate import STARTS, literal_hits

    keyed = {i for i, rule in enumerate(RULES) if rule.name in ("elevenlabs-key", "recharge-key")}
    text = b"tests/test_task_user.py::test_task_queue PASSED [ 4%] disk_usage risk_score\n"
    tried = {index for literal, _ in literal_hits(text.lower()) for index, _ in STARTS[literal]}
    assert not tried & keyed
    gate = hyperscan_gate.gate()
    if gate is not None:
        database, table = gate
        hits: list[tuple[int, int]] = []
        database.scan(
            text,
            match_event_handler=hyperscan_gate.collect,
            context=hits,
            scratch=hyperscan_gate.new_scratch(),
        )
        assert not {index for pattern, _ in hits for index, _ in table[pattern][1]} & keyed
    rng = random.Random(7)
    eleven = "sk_" + "".join(rng.choice("0123456789abcdef") for _ in range(48))
    recharge = "sk_test_10x2_" + "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(64))
    line = f"task_user ELEVENLABS_API_KEY={eleven} task_queue RECHARGE={recharge} risk_x\n"
    for accelerate in (False, True):
        out = redact_bytes(line.encode(), accelerate=accelerate).decode()
        assert eleven not in out and recharge not in out, out
        assert out.count("[REDACTED:") == 2, out
