"""Run a command with its output passed through live and captured once, in arrival order.

When the caller's stdout is a terminal the command gets a pseudo-terminal, so it keeps its
colours and progress bars exactly as it would without Pitstop (stdout and stderr then share the
terminal, as they do on screen). Otherwise stdout and stderr stay separate pipes, each passed to
the caller's own descriptor. The command runs in its own process group; Ctrl-C and the other
terminating signals Pitstop receives are forwarded to that group, and the exit status is the
command's own (128+N when a signal N killed it; 124 when the timeout stopped it).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import selectors
import shutil
import signal
import subprocess
import termios
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType

from core.errors import CommandStartError, UsageError

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from core.records import NamedTuple

READ_BYTES = 1024 * 1024
PIPE_BYTES = 1024 * 1024
"""Pipe buffer asked for (Linux caps it at /proc/sys/fs/pipe-max-size, 1 MiB by default): a
command printing fast is read in few large pieces, and keeps writing while Pitstop's threads
briefly hold the GIL instead of stalling on a full 64 KiB pipe."""
KILL_GRACE_SECONDS = 5.0
TIMEOUT_EXIT = 124
FORWARDED_SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


class RunOutcome(NamedTuple):
    """How the command ended."""

    exit_code: int
    returncode: int | None
    signal: int | None
    timed_out: bool
    duration_ms: int


def _write_all(fd: int, data: bytes) -> bool:
    """Write everything to `fd`; False once the reader is gone (output still gets captured)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            time.sleep(0.001)
            continue
        except OSError as exc:
            if exc.errno in (errno.EPIPE, errno.EBADF):
                return False
            raise
        view = view[written:]
    return True


def _enlarge_pipe(fd: int) -> None:
    """Ask for a bigger pipe buffer where the platform has F_SETPIPE_SZ; keep the default else."""
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, setpipe, PIPE_BYTES)


def _copy_window_size(from_fd: int, to_fd: int) -> None:
    with contextlib.suppress(OSError):
        size = fcntl.ioctl(from_fd, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(to_fd, termios.TIOCSWINSZ, size)


def check_startable(argv: Sequence[str], cwd: Path | None = None) -> None:
    """Refuse, before anything is recorded, a command that cannot start at all."""
    if not argv:
        raise UsageError("no command given; put it after --, e.g. pitstop run --task T -- pytest")
    program = argv[0]
    if "/" in program:
        path = Path(program) if Path(program).is_absolute() else (cwd or Path.cwd()) / program
        if not path.exists():
            raise CommandStartError(f"command not found: {program}")
        if path.is_dir() or not os.access(path, os.X_OK):
            raise CommandStartError(f"command not executable: {program}")
    elif shutil.which(program) is None:
        raise CommandStartError(f"command not found: {program}")


def run_captured(
    argv: Sequence[str],
    *,
    sink: Callable[[bytes], None],
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    out_fd: int = 1,
    err_fd: int = 2,
    use_pty: bool | None = None,
) -> RunOutcome:
    """Run `argv`, pass its output to `out_fd`/`err_fd` live and to `sink`, and report the end."""
    if not argv:
        raise UsageError("no command given; put it after --, e.g. pitstop run --task T -- pytest")
    if timeout is not None and timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if use_pty is None:
        use_pty = os.isatty(out_fd)
    started = time.monotonic()
    relay = _Relay(out_fd)
    # The handlers go in before the command starts: a Ctrl-C or SIGTERM between its start and
    # their installation ended Pitstop and left the command running on its own.
    relay.install(use_pty)
    try:
        if use_pty:
            process, routes = _start_on_pty(argv, cwd, env, out_fd, relay)
        else:
            process, routes = _start_on_pipes(argv, cwd, env, out_fd, err_fd)
        relay.attach(process)
        timed_out = _pump(process, routes, sink, timeout, started)
    finally:
        relay.release()
    return _outcome(process, timed_out, started)


class _Relay:
    """What Pitstop passes on to the command while it runs: the terminating signals it receives
    (to the command's process group) and, on a pty, its terminal's window size."""

    def __init__(self, out_fd: int) -> None:
        self.out_fd = out_fd
        self.master_fd = -1  # the pty's master side, once opened
        self.received: list[int] = []
        self.process: subprocess.Popen[bytes] | None = None
        self._previous: dict[int, Any] = {}
        self._previous_winch: Any = None

    def install(self, use_pty: bool) -> None:
        """Install the handlers (remembering the ones they replace)."""
        self._previous = {sig: signal.signal(sig, self._forward) for sig in FORWARDED_SIGNALS}
        if use_pty:
            self._previous_winch = signal.signal(signal.SIGWINCH, self._resize)

    def attach(self, process: subprocess.Popen[bytes]) -> None:
        """The command started: signals go to it from now on, and those that came while it was
        starting are passed on now (one that comes in between is passed twice, never lost)."""
        self.process = process
        for signum in list(self.received):
            _signal_group(process, signum)

    def release(self) -> None:
        """Put the previous handlers back and close what the command's output came through."""
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        if self._previous_winch is not None:
            signal.signal(signal.SIGWINCH, self._previous_winch)
        if self.master_fd >= 0:
            os.close(self.master_fd)
        if self.process is not None:
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()

    def _forward(self, signum: int, _frame: FrameType | None) -> None:
        self.received.append(signum)
        if self.process is not None:
            _signal_group(self.process, signum)

    def _resize(self, _signum: int, _frame: FrameType | None) -> None:
        if self.master_fd >= 0:
            _copy_window_size(self.out_fd, self.master_fd)


@contextlib.contextmanager
def _start_errors(argv: Sequence[str]) -> Iterator[None]:
    """A command that cannot start, said as Pitstop says it."""
    try:
        yield
    except FileNotFoundError as exc:
        raise CommandStartError(f"command not found: {argv[0]}") from exc
    except PermissionError as exc:
        raise CommandStartError(f"command not executable: {argv[0]}") from exc
    except NotADirectoryError as exc:
        raise CommandStartError(f"cannot run {argv[0]}: {exc}") from exc


def _start_on_pty(
    argv: Sequence[str], cwd: Path | None, env: Mapping[str, str] | None, out_fd: int, relay: _Relay
) -> tuple[subprocess.Popen[bytes], dict[int, int]]:
    """Start the command on a new pseudo-terminal (stdout and stderr share it, as on screen)."""
    import pty

    slave_fd = -1
    try:
        with _start_errors(argv):
            relay.master_fd, slave_fd = pty.openpty()
            _copy_window_size(out_fd, slave_fd)
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdout=slave_fd,
                stderr=slave_fd,
                start_new_session=True,
            )
    finally:
        if slave_fd >= 0:
            os.close(slave_fd)
    return process, {relay.master_fd: out_fd}


def _start_on_pipes(
    argv: Sequence[str], cwd: Path | None, env: Mapping[str, str] | None, out_fd: int, err_fd: int
) -> tuple[subprocess.Popen[bytes], dict[int, int]]:
    """Start the command with stdout and stderr on pipes of their own."""
    with _start_errors(argv):
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    assert process.stdout is not None and process.stderr is not None
    routes = {process.stdout.fileno(): out_fd, process.stderr.fileno(): err_fd}
    for fd in routes:
        _enlarge_pipe(fd)
    return process, routes


def _outcome(process: subprocess.Popen[bytes], timed_out: bool, started: float) -> RunOutcome:
    """How the command ended, as Pitstop reports it (128+N for signal N, 124 on the timeout)."""
    returncode = process.returncode
    duration_ms = int((time.monotonic() - started) * 1000)
    killed_by = -returncode if returncode is not None and returncode < 0 else None
    if timed_out:
        exit_code = TIMEOUT_EXIT
    elif killed_by is not None:
        exit_code = 128 + killed_by
    else:
        exit_code = returncode or 0
    return RunOutcome(exit_code, returncode, killed_by, timed_out, duration_ms)


def _pump(
    process: subprocess.Popen[bytes],
    routes: dict[int, int],
    sink: Callable[[bytes], None],
    timeout: float | None,
    started: float,
) -> bool:
    """Move output until every stream closes and the process ends; True if it timed out."""
    selector = selectors.DefaultSelector()
    for fd in routes:
        selector.register(fd, selectors.EVENT_READ)
    passthrough = dict.fromkeys(routes.values(), True)
    deadline = started + timeout if timeout is not None else None
    timed_out = False
    kill_at: float | None = None
    open_fds = set(routes)
    while open_fds:
        wait = None
        now = time.monotonic()
        if deadline is not None and not timed_out:
            wait = max(0.0, deadline - now)
        elif kill_at is not None:
            wait = max(0.0, kill_at - now)
        try:
            events = selector.select(wait)
        except InterruptedError:
            continue
        for key, _mask in events:
            fd = int(key.fd)
            try:
                data = os.read(fd, READ_BYTES)
            except OSError as exc:  # a pty reports EIO once the command closed it
                if exc.errno != errno.EIO:
                    raise
                data = b""
            if not data:
                selector.unregister(fd)
                open_fds.discard(fd)
                continue
            target = routes[fd]
            if passthrough[target]:
                passthrough[target] = _write_all(target, data)
            sink(data)
        now = time.monotonic()
        if deadline is not None and not timed_out and now >= deadline:
            timed_out = True
            _signal_group(process, signal.SIGTERM)
            kill_at = now + KILL_GRACE_SECONDS
        elif kill_at is not None and now >= kill_at:
            _signal_group(process, signal.SIGKILL)
            kill_at = None
    selector.close()
    while True:
        try:
            if kill_at is None:
                process.wait()
            else:
                process.wait(timeout=max(0.0, kill_at - time.monotonic()))
            break
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            kill_at = None
    return timed_out


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)
