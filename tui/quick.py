"""The commands people type to look around, answered without click (issue 22: start like git).

`pitstop --help`, `locate`, `task list`, `checkpoints TASK` and `show TASK@SEQ` (each with
`--json`, nothing else) are run here by `tui.launch` before click is imported; any other
command line, or one of these with any other option, goes to the click group in `tui.cli`. The
click commands call the same bodies below, so both paths print the same bytes and exit with the
same code (tests/tui/test_quick_paths.py runs both on one store and compares). The help text is
click's own, rendered once into `tui.help_text` (a test keeps it equal to click's).
"""

from __future__ import annotations

import os
import sys

from tui.quick_output import write, writes_utf8

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

    from core.engine import Engine

HELP_WIDTH = 80
"""click wraps help at min(terminal columns, 80) - 2: the stored text is the 80-column one."""


def engine(store: str | None, *, create: bool = True) -> Engine:
    """The store opened as `pitstop`'s root group opens it (`tui.cli.base.Context`); with
    `create` off, a directory that holds no store is refused rather than made one."""
    from core.engine import Engine
    from core.models import Interface

    if not create:
        require_store(store)
    return Engine(store, interface=Interface.CLI)


def require_store(store: str | None) -> None:
    """Refuse a `--store DIR` that holds no Pitstop store (issue 18: a typo never makes one)."""
    from core.paths import holds_store, resolve_store_root

    root = resolve_store_root(store)
    if not holds_store(root):
        from core.errors import UsageError

        raise UsageError(f"no Pitstop store at {root}; pass --init to create one there")


def locate_text(opened: Engine, as_json: bool) -> str:
    """What `pitstop locate` prints."""
    paths = opened.locate()
    return output(as_json, paths, lambda: "\n".join(f"{k:<9} {v}" for k, v in paths.items()))


def task_list_text(opened: Engine, statuses: tuple[str, ...], as_json: bool) -> str:
    """What `pitstop task list` prints: tasks, most recently active first."""
    from core.models import TaskStatus

    wanted = {TaskStatus(s) for s in statuses}
    summaries = [s for s in opened.task_summaries() if not wanted or s.task.status in wanted]
    if as_json:
        from tui.render import jsonable

        return output(
            True,
            [
                {
                    **jsonable(s.task),
                    "checkpoints": s.checkpoint_count,
                    "last_checkpoint_at": s.last_checkpoint_at,
                }
                for s in summaries
            ],
            "",
        )
    if not summaries:
        return output(
            False, None, "no tasks yet; start one with `pitstop task start --repo . --objective …`"
        )
    from core import clock
    from tui.render import table

    return output(
        False,
        None,
        table(
            ["id", "status", "age", "checkpoints", "objective"],
            [
                (
                    s.task.id,
                    s.task.status.value,
                    clock.humanize_age(s.task.updated_at),
                    s.checkpoint_count,
                    s.task.objective[:60],
                )
                for s in summaries
            ],
        ),
    )


def checkpoints_text(opened: Engine, task_id: str, as_json: bool) -> str:
    """What `pitstop checkpoints TASK` prints: a task's checkpoints, oldest first."""
    found = opened.list_checkpoints(task_id)
    if not found and not as_json:
        hint = f"task {task_id} has no checkpoints yet; run `pitstop checkpoint {task_id}`"
        return output(False, None, hint)
    from tui.render import checkpoint_rows

    return output(as_json, found, lambda: checkpoint_rows(found))


def show_text(opened: Engine, ref: str, as_json: bool) -> tuple[str, str | None]:
    """What `pitstop show TASK@SEQ` prints, and the stderr line (exit 1) of a damaged one."""
    found = opened.get_checkpoint(ref)
    problems = opened.verify(found) if found.state.value == "complete" else []

    def human() -> str:
        from tui.render import manifest_text

        return manifest_text(found, problems)

    text = output(
        as_json, {"checkpoint": found, "damaged": bool(problems), "problems": problems}, human
    )
    damaged = f"pitstop: checkpoint {found.ref} is damaged: {problems[0]}" if problems else None
    return text, damaged


def output(as_json: bool, document: Any, human: Any) -> str:
    """The JSON document or the human text (control characters shown, never obeyed)."""
    if as_json:
        from tui.render import dumps

        return str(dumps(document))
    from core.terminal_text import printable

    return printable(human() if callable(human) else human)


def parse(args: list[str]) -> tuple[str, str | None, bool] | None:
    """(command, its one argument, --json) for a command line this path runs; None otherwise.

    Only the shapes click reads the same way: the command's words first, then `--json` at most
    once and the one argument in either order (an argument that looks like an option is
    click's to judge).
    """
    if args == ["--help"]:
        return "--help", None, False
    for command in (["locate"], ["task", "list"], ["checkpoints"], ["show"]):
        if args[: len(command)] != command:
            continue
        rest = args[len(command) :]
        as_json = "--json" in rest
        if as_json:
            rest.remove("--json")
        wanted = 1 if command in (["checkpoints"], ["show"]) else 0
        if len(rest) != wanted or any(word.startswith("-") for word in rest):
            return None
        return " ".join(command), (rest[0] if rest else None), as_json
    return None


def store_option() -> tuple[bool, str | None]:
    """(usable here, value) of the root group's `--store` as click reads it from PITSTOP_HOME;
    a value click would refuse (a file, an unreadable directory) is left to click to word."""
    store = os.environ.get("PITSTOP_HOME") or None
    if store is None or not os.path.exists(store):
        return True, store
    return os.path.isdir(store) and os.access(store, os.R_OK), store


def help_columns() -> int:
    """The terminal width click's help formatter sees (as `shutil.get_terminal_size`)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        stream = sys.__stdout__
        try:
            columns = (os.get_terminal_size(stream.fileno()).columns if stream else 0) or 80
        except (ValueError, OSError):
            columns = 80
    return columns


def run(args: list[str]) -> int | None:
    """Answer `args` on this path and return the exit code; None: leave it to click."""
    parsed = parse(args)
    if parsed is None or not writes_utf8():
        return None
    command, argument, as_json = parsed
    if command == "--help":
        if help_columns() < HELP_WIDTH:
            return None
        from tui.help_text import ROOT_HELP

        return write(ROOT_HELP, None, 0)
    usable, store = store_option()
    if not usable:
        return None
    try:
        return _answer(command, argument, as_json, store)
    except (EOFError, KeyboardInterrupt):  # click ends its line and says "aborted"
        return write(None, "\npitstop: aborted", 130)
    except BaseException as exc:  # every failure as one line, as `tui.cli.main` words it
        line, code = failure_line(exc)
        return write(None, line, code)


def _answer(command: str, argument: str | None, as_json: bool, store: str | None) -> int:
    opened = engine(store)
    if command == "locate":
        return write(locate_text(opened, as_json), None, 0)
    if command == "task list":
        return write(task_list_text(opened, (), as_json), None, 0)
    assert argument is not None
    if command == "checkpoints":
        return write(checkpoints_text(opened, argument, as_json), None, 0)
    text, damaged = show_text(opened, argument, as_json)
    return write(text, damaged, 1 if damaged else 0)


def failure_line(exc: BaseException) -> tuple[str | None, int]:
    """The one stderr line and exit code of a failure outside click's own (`tui.cli.main`)."""
    from core.errors import PitstopError

    if isinstance(exc, PitstopError):
        from core.terminal_text import printable

        return f"pitstop: {printable(exc.message, single_line=True)}", exc.exit_code
    if isinstance(exc, BrokenPipeError):
        sys.stderr.close()
        return None, 1
    if not isinstance(exc, Exception) or os.environ.get("PITSTOP_DEBUG"):
        raise exc
    return (
        f"pitstop: internal error ({type(exc).__name__}: {exc}); "
        "rerun with PITSTOP_DEBUG=1 for details and please report it"
    ), 1
