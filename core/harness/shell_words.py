"""Reading a shell line the way the guard's self-protection needs: every command it may run.

An agent that wants to get around a guard spells a command many ways: behind `env`, `sudo` or
`FOO=1`, inside `sh -c '…'`, `bash -lc "…"`, `$(…)` or backticks, split across `;`, `&&` and
`|`, with quotes inside the name (`p''itstop`), through a variable set earlier in the line, or
after a `cd`. This module turns a line into the simple commands a shell would run — each with
the directory it runs in — and into one flat list of words with every quote and substitution
mark removed, the last net for spellings the structure misses. Paths are resolved like the shell
and the kernel would (`~`, `$HOME`, relative to the `cd`, symlinks).

It over-approximates on purpose: a quoted string that reads as a command is treated as one that
may run (nobody can tell statically whether `eval`, `xargs` or a script will run it).

Standard library only: it runs on every tool call an agent makes.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Mapping

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

MAX_DEPTH = 5  # nested strings read as commands (`sh -c "bash -c '…'"`)
SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", "(", ")", "{", "}", "!"})
REDIRECTIONS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_NESTED = re.compile(r"[\s;&|`]|\$\(")
_FLAT_DROP = re.compile(r"\\\n|['\"\\`{}()]|\$(?=[({])")
_FLAT_SPLIT = re.compile(r"[;&|<>\n]")


class Segment(NamedTuple):
    """One simple command: its words (assignments first) and the directory it runs in."""

    words: tuple[str, ...]
    cwd: str


class Line(NamedTuple):
    """A shell line read for the guard: its simple commands at every depth, and its flat words."""

    segments: tuple[Segment, ...]
    flat: tuple[str, ...]
    assigned: frozenset[str]  # every variable the line assigns (`X=1 cmd`, `export X=1`)


def read_line(command: str, cwd: str, env: Mapping[str, str]) -> Line:
    """The simple commands `command` may run (nested strings included), and its flat words."""
    command = command.replace("\\\n", " ")
    variables: dict[str, str] = {}
    segments = tuple(_walk(command, cwd, env, variables, 0))
    return Line(segments, flat_words(_expand(command, env, variables)), frozenset(variables))


def flat_words(command: str) -> tuple[str, ...]:
    """The line's words with quotes, backslashes and substitution marks removed.

    `$(printf pit)stop` becomes `printf pitstop`, `"pit"'stop'` becomes `pitstop`; separators
    (`;`, `&`, `|`, redirections, newlines) become a `;` word.
    """
    text = _FLAT_SPLIT.sub(" ; ", _FLAT_DROP.sub("", command))
    return tuple(text.split())


def _walk(
    command: str, cwd: str, env: Mapping[str, str], variables: dict[str, str], depth: int
) -> Iterator[Segment]:
    """Every simple command of `command`, following `cd` and reading nested strings."""
    for words in _segments(command.replace("`", " ; ")):
        words = [_expand(word, env, variables) for word in words]
        _remember_assignments(words, variables)
        yield Segment(tuple(words), cwd)
        cwd = _after_cd(words, cwd, env)
        if depth >= MAX_DEPTH:
            continue
        for word in words:
            if _NESTED.search(word):
                yield from _walk(word, cwd, env, variables, depth + 1)


def _segments(command: str) -> Iterator[list[str]]:
    """The simple commands of one shell text, split at `&&`, `;`, `|`, `(`, newlines…"""
    for line in command.split("\n"):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:  # an unbalanced quote: read it word by word
            words = line.split()
        current: list[str] = []
        for word in words:
            if word in SEPARATORS:
                if current:
                    yield current
                current = []
            else:
                current.append(word)
        if current:
            yield current


def _expand(word: str, env: Mapping[str, str], variables: Mapping[str, str]) -> str:
    """`$NAME` and `${NAME}` replaced by what the line set or the environment holds."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in variables:
            return variables[name]
        return env.get(name, match.group(0))

    return _VARIABLE.sub(value, word) if "$" in word else word


def _remember_assignments(words: list[str], variables: dict[str, str]) -> None:
    """Record `X=value` words (leading, or after export/declare/local/env) for later words."""
    for word in words:
        found = ASSIGNMENT.match(word)
        if found:
            variables[found.group(1)] = found.group(2)


def _after_cd(words: list[str], cwd: str, env: Mapping[str, str]) -> str:
    """The directory after this simple command: changed by `cd DIR` or `pushd DIR`."""
    if not words or words[0] not in ("cd", "pushd"):
        return cwd
    targets = [word for word in words[1:] if not word.startswith("-")]
    if not targets:
        return env.get("HOME", cwd) if words[0] == "cd" else cwd
    return absolute(targets[0], cwd, env)


def absolute(path: str, cwd: str, env: Mapping[str, str]) -> str:
    """`path` as the shell would open it: `~` expanded, relative to `cwd`, normalised."""
    if path == "~" or path.startswith("~/"):
        path = env.get("HOME", os.path.expanduser("~")) + path[1:]
    elif path.startswith("~"):
        path = os.path.expanduser(path)
    return os.path.normpath(os.path.join(cwd, path))


def spellings(path: str) -> tuple[str, ...]:
    """A path as written (normalised) and with every symlink resolved."""
    real = os.path.realpath(path)
    return (path,) if real == path else (path, real)


def is_under(path: str, directory: str) -> bool:
    """True when `path` is `directory` or inside it."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)
