"""Command normalisation: which simple commands a shell line runs, and whether a rule catches one.

An agent spells the same action many ways (`FOO=1 sudo git -C repo push`, `cd x && git push`,
quoted words); the guard must see through that to the command itself, and must give each action
one spelling so its side effect has one idempotency key across retries and resumes. A curl or
wget counts as an effect only when it writes to a host that is not this machine.

Standard library only at load time (hashlib and urllib load only when a rule matched): every
PreToolUse hook runs this, and most commands match no rule.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

from core.harness.rules import Rule

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple


class RuleMatch(NamedTuple):
    """A command a rule caught: the rule, the normalised command and its idempotency key."""

    rule: Rule
    command: str
    key: str


# Wrappers that run the next words as the command.
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "command", "exec", "nice", "doas"})
# Options whose value is the next word, so that value is not taken for a subcommand.
_OPTIONS_WITH_VALUE = frozenset(
    {"-C", "-c", "-R", "--repo", "-n", "--namespace", "--context", "--kubeconfig", "-chdir"}
)
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", "(", ")"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def normalise_command(command: str) -> str:
    """One spelling per command: shell words joined by single spaces (quotes resolved)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return " ".join(words)


def effect_key(rule_name: str, normalised: str) -> str:
    """The side effect's idempotency key: the rule's name and a hash of the normalised command."""
    import hashlib  # OpenSSL loads only when a rule matched

    digest = hashlib.sha256(normalised.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{rule_name}:{digest[:16]}"


def _segments(command: str) -> list[list[str]]:
    """The simple commands in a command line (split at `&&`, `;`, `|`, newlines…)."""
    segments: list[list[str]] = []
    for line in re.split(r"\n", command):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        current: list[str] = []
        try:
            words = list(lexer)
        except ValueError:
            words = line.split()
        for word in words:
            if word in _SEPARATORS:
                if current:
                    segments.append(current)
                current = []
            else:
                current.append(word)
        if current:
            segments.append(current)
    return segments


def _command_words(segment: list[str]) -> list[str]:
    """A simple command without leading assignments and wrappers (`FOO=1 sudo git push`)."""
    index = 0
    while index < len(segment) and (
        _ASSIGNMENT.match(segment[index]) or os.path.basename(segment[index]) in _WRAPPERS
    ):
        index += 1
    words = segment[index:]
    if words:
        words = [os.path.basename(words[0]), *words[1:]]
    return words


def _positional(words: list[str]) -> list[str]:
    """The words that are not options (and not the values of options that take one)."""
    found: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in _OPTIONS_WITH_VALUE
            continue
        found.append(word)
    return found


def match_command(command: str, rules: Sequence[Rule]) -> RuleMatch | None:
    """The first rule that catches any simple command in `command`, or None."""
    if not command.strip():
        return None
    for segment in _segments(command):
        words = _command_words(segment)
        if not words:
            continue
        positional = _positional(words)
        for rule in rules:
            for pattern in rule.match:
                if tuple(positional[: len(pattern)]) != pattern:
                    continue
                if rule.http_write and not _writes_to_remote(words):
                    continue
                normalised = normalise_command(command)
                return RuleMatch(rule, normalised, effect_key(rule.name, normalised))
    return None


_CURL_DATA = ("-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--json", "-F")
_CURL_DATA_LONG = ("--form", "--form-string", "-T", "--upload-file")
_WGET_DATA = ("--post-data", "--post-file", "--body-data", "--body-file")
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _writes_to_remote(words: list[str]) -> bool:
    """True when a curl or wget command sends data or a write method to a non-loopback host."""
    program, args = words[0], words[1:]
    method: str | None = None
    sends_data = False
    urls: list[str] = []
    skip_next = False
    for index, word in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        following = args[index + 1] if index + 1 < len(args) else ""
        if program == "curl":
            if word in ("-X", "--request"):
                method, skip_next = following.upper(), True
            elif word.startswith("-X") and len(word) > 2:
                method = word[2:].upper()
            elif word.startswith("--request="):
                method = word.split("=", 1)[1].upper()
            elif word in _CURL_DATA or word in _CURL_DATA_LONG:
                sends_data, skip_next = True, True
            elif word.startswith(("--data", "--json", "--form", "--upload-file")) or (
                word.startswith(("-d", "-F", "-T")) and len(word) > 2
            ):
                sends_data = True
            elif word in ("-G", "--get"):
                method = method or "GET"
        elif word.startswith("--method="):
            method = word.split("=", 1)[1].upper()
        elif word == "--method":
            method, skip_next = following.upper(), True
        elif word.startswith(_WGET_DATA):
            sends_data = True
        if not word.startswith("-") and not skip_next:
            urls.append(word)
    writes = method in _WRITE_METHODS if method is not None else sends_data
    if not writes:
        return False
    hosts = [_host_of(url) for url in urls]
    return not hosts or any(not _is_loopback(host) for host in hosts)


def _host_of(url: str) -> str:
    """The lower-case host name of a URL, with or without its scheme."""
    from urllib.parse import urlsplit

    parsed = urlsplit(url if "://" in url else f"http://{url}")
    return (parsed.hostname or "").lower()


def _is_loopback(host: str) -> bool:
    """True for a host that is this machine (a write there stays in the sandbox)."""
    return (
        host in ("localhost", "::1", "0.0.0.0", "")
        or host.endswith(".localhost")
        or host.startswith("127.")
    )
