"""What a `:` command line means: vim- and k9s-style commands, parsed without guessing.

`:` used to open the fuzzy palette, so `:q` opened a task whose id ended in "-q". A command line
is typed to be obeyed exactly: `parse` turns a line into one `CommandLine` or an error that says
what is known, and a task is opened only by its whole id or an unambiguous prefix of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import NamedTuple


class Verb(StrEnum):
    """What a command line asks for."""

    QUIT = "quit"
    INBOX = "inbox"
    TASK = "task"
    DASHBOARD = "dashboard"
    THEME = "theme"
    REFRESH = "refresh"
    FILTER = "filter"
    SORT = "sort"
    PALETTE = "palette"
    HELP = "help"


# Every spelling each verb answers to; the first is the one `:help` shows.
SPELLINGS: dict[Verb, tuple[str, ...]] = {
    Verb.QUIT: ("q", "quit", "q!", "qa", "qa!", "exit"),
    Verb.INBOX: ("inbox", "a", "approvals"),
    Verb.TASK: ("task", "t", "open"),
    Verb.DASHBOARD: ("dashboard", "home", "tasks"),
    Verb.THEME: ("theme",),
    Verb.REFRESH: ("refresh", "r", "e"),
    Verb.FILTER: ("filter", "f", "/"),
    Verb.SORT: ("sort",),
    Verb.PALETTE: ("palette", "p"),
    Verb.HELP: ("help", "h", "?"),
}
TAKES_ARGUMENT = {Verb.TASK, Verb.THEME, Verb.SORT}
HELP_TEXT = (
    ":q quit · :inbox approvals · :task ID open a task · :dashboard · :theme NAME · "
    ":filter WORDS · :sort COLUMN · :refresh · :palette · :help"
)
_BY_SPELLING = {spelling: verb for verb, names in SPELLINGS.items() for spelling in names}


class CommandLine(NamedTuple):
    """A parsed command line: the verb and its argument (`""` when it takes none)."""

    verb: Verb
    argument: str = ""


class CommandError(NamedTuple):
    """Why a line means nothing: one sentence, ending in what to type instead."""

    message: str


def parse(line: str) -> CommandLine | CommandError | None:
    """The command `line` asks for; None for an empty line (nothing to do)."""
    text = " ".join(line.strip().removeprefix(":").split())
    if not text:
        return None
    word, _, rest = text.partition(" ")
    verb = _BY_SPELLING.get(word.lower())
    if verb is None:
        shown = word if len(word) <= 30 else word[:29] + "…"
        return CommandError(f"unknown command :{shown}; {HELP_TEXT}")
    if verb in TAKES_ARGUMENT and not rest:
        return CommandError(f":{word} needs {_ARGUMENT_NAMES[verb]}, e.g. {_EXAMPLES[verb]}")
    if verb not in TAKES_ARGUMENT and verb is not Verb.FILTER and rest:
        return CommandError(f":{word} takes nothing after it; {HELP_TEXT}")
    return CommandLine(verb, rest)


_ARGUMENT_NAMES = {Verb.TASK: "a task id", Verb.THEME: "a theme name", Verb.SORT: "a column"}
_EXAMPLES = {
    Verb.TASK: ":task deploy-3f2a",
    Verb.THEME: ":theme pitstop-light",
    Verb.SORT: ":sort age",
}


def resolve(prefix: str, names: Iterable[str], what: str) -> str | CommandError:
    """The one name equal to `prefix`, or the only one starting with it; else why not."""
    known = sorted(set(names))
    if prefix in known:
        return prefix
    starting = [name for name in known if name.startswith(prefix)]
    if len(starting) == 1:
        return starting[0]
    if not starting:
        return CommandError(f"no {what} {prefix!r}; the palette (ctrl+p) lists them")
    listed = ", ".join(starting[:4]) + (" …" if len(starting) > 4 else "")
    return CommandError(f"{prefix!r} could be {len(starting)} {what}s ({listed}); type more of it")


def completions(
    task_ids: Iterable[str], themes: Iterable[str], columns: Iterable[str]
) -> list[str]:
    """Whole lines the input may suggest as the user types (commands, then their arguments)."""
    lines = [names[0] for names in SPELLINGS.values()]
    lines += [f"task {task_id}" for task_id in sorted(task_ids)]
    lines += [f"theme {name}" for name in sorted(themes)]
    lines += [f"sort {column}" for column in columns]
    return lines
