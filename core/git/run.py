"""Running git: the one place Pitstop's core starts a git process, in one environment that
cannot be pointed at another repository, with one error type.

A hook runner or a wrapper script may have set `GIT_DIR`, `GIT_INDEX_FILE` or their kin; every
git process Pitstop starts drops them, so each call reaches exactly the repository it names.
Whatever git writes runs under umask 077, so the store's repositories stay private (invariant 9);
only a call that writes the user's own files (`private=False`: a restored work tree, the user's
repository) runs under the user's umask, so 0644 files come back 0644.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from core.errors import GitError
from core.git.pack_writer import flush

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: ~3 ms of start-up)
if TYPE_CHECKING:  # loaded when git runs: a small checkpoint is read and verified without it
    import subprocess

    from core.git.spawn import Spawned

# Who git says made the commits Pitstop writes into its own repositories.
PITSTOP_IDENT = {
    "GIT_AUTHOR_NAME": "Pitstop",
    "GIT_AUTHOR_EMAIL": "pitstop@localhost",
    "GIT_COMMITTER_NAME": "Pitstop",
    "GIT_COMMITTER_EMAIL": "pitstop@localhost",
}

# Variables that would point git at another repository, index or object store than the one
# a call names explicitly; a hook runner or a wrapper script may have set any of them.
REPO_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment git runs in: nothing pointing it elsewhere, no prompts or locks, C locale."""
    env = {k: v for k, v in os.environ.items() if k not in REPO_LOCATION_VARS}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    if extra:
        env.update(extra)
    return env


_NO_GIT = "git is not installed or not on PATH; install git 2.31 or newer"


class Completed:
    """What a git call that ran to its end gave: its exit code and both outputs (the part of
    `subprocess.CompletedProcess` Pitstop reads, without loading `subprocess`)."""

    __slots__ = ("returncode", "stderr", "stdout")

    def __init__(self, returncode: int | None, stdout: bytes, stderr: bytes) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def run_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    git_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    ok_codes: Iterable[int] = (0,),
    private: bool = True,
    read_only: bool = False,
) -> bytes:
    """Run one git command and return its stdout; any unexpected exit raises GitError.

    `private=False`: the command writes the user's files, under the user's umask.
    `read_only`: it writes nothing at all, so it starts without `subprocess` (`core.git.spawn`)."""
    proc = run_git_process(
        args, cwd=cwd, git_dir=git_dir, env=env, input=input, private=private, read_only=read_only
    )
    if proc.returncode not in tuple(ok_codes):
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        detail = message[-1] if message else f"exit code {proc.returncode}"
        raise GitError(f"git {subcommand(args)} failed: {detail}")
    return proc.stdout


# Options of git itself that take their value as the next argument (`-c name=value`).
_OPTIONS_WITH_VALUE = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace"})


def subcommand(args: Sequence[str]) -> str:
    """The git command `args` runs (`checkout-index` in `-c x=y checkout-index -a`), for
    errors people read."""
    skip_value = False
    for arg in args:
        if skip_value:
            skip_value = False
        elif arg in _OPTIONS_WITH_VALUE:
            skip_value = True
        elif not arg.startswith("-"):
            return arg
    return args[0] if args else "(no command)"


def run_git_process(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    git_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    private: bool = True,
    read_only: bool = False,
) -> subprocess.CompletedProcess[bytes] | Completed:
    """Run one git command to its end, whatever its exit code: for callers that read the
    code or all of stderr themselves. `private=False`: it writes the user's files, under the
    user's umask; `read_only`: it writes nothing, and starts without `subprocess`. The very
    same call started ahead (`start_ahead`) is taken over instead."""
    if _ahead:
        started = _ahead.pop(_ahead_key(args, cwd, git_dir, env, input, private), None)
        if started is not None:
            out, err = started.communicate()
            return Completed(started.returncode, out, err)
    if read_only:
        spawned = spawn_git(args, cwd=cwd, git_dir=git_dir, env=env, input=input)
        out, err = spawned.communicate()
        return Completed(spawned.returncode, out, err)
    full_env = _call_env(env, git_dir)
    import subprocess

    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=full_env,
            input=input,
            capture_output=True,
            check=False,
            # whatever git writes into the store is private (invariant 9); -1: the user's umask
            umask=0o077 if private else -1,
        )
    except FileNotFoundError as exc:
        raise GitError(_NO_GIT) from exc


def _call_env(env: Mapping[str, str] | None, git_dir: Path | None) -> dict[str, str]:
    """The environment a git call runs with (`GIT_DIR` set when given), the objects gathering
    for its repository written first."""
    full_env = clean_env(env)
    if git_dir is not None:
        full_env["GIT_DIR"] = str(git_dir)
    _flush_for(full_env)
    return full_env


def _flush_for(env: Mapping[str, str] | None) -> None:
    """Write the objects gathering for a pack (`pack_writer.batched`) before a git process
    reads the repository they are for: named by `GIT_DIR`, or by `GIT_OBJECT_DIRECTORY` (the
    snapshot's git calls in the user's work tree store their objects in the store's)."""
    if not env:
        return
    git_dir = env.get("GIT_DIR")
    if git_dir:
        flush(git_dir)
    objects = env.get("GIT_OBJECT_DIRECTORY")
    if objects:
        flush(objects.rstrip("/").rpartition("/")[0])


def start_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    fed: bool = False,
) -> subprocess.Popen[bytes]:
    """Start a git command in the background, to run beside other work (`finish_git` reads it).

    A `fed` command reads the stdin pipe its caller writes as it goes, for as long as it
    lives; its stderr is dropped, since nothing reads it until the end and a full pipe would
    stall it. A call that writes nothing is better started by `spawn_git`.
    """
    _flush_for(env)
    import subprocess

    try:
        return subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            env=clean_env(env),
            stdin=subprocess.PIPE if fed else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if fed else subprocess.PIPE,
            umask=0o077,
        )
    except FileNotFoundError as exc:
        raise GitError(_NO_GIT) from exc


def spawn_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    git_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
) -> Spawned:
    """`start_git` for a call that writes nothing (an `input` written whole, no stdin fed as
    it goes), without loading `subprocess` (`core.git.spawn`): `cwd` is handed to git (`git
    -C`); `finish_git` reads it, `stop_git` ends it unread."""
    from core.git.spawn import Spawned

    full_env = _call_env(env, git_dir)
    try:
        return Spawned(args, full_env, cwd=cwd, input=input)
    except FileNotFoundError as exc:
        raise GitError(_NO_GIT) from exc


def finish_git(
    process: subprocess.Popen[bytes] | Spawned, name: str, ok_codes: Iterable[int] = (0,)
) -> bytes:
    """Wait for a git command `start_git` started and return its stdout; an unexpected exit
    raises GitError naming the command."""
    out, err = process.communicate()
    if process.returncode not in tuple(ok_codes):
        lines = err.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {name} failed: {lines[-1] if lines else process.returncode}")
    return out


def stop_git(process: subprocess.Popen[bytes] | Spawned) -> None:
    """End a git command `start_git` started whose output nobody will read: killed if still
    running, waited for, its pipes closed."""
    from core.git.spawn import Spawned

    if isinstance(process, Spawned):
        process.stop()
        return
    if process.poll() is None:
        process.kill()
        process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


# Calls started ahead of the `run_git` that will make them (`start_ahead`), by their arguments.
_ahead: dict[tuple[object, ...], subprocess.Popen[bytes]] = {}
AHEAD_INPUT_MAX = 4096
"""Input a call started ahead may take: written whole at once, it must fit in the pipe."""


def _ahead_key(
    args: Sequence[str],
    cwd: Path | None,
    git_dir: Path | None,
    env: Mapping[str, str] | None,
    input: bytes | None,
    private: bool,
) -> tuple[object, ...]:
    extra = tuple(sorted(env.items())) if env else ()
    return (tuple(args), str(cwd), str(git_dir), extra, input, private)


def start_ahead(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    git_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    private: bool = True,
) -> None:
    """Start now a read-only git call that a `run_git` with the very same arguments is about
    to make, so that it runs beside the work in between (several such calls run side by side
    on as many cores). What git answers is what it would have answered a few milliseconds
    later; a call nobody takes is stopped by `drop_ahead`. Nothing is started for an input too
    large to hand over at once, or when git cannot be started (the `run_git` says why)."""
    if input is not None and len(input) > AHEAD_INPUT_MAX:
        return
    key = _ahead_key(args, cwd, git_dir, env, input, private)
    if key in _ahead:
        return
    full_env = _call_env(env, git_dir)
    import subprocess

    try:
        process = subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            env=full_env,
            stdin=None if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            umask=0o077 if private else -1,
        )
    except OSError:
        return
    if process.stdin is not None:
        try:
            process.stdin.write(input or b"")
            process.stdin.close()
        except OSError:  # it ended already: its answer says why
            pass
        process.stdin = None  # written and closed: `communicate` has nothing more to send
    _ahead[key] = process


def drop_ahead() -> None:
    """Stop the calls started ahead that nobody took."""
    while _ahead:
        _key, process = _ahead.popitem()
        stop_git(process)
