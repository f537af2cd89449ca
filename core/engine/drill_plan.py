"""What a drill replays: the checkpoint's own verification, or the operator's `--command`.

By default that is the newest successful test or build run recorded at or before the checkpoint
(`pitstop run`, harness hooks), with its directory relative to the task's repository, so it
runs at the same place in the restored tree. Some commands must never be replayed: one a guard
rule catches (it acts outside the sandbox), an install (it needs the network), one that repeats
an unsettled side effect, one whose command line was stored redacted (what would run is not what
ran). Then the plan says why, and the drill runs nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from core import store
from core.engine.workdir import task_workdir
from core.errors import PitstopError, UsageError
from core.models import Checkpoint, EffectState, Task
from core.session import Session

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    from core.evidence.items import Evidence

GuardScreen = Callable[[str], "str | None"]
"""Why a guard rule catches a shell command line (e.g. "it matches the guard rule git-push"),
or None. The rules live with the harness adapters, above the engine, so callers hand it in."""

_SHELL_PUNCTUATION = frozenset("|&;<>()$`\n*?")
_UNSETTLED = (EffectState.UNCERTAIN, EffectState.IN_PROGRESS)


class ReplayPlan(NamedTuple):
    """The command a drill runs, where, and what it is compared with; or why it runs nothing."""

    argv: tuple[str, ...]
    cwd: str  # relative to the top of the restored tree ("." for the top)
    recorded: Evidence | None  # the run it is compared with; None: expected to pass
    reason: str | None = None  # why nothing may be replayed (then the drill is not-replayable)

    @property
    def shown(self) -> str:
        """The command as one shell line."""
        if len(self.argv) == 3 and self.argv[:2] == ("sh", "-c"):
            return self.argv[2]
        return shlex.join(self.argv)


def command_argv(command: str) -> tuple[str, ...]:
    """`--command` as an argument vector: split as words, or run by `sh -c` when it is a
    script (pipes, `&&`, redirections, variables)."""
    if not command.strip():
        raise UsageError("--command is empty; give the command to replay, e.g. --command 'pytest'")
    if any(character in _SHELL_PUNCTUATION for character in command):
        return ("sh", "-c", command)
    try:
        return tuple(shlex.split(command))
    except ValueError as exc:
        raise UsageError(f"cannot read --command {command!r}: {exc}") from exc


def recorded_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """A recorded command line as it can run again: a hook's one-string shell command via sh."""
    if len(argv) == 1 and any(c.isspace() or c in _SHELL_PUNCTUATION for c in argv[0]):
        return ("sh", "-c", argv[0])
    return tuple(argv)


def _verification_kind(item: Evidence) -> bool:
    from core.economics.work_kinds import WorkKind, classify_run

    argv = recorded_argv((item.command or {}).get("argv") or [])
    tool = (item.summary or {}).get("tool")
    return classify_run(argv, tool, item.label) in (WorkKind.TEST, WorkKind.BUILD)


def _recorded_items(session: Session, checkpoint: Checkpoint) -> Iterator[Evidence]:
    """The task's own complete evidence at or before the checkpoint, newest first, opened one
    by one (a plan stops at the first that fits)."""
    from core.evidence import storage as evidence

    rows = [
        row
        for row in store.list_evidence(session.db, checkpoint.task_id)
        if row["checkpoint_seq"] is not None
        and row["checkpoint_seq"] <= checkpoint.seq
        and row["state"] == "complete"
        and row["source"] != "drill"
    ]
    for row in reversed(rows):
        try:
            yield evidence.load_evidence(session.db, session.keys, int(row["id"]))
        except PitstopError:  # its key was retired by gc: it cannot be replayed
            continue


def _relative_cwd(
    session: Session, task: Task, cwd: str | None, toplevel: str | None
) -> str | None:
    """The recorded directory relative to the directory the checkpoint snapshot (its manifest's
    `toplevel`, where the repository was then), else to the task directory holding it now;
    None: outside both."""
    if not cwd:
        return "."
    tops = [Path(toplevel)] if toplevel else []
    tops.append(task_workdir(session, task, cwd).path)
    for top in tops:
        for where, base in ((Path(cwd), top), (Path(cwd).expanduser().resolve(), top.resolve())):
            try:
                return where.relative_to(base).as_posix() or "."
            except ValueError:
                continue
    return None


def plan_replay(
    session: Session,
    task: Task,
    checkpoint: Checkpoint,
    command: str | None,
    screen: GuardScreen,
) -> ReplayPlan:
    """What the drill of `checkpoint` runs (see the module docstring)."""
    items = _recorded_items(session, checkpoint)
    if command is not None:
        argv = command_argv(command)
        same = (i for i in items if recorded_argv((i.command or {}).get("argv") or []) == argv)
        plan = ReplayPlan(argv, ".", next(same, None))
    else:
        item = next(
            (i for i in items if i.exit_code == 0 and not i.timed_out and _verification_kind(i)),
            None,
        )
        if item is None:
            return ReplayPlan(
                (),
                ".",
                None,
                f"no verification evidence: no successful test or build run was recorded at or "
                f"before {checkpoint.ref}; record one with `pitstop run --task {task.id} -- "
                "pytest`, or drill with --command CMD",
            )
        argv = recorded_argv((item.command or {}).get("argv") or [])
        toplevel = ((checkpoint.manifest or {}).get("repository") or {}).get("toplevel")
        relative = _relative_cwd(session, task, (item.command or {}).get("cwd"), toplevel)
        if relative is None:
            return ReplayPlan(
                argv,
                ".",
                item,
                f"evidence #{item.id} ran in {item.command and item.command.get('cwd')}, outside "
                "the task's repository; drill with --command CMD",
            )
        plan = ReplayPlan(argv, relative, item)
    return plan._replace(reason=refusal(session, task, plan, screen))


def refusal(session: Session, task: Task, plan: ReplayPlan, screen: GuardScreen) -> str | None:
    """Why this command must not be replayed, or None when it may run."""
    if not plan.argv:
        return "there is no command to replay"
    if any("[REDACTED:" in arg for arg in plan.argv):
        return (
            "its command line held a secret and was stored redacted, so it cannot run as it "
            "ran; drill with --command CMD"
        )
    line = plan.shown
    guarded = screen(line)
    if guarded:
        return f"{guarded}; a drill never runs a command that acts outside the sandbox"
    from core.economics.work_kinds import WorkKind, classify_run

    if classify_run(plan.argv) is WorkKind.INSTALL:
        return (
            "it installs dependencies, which needs the network and changes the environment; a "
            "drill replays test and build runs (give one with --command CMD)"
        )
    from core.engine.effects import list_effects

    words = " ".join(plan.argv[2:] if plan.argv[:2] == ("sh", "-c") else plan.argv)
    for effect in list_effects(session, task.id):
        if (
            effect.state in _UNSETTLED
            and effect.target
            and effect.target.strip()
            in (
                line.strip(),
                words.strip(),
            )
        ):
            return (
                f"it would repeat the side effect {effect.key}, which is {effect.state.value}; "
                f"settle it first (`pitstop effect confirm|fail --task {task.id} --key "
                f"{effect.key} --reason TEXT`)"
            )
    return None
