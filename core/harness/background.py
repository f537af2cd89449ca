"""How a guarded command the harness ran in the background ended, and its effect settled by it.

Claude Code runs a Bash call in the background when asked (`run_in_background`) or when the call
outlives its timeout (2.1.3xx: `timedOutAfterMs` with a `backgroundTaskId`). Its `PostToolUse`
comes as it starts, so the guarded effect stays `in_progress` (`core.harness.tool_results`).
The end is reported later, in two places:

- a `<task-notification>` Claude Code submits as the next user prompt (`UserPromptSubmit`):
  `<task-id>`, `<tool-use-id>`, `<status>` (`completed`, `failed`, `killed`…), a `<summary>`
  ending in "(exit code N)", and the `<output-file>` holding the command's output;
- `Stop.background_tasks`: each background task with its `status`, no exit status.

A notification with an exit status settles the effect as a finished command would: exit 0
confirmed, another exit failed, a signal or a kill uncertain (it may have acted); without one,
uncertain. `Stop` gives a status only: `completed` (what Claude Code calls a shell task that
exited 0) confirms; any other end is uncertain (it may have acted, and "failed" would allow an
unguarded retry). Either must name a background id Pitstop recorded for the task, and
a notification's tool call must be the one that started it: a prompt that merely looks like a
notification settles nothing. The output file, when it is a regular file named for that task
(`…/tasks/<id>.output`), becomes evidence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    from core.engine import Engine

_NOTIFICATION = re.compile(r"<task-notification>(.*?)</task-notification>", re.S)
_FIELD = re.compile(r"<(task-id|tool-use-id|status|summary|output-file)>(.*?)</\1>", re.S)
_EXIT = re.compile(r"\(exit code (-?\d{1,4})\)")
# 128+N: killed by signal N (as `tool_results` reads a finished command's status).
_SIGNALLED = range(129, 128 + 65)
_OUTPUT_CAP = 4 * 1024 * 1024  # what the evidence keeps of a background command's output
_RUNNING = frozenset({"running", "pending", "queued"})


class BackgroundEnd(NamedTuple):
    """A background command's end as the harness reported it."""

    background_id: str
    status: str
    exit_code: int | None = None
    tool_use_id: str | None = None
    output_file: str | None = None
    from_stop: bool = False  # `Stop.background_tasks`: a status, never an exit status


def notifications(prompt: str) -> list[BackgroundEnd]:
    """The `<task-notification>` blocks of a submitted prompt (none: an ordinary prompt)."""
    if "<task-notification>" not in prompt:
        return []
    ends = []
    for block in _NOTIFICATION.findall(prompt[:1_000_000]):
        fields = {name: value.strip() for name, value in _FIELD.findall(block)}
        background_id, status = fields.get("task-id"), fields.get("status")
        if not background_id or not status:
            continue
        said = _EXIT.search(fields.get("summary", ""))
        ends.append(
            BackgroundEnd(
                background_id,
                status.lower(),
                int(said.group(1)) if said else None,
                fields.get("tool-use-id") or None,
                fields.get("output-file") or None,
            )
        )
    return ends


def stop_report(event: Mapping[str, Any]) -> list[BackgroundEnd]:
    """The background tasks `Stop` reports as ended (still running ones say nothing yet)."""
    listed = event.get("background_tasks")
    if not isinstance(listed, list):
        return []
    ends = []
    for entry in listed:
        if not isinstance(entry, dict):
            continue
        background_id, status = entry.get("id"), entry.get("status")
        if (
            isinstance(background_id, str)
            and isinstance(status, str)
            and background_id
            and status.lower() not in _RUNNING
        ):
            ends.append(BackgroundEnd(background_id, status.lower(), from_stop=True))
    return ends


def still_running(event: Mapping[str, Any]) -> bool:
    """Whether `Stop` reports background work still running (the agent then waits on it)."""
    listed = event.get("background_tasks")
    return isinstance(listed, list) and any(
        isinstance(entry, dict)
        and isinstance(entry.get("status"), str)
        and entry["status"].lower() in _RUNNING
        for entry in listed
    )


def _outcome(end: BackgroundEnd) -> tuple[str, str]:
    """(effect state, what was said) for a reported end."""
    code = end.exit_code
    if code is None:
        if end.from_stop and end.status == "completed":  # Claude Code's status for exit 0
            return "confirmed", "completed in the background (Stop)"
        return "uncertain", f"{end.status} in the background, exit unknown"
    if code in _SIGNALLED:
        return "uncertain", f"exit {code}: killed by signal {code - 128} in the background"
    if end.status not in ("completed", "failed"):  # killed, stopped…: it may have acted
        return "uncertain", f"{end.status} in the background (exit {code})"
    if code == 0:
        return "confirmed", "exit 0 in the background"
    return "failed", f"exit {code} in the background"


def _read_output(end: BackgroundEnd) -> bytes | None:
    """The command's output file, when it is a regular file named for this background task."""
    if not end.output_file:
        return None
    path = Path(end.output_file)
    if (
        not path.is_absolute()
        or path.name != f"{end.background_id}.output"
        or path.parent.name != "tasks"
    ):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            return handle.read(_OUTPUT_CAP)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def settle_reported(
    engine: Engine, task_id: str, ends: list[BackgroundEnd], cwd: str | None
) -> list[str]:
    """Settle the in-progress effects whose background commands the harness says ended."""
    if not ends:
        return []
    from core.models import EffectState

    marks = engine.background_effects(task_id)
    recorded = []
    for end in ends:
        mark = marks.get(end.background_id)
        if mark is None:
            continue
        key, tool_use = mark
        if end.tool_use_id is not None and tool_use is not None and end.tool_use_id != tool_use:
            continue  # names our id but another tool call: not this command's end
        if engine.get_effect(task_id, key).state is not EffectState.IN_PROGRESS:
            continue
        state, said = _outcome(end)
        output = _read_output(end)
        if output is not None:
            item = engine.add_evidence_output(
                task_id,
                output,
                argv=["background", end.background_id],
                cwd=cwd,
                exit_code=end.exit_code,
                label=f"background {end.background_id}: {end.status}",
            )
            said = f"{said}; output in evidence {item.id}"
        engine.move_effect(task_id, key, EffectState(state), note=said)
        recorded.append(f"{key} {state}")
    return recorded
