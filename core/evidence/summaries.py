"""Structured summaries of well-known tool outputs: "412 passed, 3 failed" without the log.

A `SummaryScanner` sees every complete line of (already redacted) output once, in order, and
keeps only counters, so it works on gigabyte streams. Each recogniser looks for the lines its
tool prints at the end of a run; the last matching line wins, as a tool's final report does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

MAX_LINE_SCANNED = 4096

# Lines worth showing the summary scanner; everything else is skipped at C speed.
# Each line is looked at after its "\n" (a block of lines gets a leading one), and the
# first-character class fails most lines before the alternatives are tried: ~3x faster than "^"
# with re.M.
_CANDIDATE_LINE = (
    rb"(?:\x1b\[[0-9;]*m)*[ \t]*"
    rb"(?:=+ |\d+ (?:passed|failed)|Ran \d|OK\b|FAILED|Tests[: ]|ok\s|FAIL|--- |test result:|"
    rb"up to date|Found \d|All checks|Success:|Successfully installed|ERROR: |npm |added |removed |"
    rb"changed |found \d)"
)
SUMMARY_CANDIDATE = re.compile(
    rb"\n(?=[\x1b \t=0-9ROFTtoufASEnarc-])(" + _CANDIDATE_LINE + rb"[^\n]*)"
)
"""A candidate line: group 1 is the line (a match of ``ok\\s`` may run on into the next)."""
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_COUNT_WORDS = {
    "passed": "passed",
    "failed": "failed",
    "error": "errors",
    "errors": "errors",
    "skipped": "skipped",
    "xfailed": "xfailed",
    "xpassed": "xpassed",
    "warning": "warnings",
    "warnings": "warnings",
    "deselected": "deselected",
}

_PYTEST_FINAL = re.compile(
    r"^=+ (?P<body>.*?\b(?:passed|failed|error|errors|skipped|no tests ran)\b.*?) in [\d.]+s"
)
_PYTEST_QUIET = re.compile(
    r"^(?P<body>\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected)"
    r"(?:, \d+ \w+)*) in [\d.]+s"
)
_PYTEST_PART = re.compile(
    r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected)"
)
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s")
_UNITTEST_RESULT = re.compile(r"^(OK|FAILED)(?: \((?P<body>[^)]*)\))?\s*$")
_JEST_TESTS = re.compile(r"^\s*Tests:\s+(?P<body>.*\d+ total)")
_VITEST_TESTS = re.compile(r"^\s*Tests\s+(?P<body>.*\(\d+\))")
# go test's own lines only: `ok  \tPKG\t0.02s`, `FAIL\tPKG\t0.01s` or `[build failed]`, and
# `--- PASS: TestName (0.00s)`; a bare "ok" or "FAIL: it broke" is not a go test run.
_GO_PKG = re.compile(
    r"^(ok|FAIL)[ \t]+\S+[ \t]+(?:\d+(?:\.\d+)?s|\(cached\)|\[(?:build|setup) failed\])"
    r"(?:[ \t][^\n]*)?$"
)
_GO_TEST = re.compile(r"^--- (PASS|FAIL): \S+ \(\d+(?:\.\d+)?s\)$")
_CARGO = re.compile(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored")
_RUFF_FOUND = re.compile(r"^Found (\d+) errors?\.")
_RUFF_CLEAN = re.compile(r"^All checks passed!")
_MYPY = re.compile(r"^Found (\d+) errors? in (\d+) files?")
_MYPY_OK = re.compile(r"^Success: no issues found in (\d+) source files?")
_PIP_OK = re.compile(r"^Successfully installed (.+)$")
# pip's own error lines, not any "ERROR: " a script prints.
_PIP_ERROR = re.compile(
    r"^ERROR: (?:Could not (?:find a version|install packages|open requirements|build wheels)|"
    r"No matching distribution|Failed (?:building wheel|to build)|Cannot (?:install|uninstall)|"
    r"Invalid requirement|ResolutionImpossible|pip's dependency resolver|Exception:|"
    r"Double requirement|Directory '.*' is not installable)"
)
_NPM_ADDED = re.compile(r"^(?:added|removed|changed) (\d+) packages?")
_NPM_UP_TO_DATE = re.compile(r"^up to date, audited (\d+) packages?")
_NPM_VULN = re.compile(r"^found (\d+) vulnerabilit")
_NPM_ERR = re.compile(r"^npm (?:ERR!|error) ")


class Summary(NamedTuple):
    """What a run amounted to, as counts; `tool` names the recogniser that produced it."""

    tool: str
    counts: dict[str, int]

    def text(self) -> str:
        """`pytest: 412 passed, 3 failed`."""
        parts = ", ".join(f"{value} {name}" for name, value in self.counts.items())
        return f"{self.tool}: {parts}" if parts else self.tool

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"tool": self.tool, "counts": dict(self.counts), "text": self.text()}


def _parts(body: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for number, word in _PYTEST_PART.findall(body):
        counts[_COUNT_WORDS.get(word, word)] = int(number)
    return counts


@cache
def _candidate_gate() -> Any:
    """A Hyperscan database finding where candidate lines start; None where not installed."""
    try:
        import hyperscan
    except ImportError:
        return None
    from core.redaction.hyperscan_gate import hyperscan_database

    return hyperscan_database(
        "summary", [rb"\n" + _CANDIDATE_LINE], [hyperscan.HS_FLAG_SOM_LEFTMOST]
    )


def _collect_start(_id: int, start: int, _end: int, _flags: int, starts: list[int]) -> None:
    starts.append(start)


class CandidateLines:
    """Finds, in a block of complete lines, the lines worth showing a `SummaryScanner`.

    ``lines(block)`` equals ``[m.group(1) for m in SUMMARY_CANDIDATE.finditer(block)]``. Once
    accelerated (large streams, where Hyperscan is installed), Hyperscan finds the few places
    where a candidate starts without holding the GIL, and the regex is only run there; the
    pattern's part after the leading "\\n" cannot contain a "\\n" other than its last
    character, so every place the regex matches is reported as a match start.
    """

    def __init__(self) -> None:
        self._scratch: Any = None

    @property
    def accelerated(self) -> bool:
        """Whether Hyperscan finds the candidates."""
        return self._scratch is not None

    def accelerate(self) -> bool:
        """Use Hyperscan from now on; False where it is not installed."""
        database = _candidate_gate()
        if database is None:
            return False
        if self._scratch is None:
            import hyperscan

            self._scratch = hyperscan.Scratch(database)
        return True

    def lines(self, block: bytes) -> list[bytes]:
        """The candidate lines of ``block`` (which starts with "\\n"), in order."""
        if self._scratch is None:
            return [m.group(1) for m in SUMMARY_CANDIDATE.finditer(block)]
        starts: list[int] = []
        _candidate_gate().scan(
            block, match_event_handler=_collect_start, context=starts, scratch=self._scratch
        )
        found: list[bytes] = []
        resume = 0  # finditer goes on after the end of the previous match
        for start in sorted(set(starts)):
            if start < resume:
                continue
            match = SUMMARY_CANDIDATE.match(block, start)
            if match is not None:
                found.append(match.group(1))
                resume = match.end()
        return found


class SummaryScanner:
    """Feed lines; ask for the summary at the end."""

    def __init__(self) -> None:
        self._summary: Summary | None = None
        self._go = {"passed": 0, "failed": 0, "packages_ok": 0, "packages_failed": 0}
        self._go_seen = False
        self._unittest_ran: int | None = None
        self._pip_errors = 0
        self._npm_errors = 0
        self._handlers: list[Callable[[str], bool]] = [
            self._pytest,
            self._unittest,
            self._jest,
            self._go_test,
            self._cargo,
            self._ruff,
            self._mypy,
            self._pip,
            self._npm,
        ]

    def feed_line(self, raw: bytes) -> None:
        """One complete line of output (without its newline)."""
        text = raw[:MAX_LINE_SCANNED].decode("utf-8", errors="replace")
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        text = text.rstrip("\r")
        if "\r" in text:
            text = text.rsplit("\r", 1)[-1]
        for handler in self._handlers:
            if handler(text):
                return

    def summary(self) -> Summary | None:
        """The recognised summary, or None when no known tool's report was seen."""
        if self._summary is None and self._go_seen:
            return Summary("go test", {k: v for k, v in self._go.items() if v})
        return self._summary

    def _pytest(self, line: str) -> bool:
        match = _PYTEST_FINAL.match(line) or _PYTEST_QUIET.match(line)
        if not match:
            return False
        counts = _parts(match.group("body"))
        self._summary = Summary("pytest", counts or {"passed": 0})
        return True

    def _unittest(self, line: str) -> bool:
        ran = _UNITTEST_RAN.match(line)
        if ran:
            self._unittest_ran = int(ran.group(1))
            return True
        result = _UNITTEST_RESULT.match(line)
        if result and self._unittest_ran is not None:
            counts = {"ran": self._unittest_ran}
            for item in (result.group("body") or "").split(","):
                name, _, value = item.strip().partition("=")
                if value.isdigit():
                    counts[{"failures": "failed", "errors": "errors"}.get(name, name)] = int(value)
            counts["passed"] = (
                self._unittest_ran
                - counts.get("failed", 0)
                - counts.get("errors", 0)
                - counts.get("skipped", 0)
                - counts.get("expected failures", 0)
            )
            self._summary = Summary("unittest", counts)
            return True
        return False

    def _jest(self, line: str) -> bool:
        match = _JEST_TESTS.match(line) or _VITEST_TESTS.match(line)
        if not match:
            return False
        counts = {}
        for number, word in re.findall(
            r"(\d+) (passed|failed|skipped|todo|total)", match.group("body")
        ):
            counts[word] = int(number)
        tool = "jest" if line.lstrip().startswith("Tests:") else "vitest"
        self._summary = Summary(tool, counts)
        return True

    def _go_test(self, line: str) -> bool:
        package = _GO_PKG.match(line)
        test = None if package else _GO_TEST.match(line)
        if package:
            self._go["packages_ok" if package.group(1) == "ok" else "packages_failed"] += 1
        elif test:
            self._go["passed" if test.group(1) == "PASS" else "failed"] += 1
        else:
            return False
        self._go_seen = True
        return True

    def _cargo(self, line: str) -> bool:
        match = _CARGO.match(line)
        if not match:
            return False
        previous = (
            self._summary.counts if self._summary and self._summary.tool == "cargo test" else {}
        )
        counts = {
            "passed": previous.get("passed", 0) + int(match.group(1)),
            "failed": previous.get("failed", 0) + int(match.group(2)),
            "ignored": previous.get("ignored", 0) + int(match.group(3)),
        }
        self._summary = Summary("cargo test", counts)
        return True

    def _ruff(self, line: str) -> bool:
        found = _RUFF_FOUND.match(line)
        if found:
            self._summary = Summary("ruff", {"errors": int(found.group(1))})
            return True
        if _RUFF_CLEAN.match(line):
            self._summary = Summary("ruff", {"errors": 0})
            return True
        return False

    def _mypy(self, line: str) -> bool:
        found = _MYPY.match(line)
        if found:
            self._summary = Summary(
                "mypy", {"errors": int(found.group(1)), "files": int(found.group(2))}
            )
            return True
        clean = _MYPY_OK.match(line)
        if clean:
            self._summary = Summary("mypy", {"errors": 0, "files": int(clean.group(1))})
            return True
        return False

    def _pip(self, line: str) -> bool:
        if _PIP_ERROR.match(line):
            self._pip_errors += 1
            if self._summary is None or self._summary.tool == "pip install":
                counts = dict(self._summary.counts) if self._summary else {"installed": 0}
                counts["errors"] = self._pip_errors
                self._summary = Summary("pip install", counts)
            return True
        match = _PIP_OK.match(line)
        if not match:
            return False
        installed = len(match.group(1).split())
        counts = {"installed": installed}
        if self._pip_errors:
            counts["errors"] = self._pip_errors
        self._summary = Summary("pip install", counts)
        return True

    def _npm_counts(self) -> dict[str, int]:
        if self._summary and self._summary.tool == "npm install":
            return dict(self._summary.counts)
        return {}

    def _npm(self, line: str) -> bool:
        if _NPM_ERR.match(line):
            self._npm_errors += 1
            counts = self._npm_counts()
            counts["errors"] = self._npm_errors
            self._summary = Summary("npm install", counts)
            return True
        current = _NPM_UP_TO_DATE.match(line)
        if current:
            counts = self._npm_counts()
            counts["packages"] = 0
            counts["audited"] = int(current.group(1))
            self._summary = Summary("npm install", counts)
            return True
        added = _NPM_ADDED.match(line)
        if added:
            counts = self._npm_counts()
            counts["packages"] = int(added.group(1))
            self._summary = Summary("npm install", counts)
            return True
        vulnerable = _NPM_VULN.match(line)
        if vulnerable and self._summary and self._summary.tool == "npm install":
            self._summary.counts["vulnerabilities"] = int(vulnerable.group(1))
            return True
        return False
