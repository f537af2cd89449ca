"""The rule files made into the table the redactor loads, and their examples made into text.

The rules are data: one TOML file per family beside this module (``cloud.toml``,
``code-hosting.toml``, …), each rule with the token format's regex, the literals every match
contains, and positive and negative examples. TOML is for people; the redactor runs on every
harness hook that redacts a line, and ``tomllib`` with the files costs more than that hook's whole
redaction, so ``python -m core.redaction.rules.build`` writes the records as Python literals to
``table.py`` (unmarshalled, not parsed, when imported). A test fails when ``table.py`` is not what
the files build, and the build refuses a changed rule set under an unchanged
:data:`~core.redaction.rules.RULESET_VERSION` (``--amend`` while that version is unreleased).

Examples are templates: ``{hex:64}`` is 64 random lowercase hex digits, ``{alnum:36}`` 36
letters and digits, and so on (:data:`ALPHABETS`); ``{{`` and ``}}`` are literal braces. A test
expands each positive example with a seeded generator and checks that the rule redacts it and that
no generated character run survives; each negative example must come out unchanged.
"""

from __future__ import annotations

import hashlib
import random
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

RULES_DIR = Path(__file__).resolve().parent
TABLE = RULES_DIR / "table.py"

ALPHABETS = {
    "hex": "0123456789abcdef",
    "HEX": "0123456789ABCDEF",
    "digits": "0123456789",
    "lower": "abcdefghijklmnopqrstuvwxyz",
    "upper": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "alpha": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "lowernum": "abcdefghijklmnopqrstuvwxyz0123456789",
    "uppernum": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "alnum": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "b64": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/",
    "b64url": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
    "base32": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
    "base32lower": "abcdefghijklmnopqrstuvwxyz234567",
    "bech32": "qpzry9x8gf2tvdw0s3jn54khce6mua7l",
    "BECH32": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
    "symbols": "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!#%^*+=~",
}
"""Character sets an example template can draw from (``{name:count}``)."""

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(?P<kind>[A-Za-z0-9]+)(?::(?P<count>\d+))?\}")

FIELDS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "description": str,
    "keywords": list,
    "pattern": (str, list),
    "select": str,
    "parts": list,
    "check": str,
    "entropy": float,
    "ignore_case": bool,
    "anchored": bool,
    "start_words": list,
    "start_form": str,
    "start_offset": int,
    "tail": str,
    "locator": list,
    "positive": list,
    "negative": list,
}
REQUIRED = ("name", "description", "keywords", "pattern", "positive")
RUNTIME_FIELDS = tuple(f for f in FIELDS if f not in ("description", "positive", "negative"))
"""What the table keeps of each rule (descriptions go to the listing table, examples stay here)."""


class Family(NamedTuple):
    """One rule file: its family name, where it sorts, what it covers, and its rules."""

    name: str
    priority: int
    description: str
    rules: list[dict[str, Any]]


class RuleFileError(ValueError):
    """A rule file that cannot be built, with the file and rule it is about."""


def load_families(directory: Path | None = None) -> list[Family]:
    """Every rule file, checked, in priority order (then by name)."""
    directory = RULES_DIR if directory is None else directory
    families: list[Family] = []
    for path in sorted(directory.glob("*.toml")):
        with path.open("rb") as handle:
            try:
                document = tomllib.load(handle)
            except tomllib.TOMLDecodeError as exc:
                raise RuleFileError(f"{path.name}: not valid TOML: {exc}") from None
        name = path.stem
        if document.get("family") != name:
            raise RuleFileError(f"{path.name}: family must be {name!r} (the file's name)")
        rules = document.get("rule", [])
        for rule in rules:
            _check_rule(path.name, rule)
        families.append(
            Family(name, int(document.get("priority", 50)), str(document["description"]), rules)
        )
    families.sort(key=lambda family: (family.priority, family.name))
    names = [rule["name"] for family in families for rule in family.rules]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise RuleFileError(f"rule names used twice: {', '.join(duplicates)}")
    return families


def _check_rule(file: str, rule: dict[str, Any]) -> None:
    where = f"{file}: rule {rule.get('name', '?')!r}"
    for field in REQUIRED:
        if field not in rule:
            raise RuleFileError(f"{where}: {field} is missing")
    for field, value in rule.items():
        kind = FIELDS.get(field)
        if kind is None:
            raise RuleFileError(f"{where}: unknown field {field!r}")
        if kind is float and isinstance(value, int):
            continue
        if not isinstance(value, kind):
            raise RuleFileError(f"{where}: {field} has the wrong type")
    if isinstance(rule["pattern"], list):  # pieces, for long patterns: joined
        rule["pattern"] = "".join(rule["pattern"])
    for keyword in rule["keywords"]:
        if keyword != keyword.lower() or not keyword.isascii() or not keyword:
            raise RuleFileError(f"{where}: keyword {keyword!r} must be lowercase ASCII")
    try:
        re.compile(rule["pattern"])
    except re.error as exc:
        raise RuleFileError(f"{where}: pattern does not compile: {exc}") from None


def records(families: list[Family]) -> list[dict[str, Any]]:
    """The table's records: runtime fields only, tuples for lists, the family added."""
    table: list[dict[str, Any]] = []
    for family in families:
        for rule in family.rules:
            record: dict[str, Any] = {"name": rule["name"], "family": family.name}
            for field in RUNTIME_FIELDS:
                if field in rule and field != "name":
                    value = rule[field]
                    record[field] = tuple(value) if isinstance(value, list) else value
            table.append(record)
    return table


def digest(directory: Path | None = None) -> str:
    """A hash of every rule file's bytes: what a RULESET_VERSION was built from."""
    directory = RULES_DIR if directory is None else directory
    h = hashlib.sha256()
    for path in sorted(directory.glob("*.toml")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def render(version: str, directory: Path | None = None) -> str:
    """The text of ``table.py`` for the files in ``directory``."""
    directory = RULES_DIR if directory is None else directory
    families = load_families(directory)
    table = records(families)
    listing = tuple(
        (rule["name"], family.name, tuple(rule["keywords"]), rule["description"])
        for family in families
        for rule in family.rules
    )
    lines = [
        '"""The rule table, built from the rule files by ``python -m core.redaction.rules.build``.',
        "",
        "Generated: do not edit. Edit the family's ``.toml`` file and build again.",
        '"""',
        "",
        "# ruff: noqa: E501",
        "from __future__ import annotations",
        "",
        "TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)",
        "if TYPE_CHECKING:",
        "    from typing import Any",
        "",
        f"BUILT_FOR = ({version!r}, {digest(directory)!r})",
        '"""(RULESET_VERSION, digest of the rule files) this table was built from."""',
        "",
        "FAMILIES: tuple[tuple[str, str], ...] = "
        + _one_per_line(tuple((f.name, f.description) for f in families)),
        '"""Each family\'s name and what it covers, in priority order."""',
        "",
        "LISTING: tuple[tuple[str, str, tuple[str, ...], str], ...] = " + _one_per_line(listing),
        '"""(name, family, keywords, description) of each rule: ``pitstop redact --rules``."""',
        "",
        "RULE_TABLE: tuple[dict[str, Any], ...] = " + _one_per_line(tuple(table)),
        '"""Every rule as data, in priority order (see :mod:`core.redaction.rules`)."""',
        "",
    ]
    return "\n".join(lines)


def _one_per_line(items: tuple[Any, ...]) -> str:
    """A tuple literal with one item per line (a generated table stays a few hundred lines)."""
    return "(\n" + "".join(f"    {item!r},\n" for item in items) + ")"


def built_for() -> tuple[str, str] | None:
    """(version, digest) the current ``table.py`` says it was built from."""
    if not TABLE.exists():
        return None
    match = re.search(r"^BUILT_FOR = \('([^']*)', '([^']*)'\)$", TABLE.read_text(), re.MULTILINE)
    return (match.group(1), match.group(2)) if match else None


def build(version: str, amend: bool = False) -> str:
    """Write ``table.py``; refuse a changed rule set under the version already built unless
    ``amend`` (the version is new on this branch and still being worked on)."""
    previous = built_for()
    current = digest()
    if previous is not None and previous[0] == version and previous[1] != current and not amend:
        raise RuleFileError(
            f"the rule files changed but RULESET_VERSION is still {version}: "
            "bump it in core/redaction/rules/__init__.py and build again "
            "(or pass --amend while that version is unreleased)"
        )
    text = render(version)
    TABLE.write_text(text)
    return text


# --- examples ------------------------------------------------------------------------------


def expand(template: str, rng: random.Random) -> tuple[str, list[str]]:
    """An example with its placeholders filled; also the generated runs (what must not survive)."""
    generated: list[str] = []

    def fill(m: re.Match[str]) -> str:
        token = m.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        kind, count = m.group("kind"), m.group("count")
        if kind == "uuid":
            value = "-".join(
                "".join(rng.choice(ALPHABETS["hex"]) for _ in range(n)) for n in (8, 4, 4, 4, 12)
            )
        else:
            if kind not in ALPHABETS or count is None:
                raise RuleFileError(f"example {template!r}: unknown placeholder {token}")
            value = "".join(rng.choice(ALPHABETS[kind]) for _ in range(int(count)))
        generated.append(value)
        return value

    return _PLACEHOLDER.sub(fill, template), generated


def examples(
    families: list[Family], kind: str, seed: int = 16
) -> Iterator[tuple[str, str, str, list[str]]]:
    """(family, rule, text, generated runs) of every ``positive`` or ``negative`` example."""
    rng = random.Random(seed)
    for family in families:
        for rule in family.rules:
            for template in rule.get(kind, []):
                text, generated = expand(template, rng)
                yield family.name, rule["name"], text, generated


def ruleset_version() -> str:
    """RULESET_VERSION as written in ``__init__.py`` (read, not imported: importing it loads the
    table this builds)."""
    text = (RULES_DIR / "__init__.py").read_text()
    match = re.search(r'^RULESET_VERSION = "([^"]+)"$', text, re.MULTILINE)
    if match is None:
        raise RuleFileError("core/redaction/rules/__init__.py has no RULESET_VERSION line")
    return match.group(1)


def main(argv: list[str] | None = None) -> int:
    """Build ``table.py`` from the rule files (``--check``: only say whether it is current;
    ``--amend``: rebuild under the same version, which must not have been released)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        version = ruleset_version()
        if args == ["--check"]:
            current = TABLE.exists() and TABLE.read_text() == render(version)
            print("table.py is current" if current else "table.py is stale: build it")
            return 0 if current else 1
        build(version, amend=args == ["--amend"])
    except RuleFileError as exc:
        print(f"cannot build the rule table: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {TABLE.relative_to(RULES_DIR.parents[2])} (ruleset {version})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
