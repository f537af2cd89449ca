"""The guard's self-protection: an agent may not decide, settle or share for its operator.

Approving a request, settling whether a side effect happened, sharing a task, changing keys,
remotes or hooks, and rewriting the store or the config are the operator's acts; an agent that
could do them through its shell or its file tools would approve its own requests. Before every
tool call the harness hooks ask this module, which refuses:

- a Pitstop command that is not on the agent's list (`task show`, `approval request|list`,
  `checkpoint`, `effect guard`, `evidence add`… stay allowed: the agent uses them), however it
  is spelled (`core.harness.shell_words`); a deciding command spelled anywhere in the line,
  even inside a string, since nobody can tell statically whether something will run that string;
- setting `PITSTOP_HOME`, `PITSTOP_CONFIG_DIR`, `PITSTOP_IDENTITY`, `PITSTOP_SIGNING_KEY` or
  `PITSTOP_KEY` in a line that runs Pitstop (another store, config or identity is another
  operator);
- a write under the store or the config directory (the ones in use and the defaults): shell
  redirections, `tee`, `cp`, `mv`, `rm`, `sed -i`, `sqlite3`…, Claude Code's Write/Edit tools
  and Codex's `apply_patch`, including through `~`, `$HOME`, `cd` and symlinks.

It stops the obvious tool calls, not a determined program: an agent running as the operator's
OS user can still run code that reads the keyring (README, "Security model").

Standard library only: it runs on every tool call, before any store is opened.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence

from core.harness.shell_words import (
    REDIRECTIONS,
    Line,
    Segment,
    absolute,
    is_under,
    read_line,
    spellings,
)

# What an agent may run: Pitstop's commands without subcommands, and each group's allowed verbs.
_ALLOWED_COMMANDS = frozenset(
    {"checkout", "checkpoint", "checkpoints", "cost", "demo", "diff", "help", "locate", "log",
     "metrics", "redact", "resume", "run", "show", "validate"}
)  # fmt: skip
_ALLOWED_VERBS: Mapping[str, frozenset[str]] = {
    "task": frozenset({"start", "list", "show", "done"}),
    "approval": frozenset({"request", "list", "show"}),
    "effect": frozenset({"guard", "propose", "start", "uncertain", "list", "show"}),
    "evidence": frozenset({"add", "list", "show"}),
    "key": frozenset({"show", "status"}),
    "remote": frozenset({"list", "names"}),
    "hook": frozenset({"claude-code", "codex", "status"}),
}
# Why a refused command is the operator's, by command or group.
_WHY = {
    "approval": "deciding an approval",
    "effect": "settling whether a side effect happened",
    "task": "sharing, accepting or closing a task",
    "key": "creating, changing or exporting keys",
    "remote": "changing remotes",
    "hook": "changing Pitstop's hooks",
    "push": "sharing tasks with other stores",
    "sync": "sharing tasks with other stores",
    "fetch": "bringing other stores' state into this one",
    "gc": "deleting checkpoints",
    "doctor": "checking and repairing the store",
    "ui": "opening the dashboard, where approvals are decided",
    "": "opening the dashboard, where approvals are decided",
}
_KNOWN = _ALLOWED_COMMANDS | set(_ALLOWED_VERBS) | set(_WHY) - {""}
_GLOBAL_OPTIONS_WITH_VALUE = frozenset({"--store", "--theme"})
_MODULES = frozenset({"tui.cli", "tui.launch", "tui.cli.__main__"})
GUARDED_VARIABLES = frozenset(
    {"PITSTOP_HOME", "PITSTOP_CONFIG_DIR", "PITSTOP_IDENTITY", "PITSTOP_SIGNING_KEY",
     "PITSTOP_KEY"}
)  # fmt: skip

# Programs that run the words after them as a command, with their options that take a value.
_WRAPPERS: Mapping[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "nice": frozenset({"-n"}),
    "ionice": frozenset({"-c", "-n"}),
    "setsid": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "xargs": frozenset({"-n", "-I", "-L", "-P", "-d", "-E", "-s", "-a"}),
    "watch": frozenset({"-n", "-d"}),
    "chronic": frozenset(),
    "unbuffer": frozenset(),
}
_TAKES_POSITIONAL = frozenset({"timeout"})  # `timeout 5 cmd`: the duration comes first

# Commands that write the paths they are given, by how their paths are found.
_WRITES_ALL = frozenset(
    {"tee", "rm", "rmdir", "unlink", "shred", "truncate", "touch", "mkdir", "chmod", "chown",
     "chgrp", "mv", "sqlite3", "vi", "vim", "nvim", "nano", "emacs", "ed", "ex", "patch",
     "setfacl", "chattr", "mkfifo", "git", "tar", "unzip"}
)  # fmt: skip
_WRITES_LAST = frozenset({"cp", "ln", "install", "rsync"})  # the destination (or `-t DIR`)
_IN_PLACE = frozenset({"sed", "perl", "ruby", "gsed"})  # only with -i
_DESTROYS = frozenset({"rm", "rmdir", "shred", "mv", "chmod", "chown", "rsync"})  # parents too
_INTERPRETERS = re.compile(r"^(python[0-9.]*|perl|ruby|node|php)$")  # shells: read as lines


def protected_dirs(explicit_store: str | None = None) -> tuple[str, ...]:
    """The store and config directories in use and their defaults, as written and resolved."""
    from core.paths import config_dir, default_config_dir, default_store_root, resolve_store_root

    found: list[str] = []
    for path in (
        resolve_store_root(explicit_store),
        default_store_root(),
        config_dir(),
        default_config_dir(),
    ):
        for spelled in spellings(os.path.normpath(os.path.abspath(path))):
            if spelled not in found:
                found.append(spelled)
    return tuple(found)


# Claude Code's file tools and the input field naming the file each writes.
FILE_TOOLS: Mapping[str, str] = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
PATCH_TOOL = "apply_patch"  # Codex: the patch envelope is in tool_input.command


def refuse_tool_call(
    tool: str, tool_input: Mapping[str, object], cwd: str, store: str | None = None
) -> str | None:
    """Why an agent's tool call touches what only the operator may; None when it does not."""
    dirs = protected_dirs(store)
    if tool == "Bash":
        command = tool_input.get("command")
        return refuse_command(command, cwd, dirs) if isinstance(command, str) else None
    if tool in FILE_TOOLS:
        path = tool_input.get(FILE_TOOLS[tool])
        return refuse_paths([path], cwd, dirs, tool) if isinstance(path, str) else None
    if tool == PATCH_TOOL:
        patch = tool_input.get("command")
        if isinstance(patch, str):
            return refuse_paths(patch_paths(patch), cwd, dirs, tool)
    return None


def refuse_command(
    command: str, cwd: str, dirs: Sequence[str], env: Mapping[str, str] | None = None
) -> str | None:
    """Why a shell line may not run as the agent's tool call; None when it may."""
    environment = os.environ if env is None else env
    line = read_line(command, cwd, environment)
    runs_pitstop = False
    for segment in line.segments:
        argv = _pitstop_argv(_command_words(segment.words))
        if argv is not None:
            runs_pitstop = True
            refusal = _refuse_pitstop(argv, strict=True)
            if refusal:
                return refusal
    for argv in _flat_pitstop_argvs(line.flat):
        runs_pitstop = runs_pitstop or bool(set(_positional(argv)[:1]) & _KNOWN)
        refusal = _refuse_pitstop(argv, strict=False)
        if refusal:
            return refusal
    guarded = sorted(line.assigned & GUARDED_VARIABLES)
    if runs_pitstop and guarded:
        return (
            f"this command sets {guarded[0]} for Pitstop, which points it at another store, "
            "config or identity; Pitstop's guard refuses that to an agent. Run Pitstop without "
            "it, or ask your operator to run the command themselves"
        )
    for segment in line.segments:
        refusal = _refuse_writes(segment, dirs, environment)
        if refusal:
            return refusal
    return None


def refuse_paths(paths: Iterable[str], cwd: str, dirs: Sequence[str], tool: str) -> str | None:
    """Why a file tool may not write these paths (under the store or config dir); or None."""
    for path in paths:
        target = _protected(absolute(path, cwd, os.environ), dirs)
        if target:
            return _write_refusal(f"{tool} {path}", target)
    return None


def patch_paths(patch: str) -> list[str]:
    """The files a Codex `apply_patch` envelope adds, updates, deletes or moves to."""
    found = re.findall(
        r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", patch, re.M
    )
    return list(found)


# --- Pitstop commands -------------------------------------------------------------------------


def _command_words(words: Sequence[str]) -> list[str]:
    """A simple command without its leading assignments and the wrappers that run it."""
    index = 0
    while index < len(words):
        word = words[index]
        name = os.path.basename(word)
        if "=" in word and not word.startswith("-") and word.split("=", 1)[0].isidentifier():
            index += 1
        elif name in _WRAPPERS:
            index = _skip_wrapper_options(words, index + 1, name)
        else:
            break
    return list(words[index:])


def _skip_wrapper_options(words: Sequence[str], index: int, wrapper: str) -> int:
    """The index of the first word after a wrapper's own options (and `timeout`'s duration)."""
    with_value = _WRAPPERS[wrapper]
    while index < len(words) and words[index].startswith("-") and words[index] != "--":
        index += 2 if words[index] in with_value else 1
    if index < len(words) and words[index] == "--":
        index += 1
    if wrapper in _TAKES_POSITIONAL and index < len(words):
        index += 1
    return index


def _pitstop_argv(words: Sequence[str]) -> list[str] | None:
    """Pitstop's own arguments when `words` run Pitstop (`pitstop …`, `python -m tui.cli …`)."""
    if not words:
        return None
    if os.path.basename(words[0]) == "pitstop":
        return list(words[1:])
    if re.match(r"^python[0-9.]*$", os.path.basename(words[0])):
        for index, word in enumerate(words[1:], 1):
            if word == "-m" and index + 1 < len(words) and words[index + 1] in _MODULES:
                return list(words[index + 2 :])
            if word.startswith("-m") and word[2:] in _MODULES:
                return list(words[index + 1 :])
    return None


def _flat_pitstop_argvs(flat: Sequence[str]) -> Iterable[list[str]]:
    """Pitstop's arguments after every spelling of Pitstop anywhere in the flat words."""
    for index, word in enumerate(flat):
        module = flat[index - 1] == "-m" and word in _MODULES if index else False
        attached = word.startswith("-m") and word[2:] in _MODULES
        if os.path.basename(word) == "pitstop" or module or attached:
            rest = list(flat[index + 1 :])
            yield rest[: rest.index(";")] if ";" in rest else rest


def _refuse_pitstop(argv: Sequence[str], *, strict: bool) -> str | None:
    """Why this Pitstop command is not the agent's to run; None when it is.

    `strict` (a command the shell runs as such): a command not on the agent's list is refused.
    Otherwise (Pitstop spelled somewhere in the line) only known commands are judged, so that
    `grep pitstop README.md` runs.
    """
    positional = _positional(argv)
    asks_help = any(word in ("--help", "-h", "--version") for word in argv)
    if asks_help and len(positional) <= 1:
        return None
    command = positional[0] if positional else ""
    if command in _ALLOWED_COMMANDS:
        return None
    if not strict and command not in _KNOWN:
        return None
    verbs = _ALLOWED_VERBS.get(command)
    verb = positional[1] if len(positional) > 1 else None
    if verbs is not None and (verb is None or verb in verbs):
        return None
    shown = " ".join(["pitstop", *(shlex.quote(word) for word in argv)])
    shown = shown if len(shown) <= 200 else shown[:197] + "..."
    why = _WHY.get(command, "a Pitstop command that is not on the agent's list")
    return (
        f"`{shown}` is {why}: the operator's act, not an agent's, so Pitstop's guard refuses it "
        f"here. Ask your operator to run it if it should happen (they run `{shown}` "
        "themselves, or decide in the dashboard); meanwhile go on with other work or stop here"
    )


def _positional(argv: Sequence[str]) -> list[str]:
    """Pitstop's command and subcommand words: global options (`--store DIR`) skipped."""
    found: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in _GLOBAL_OPTIONS_WITH_VALUE and not found
        else:
            found.append(word)
            if len(found) == 2:
                break
    return found


# --- writes under the store or config directory -------------------------------------------------


def _refuse_writes(segment: Segment, dirs: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Why this simple command writes under a protected directory; None when it does not."""
    words = list(segment.words)
    for index, word in enumerate(words[:-1]):
        if word in REDIRECTIONS and not (word == ">&" and words[index + 1].isdigit()):
            target = _protected(absolute(words[index + 1], segment.cwd, env), dirs)
            if target:
                return _write_refusal(f"{word} {words[index + 1]}", target)
    command = _command_words(words)
    if not command:
        return None
    name = os.path.basename(command[0])
    for path, parents in _written_paths(name, command[1:]):
        resolved = absolute(path, segment.cwd, env)
        target = _protected(resolved, dirs, parents=parents)
        if target:
            return _write_refusal(f"{name} {path}", target, removes=not is_under(resolved, target))
    return None


def _written_paths(name: str, args: list[str]) -> Iterable[tuple[str, bool]]:
    """The paths a command may write, each with whether their parents count (a removal)."""
    operands = [word for word in args if not word.startswith("-") and word not in REDIRECTIONS]
    if name in _WRITES_ALL or (name in _IN_PLACE and any(_in_place(word) for word in args)):
        for word in operands:
            yield _value_path(word), name in _DESTROYS
        for word in args:  # --git-dir=PATH, --target-directory=PATH, of=PATH
            if "=" in word:
                yield word.split("=", 1)[1], False
    elif name in _WRITES_LAST:
        if operands:
            yield operands[-1], False
        for index, word in enumerate(args[:-1]):
            if word in ("-t", "--target-directory"):
                yield args[index + 1], False
    elif name == "dd":
        for word in args:
            if word.startswith("of="):
                yield word[3:], False
    elif _INTERPRETERS.match(name):
        yield from _mentioned_paths(args)


def _in_place(word: str) -> bool:
    """True for sed/perl's in-place flag (`-i`, `-i.bak`, `-pi`, `--in-place`)."""
    return word.startswith("--in-place") or (
        word.startswith("-") and not word.startswith("--") and "i" in word
    )


def _value_path(word: str) -> str:
    """The path in a word such as `of=PATH`; the word itself otherwise."""
    return word.split("=", 1)[1] if re.match(r"^[a-z]+=", word) else word


def _mentioned_paths(args: Sequence[str]) -> Iterable[tuple[str, bool]]:
    """Paths named inside an interpreter's code (`python -c "open('~/.config/pitstop/…')"`)."""
    for word in args:
        for found in re.findall(r"(?:~|/)[^\s'\"(),;]*", word):
            yield found, False


def _protected(path: str, dirs: Sequence[str], *, parents: bool = False) -> str | None:
    """The protected directory `path` lies in (or, for a removal, contains); else None."""
    if any(mark in path for mark in "*?["):
        import glob

        candidates = [os.path.normpath(found) for found in glob.glob(path)] or [path]
    else:
        candidates = [path]
    for candidate in candidates:
        for spelled in spellings(candidate):
            for directory in dirs:
                if is_under(spelled, directory) or (parents and is_under(directory, spelled)):
                    return directory
    return None


def _write_refusal(what: str, directory: str, *, removes: bool = False) -> str:
    """The refusal of a write under Pitstop's store or config directory."""
    does = "removes or changes" if removes else "writes under"
    return (
        f"`{what}` {does} Pitstop's own directory {directory} (its store or config), "
        "which only the operator changes, so Pitstop's guard refuses it here. Use Pitstop's "
        "commands for what you record (`pitstop checkpoint`, `pitstop evidence add`…), and ask "
        "your operator for anything else"
    )


def line_of(command: str, cwd: str) -> Line:
    """The guard's reading of a shell line (for tests and diagnostics)."""
    return read_line(command, cwd, os.environ)
