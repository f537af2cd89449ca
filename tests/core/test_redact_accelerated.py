"""The Hyperscan gate (large streams) gives byte-for-byte the output of the Aho-Corasick gate.

`core.redaction.redact` gates its rules on literals found by one automaton pass; past
`ACCELERATE_AFTER` bytes of a stream (and where the `hyperscan` package is installed) a
Hyperscan database finds the same literals, plus fixed-width locators for the rules whose
literals are everywhere, without holding the GIL. These tests compare the two on the gitleaks
corpus, on generated logs with secrets at every chunk boundary, on random compositions of the
pieces that the gates look for, and on hostile input; they check that the summary pre-filter
agrees with its regex, that a recorded large stream stores exactly the reference redaction, and
that neither the Hyperscan nor the automaton package is imported by `import core.redaction.redact`.
Where Hyperscan is missing, the same entry points fall back to the automaton (checked in a
subprocess that cannot import it).
"""

from __future__ import annotations

import hashlib
import os
import random
import string
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redactkit import load_corpus, stream

from core.engine import Engine
from core.evidence.storage import EvidenceRecorder
from core.evidence.summaries import SUMMARY_CANDIDATE, CandidateLines
from core.redaction.redact import (
    ACCELERATE_AFTER,
    RULES,
    hyperscan_available,
    redact_bytes,
)

ROOT = Path(__file__).resolve().parents[2]

needs_hyperscan = pytest.mark.skipif(
    not hyperscan_available(), reason="hyperscan is not installed on this platform"
)

RNG = random.Random(20261130)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def pem_block(eol: str = "\n") -> str:
    body = eol.join(rand(64, ALNUM + "+/") for _ in range(6))
    return f"-----BEGIN RSA PRIVATE KEY-----{eol}{body}{eol}-----END RSA PRIVATE KEY-----{eol}"


def agent_log(size: int, secrets: list[str]) -> bytes:
    """Realistic agent output (tests, access lines, warnings) with the secrets scattered in."""
    lines: list[str] = []
    total = 0
    words = ["auth", "cache", "client", "config", "token", "password", "key", "session", "worker"]
    while total < size:
        kind = RNG.random()
        if kind < 0.4:
            line = (
                f"tests/test_{RNG.choice(words)}.py::test_{rand(6)} PASSED [{RNG.randint(0, 99)}%]"
            )
        elif kind < 0.7:
            line = (
                f"INFO GET /api/{RNG.choice(words)}/{RNG.randint(1, 9999)} 200 req={rand(16, HEX)}"
            )
        elif kind < 0.8:
            line = f"DEBUG {RNG.choice(words)}: loaded, token refresh in {RNG.randint(1, 99)}s"
        elif kind < 0.85:
            line = f"id AC{rand(32, HEX)} sk SK{rand(32, HEX)} ac{rand(2, HEX)}{rand(30, HEX)}"
        elif kind < 0.9:
            line = "\r".join(f"progress {p}%" for p in range(0, 100, 25))
        elif kind < 0.95:
            line = RNG.choice(secrets)
        else:
            line = "x" * RNG.randint(0, 3000)
        lines.append(line)
        total += len(line) + 1
    return ("\n".join(lines) + "\n").encode("latin-1", "replace")


# --- the corpus --------------------------------------------------------------------------------


@needs_hyperscan
def test_corpus_rows_redact_identically_through_both_gates() -> None:
    for row in load_corpus():
        data = row["text"].encode()
        expected = redact_bytes(data, accelerate=False)
        assert redact_bytes(data, accelerate=True) == expected, row["text"]
        assert stream(data, [1], accelerate=True)[0] == expected, row["text"]
        assert stream(data, [7, 3, 50], accelerate=True)[0] == expected, row["text"]


@needs_hyperscan
def test_corpus_as_one_log_redacts_identically_in_any_chunking() -> None:
    """Every corpus row on its own line, a few MB of it: whole, and in uneven chunks."""
    rows = [row["text"] for row in load_corpus()]
    data = ("\n".join(rows) + "\n").encode() * 3
    expected = redact_bytes(data, accelerate=False)
    assert redact_bytes(data, accelerate=True) == expected
    for sizes in ([65_536], [1, 4096, 333_333], [ACCELERATE_AFTER - 1, 17, 2_000_000]):
        for accelerate in (True, None):
            assert stream(data, sizes, accelerate)[0] == expected, (sizes, accelerate)


@needs_hyperscan
def test_generated_logs_with_secrets_at_chunk_boundaries() -> None:
    """Secrets, PEM blocks (LF and CRLF) and locator look-alikes, split at every kind of place."""
    values = [
        "ghp_" + rand(36),
        "AKIA" + rand(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
        rand(20),
        rand(40),
        "AC" + rand(32, HEX),
        rand(14),
        rand(12),
    ]
    secrets = [
        f"export GITHUB_TOKEN={values[0]}",
        f"aws {values[1]}",
        f'password = "{values[2]}"',
        f"Authorization: Bearer {values[3]}",
        f"twilio {values[4]} key SK{rand(32, HEX)}",
        f"curl -u admin:{values[5]} https://api",
        f"https://user:{values[6]}@db.internal/x",
        pem_block("\n").rstrip("\n"),
        pem_block("\r\n").rstrip("\r\n"),
        "-----BEGIN RSA PRIVATE KEY----- not a key",
    ]
    data = agent_log(3 * ACCELERATE_AFTER, secrets)
    expected = redact_bytes(data, accelerate=False)
    for value in values:
        assert value.encode() in data
        assert value.encode() not in expected
    for sizes in ([4096], [1_000_003], [RNG.randint(1, 200_000) for _ in range(50)]):
        for accelerate in (True, None):
            out, redactor = stream(data, sizes, accelerate)
            assert out == expected, (sizes, accelerate)
            assert redactor.accelerated
            assert data.count(b"\n") == out.count(b"\n") + redactor.dropped_newlines


# --- random compositions of what the gates look for ----------------------------------------

PIECES = [
    *["password", "PassWord", "pass", "PASSED", "secret", "token", "auth", "AUTH", "key"],
    *["api_key", "Authorization", "bearer", "-u", "--user", "-", "_", ".", "1", ":", "="],
    *["=>", ",", "SECRET_ACCESS_KEY", "ghp_", "glpat-", "AC", "SK", "ac", "sk", "sk-", "xoxb-"],
    *["://", "@", "\\", '"', "'", " ", "\t", "\n", "\r", "\r\n", "x" * 8, "eyJ", "sig="],
    *["-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "AKIA"],
    *[rand(12), rand(40), rand(32, HEX), rand(32, HEX.upper()), rand(64, ALNUM + "+/")],
    # issue 16: escape sequences, wrapped tokens, key ids whose secret key follows
    *[
        "\x1b[31m",
        "\x1b[0m",
        "\x1b]8;;x\x07",
        "dop_v1_",
        rand(40, ALNUM + "+/"),
        "AKIA" + rand(16, HEX.upper()),
    ],
]


@needs_hyperscan
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, len(PIECES) - 1), max_size=60),
    cuts=st.lists(st.integers(1, 40), min_size=1, max_size=5),
)
def test_both_gates_agree_on_any_composition(picks: list[int], cuts: list[int]) -> None:
    data = "".join(PIECES[i] for i in picks).encode()
    expected = redact_bytes(data, accelerate=False)
    assert redact_bytes(data, accelerate=True) == expected
    out, redactor = stream(data, cuts, accelerate=True)
    assert out == expected
    assert data.count(b"\n") == out.count(b"\n") + redactor.dropped_newlines


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(picks=st.lists(st.integers(0, len(PIECES) - 1), max_size=60))
def test_dropped_newlines_account_for_every_line_feed(picks: list[int]) -> None:
    """Input lines = output lines + the line feeds inside redactions (PEM blocks), either gate."""
    data = "".join(PIECES[i] for i in picks).encode() + b"\n" + pem_block().encode()
    out, redactor = stream(data, [5, 64], accelerate=False)
    assert data.count(b"\n") == out.count(b"\n") + redactor.dropped_newlines
    assert redactor.dropped_newlines >= 7  # the PEM block's own line feeds


def test_locators_find_every_place_their_rule_matches() -> None:
    """A locator fullmatches the first `width` characters of every match of its rule."""
    import re

    texts = [row["text"] for row in load_corpus()]
    texts += [
        f"AC{rand(32, HEX)} SK{rand(32, HEX + 'ABCDEF')} xAC{rand(32, HEX)}_ AC{rand(31, HEX)}"
        for _ in range(50)
    ]
    from core.redaction.rules import build

    texts += [text for _, _, text, _ in build.examples(build.load_families(), "positive")]
    texts += [f"{rand(32, HEX)}-us{RNG.randint(1, 20)} pat{rand(14)}.{rand(64, HEX)}"] * 20
    located = [rule for rule in RULES if rule.locator is not None]
    assert {rule.name for rule in located} == {
        "twilio-api-key",
        "twilio-account-sid",
        "mailchimp-key",
        "airtable-token",
    }
    hits = 0
    for rule in located:
        assert rule.locator is not None
        source, width = rule.locator
        locator = re.compile(source)
        for text in texts:
            for i in range(len(text)):
                if rule.pattern.match(text, i) is not None:
                    hits += 1
                    assert locator.fullmatch(text, i, i + width), (rule.name, text[i : i + 40])
    assert hits >= 50


# --- hostile input stays linear behind the Hyperscan gate ------------------------------------

HOSTILE: dict[str, Callable[[int], bytes]] = {
    "password=": lambda n: b"password=" * (n // 9),
    "auth:": lambda n: b"auth: " * (n // 6),
    "AC hex": lambda n: b"AC" + b"a" * n,
    "BEGIN lines": lambda n: b"-----BEGIN RSA PRIVATE KEY-----\n" * (n // 32),
    "base64 lines": lambda n: b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkw+/\n" * (n // 47),
    "url": lambda n: b"http://u:" * (n // 9),
    "at signs": lambda n: b"://" + b"@" * n,
    "eyJ-segments": lambda n: b"eyJabcdefgh." * (n // 12),
    "xoxb": lambda n: b"xoxb-123456789012-" * (n // 18),
    "ghp_": lambda n: b"ghp_" * (n // 4),
    "base64 line": lambda n: b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkw+/" * (n // 46),
    "endless key": lambda n: (
        b"-----BEGIN RSA PRIVATE KEY-----\n" + b"QUJD" * 16 * (n // 65) + b"\n"
    ),
}


def _cpu(data: bytes) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        redact_bytes(data, accelerate=True)
        best = min(best, time.process_time() - start)
    return best


@needs_hyperscan
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_is_linear_behind_the_hyperscan_gate(name: str) -> None:
    """8× the input costs well under 64× (quadratic) the CPU: the ratio stays < 30."""
    make = HOSTILE[name]
    n = 64 * 1024
    small, large = _cpu(make(n)), _cpu(make(8 * n))
    ratio = large / max(small, 0.002)
    print(f"\n{name}: {small * 1000:.1f} ms → {large * 1000:.1f} ms (×{ratio:.1f})")
    assert ratio < 30


# --- the summary pre-filter ------------------------------------------------------------------

LINE_PIECES = [
    *[b"ok", b"ok ", b"ok\t", b"OK", b"OKAY", b"FAILED", b"FAIL", b"--- ", b"=====", b"== "],
    *[b" passed", b"12", b"3 failed", b"Ran 4", b"Tests: 3", b"Tests 2", b"test result:"],
    *[b"npm ", b"found 3", b"added 5", b"All checks", b"Success:", b"up to date", b"ERROR: "],
    *[b"\x1b[32m", b"\x1b[0m", b"\n", b"\n", b"\n", b"\r\n", b" ", b"\t", b"x", b"\xff"],
]


@needs_hyperscan
@settings(max_examples=500, deadline=None)
@given(picks=st.lists(st.integers(0, len(LINE_PIECES) - 1), max_size=50))
def test_candidate_lines_agree_with_the_regex(picks: list[int]) -> None:
    block = b"\n" + b"".join(LINE_PIECES[i] for i in picks)
    plain, fast = CandidateLines(), CandidateLines()
    assert fast.accelerate()
    expected = [m.group(1) for m in SUMMARY_CANDIDATE.finditer(block)]
    assert plain.lines(block) == expected
    assert fast.lines(block) == expected


# --- a recorded large stream ----------------------------------------------------------------


@needs_hyperscan
def test_recorded_large_stream_stores_exactly_the_reference_redaction(
    engine: Engine, make_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the recorder (threads, batched compression and commits), the stored output
    equals the automaton's redaction of the whole stream, and the line count is the input's."""
    import base64

    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())
    task = engine.start_task(repo=make_repo("work"), objective="accelerated", task_id="acc").id
    secrets = [
        "token=ghp_" + rand(36),
        "Authorization: Basic " + rand(30),
        pem_block().rstrip("\n"),
        "twilio AC" + rand(32, HEX),
    ]
    data = agent_log(6 * ACCELERATE_AFTER, secrets)
    recorder = EvidenceRecorder(
        engine.db, engine.keys, task, source="file", label=None, command={"argv": []}
    )
    for start in range(0, len(data), 300_001):
        recorder.feed(data[start : start + 300_001])
    item = recorder.finish(exit_code=0)
    stored = b"".join(engine.evidence_output(item.id))
    assert stored == redact_bytes(data, accelerate=False)
    assert item.sha256 == hashlib.sha256(data).hexdigest()
    assert item.bytes_total == len(data)
    assert item.lines_total == data.count(b"\n")
    assert item.chunk_count >= 6


# --- imports and the fallback ------------------------------------------------------------------


def _python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_import_and_small_inputs_load_neither_gate_package_nor_hyperscan() -> None:
    out = _python(
        "import sys, core.redaction.redact as r\n"
        "print(sorted(m for m in ('hyperscan', 'ahocorasick_rs') if m in sys.modules))\n"
        "r.redact_text('token=ghp_' + 'a1B2' * 9)\n"
        "r.redact_bytes(b'password=' + b'Zx9' * 5)\n"
        "print('hyperscan' in sys.modules)\n"
    )
    assert out.splitlines() == ["[]", "False"]


def test_without_hyperscan_large_streams_use_the_automaton() -> None:
    """Where the package cannot be imported, a large stream is redacted by the automaton gate."""
    out = _python(
        "import sys\n"
        "sys.modules['hyperscan'] = None  # as on a platform without a wheel\n"
        "from core.redaction.redact import StreamRedactor, hyperscan_available, redact_bytes\n"
        "from core.evidence.summaries import CandidateLines\n"
        "data = (b'tests/test_x.py::test_y PASSED\\n' * 40000"
        " + b'token=ghp_Zx8Qw3Rt7Yu2Io9Pa4Sd6Fg1Hj5Kl0Mn3Bv7C\\n') * 2\n"
        "r = StreamRedactor()\n"
        "out = b''.join(r.feed(data[i:i + 65536]) for i in range(0, len(data), 65536))"
        " + r.flush()\n"
        "print(hyperscan_available(), r.accelerated, CandidateLines().accelerate())\n"
        "print(out == redact_bytes(data), out.count(b'[REDACTED:github-token]'))\n"
    )
    assert out.splitlines() == ["False False False", "True 2"]


# --- the compiled gates, cached in the store -------------------------------------------------

CACHE_RUN = """
import sys
from pathlib import Path
from core.redaction.redact import redact_bytes, use_hyperscan_cache
from core.evidence.summaries import CandidateLines
use_hyperscan_cache(Path(sys.argv[1]))
data = b"id AC" + b"0123456789abcdef" * 2 + b" token=ghp_Zx8Qw3Rt7Yu2Io9Pa4Sd6Fg1Hj5Kl0Mn3Bv7C\\n"
fast = redact_bytes(data, accelerate=True)
print(fast == redact_bytes(data, accelerate=False), fast.count(b"[REDACTED:"))
lines = CandidateLines()
print(lines.accelerate(), lines.lines(b"\\n== 3 passed in 0.1s ==\\nx\\n"))
"""


def _cache_run(directory: Path) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", CACHE_RUN, str(directory)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.splitlines()


@needs_hyperscan
def test_compiled_gates_are_cached_privately_reused_and_rebuilt_when_damaged(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "store" / "cache"
    expected = ["True 2", "True [b'== 3 passed in 0.1s ==']"]
    assert _cache_run(cache) == expected
    files = sorted(cache.iterdir())
    assert [f.name.split("-")[1] for f in files] == ["redact", "summary"]
    assert cache.stat().st_mode & 0o777 == 0o700
    assert all(f.stat().st_mode & 0o777 == 0o600 for f in files)
    written = {f: (f.stat().st_ino, f.read_bytes()) for f in files}

    # The next process loads them (a compile would replace each file with a new one).
    assert _cache_run(cache) == expected
    assert {f: (f.stat().st_ino, f.read_bytes()) for f in files} == written

    # A damaged file is compiled again and replaced; the output is the same.
    files[0].write_bytes(b"not a hyperscan database")
    assert _cache_run(cache) == expected
    assert files[0].read_bytes() == written[files[0]][1]
    assert sorted(cache.iterdir()) == files  # no temporary file left behind
