"""`pitstop checkpoint TASK`, answered without click (issues 21 and 22: a repeat checkpoint costs
what changed, not what the command line framework costs to load).

Agents and scripts run `pitstop checkpoint TASK` (with `--note TEXT`, `--force`, `--json`)
again and again; click and the command modules cost that process ~25 ms before the snapshot
starts. `tui.launch` sends these command lines here first; any other option, a repeated one, or
a value that looks like an option goes to click's `checkpoint` command in `tui.cli.checkpoints`,
which prints through the same `checkpoint_output` below, so both paths print the same bytes
and exit with the same code (tests/tui/test_quick_checkpoint.py runs both on one store).
"""

from __future__ import annotations

import os

from tui.quick_output import write, writes_utf8

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple

    from core.engine import CheckpointRequest, Engine
else:
    from core.records import NamedTuple


class Asked(NamedTuple):
    """The options of the one `checkpoint` command line this path runs."""

    task_id: str
    note: str | None
    force: bool
    as_json: bool


def parse(args: list[str]) -> Asked | None:
    """The command line as click would read it, when it is `checkpoint TASK` with at most one
    each of `--note TEXT`, `--force` and `--json`; None: click's to read (or to refuse)."""
    if args[:1] != ["checkpoint"]:
        return None
    rest = args[1:]
    task_id: str | None = None
    note: str | None = None
    seen: set[str] = set()
    position = 0
    while position < len(rest):
        word = rest[position]
        if word in seen:
            return None
        if word in ("--force", "--json"):
            seen.add(word)
        elif word == "--note":
            value = rest[position + 1] if position + 1 < len(rest) else None
            if value is None or value.startswith("-"):
                return None
            seen.add(word)
            note = value
            position += 1
        elif word.startswith("-") or task_id is not None:
            return None
        else:
            task_id = word
        position += 1
    if task_id is None:
        return None
    return Asked(task_id, note, "--force" in seen, "--json" in seen)


def checkpoint_output(opened: Engine, task_id: str, request: CheckpointRequest) -> tuple[str, str]:
    """Take the checkpoint; (human text, JSON text) of what `pitstop checkpoint` says."""
    result = opened.checkpoint(task_id, request)
    from tui.render import dumps

    if result.checkpoint is None:
        skipped = result.skipped or ""
        return skipped, str(dumps({"skipped": True, "message": result.skipped}))
    from tui.render import human_bytes, secret_lines

    made = result.checkpoint
    left_out = f", {made.left_out_count} left out" if made.left_out_count else ""
    summary = (
        f"checkpoint {made.ref} complete: {made.changed_count} changed file(s){left_out}, "
        f"{human_bytes(made.bytes_added)} added in {made.creation_ms} ms"
    )
    human = "\n".join([summary, *secret_lines(made.manifest)])
    return human, str(dumps({"skipped": False, "checkpoint": made}))


def run(args: list[str]) -> int | None:
    """Take the checkpoint `args` asks for and return the exit code; None: leave it to click."""
    asked = parse(args)
    if asked is None:
        return None
    from tui.quick import store_option

    usable, store = store_option()
    if not usable or not writes_utf8():
        return None
    from core.paths import StorePaths, resolve_store_root
    from core.snapshot import early_scan

    # The work tree's scan starts now, while the engine loads (core/snapshot/early_scan.py).
    early_scan.start(os.getcwd(), StorePaths(resolve_store_root(store)).tmp)
    from tui.quick import engine, failure_line

    try:
        from core.engine import CheckpointRequest

        request = CheckpointRequest(
            note=asked.note,
            force=asked.force,
            # Run inside one of the task's directories (its repository, a resume's worktree):
            # that one is snapshot; run elsewhere, the one the task works in now.
            workdir_hint=os.getcwd(),
        )
        human, document = checkpoint_output(engine(store), asked.task_id, request)
        if asked.as_json:
            return write(document, None, 0)
        from core.terminal_text import printable

        return write(printable(human), None, 0)
    except (EOFError, KeyboardInterrupt):  # click ends its line and says "aborted"
        return write(None, "\npitstop: aborted", 130)
    except BaseException as exc:  # every failure as one line, as `tui.cli.main` words it
        line, code = failure_line(exc)
        return write(None, line, code)
    finally:
        early_scan.discard()  # a scan the checkpoint did not take (skipped, another directory)
