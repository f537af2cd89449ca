"""Precondition checks: a shell command that says whether a side effect already happened.

When an effect was left `in_progress` or `uncertain`, running its action again could do it
twice; its check decides instead (exit 0: it happened, exit 1: it did not, anything else:
nobody knows, and an operator settles it). Checks run with the effect named in their
environment, and their output goes to stderr, never to disk.

A check that came from another store (a ledger sync wrote it: `SideEffect.check_foreign`) is a
shell command somebody else chose, so it runs only once an operator has seen it: a caller passes
`confirmed` (`--yes-run-check`, the dashboard's dialog); without, the refusal prints the exact
command. A check given here (`--check CMD`) is the operator's own and runs as before.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from contextlib import suppress
from enum import StrEnum

from core import store
from core.errors import ForeignCheckError, PitstopError
from core.models import SideEffect

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from core.records import NamedTuple

if TYPE_CHECKING:
    import subprocess

CHECK_TIMEOUT_S = 60.0
_KILL_GRACE_S = 5.0


class CheckVerdict(StrEnum):
    """What a precondition check said about whether the action already happened."""

    HAPPENED = "happened"  # exit 0
    NOT_HAPPENED = "not_happened"  # exit 1
    UNKNOWN = "unknown"  # anything else: another exit code, a timeout, a check that cannot run


class CheckResult(NamedTuple):
    """One run of a precondition check; `output` is what it printed, when it was captured."""

    verdict: CheckVerdict
    exit_code: int | None
    detail: str
    output: bytes = b""


def effect_env(effect: SideEffect) -> dict[str, str]:
    """The environment an action or check runs in: ours, plus which effect it is."""
    env = dict(os.environ)
    env.update(
        PITSTOP_TASK=effect.task_id,
        PITSTOP_EFFECT_KEY=effect.key,
        PITSTOP_EFFECT_KIND=effect.kind,
        PITSTOP_EFFECT_ATTEMPT=str(effect.attempts),
    )
    if effect.target and effect.target != store.UNREADABLE:
        env["PITSTOP_EFFECT_TARGET"] = effect.target
    return env


def readable_check(effect: SideEffect, command: str) -> str:
    """The check to run; a stored one sealed under a key that is not available is refused."""
    if command == store.UNREADABLE:
        raise PitstopError(
            f"the precondition check of side effect {effect.key!r} is encrypted and the key to "
            "read it is not available; set PITSTOP_KEY to the store's key, or pass --check CMD"
        )
    return command


def trusted_check(
    effect: SideEffect, given: str | None, confirmed: bool, rerun: str | None = None
) -> str:
    """The check to run: one given here, or the stored one (another store's only if confirmed).

    `rerun` is the command line that runs it confirmed, for the refusal's hint.
    """
    if given:
        return given
    command = readable_check(effect, effect.check or "")
    if effect.check_foreign and not confirmed:
        rerun = rerun or (
            f"run `pitstop effect check --task {effect.task_id} --key {effect.key} --yes-run-check`"
        )
        raise ForeignCheckError(
            f"the precondition check of side effect {effect.key!r} came from another store and "
            f"is not run unseen: {shell_quoted(command)} — read it, and if it is safe, {rerun}"
        )
    return command


def shell_quoted(command: str) -> str:
    """A command as one shell word on one line (control characters as `$'…'` escapes)."""
    import shlex

    if not any(ord(char) < 32 or ord(char) == 127 for char in command):
        return shlex.quote(command)
    escaped = "".join(
        {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t"}.get(char)
        or (f"\\x{ord(char):02x}" if ord(char) < 32 or ord(char) == 127 else char)
        for char in command
    )
    return f"$'{escaped}'"


def run_check(
    command: str, env: Mapping[str, str], timeout: float, *, capture: bool = False
) -> CheckResult:
    """Run a precondition check with /bin/sh.

    Its output goes to our stderr, never to disk; or, `capture`d (the dashboard, whose screen
    stderr would scribble over), it comes back in `CheckResult.output`, stdout and stderr
    interleaved, for the caller to redact and keep as evidence.
    """
    import subprocess

    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture else 2,  # keep stdout for the action's own output
            stderr=subprocess.STDOUT if capture else None,
            env=dict(env),
            process_group=0,
        )
    except OSError as exc:
        return CheckResult(CheckVerdict.UNKNOWN, None, f"the check could not start: {exc}")
    output = b""
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        if capture:
            output, _ = proc.communicate()  # what it printed before it was stopped
        detail = f"the check timed out after {timeout:g} s"
        return CheckResult(CheckVerdict.UNKNOWN, None, detail, output or b"")
    return _verdict(proc.returncode, output or b"")


def _verdict(code: int, output: bytes) -> CheckResult:
    """Exit 0 happened, exit 1 did not; anything else tells nothing."""
    if code == 0:
        return CheckResult(CheckVerdict.HAPPENED, 0, "check exit 0", output)
    if code == 1:
        return CheckResult(CheckVerdict.NOT_HAPPENED, 1, "check exit 1", output)
    if code < 0:
        return CheckResult(
            CheckVerdict.UNKNOWN, code, f"the check was killed by signal {-code}", output
        )
    return CheckResult(CheckVerdict.UNKNOWN, code, f"the check exited {code}", output)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process group: SIGTERM, then SIGKILL after a grace period."""
    import subprocess

    for sig, grace in ((signal.SIGTERM, _KILL_GRACE_S), (signal.SIGKILL, None)):
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
