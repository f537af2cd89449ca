"""A git process started without the `subprocess` module, for `pitstop diff`'s quick path.

`import subprocess` costs a command ~3.4 ms: it loads `threading`, `selectors`, `signal` and
`locale`. `pitstop diff TASK@SEQ` starts one git process (the diff's text), and on a real
repository its whole budget is twice `git diff HEAD` (issue 21: ~38 ms against ~19 ms on
ansible), so that import was a tenth of it. Here the process is started with
`os.posix_spawnp` and read with `select.poll`, both already in the interpreter. That covers
what such a call needs and nothing more: no stdin, no working directory (git takes `GIT_DIR`),
and the caller's umask, since it only reads.

The pipes are the only descriptors the child gets beyond 0, 1 and 2: Python opens every other
one close-on-exec (PEP 446), and `os.pipe`'s own ends are closed in the child once duplicated.
"""

from __future__ import annotations

import contextlib
import os
import select
from collections.abc import Sequence

_CHUNK = 1 << 16


class Spawned:
    """A started git process: its stdout and stderr read whole by `communicate`."""

    def __init__(self, args: Sequence[str], env: dict[str, str]) -> None:
        self.args = ["git", *args]
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out_write, 1),
            (os.POSIX_SPAWN_DUP2, err_write, 2),
            (os.POSIX_SPAWN_CLOSE, out_read),
            (os.POSIX_SPAWN_CLOSE, err_read),
            (os.POSIX_SPAWN_CLOSE, out_write),
            (os.POSIX_SPAWN_CLOSE, err_write),
        ]
        try:
            self.pid = os.posix_spawnp("git", self.args, env, file_actions=actions)
        except BaseException:
            for fd in (out_read, out_write, err_read, err_write):
                os.close(fd)
            raise
        os.close(out_write)
        os.close(err_write)
        self._fds: dict[int, list[bytes]] | None = {out_read: [], err_read: []}
        self._order = (out_read, err_read)
        self._output = (b"", b"")
        self.returncode: int | None = None

    def communicate(self) -> tuple[bytes, bytes]:
        """Read both pipes to their end (neither can fill and stall git), then wait for it."""
        chunks = self._fds
        if chunks is not None:
            poller = select.poll()
            for fd in chunks:
                poller.register(fd, select.POLLIN)
            open_fds = set(chunks)
            try:
                while open_fds:
                    for fd, _event in poller.poll():
                        data = os.read(fd, _CHUNK)
                        if data:
                            chunks[fd].append(data)
                        else:
                            poller.unregister(fd)
                            open_fds.discard(fd)
            finally:
                for fd in chunks:
                    os.close(fd)
            self._fds = None
            self._output = (b"".join(chunks[self._order[0]]), b"".join(chunks[self._order[1]]))
        self.wait()
        return self._output[0], self._output[1]

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
        if self._fds is not None:
            for fd in self._fds:
                os.close(fd)
            self._fds = None
        self.wait()
