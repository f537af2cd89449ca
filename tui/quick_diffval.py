"""`pitstop diff TASK@SEQ` and `pitstop validate TASK@SEQ --offline`, answered without click
(issue 21: within 2x of `git diff HEAD` / `git status` on the same repository).

Loading click and the command modules costs such a process ~25 ms, more than `git diff HEAD`
takes on a repository of thousands of files. `tui.launch` sends these command lines here first:
`diff REF [--against base|previous]` and `validate REF [--offline]`, each option at most once.
Any other option (`--stat`, `--json`, `--into`, `--help`), a repeated one, or a value click
would refuse goes to click's commands in `tui.cli.checkpoints` and `tui.cli.resume`, which print
the same bytes and exit with the same codes (tests/tui/test_quick_diffval.py runs both on one
store and compares them).
"""

from __future__ import annotations

import sys

from tui.quick import engine, failure_line, store_option
from tui.quick_output import write, writes_utf8

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

MARKS = {"pass": "✓", "warn": "!", "fail": "✗", "unknown": "?"}


def finding_line(finding: Any) -> str:
    """One finding as `pitstop validate` prints it (both paths print through this)."""
    line = f"{MARKS[finding.status.value]} {finding.check:<13} {finding.message}"
    if finding.status.value != "pass" and finding.fix:
        line += f"\n  {'':<13} fix: {finding.shown_fix}"
    return line


class Asked(NamedTuple):
    """The one `diff` or `validate` command line this path runs."""

    command: str
    ref: str
    against: str
    offline: bool


def parse(args: list[str]) -> Asked | None:
    """The command line as click reads it, when it is one of the two shapes this path runs;
    None: click's to read (or to refuse)."""
    if args[:1] not in (["diff"], ["validate"]):
        return None
    command, rest = args[0], args[1:]
    ref: str | None = None
    against = "base"
    seen: set[str] = set()
    position = 0
    while position < len(rest):
        word = rest[position]
        if word in seen:
            return None
        if command == "diff" and word == "--against":
            value = rest[position + 1] if position + 1 < len(rest) else None
            if value not in ("base", "previous"):
                return None
            against = value
            seen.add(word)
            position += 1
        elif command == "validate" and word == "--offline":
            seen.add(word)
        elif word.startswith("-") or ref is not None:
            return None
        else:
            ref = word
        position += 1
    if ref is None:
        return None
    return Asked(command, ref, against, "--offline" in seen)


def run(args: list[str]) -> int | None:
    """Answer `args` and return the exit code; None: leave it to click."""
    asked = parse(args)
    if asked is None or not writes_utf8():
        return None
    usable, store = store_option()
    if not usable:
        return None
    from core.snapshot import early_diff

    try:
        if asked.command == "diff" and asked.against == "base":
            early_diff.start(store, asked.ref)  # git writes the text while the engine loads
        opened = engine(store)
        if asked.command == "diff":
            return _diff(opened.diff(asked.ref, asked.against))
        return _validate(opened, asked)
    except (EOFError, KeyboardInterrupt):  # click ends its line and says "aborted"
        return write(None, "\npitstop: aborted", 130)
    except BaseException as exc:  # every failure as one line, as `tui.cli.main` words it
        line, code = failure_line(exc)
        return write(None, line, code)
    finally:
        early_diff.drop()


def _diff(text: str) -> int:
    """Print the diff as `click.echo(text, nl=False)` does; text holding an escape character
    goes through click itself (it strips ANSI sequences when stdout is not a terminal)."""
    if "\x1b" in text:
        import click

        click.echo(text, nl=False)
        return 0
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0


def _validate(opened: Any, asked: Asked) -> int:
    """Run the checks, printing each finding as it finishes, as `tui.cli.resume.validate` does."""
    from core.terminal_text import printable

    def say(text: str) -> None:
        write(printable(text), None, 0)

    report = opened.validate(
        asked.ref, into=None, offline=asked.offline, progress=lambda f: say(finding_line(f))
    )
    if report.advice:
        say(f"\nadvice:  {report.advice}")
    say(f"\nverdict: {report.verdict.value}  ({report.duration_ms} ms)")
    return int(report.verdict.exit_code)
