# ruff: noqa: E501  (tool output is quoted verbatim)
"""Tool summaries: realistic final output of common tools gives the right counts.

Each log goes through the whole recorder (`Engine.add_evidence_file`), so the line pre-filter the
recorder applies before the scanner is exercised too; a few go through a real run.
"""

from __future__ import annotations

import base64
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.engine import Engine
from core.evidence.summaries import CandidateLines, SummaryScanner

PYTEST = """\
============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0
rootdir: /home/dev/project
configfile: pyproject.toml
plugins: asyncio-0.23.8, hypothesis-6.108.5
collected 418 items

tests/test_api.py ........................................................ [ 13%]
tests/test_models.py ...........F.............s........................... [ 26%]
tests/test_views.py ..........................................E........... [ 40%]
tests/test_utils.py .........................................x............ [100%]

==================================== ERRORS ====================================
_________________ ERROR at setup of test_view_requires_login __________________
    @pytest.fixture
    def client(app):
>       return app.test_client(use_cookies=True)
E       AttributeError: 'NoneType' object has no attribute 'test_client'
=================================== FAILURES ===================================
_____________________________ test_model_defaults ______________________________
    def test_model_defaults():
>       assert Model().status == "new"
E       AssertionError: assert 'draft' == 'new'
=============================== warnings summary ===============================
tests/test_api.py::test_legacy_endpoint
  /home/dev/project/app/api.py:41: DeprecationWarning: legacy endpoint
    warnings.warn("legacy endpoint", DeprecationWarning)

-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
=========================== short test summary info ============================
FAILED tests/test_models.py::test_model_defaults - AssertionError: assert 'draft' == 'new'
ERROR tests/test_views.py::test_view_requires_login - AttributeError: 'NoneType' object has...
= 1 failed, 412 passed, 3 skipped, 1 xfailed, 2 warnings, 1 error in 12.34s =
"""

PYTEST_COLOR = (
    "\x1b[32m.\x1b[0m\x1b[32m.\x1b[0m\x1b[31mF\x1b[0m\x1b[31m                            "
    "[100%]\x1b[0m\r\n"
    "\x1b[31m=================== \x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m2 passed\x1b[0m"
    "\x1b[31m in 0.05s\x1b[0m\x1b[31m ===================\x1b[0m\r\n"
)

PYTEST_QUIET = """\
..........F.........s.......                                              [100%]
=================================== FAILURES ===================================
______________________________ test_parse_date _________________________________
E       ValueError: unconverted data remains: Z
=========================== short test summary info ============================
FAILED tests/test_dates.py::test_parse_date - ValueError: unconverted data remains: Z
1 failed, 26 passed, 1 skipped in 0.87s
"""

UNITTEST = """\
..F.E.s....
======================================================================
ERROR: test_connect (tests.test_db.DbTest.test_connect)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/dev/project/tests/test_db.py", line 12, in test_connect
    self.db.connect()
ConnectionRefusedError: [Errno 111] Connection refused

======================================================================
FAIL: test_total (tests.test_cart.CartTest.test_total)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/dev/project/tests/test_cart.py", line 30, in test_total
    self.assertEqual(cart.total(), 30)
AssertionError: 29 != 30

----------------------------------------------------------------------
Ran 11 tests in 0.012s

FAILED (failures=1, errors=1, skipped=1)
"""

UNITTEST_OK = """\
..........
----------------------------------------------------------------------
Ran 10 tests in 0.004s

OK
"""

JEST = """\
 PASS  src/utils/format.test.ts
 PASS  src/components/Button.test.tsx
 FAIL  src/api/client.test.ts
  ● ApiClient › retries on 503

    expect(received).toBe(expected) // Object.is equality

    Expected: 3
    Received: 1

      41 |     await client.get("/items");
    > 42 |     expect(fetchMock).toHaveBeenCalledTimes(3);
         |                       ^

Test Suites: 1 failed, 2 passed, 3 total
Tests:       1 failed, 2 skipped, 37 passed, 40 total
Snapshots:   4 passed, 4 total
Time:        3.512 s
Ran all test suites.
"""

VITEST = """\
 ✓ src/lib/math.test.ts (12 tests) 4ms
 ✓ src/lib/strings.test.ts (8 tests) 3ms
 ❯ src/routes/login.test.ts (5 tests | 2 failed) 31ms
   × login > rejects an expired session 12ms
     → expected 401 to be 403

 Test Files  1 failed | 2 passed (3)
      Tests  2 failed | 23 passed (25)
   Start at  14:02:11
   Duration  812ms (transform 120ms, setup 0ms, collect 301ms, tests 38ms)
"""

GO_TEST = """\
=== RUN   TestParse
--- PASS: TestParse (0.00s)
=== RUN   TestParseEmpty
--- PASS: TestParseEmpty (0.00s)
=== RUN   TestRoundTrip
=== RUN   TestRoundTrip/unicode
    codec_test.go:44: round trip mismatch: got "caf?" want "café"
=== RUN   TestRoundTrip/ascii
--- FAIL: TestRoundTrip (0.00s)
    --- FAIL: TestRoundTrip/unicode (0.00s)
    --- PASS: TestRoundTrip/ascii (0.00s)
FAIL
FAIL\texample.com/proj/codec\t0.004s
=== RUN   TestServe
--- PASS: TestServe (0.01s)
PASS
ok  \texample.com/proj/server\t0.021s
?   \texample.com/proj/cmd/proj\t[no test files]
FAIL
"""

CARGO = """\
   Compiling proj v0.1.0 (/home/dev/proj)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 2.31s
     Running unittests src/lib.rs (target/debug/deps/proj-3f2a9c1b0d4e5f67)

running 14 tests
test parser::tests::empty ... ok
test parser::tests::nested ... FAILED
test slow_case ... ignored
test result: FAILED. 12 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.02s

     Running tests/integration.rs (target/debug/deps/integration-9a8b7c6d5e4f3a2b)

running 3 tests
test it_works ... ok
test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests proj

running 2 tests
test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.15s

error: test failed, to rerun pass `--lib`
"""

RUFF = """\
app/models.py:3:8: F401 [*] `os` imported but unused
app/views.py:17:5: E741 Ambiguous variable name: `l`
app/views.py:88:101: E501 Line too long (104 > 100)
Found 3 errors.
[*] 1 fixable with the `--fix` option.
"""

RUFF_CLEAN = "All checks passed!\n"

MYPY = """\
app/models.py:12: error: Incompatible return value type (got "str | None", expected "str")  [return-value]
app/views.py:40: error: Argument 1 to "render" has incompatible type "int"; expected "str"  [arg-type]
app/views.py:41: note: See https://mypy.rtfd.io/en/stable/_refs.html#code-arg-type for details
Found 2 errors in 2 files (checked 37 source files)
"""

MYPY_CLEAN = "Success: no issues found in 37 source files\n"

PIP = """\
Collecting requests==2.32.3
  Downloading requests-2.32.3-py3-none-any.whl.metadata (4.6 kB)
Collecting charset-normalizer<4,>=2 (from requests==2.32.3)
  Using cached charset_normalizer-3.3.2-cp312-cp312-manylinux_2_17_x86_64.whl.metadata (33 kB)
Collecting idna<4,>=2.5 (from requests==2.32.3)
  Using cached idna-3.8-py3-none-any.whl.metadata (9.9 kB)
Downloading requests-2.32.3-py3-none-any.whl (64 kB)
   ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 64.9/64.9 kB 2.1 MB/s eta 0:00:00
Installing collected packages: idna, charset-normalizer, requests
Successfully installed charset-normalizer-3.3.2 idna-3.8 requests-2.32.3
"""

PIP_FAILED = """\
Collecting nosuchpackage-xyz
ERROR: Could not find a version that satisfies the requirement nosuchpackage-xyz (from versions: none)
ERROR: No matching distribution found for nosuchpackage-xyz
"""

NPM = """\
npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory.
npm warn deprecated glob@7.2.3: Glob versions prior to v9 are no longer supported

added 312 packages, and audited 313 packages in 9s

54 packages are looking for funding
  run `npm fund` for details

2 moderate severity vulnerabilities

To address all issues, run:
  npm audit fix

Run `npm audit` for details.
"""

NPM_CLEAN = """\

added 87 packages, removed 3 packages, changed 2 packages, and audited 120 packages in 2s

found 0 vulnerabilities
"""

NPM_UP_TO_DATE = """\

up to date, audited 120 packages in 1s

found 0 vulnerabilities
"""

NPM_FAILED = """\
npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/nosuchpackage-xyz - Not found
npm error 404
npm error 404  'nosuchpackage-xyz@*' is not in this registry.
npm error A complete log of this run can be found in: /home/dev/.npm/_logs/2024-08-30T10_00_00_000Z-debug-0.log
"""

CASES: list[tuple[str, str, str, dict[str, int]]] = [
    (
        "pytest",
        PYTEST,
        "pytest",
        {"failed": 1, "passed": 412, "skipped": 3, "xfailed": 1, "warnings": 2, "errors": 1},
    ),
    ("pytest-color-pty", PYTEST_COLOR, "pytest", {"failed": 1, "passed": 2}),
    (
        "unittest",
        UNITTEST,
        "unittest",
        {"ran": 11, "failed": 1, "errors": 1, "skipped": 1, "passed": 8},
    ),
    ("unittest-ok", UNITTEST_OK, "unittest", {"ran": 10, "passed": 10}),
    ("jest", JEST, "jest", {"failed": 1, "skipped": 2, "passed": 37, "total": 40}),
    ("vitest", VITEST, "vitest", {"failed": 2, "passed": 23}),
    (
        "go-test",
        GO_TEST,
        "go test",
        {"passed": 3, "failed": 1, "packages_ok": 1, "packages_failed": 1},
    ),
    ("cargo-test", CARGO, "cargo test", {"passed": 16, "failed": 1, "ignored": 2}),
    ("ruff", RUFF, "ruff", {"errors": 3}),
    ("ruff-clean", RUFF_CLEAN, "ruff", {"errors": 0}),
    ("mypy", MYPY, "mypy", {"errors": 2, "files": 2}),
    ("mypy-clean", MYPY_CLEAN, "mypy", {"errors": 0, "files": 37}),
    ("pip-install", PIP, "pip install", {"installed": 3}),
    ("npm-install", NPM, "npm install", {"packages": 312}),
    ("npm-install-clean", NPM_CLEAN, "npm install", {"packages": 87, "vulnerabilities": 0}),
    ("npm-install-failed", NPM_FAILED, "npm install", {"errors": 5}),
]

# Outputs agents produce all the time that the scanner missed when these tests were written:
# `pytest -q` (no `=` rule around the totals), a failed `pip install`, an up-to-date `npm install`.
GAPS: list[tuple[str, str, str, dict[str, int]]] = [
    ("pytest-q", PYTEST_QUIET, "pytest", {"failed": 1, "passed": 26, "skipped": 1}),
    ("pip-install-failed", PIP_FAILED, "pip install", {"errors": 2}),
    ("npm-install-up-to-date", NPM_UP_TO_DATE, "npm install", {"vulnerabilities": 0}),
]


@pytest.fixture
def task_id(engine: Engine, make_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())
    return engine.start_task(repo=make_repo("work"), objective="summaries", task_id="sm").id


def summary_of(engine: Engine, task: str, tmp_path: Path, name: str, text: str) -> Any:
    log = tmp_path / f"{name}.log"
    log.write_bytes(text.encode())
    item = engine.add_evidence_file(task, log, command=name, exit_code=1)
    return item.summary


def scanner_summary(text: str) -> Any:
    scanner = SummaryScanner()
    for line in text.encode().splitlines():
        scanner.feed_line(line)
    found = scanner.summary()
    return found.as_dict() if found else None


@pytest.mark.parametrize(("name", "text", "tool", "counts"), CASES, ids=[c[0] for c in CASES])
def test_recorded_log_gets_the_right_summary(
    engine: Engine,
    task_id: str,
    tmp_path: Path,
    name: str,
    text: str,
    tool: str,
    counts: dict[str, int],
) -> None:
    summary = summary_of(engine, task_id, tmp_path, name, text)
    assert summary is not None, f"{name}: no summary"
    assert summary["tool"] == tool
    for key, value in counts.items():
        assert summary["counts"].get(key) == value, (key, summary)
    assert summary["text"].startswith(f"{tool}: ")


@pytest.mark.parametrize(("name", "text", "tool", "counts"), GAPS, ids=[c[0] for c in GAPS])
def test_common_outputs_agents_print_are_recognised(
    engine: Engine,
    task_id: str,
    tmp_path: Path,
    name: str,
    text: str,
    tool: str,
    counts: dict[str, int],
) -> None:
    summary = summary_of(engine, task_id, tmp_path, name, text)
    assert summary is not None, f"{name}: no summary"
    assert summary["tool"] == tool
    for key, value in counts.items():
        assert summary["counts"].get(key) == value, (key, summary)


@pytest.mark.parametrize(("name", "text", "tool", "counts"), CASES, ids=[c[0] for c in CASES])
def test_recorder_filter_loses_nothing_the_scanner_sees(
    engine: Engine,
    task_id: str,
    tmp_path: Path,
    name: str,
    text: str,
    tool: str,
    counts: dict[str, int],
) -> None:
    """The recorder's pre-filter and the bare scanner agree on every log."""
    assert summary_of(engine, task_id, tmp_path, name, text) == scanner_summary(text)


def test_plain_output_has_no_summary(engine: Engine, task_id: str, tmp_path: Path) -> None:
    text = "building…\nok, wrote dist/app.js (41 kB)\nFound a config at ./app.toml\ndone\n"
    assert summary_of(engine, task_id, tmp_path, "plain", text) is None


# What programs print that only looks like a tool's report: `echo ok`, a script's own "ERROR:",
# words that start like go test's lines. None of them is a go test run or a pip install.
NOT_A_TOOL = [
    ("echo-ok", "ok\n"),
    ("ok-then-more", "ok\nall done\n"),
    ("ok-words", "ok\tsure, wrote it\n"),
    ("fail-words", "FAIL this step broke\nFAIL\n"),
    ("dashes", "--- PASS: the salt\n--- FAIL: nothing\n"),
    ("script-error", "ERROR: the database is down\n"),
]


@pytest.mark.parametrize(("name", "text"), NOT_A_TOOL, ids=[c[0] for c in NOT_A_TOOL])
def test_output_that_only_looks_like_a_tool_claims_none(
    engine: Engine, task_id: str, tmp_path: Path, name: str, text: str
) -> None:
    assert summary_of(engine, task_id, tmp_path, name, text) is None
    assert scanner_summary(text) is None


def _recorder_view_summary(data: bytes) -> Any:
    """What the recorder's path (candidate lines, then the scanner) makes of `data`."""
    scanner = SummaryScanner()
    for line in CandidateLines().lines(b"\n" + data):
        scanner.feed_line(line)
    found = scanner.summary()
    return found.as_dict() if found else None


# Pieces of go test's and pip's lines, but never a duration, `(cached)` or `[build failed]`
# (without which no line is go test's), nor a phrase of pip's own errors.
_LOOKALIKE_PIECES = st.sampled_from(
    [
        b"ok",
        b"FAIL",
        b"--- PASS:",
        b"--- FAIL:",
        b"ERROR: ",
        b" ",
        b"\t",
        b"\n",
        b"\r",
        b"\x00",
        b"\xff\xfe",
        b"\x1b[0m",
        b"x.go",
        b"Test",
        b"(",
        b")",
        b"0",
        b"s",
        b"pkg/a",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_LOOKALIKE_PIECES, st.binary(max_size=8)), max_size=40))
def test_random_output_is_not_summarised_as_go_test_or_pip(pieces: list[bytes]) -> None:
    data = b"".join(pieces) + b"\n"
    for found in (_recorder_view_summary(data), scanner_summary(data.decode(errors="replace"))):
        assert found is None or found["tool"] not in ("go test", "pip install"), (data, found)


def test_the_last_report_wins(engine: Engine, task_id: str, tmp_path: Path) -> None:
    text = RUFF + PYTEST
    summary = summary_of(engine, task_id, tmp_path, "both", text)
    assert summary["tool"] == "pytest"


def test_real_pytest_and_unittest_runs(
    engine: Engine, task_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest in a terminal (colours on) and unittest on pipes, run for real."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # start fast
    project = tmp_path / "proj"
    project.mkdir()
    (project / "test_sample.py").write_text(
        textwrap.dedent(
            """
            import unittest

            class T(unittest.TestCase):
                def test_ok(self): self.assertTrue(True)
                def test_bad(self): self.assertEqual(1, 2)
                @unittest.skip("later")
                def test_skip(self): pass
            """
        )
    )
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        outcome, item = engine.run_command(
            task_id,
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_sample.py"],
            cwd=project,
            out_fd=devnull,
            err_fd=devnull,
            use_pty=True,
        )
        assert outcome.exit_code == 1
        assert b"\x1b[" in b"".join(engine.evidence_output(item.id))  # it did colour
        assert item.summary is not None
        assert item.summary["tool"] == "pytest"
        assert item.summary["counts"] == {"failed": 1, "passed": 1, "skipped": 1}
        outcome, item = engine.run_command(
            task_id,
            [sys.executable, "-m", "unittest", "test_sample"],
            cwd=project,
            out_fd=devnull,
            err_fd=devnull,
            use_pty=False,
        )
        assert outcome.exit_code == 1
        assert item.summary is not None, "unittest: no summary"
        assert item.summary["tool"] == "unittest"
        assert item.summary["counts"]["failed"] == 1
        assert item.summary["counts"]["skipped"] == 1
        assert item.summary["counts"]["passed"] == 1
    finally:
        os.close(devnull)
