"""Corpora for measuring the redactor: token formats in three variants, and secret-free logs.

Issue 16 measures recall the way an outsider would: each secret value verbatim, after a
credential name (keyed), and bare inside agent-log lines, per family of token formats, beside
look-alikes that are not secrets; and false positives on realistic agent logs that hold no
secret. This module builds both from data the repository carries:

- ``tests/fixtures/secrets/token_formats.toml``: public token formats, one entry per provider
  format (written from the providers' documentation), expanded with a seeded generator;
- secret-free agent logs: what an agent's commands print (test runs, installs, git, HTTP access
  lines, JSON tool results) and the source files it reads and diffs, taken from this
  interpreter's standard library (real code, present wherever Pitstop runs).

A secret row counts as redacted only when nothing of it survives: no six characters in a row of
any generated part of the value are left in the output (a partial redaction is a miss).
"""

from __future__ import annotations

import random
import re
import sysconfig
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from core.redaction.rules.build import expand

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ROOT / "tests" / "fixtures" / "secrets" / "token_formats.toml"
GITLEAKS = ROOT / "tests" / "fixtures" / "secrets" / "gitleaks_rule_cases.jsonl"
SURVIVOR = 6
"""Characters of a generated part that may not survive in a row counted as redacted."""


class Row(NamedTuple):
    """One corpus line: family, provider, variant, text, the generated parts, and its label."""

    family: str
    provider: str
    variant: str
    text: str
    parts: tuple[str, ...]
    secret: bool


class Format(NamedTuple):
    family: str
    provider: str
    template: str
    key: str
    shape: bool


def formats(path: Path = FORMATS) -> list[Format]:
    """Every token format of the fixture file."""
    with path.open("rb") as handle:
        document = tomllib.load(handle)
    found: list[Format] = []
    for group in document["format"]:
        for entry in group["entries"]:
            provider, template, key = entry[0], entry[1], entry[2]
            shape = entry[3] if len(entry) > 3 else True
            found.append(Format(group["family"], provider, template, key, shape))
    return found


_KEYED = (
    "export {KEY}={v}",
    '{KEY}="{v}"',
    "{key}: {v}",
    '  "{key}": "{v}",',
    "{key} = '{v}'",
    "--{flag} {v}",
    "{KEY}: {v}",
    "  - name: {KEY}\n    value: {v}",
)
"""How a value is given a name: env, shell, YAML, JSON, TOML/Python, a CLI flag, a header."""

_BARE = (
    "2026-11-03T10:12:44.512Z INFO worker[7] request accepted for {v} in 12ms",
    '  File "/home/agent/app/client.py", line 42, in connect\n    client = Client("{v}")',
    "$ ./scripts/deploy.sh {v} --region eu-west-1",
    '{{"level":"debug","msg":"cached upstream","value":"{v}","ms":3}}',
    "E       AssertionError: assert '{v}' == 'expected'",
    "> {v}",
    "remote: Resolving deltas: 100% (12/12), done with {v}",
    "{v}",
)
"""Agent-log lines a value can turn up in bare: no credential name in sight."""


def _masked(template: str) -> str:
    """The template with every generated part replaced by x's (a documented mask)."""
    return (
        re.sub(
            r"\{([A-Za-z0-9]+)(?::(\d+))?\}",
            lambda m: "x" * int(m.group(2) or 12) if m.group(1) != "uuid" else "x" * 36,
            template,
        )
        .replace("{{", "{")
        .replace("}}", "}")
    )


def token_rows(seed: int = 1603, copies: int = 3) -> Iterator[Row]:
    """Secret rows (verbatim, keyed, bare) and look-alike rows for every format."""
    rng = random.Random(seed)
    counter = 0
    for fmt in formats():
        key = fmt.key.lower()
        flag = key.replace("_", "-")
        for _ in range(copies):
            value, parts = expand(fmt.template, rng)
            generated = tuple(p for p in parts if len(p) >= SURVIVOR)
            counter += 1
            names = {"KEY": fmt.key, "key": key, "flag": flag, "v": value}
            keyed = _KEYED[counter % len(_KEYED)].format(**names)
            yield Row(fmt.family, fmt.provider, "keyed", keyed, generated, True)
            if fmt.shape:
                yield Row(fmt.family, fmt.provider, "verbatim", value, generated, True)
                bare = _BARE[counter % len(_BARE)].format(v=value)
                yield Row(fmt.family, fmt.provider, "bare", bare, generated, True)
        masked = _masked(fmt.template)
        for text in (
            f"{fmt.key}=${{{fmt.key}}}",
            f"{key}: <your-{flag}>",
            f"export {fmt.key}={masked}",
            f"{key}: changeme",
            f'{key}: "${{{{ secrets.{fmt.key} }}}}"',
        ):
            yield Row(fmt.family, fmt.provider, "look-alike", text, (), False)


LOG_LOOK_ALIKES = (
    "commit 9a038989604e8da62ecddbe2094b16ce1b778be1",
    "Digest: sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
    'request_id="0d4f0e4c-8a5e-4bfb-9a0e-3c1f7c1e9a22" status=200',
    '"integrity": "sha512-Y2lzdW5pcXVlc3RyaW5nZm9ydGhlc2FrZW9mdGhpc3Rlc3Q/+ExampleWXYZ==",',
    "Downloading https://files.pythonhosted.org/packages/ab/cd/0f3e9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f/requests-2.32.3-py3-none-any.whl",
    "  tests/test_token_refresh.py::test_refresh_token_rotates PASSED      [ 42%]",
    "token = tokenizer.encode(text, add_special_tokens=True)",
    "password = getpass.getpass('Password: ')",
    "api_key = os.environ.get('OPENAI_API_KEY')",
    "secret_key = settings.SECRET_KEY",
    "Authorization: Bearer ${TOKEN}",
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "max_tokens: 4096",
    "key_id: 3",
    "--password-stdin",
    "pip install --index-url https://pypi.org/simple/ keyring==25.2.1",
    "uuid 3e4666bf-d5e5-4aa7-b8ce-cefe41c7568a assigned to session",
    'ETag: W/"5e15153d-120f"',
    "Set-Cookie: theme=dark; Path=/; Max-Age=31536000",
)
"""Things agent logs are full of that look random but are not secrets."""


def look_alike_rows() -> Iterator[Row]:
    """The log look-alikes as rows (not secrets)."""
    for text in LOG_LOOK_ALIKES:
        yield Row("logs", "log look-alike", "look-alike", text, (), False)


def survivors(out: str, parts: tuple[str, ...]) -> int:
    """How many generated parts left ``SURVIVOR`` characters in a row in ``out``."""
    left = 0
    for part in parts:
        if any(part[i : i + SURVIVOR] in out for i in range(len(part) - SURVIVOR + 1)):
            left += 1
    return left


# --- secret-free agent logs ------------------------------------------------------------------


def stdlib_files(limit_bytes: int) -> list[Path]:
    """Source files of this interpreter's standard library (no tests, no site-packages)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = ("site-packages", "/test/", "/tests/", "/idle_test/", "/lib2to3/tests/")
    files: list[Path] = []
    total = 0
    for path in sorted(root.rglob("*.py")):
        text = str(path)
        if any(part in text for part in skip):
            continue
        files.append(path)
        total += path.stat().st_size
        if total >= limit_bytes:
            break
    return files


def agent_view_of_source(rng: random.Random, files: list[Path]) -> Iterator[str]:
    """Source files the way an agent's tools print them: cat -n, grep -n hits, unified diffs."""
    for path in files:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        name = path.name
        style = rng.randrange(3)
        if style == 0:
            yield f"$ cat -n {name}"
            for number, line in enumerate(lines, 1):
                yield f"{number:6}\t{line}"
        elif style == 1:
            word = rng.choice(["def ", "import ", "return ", "self.", "key", "token", "pass"])
            yield f"$ grep -n '{word.strip()}' {name}"
            for number, line in enumerate(lines, 1):
                if word in line:
                    yield f"{name}:{number}:{line}"
        else:
            yield f"diff --git a/{name} b/{name}"
            yield f"--- a/{name}\n+++ b/{name}"
            for start in range(0, len(lines), 40):
                yield f"@@ -{start + 1},12 +{start + 1},12 @@"
                for line in lines[start : start + 12]:
                    yield rng.choice(" +-") + line


def secret_free_logs(megabytes: float, seed: int = 20261202) -> tuple[bytes, dict[str, int]]:
    """About ``megabytes`` MB of agent logs that hold no secret, and their line count by kind:
    generated command output (bench/redact.py's makers, without the sprinkled secrets) and
    standard-library source read, grepped and diffed."""
    from bench.redact import MAKERS

    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    half = target // 2
    generated: list[str] = []
    size = 0
    while size < half:
        section: list[str] = []
        rng.choice(MAKERS)(rng, section)
        text = "\n".join(section) + "\n"
        generated.append(text)
        size += len(text)
    source: list[str] = []
    source_size = 0
    files = stdlib_files(target - size)
    while files and size + source_size < target:  # the library again, shown another way
        for line in agent_view_of_source(rng, files):
            source.append(line)
            source_size += len(line) + 1
            if size + source_size >= target:
                break
    generated_text = "".join(generated)
    source_text = "\n".join(source) + "\n"
    counts = {"command output": generated_text.count("\n"), "source read": source_text.count("\n")}
    return (generated_text + source_text).encode("utf-8", "replace"), counts
