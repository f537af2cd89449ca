"""`pitstop redact` end to end: a real process reading a file of secrets on stdin."""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS_FILE = ROOT / "tests" / "fixtures" / "secrets" / "gitleaks_rule_cases.jsonl"
RNG = random.Random(4242)


def rand(n: int) -> str:
    return "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(n))


def run_redact(
    *args: str, stdin: bytes | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "tui.cli", "redact", *args]
    if isinstance(stdin, Path):
        with stdin.open("rb") as handle:
            return subprocess.run(
                command, stdin=handle, capture_output=True, cwd=ROOT, env=env, check=False
            )
    return subprocess.run(command, input=stdin, capture_output=True, cwd=ROOT, env=env, check=False)


@pytest.fixture()
def secrets_file(tmp_path: Path) -> tuple[Path, list[str]]:
    ghp = "ghp_" + rand(36)
    aws = "AKIA" + "".join(RNG.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    bearer = rand(40)
    password = rand(14) + "!3"
    key_body = "\n".join(rand(64) for _ in range(5))
    text = (
        "$ make deploy\n"
        f"export GITHUB_TOKEN={ghp}\n"
        f"aws_access_key_id = {aws}\n"
        f"> Authorization: Bearer {bearer}\r\n"
        f"curl -u deploy:{password} https://example.com\n"
        "  45% |#########           | eta 0:00:03\r  90% |##################  |\r\n"
        f"-----BEGIN RSA PRIVATE KEY-----\n{key_body}\n-----END RSA PRIVATE KEY-----\n"
        "done: 412 passed, 3 failed\n"
    )
    path = tmp_path / "build.log"
    path.write_bytes(text.encode() + b"\xff\xfe binary tail \x00\x81")
    return path, [ghp, aws, bearer, password, *key_body.splitlines()]


def test_redact_filters_stdin_to_stdout(secrets_file: tuple[Path, list[str]]) -> None:
    path, secrets = secrets_file
    result = run_redact(stdin=path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for secret in secrets:
        assert secret.encode() not in out
    assert b"export GITHUB_TOKEN=[REDACTED:github-token]\n" in out
    assert b"> Authorization: Bearer [REDACTED:authorization-header]\r\n" in out
    assert b"curl -u deploy:[REDACTED:curl-credentials] https://example.com\n" in out
    assert b"[REDACTED:private-key]\n" in out
    assert b"  45% |#########           | eta 0:00:03\r  90% |##################  |\r\n" in out
    assert out.startswith(b"$ make deploy\n")
    assert out.endswith(b"done: 412 passed, 3 failed\n\xff\xfe binary tail \x00\x81")
    assert result.stderr == b""  # no --stats: nothing on stderr


def test_redact_stats_per_rule_on_stderr(secrets_file: tuple[Path, list[str]]) -> None:
    path, _ = secrets_file
    result = run_redact("--stats", stdin=path)
    assert result.returncode == 0
    err = result.stderr.decode()
    assert err.startswith("redacted 5 secrets (ruleset ")
    for rule in (
        "github-token",
        "aws-access-key-id",
        "authorization-header",
        "curl-credentials",
        "private-key",
    ):
        assert f"  {rule}" in err
    assert b"[REDACTED:" in result.stdout and b"redacted 5" not in result.stdout

    as_json = run_redact("--stats", "--json", stdin=path)
    document = json.loads(as_json.stderr)
    assert document["redacted"] == 5
    assert document["by_rule"]["github-token"] == 1
    assert as_json.stdout == result.stdout


def test_redact_passes_clean_and_binary_input_through_unchanged(tmp_path: Path) -> None:
    data = bytes(random.Random(1).randrange(256) for _ in range(300_000))
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    result = run_redact("--stats", stdin=path)
    assert result.returncode == 0
    assert result.stdout == data
    assert result.stderr.decode().startswith("redacted 0 secrets")
    empty = run_redact(stdin=b"")
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, b"", b"")


def test_redact_matches_the_library_on_the_corpus(tmp_path: Path) -> None:
    if not CORPUS_FILE.exists():
        pytest.fail(f"the gitleaks corpus is missing: {CORPUS_FILE} (it is part of the repository)")
    from core.redaction.redact import redact_bytes

    rows = [json.loads(line) for line in CORPUS_FILE.read_text().splitlines() if line.strip()]
    data = "\n".join(row["text"] for row in rows).encode()
    result = run_redact(stdin=data)
    assert result.returncode == 0
    assert result.stdout == redact_bytes(data)
    for row in rows:
        if row["label"] == "secret" and "\n" not in row["text"]:
            assert row["text"].encode() not in result.stdout


def test_redact_streams_in_constant_memory(tmp_path: Path) -> None:
    """40 MB through the filter: peak RSS stays that of an idle interpreter plus a few MB."""
    line = f"tests/test_x.py::test_{rand(8)} PASSED token={rand(10)}\n".encode()
    path = tmp_path / "big.log"
    with path.open("wb") as handle:
        for _ in range(40):
            handle.write(line * (1_000_000 // len(line)))
            handle.write(b"x" * 200_000)  # long lines without a line end, too
    # VmHWM is this process's own peak: getrusage's ru_maxrss would start from the parent's
    # (pytest's) peak, because Linux records the forked address space's high-water mark at exec.
    probe = (
        "import atexit, re, sys\n"
        "atexit.register(lambda: sys.stderr.write('MAXRSS ' + re.search(r'VmHWM:\\s+(\\d+)', "
        "open('/proc/self/status').read()).group(1) + '\\n'))\n"
        "sys.argv = ['pitstop', 'redact']\n"
        "from tui.cli import main\n"
        "main()\n"
    )
    with path.open("rb") as handle:
        result = subprocess.run(
            [sys.executable, "-c", probe],
            stdin=handle,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    max_rss_kib = int(result.stderr.decode().split("MAXRSS ")[1].split()[0])
    assert max_rss_kib < 120 * 1024, max_rss_kib  # the input alone is 48 MB


def test_redact_stops_quietly_when_the_reader_goes_away(tmp_path: Path) -> None:
    path = tmp_path / "many.log"
    path.write_bytes(b"line of output\n" * 500_000)
    with path.open("rb") as handle:
        producer = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", "redact"],
            stdin=handle,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ},
        )
        assert producer.stdout is not None and producer.stderr is not None
        producer.stdout.read(100)
        producer.stdout.close()  # like `| head -c 100`
        err = producer.stderr.read()
        code = producer.wait(timeout=60)
    assert b"Traceback" not in err
    assert code == 0


def test_redact_rules_lists_every_rule_with_its_family_and_keywords() -> None:
    from core.redaction.redact import RULESET_VERSION, rule_names

    result = run_redact("--rules", stdin=b"")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[0].startswith(f"ruleset {RULESET_VERSION}: {len(rule_names())} rules in ")
    listed = {line.split()[1] for line in lines[2:]}
    assert listed == set(rule_names())
    assert any(line.split()[:2] == ["cloud", "digitalocean-token"] for line in lines)
    assert any("dop_v1_" in line for line in lines)

    as_json = run_redact("--rules", "--json", stdin=b"")
    document = json.loads(as_json.stdout)
    assert document["ruleset"] == RULESET_VERSION
    by_name = {rule["name"]: rule for rule in document["rules"]}
    assert set(by_name) == set(rule_names())
    assert by_name["sourcegraph-token"]["family"] == "code-hosting"
    assert "sgp_" in by_name["sourcegraph-token"]["keywords"]
    assert all(rule["description"] for rule in document["rules"])
