"""The `pitstop` argument parser under fuzzing: whatever the arguments, one clear outcome.

Hypothesis builds command lines from the real command tree (every leaf command, its own options,
their values drawn from the inputs that broke things before: NaN, infinities, numbers past 64
bits, `/proc` and `/dev/null` paths, escape sequences, refs that do not exist) and runs them
through `tui.cli.main` in this process, on a store with a task, a checkpoint, evidence, an
effect and an approval. Each run must: never say "internal error", never print a traceback (nor
let an exception out), end with a documented exit code, and, when it refused, leave the store's
rows and repositories exactly as they were.

Default 200 examples (a few seconds); `PITSTOP_FUZZ_EXAMPLES=2000` for a long run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.tui.test_cli_faults import store_state
from tui import cli as cli_module

EXAMPLES = int(os.environ.get("PITSTOP_FUZZ_EXAMPLES", "200"))
DOCUMENTED_EXIT_CODES = {0, 1, 2, 3, 4, 5}

# Commands that run programs, reach a network, read stdin, open the dashboard or a server, or
# build whole demo stores: not argument parsing, and each has tests of its own. (`resume` is
# fuzzed without `--launch`.)
_LEFT_OUT = {
    ("run",),
    ("serve",),
    ("ui",),
    ("demo",),
    ("hook",),
    ("redact",),
    ("push",),
    ("fetch",),
    ("sync",),
    ("key",),
    ("effect", "guard"),
    ("effect", "check"),
    ("remote", "add"),
    ("remote", "list"),
    ("task", "share"),
}
# Verdicts, not plain refusals: validation records what it found (3 stale, 4 blocked,
# 5 unsupported), and a resume validates first; doctor exits 1 when it found something;
# a drill records its verdict and exits 1 (drifted, failed to restore) or 3 (not replayable).
_VERDICTS = {"validate": {3, 4, 5}, "resume": {3, 4, 5}, "doctor": {1}, "drill": {1, 3}}
# A drill's verdict is on stdout; an exit 1 or 3 without one is a refusal like any other.
_DRILL_VERDICT = re.compile(r"^drill \S+: (drifted|not-replayable|failed-to-restore)$", re.M)


def _drill_verdict_in_json(stdout: str) -> bool:
    """Whether `drill --json` printed a verdict (the JSON form of `_DRILL_VERDICT`'s line)."""
    try:
        document = json.loads(stdout)
    except ValueError:
        return False
    verdicts = ("drifted", "not-replayable", "failed-to-restore")
    return isinstance(document, dict) and document.get("verdict") in verdicts


def _leaves(
    group: click.Group, ctx: click.Context, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        here = (*path, name)
        if command is None or any(here[: len(out)] == out for out in _LEFT_OUT):
            continue
        if isinstance(command, click.Group):
            yield from _leaves(command, ctx, here)
        else:
            yield here, command


class Option(NamedTuple):
    """One option of a command as the fuzzer uses it: its names, whether it takes a value,
    whether it is required, and values it would accept."""

    names: tuple[str, ...]
    takes_value: bool
    required: bool
    plausible: tuple[str, ...]


# Values a person would pass, by option name ({repo}, {file} and {dir} filled in per run).
_PLAUSIBLE = {
    "--task": ("t1",),
    "--key": ("k1", "k2"),
    "--kind": ("deploy",),
    "--repo": ("{repo}",),
    "--objective": ("fix the bug",),
    "--id": ("t2", "t1"),
    "--file": ("{file}",),
    "--into": ("{dir}/out",),
    "--action": ("ship it",),
    "--reason": ("looked at it",),
    "--note": ("a note",),
    "--label": ("tests",),
}
_ARGUMENT_VALUES = ("t1", "t1@1", "t1:1", "k1", "{dir}/target")


def _plausible(option: click.Option) -> tuple[str, ...]:
    kind = option.type
    if isinstance(kind, click.Choice):
        return tuple(str(choice) for choice in kind.choices)
    if isinstance(kind, (click.types.IntParamType, click.IntRange)):
        return ("1", "3")
    if isinstance(kind, (click.types.FloatParamType, click.FloatRange)):
        return ("0.5", "2")
    for name in option.opts:
        if name in _PLAUSIBLE:
            return _PLAUSIBLE[name]
    return ("x",)


def _command_tree() -> list[tuple[tuple[str, ...], list[Option], int]]:
    """(path, options, number of arguments) for every fuzzed leaf command."""
    ctx = click.Context(cli_module.cli)
    tree = []
    for path, command in _leaves(cli_module.cli, ctx, ()):
        options = [
            Option(
                tuple(param.opts + param.secondary_opts),
                not (param.is_flag or param.count),
                param.required,
                _plausible(param),
            )
            for param in command.params
            if isinstance(param, click.Option) and param.name not in ("help", "launch")
        ]
        arguments = sum(1 for param in command.params if isinstance(param, click.Argument))
        tree.append((path, options, arguments))
    return tree


TREE = _command_tree()

NASTY = st.sampled_from(
    [
        "nan",
        "NaN",
        "inf",
        "-inf",
        "1e309",
        "-1",
        "0",
        "9" * 25,
        "9" * 400,
        "",
        " ",
        "t1",
        "t1@1",
        "t1@0",
        "t1@-1",
        "t1@" + "9" * 25,
        "t1@latest",
        "nosuchtask",
        "nosuchtask@1",
        "t1:1",
        "t1:999",
        "k1",
        "../escape",
        "/proc/nope",
        "/dev/null",
        "-",
        "--",
        "--json",
        "--help",
        "x" * 5000,
        "\x1b]52;c;aGVsbG8=\x07",
        "\x1b[2J",
        "line one\nline two",
        "naïve café ✓",
        "$(echo hi)",
        "proposed",
        "confirmed",
        "uncertain",
        "high",
        "2026-13-45",
        "10m",
        "P1D",
    ]
)
TOKEN = st.one_of(
    NASTY,
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    """A command line: a real command, its arguments and required options (each value a
    plausible one or a nasty one), a few optional options, and now and then a stray token."""
    path, options, arguments = draw(st.sampled_from(TREE))

    def value(plausible: tuple[str, ...]) -> str:  # two in three plausible, so runs go deep
        return draw(st.sampled_from(plausible) if draw(st.integers(0, 2)) else TOKEN)

    argv = list(path)
    for _ in range(arguments):
        argv.append(value(_ARGUMENT_VALUES))
    chosen = [o for o in options if o.required]
    optional = [o for o in options if not o.required]
    if optional:
        chosen += draw(st.lists(st.sampled_from(optional), max_size=3))
    for option in draw(st.permutations(chosen)):
        argv.append(draw(st.sampled_from(option.names)))
        if option.takes_value:
            argv.append(value(option.plausible))
    if draw(st.integers(0, 9)) == 0:
        argv.insert(draw(st.integers(len(path), len(argv))), draw(TOKEN))
    return argv


def _pitstop(argv: list[str]) -> tuple[int, str, str]:
    """Run `pitstop ARGV` in this process as its entry point does: exit code, stdout, stderr."""
    runner = CliRunner()
    with runner.isolation(input=b"") as (out, err, _):
        try:
            cli_module.main(argv)
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace")
    return code, stdout, stderr


@pytest.fixture
def busy_store(
    tmp_path: Path, isolated_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Task `t1` with a checkpoint, evidence, a proposed effect `k1` and a pending approval."""
    monkeypatch.delenv("PITSTOP_DEBUG", raising=False)
    # "Now" stands still: an approval one example asked to expire in a second must not expire
    # during a later example's refusal, which would look like the refusal changed the store.
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-12-03T06:00:00Z")
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "base")):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    (repo / "app.py").write_text("print('hi')\n")
    (tmp_path / "out.txt").write_text("3 passed in 0.1s\n")
    for argv in (
        ["task", "start", "--repo", str(repo), "--objective", "fuzz", "--id", "t1"],
        ["checkpoint", "t1", "--note", "first"],
        ["evidence", "add", "--task", "t1", "--file", str(tmp_path / "out.txt")],
        ["effect", "propose", "--task", "t1", "--key", "k1", "--kind", "deploy"],
        ["approval", "request", "--task", "t1", "--action", "ship it", "--risk", "high"],
    ):
        code, _, stderr = _pitstop(argv)
        assert code == 0, (argv, stderr)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)  # where relative paths (checkout targets) land
    return isolated_env["store"]


def test_the_command_tree_is_fuzzed_broadly() -> None:
    """The fuzzer reaches the commands people type with bad input most."""
    paths = {path for path, _options, _arguments in TREE}
    assert {("checkpoint",), ("task", "start"), ("effect", "propose"), ("show",)} <= paths
    assert ("approval", "approve") in paths and ("evidence", "show") in paths
    assert len(paths) >= 25


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=command_lines())
# Found by this test: a path the system will not look up was an internal error.
@example(argv=["task", "start", "--repo", "9" * 400, "--objective", "x"])
@example(argv=["checkout", "t1", "--into", "9" * 400])
@example(argv=["checkout", "t1", "--into", "../out.txt/inside"])
# Found by this test: a refused approver name founded the task's roster first (a write).
@example(argv=["task", "approver", "add", "t1", ""])
# Found in CI: a drill's recorded not-replayable verdict (exit 3) was taken for a refusal.
@example(argv=["drill", "t1"])
# Found in CI: the same verdict as JSON (`--json`) was taken for a refusal too.
@example(argv=["drill", "t1", "--json"])
def test_any_command_line_gets_one_clear_outcome(busy_store: Path, argv: list[str]) -> None:
    places = {"{repo}": "../repo", "{file}": "../out.txt", "{dir}": "."}
    for placeholder, path in places.items():
        argv = [token.replace(placeholder, path) for token in argv]
    before = store_state(busy_store)
    code, stdout, stderr = _pitstop(argv)
    shown = f"pitstop {argv!r} exited {code}\nstdout: {stdout[-2000:]}\nstderr: {stderr[-2000:]}"
    assert "internal error" not in stderr, shown
    assert "Traceback" not in stderr + stdout, shown
    assert code in DOCUMENTED_EXIT_CODES, shown
    verdict = code in _VERDICTS.get(argv[0], set())
    if verdict and argv[0] == "drill":
        verdict = bool(_DRILL_VERDICT.search(stdout)) or _drill_verdict_in_json(stdout)
    refused = code != 0 and not verdict
    if refused:
        assert stderr.strip(), shown  # a refusal says why
        assert store_state(busy_store) == before, shown
