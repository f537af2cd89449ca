"""A git process started without the `subprocess` module, for the calls that only read.

`import subprocess` costs a command ~3.4 ms: it loads `threading`, `selectors`, `signal` and
`locale`. `pitstop diff TASK@SEQ` starts one git process, a hook's checkpoint a handful, each
of them a read (`status`, `rev-parse`, `config`, `diff-tree`, `rev-list`): here they are started
with `os.posix_spawnp` and read with `select.poll`, both already in the interpreter. That covers
what such a call needs and nothing more: an input written whole (no stream fed as it goes), a
working directory given to git itself (`git -C DIR`, as if started there), and the caller's
umask, since the call writes nothing (a call that writes takes `subprocess`, under umask 077).
As with `subprocess`, the child starts with SIGPIPE and SIGXFSZ back at their defaults.

The pipes are the only descriptors the child gets beyond 0, 1 and 2: Python opens every other
one close-on-exec (PEP 446), and `os.pipe`'s own ends are closed in the child once duplicated.
"""

from __future__ import annotations

import _signal
import contextlib
import os
import select
from collections.abc import Sequence

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22)
if TYPE_CHECKING:
    from pathlib import Path

_CHUNK = 1 << 16
_DEFAULT_SIGNALS = (_signal.SIGPIPE, _signal.SIGXFSZ)  # Python ignores them; git must not


class Spawned:
    """A started git process: its stdout and stderr read whole by `communicate`."""

    def __init__(
        self,
        args: Sequence[str],
        env: dict[str, str],
        *,
        cwd: Path | str | None = None,
        input: bytes | None = None,
    ) -> None:
        self.args = ["git", *args]
        argv = ["git", "-C", str(cwd), *args] if cwd is not None else self.args
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        pipes = [out_read, out_write, err_read, err_write]
        stdin: tuple[object, ...] = (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)
        in_write = -1
        if input is not None:
            in_read, in_write = os.pipe()
            pipes += [in_read, in_write]
            stdin = (os.POSIX_SPAWN_DUP2, in_read, 0)
        actions = [
            stdin,
            (os.POSIX_SPAWN_DUP2, out_write, 1),
            (os.POSIX_SPAWN_DUP2, err_write, 2),
            *((os.POSIX_SPAWN_CLOSE, fd) for fd in pipes),
        ]
        try:
            self.pid = os.posix_spawnp(
                "git", argv, env, file_actions=actions, setsigdef=_DEFAULT_SIGNALS
            )
        except BaseException:
            for fd in pipes:
                os.close(fd)
            raise
        os.close(out_write)
        os.close(err_write)
        if input is not None:
            os.close(in_read)
            os.set_blocking(in_write, False)
        self._input = input or b""
        self._stdin = in_write  # -1: none, or written and closed
        self._fds: dict[int, list[bytes]] | None = {out_read: [], err_read: []}
        self._order = (out_read, err_read)
        self._output = (b"", b"")
        self.returncode: int | None = None

    def communicate(self) -> tuple[bytes, bytes]:
        """Write the input and read both pipes to their end (no pipe can fill and stall git),
        then wait for it."""
        chunks = self._fds
        if chunks is not None:
            poller = select.poll()
            for fd in chunks:
                poller.register(fd, select.POLLIN)
            if self._stdin >= 0:
                poller.register(self._stdin, select.POLLOUT)
            open_fds = set(chunks)
            try:
                while open_fds or self._stdin >= 0:
                    for fd, _event in poller.poll():
                        if fd == self._stdin:
                            self._write_some(poller)
                            continue
                        data = os.read(fd, _CHUNK)
                        if data:
                            chunks[fd].append(data)
                        else:
                            poller.unregister(fd)
                            open_fds.discard(fd)
            finally:
                self._close_stdin()
                for fd in chunks:
                    os.close(fd)
            self._fds = None
            self._output = (b"".join(chunks[self._order[0]]), b"".join(chunks[self._order[1]]))
        self.wait()
        return self._output[0], self._output[1]

    def _write_some(self, poller: select.poll) -> None:
        """Write what the pipe takes of the input; close it once all is written, or when git
        stopped reading (it says why on stderr, as with `subprocess`)."""
        try:
            written = os.write(self._stdin, self._input[:_CHUNK])
        except BrokenPipeError:
            written = len(self._input)
        except BlockingIOError:
            return
        self._input = self._input[written:]
        if not self._input:
            poller.unregister(self._stdin)
            self._close_stdin()

    def _close_stdin(self) -> None:
        if self._stdin >= 0:
            os.close(self._stdin)
            self._stdin = -1

    def poll(self) -> int | None:
        """The exit code if the process has ended (it is reaped then), else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = 0
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        """Wait for the process to end; its exit code (negative: the signal that ended it)."""
        if self.returncode is None:
            try:
                _pid, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # reaped by someone else (SIGCHLD ignored): as subprocess
                self.returncode = 0
            else:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        """End the process now (SIGKILL), if it has not ended."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, 9)

    def stop(self) -> None:
        """Kill it, reap it and close its pipes, whatever it was doing."""
        self.kill()
        self._close_stdin()
        if self._fds is not None:
            for fd in self._fds:
                os.close(fd)
            self._fds = None
        self.wait()
