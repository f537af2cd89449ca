"""What a recorded command was, for replaying a task: an install, a build, a test run, or other.

Replaying a lost task means redoing its installs, builds and test runs, so their recorded
durations are the environment-reconstruction part of the replay cost. The tables below are data:
which programs and subcommands are which kind, and the programs to look past (`env`, `uv run`,
`sh -c '…'`) to find the real one.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from enum import StrEnum


class WorkKind(StrEnum):
    """What a recorded command was, as far as replaying the task is concerned."""

    INSTALL = "install"  # dependency installs, environment setup
    BUILD = "build"
    TEST = "test"  # test runs and checks (linters, type checkers)
    OTHER = "other"  # not counted as environment reconstruction


COUNTED_KINDS = (WorkKind.INSTALL, WorkKind.BUILD, WorkKind.TEST)


# Summary recognisers (core.evidence.summaries) name the tool that printed the report.
_TOOL_KIND = {
    "pip install": WorkKind.INSTALL,
    "npm install": WorkKind.INSTALL,
    "pytest": WorkKind.TEST,
    "unittest": WorkKind.TEST,
    "jest": WorkKind.TEST,
    "vitest": WorkKind.TEST,
    "go test": WorkKind.TEST,
    "cargo test": WorkKind.TEST,
    "ruff": WorkKind.TEST,
    "mypy": WorkKind.TEST,
}


# Programs that only run another program: look past them (and their options) to the real one.
_WRAPPERS = {"env", "time", "nice", "npx", "pnpx", "bunx", "sudo", "nohup", "timeout", "xvfb-run"}


_RUNNERS = {("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("hatch", "run"), ("pdm", "run")}


_SHELLS = {"sh", "bash", "zsh", "dash"}


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


_INSTALL_VERBS = {"install", "i", "ci", "sync", "add", "restore", "fetch", "download"}


_INSTALL_PROGRAMS = {
    "pip": {"install", "download", "sync"},
    "pip3": {"install", "download"},
    "uv": {"sync", "pip", "add", "venv"},
    "poetry": {"install", "add", "lock"},
    "pipenv": {"install", "sync"},
    "pdm": {"install", "sync", "add"},
    "npm": {"install", "i", "ci", "add"},
    "pnpm": {"install", "i", "add", "fetch"},
    "yarn": {"install", "add", ""},
    "bun": {"install", "i", "add"},
    "bundle": {"install"},
    "gem": {"install"},
    "cargo": {"fetch", "install"},
    "go": {"mod", "get", "install"},
    "apt-get": {"install"},
    "apt": {"install"},
    "brew": {"install", "bundle"},
    "conda": {"install", "create", "env"},
    "mamba": {"install", "create", "env"},
    "composer": {"install", "update", "require"},
    "dotnet": {"restore"},
    "mvn": {"dependency:resolve", "dependency:go-offline"},
}


_BUILD_PROGRAMS = {
    "make": None,
    "cmake": None,
    "ninja": None,
    "meson": None,
    "bazel": {"build"},
    "tsc": None,
    "webpack": None,
    "gradle": {"build", "assemble", "compileJava", "jar"},
    "gradlew": {"build", "assemble", "compileJava", "jar"},
    "mvn": {"package", "compile", "install", "verify"},
    "cargo": {"build", "check"},
    "go": {"build", "generate"},
    "docker": {"build", "buildx", "compose"},
    "npm": {"run-script:build", "build"},
    "pnpm": {"build", "run-script:build"},
    "yarn": {"build", "run-script:build"},
    "bun": {"build", "run-script:build"},
    "vite": {"build"},
    "uv": {"build"},
    "poetry": {"build"},
    "hatch": {"build"},
    "python": {"-m:build"},
    "dotnet": {"build", "publish"},
    # database migrations: redone to rebuild the environment, counted with builds
    "alembic": {"upgrade", "downgrade"},
    "flyway": {"migrate"},
    "prisma": {"migrate"},
    "rake": {"db:migrate"},
    "rails": {"db:migrate"},
}


_TEST_PROGRAMS = {
    "pytest": None,
    "py.test": None,
    "tox": None,
    "nox": None,
    "jest": None,
    "vitest": None,
    "mocha": None,
    "ruff": None,
    "mypy": None,
    "pyright": None,
    "eslint": None,
    "flake8": None,
    "pylint": None,
    "ctest": None,
    "cargo": {"test", "clippy", "nextest"},
    "go": {"test", "vet"},
    "npm": {"test", "t", "run-script:test", "run-script:lint", "run-script:check"},
    "pnpm": {"test", "run-script:test", "run-script:lint"},
    "yarn": {"test", "run-script:test", "run-script:lint"},
    "bun": {"test"},
    "mvn": {"test"},
    "gradle": {"test", "check"},
    "gradlew": {"test", "check"},
    "make": {"test", "check", "lint"},
    "dotnet": {"test"},
    "python": {"-m:pytest", "-m:unittest", "-m:mypy", "-m:ruff"},
}


_LABEL_WORDS = (
    (re.compile(r"\b(install|setup|set up|deps|dependencies|bootstrap|sync)\b"), WorkKind.INSTALL),
    (re.compile(r"\b(build|compile|bundle|package)\b"), WorkKind.BUILD),
    (re.compile(r"\b(tests?|pytest|lint|check|typecheck|suite)\b"), WorkKind.TEST),
)


def _program(argv: Sequence[str]) -> tuple[str, list[str]]:
    """The real program and its arguments, looking past wrappers, runners and `sh -c`."""
    args = list(argv)
    for _ in range(8):  # wrappers nest only so deep in practice
        while args and _ASSIGNMENT.match(args[0]):  # `CI=1 make`: environment, not a program
            args = args[1:]
        if not args:
            return "", []
        name = os.path.basename(args[0])
        name = re.sub(r"^(python|pip)3(\.\d+)?$", r"\g<1>", name)
        if name in _WRAPPERS:
            rest = args[1:]
            while rest and (rest[0].startswith("-") or "=" in rest[0] or rest[0][:1].isdigit()):
                rest = rest[1:]
            args = rest
            continue
        if len(args) >= 2 and (name, args[1]) in _RUNNERS:
            args = args[2:]
            continue
        return name, args[1:]
    return "", []


def _verb(program: str, rest: list[str]) -> str:
    """The subcommand that decides the kind: `install`, `run-script:build`, `-m:pytest`."""
    words = [arg for arg in rest if not arg.startswith("-") or arg == "-m"]
    if program == "python":
        return f"-m:{words[1]}" if len(words) >= 2 and words[0] == "-m" else ""
    if not words:
        return ""
    if words[0] in ("run", "run-script") and len(words) >= 2:
        return f"run-script:{words[1]}"
    return words[0]


def _matches(table: Mapping[str, set[str] | None], program: str, verb: str) -> bool:
    if program not in table:
        return False
    verbs = table[program]
    return verbs is None or verb in verbs


def _commands(argv: Sequence[str]) -> list[list[str]]:
    """The command lines inside `argv`: itself, or each part of a `sh -c 'a && b; c'` script
    (a one-word argv holding spaces is such a script: a hook records the shell's command line)."""
    if len(argv) == 1 and any(space in argv[0] for space in " \t\n"):
        argv = ["sh", "-c", argv[0]]
    if (
        len(argv) >= 3
        and os.path.basename(argv[0]) in _SHELLS
        and argv[1] in ("-c", "-lc", "-ec", "-ic")
    ):
        lexer = shlex.shlex(argv[2], posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:
            return [list(argv)]
        parts: list[list[str]] = [[]]
        for word in words:
            if word in ("&&", "||", ";", "|", "&", ";;", "(", ")"):
                parts.append([])
            else:
                parts[-1].append(word)
        return [part for part in parts if part]
    return [list(argv)]


def _classify_command(argv: Sequence[str]) -> WorkKind:
    program, rest = _program(argv)
    if not program:
        return WorkKind.OTHER
    verb = _verb(program, rest)
    if program == "python" and verb == "-m:pip":
        program, verb = "pip", _verb("pip", rest[2:])
    if program == "uv" and verb == "pip":
        return WorkKind.INSTALL if "install" in rest or "sync" in rest else WorkKind.OTHER
    if _matches(_TEST_PROGRAMS, program, verb):
        return WorkKind.TEST
    if _matches(_INSTALL_PROGRAMS, program, verb):
        return WorkKind.INSTALL
    if _matches(_BUILD_PROGRAMS, program, verb):
        return WorkKind.BUILD
    return WorkKind.OTHER


def classify_run(
    argv: Sequence[str] = (), summary_tool: str | None = None, label: str | None = None
) -> WorkKind:
    """Install, build, test or other: from the command line, else the summary tool or label.

    A shell script's parts are classified one by one; the first that is an install, then a
    build, then a test, decides (setting up an environment dominates what runs after it).
    """
    found = {_classify_command(command) for command in _commands(argv)}
    for kind in COUNTED_KINDS:
        if kind in found:
            return kind
    if summary_tool and summary_tool in _TOOL_KIND:
        return _TOOL_KIND[summary_tool]
    if label:
        lowered = label.lower()
        for pattern, kind in _LABEL_WORDS:
            if pattern.search(lowered):
                return kind
    return WorkKind.OTHER
