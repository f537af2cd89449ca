"""Redaction in a child process: a large stream is redacted on a core of its own.

In one process, the streaming redactor's Python holds the interpreter lock most of the time, and
every stage that lets go of it (the reads, sha256, zstd, AES-GCM, SQLite) waits to get it back:
the recording runs on about one core however many it has. A stream longer than one batch is
therefore redacted by a child Python process, which reads the raw stream on its stdin and writes
the redacted stream on its stdout, in frames; the parent keeps everything else.

Nothing unredacted touches disk: the raw bytes go only through the pipe (kernel memory) into the
child's memory, and the child writes nothing but redacted frames to its stdout (never a file; its
stderr is discarded, so not even a traceback of raw text is kept). When the parent dies, even by
SIGKILL, the child reads the end of its input, finds its output pipe closed, and ends.

Frames on the child's stdout: one tag byte, an 8-byte big-endian length, that many bytes.
``D``: redacted output; ``E``: the end, a JSON document with the redactor's counts, the line
feeds it dropped inside redactions and whether it used the Hyperscan gate. A child that ends
without the ``E`` frame failed, and the recording fails with it.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.errors import PitstopError
from core.evidence.capture import enlarge_pipe

READ_BYTES = 1024 * 1024
_HEADER = struct.Struct(">cQ")
DATA = b"D"
END = b"E"


class RedactionWorkerError(PitstopError):
    """The redaction child ended without finishing the stream."""


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _frame(fd: int, tag: bytes, data: bytes) -> None:
    _write_all(fd, _HEADER.pack(tag, len(data)))
    if data:
        _write_all(fd, data)


def main(argv: list[str] | None = None) -> int:
    """The child: raw stream on stdin, redacted frames on stdout."""
    args = sys.argv[1:] if argv is None else argv
    from core.redaction.hyperscan_gate import use_hyperscan_cache
    from core.redaction.redact import StreamRedactor

    if args:
        use_hyperscan_cache(Path(args[0]))
    redactor = StreamRedactor()
    while data := os.read(0, READ_BYTES):
        redacted = redactor.feed(data)
        if redacted:
            _frame(1, DATA, redacted)
    redacted = redactor.flush()
    if redacted:
        _frame(1, DATA, redacted)
    end = {
        "counts": redactor.counts,
        "dropped_newlines": redactor.dropped_newlines,
        "accelerated": redactor.accelerated,
    }
    _frame(1, END, json.dumps(end).encode())
    return 0


class RedactionWorker:
    """The parent's side: start the child, write raw bytes to it, read redacted frames back."""

    def __init__(self, cache_dir: Path | None) -> None:
        root = Path(__file__).resolve().parent.parent.parent
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from core.evidence.redact_worker import main; sys.exit(main())",
                *([str(cache_dir)] if cache_dir is not None else []),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._in = self.process.stdin.fileno()
        enlarge_pipe(self._in)
        self._out = self.process.stdout.fileno()
        self.end: dict[str, Any] | None = None

    def send(self, data: bytes) -> None:
        """Hand raw bytes to the child (waits while its pipe is full: memory stays bounded)."""
        try:
            _write_all(self._in, data)
        except BrokenPipeError as exc:
            raise RedactionWorkerError("the redaction process ended early") from exc

    def close_input(self) -> None:
        """The end of the raw stream."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()

    def redacted(self) -> Iterator[bytes]:
        """Redacted output as the child writes it, to its end (then ``self.end`` is set)."""
        while True:
            header = self._read_exactly(_HEADER.size)
            if header is None:
                break
            tag, length = _HEADER.unpack(header)
            body = self._read_exactly(length) if length else b""
            if body is None:
                break
            if tag == DATA:
                yield body
            elif tag == END:
                self.end = json.loads(body)
                return
        self.process.wait()
        raise RedactionWorkerError(
            f"the redaction process ended without finishing (status {self.process.returncode})"
        )

    def _read_exactly(self, size: int) -> bytes | None:
        parts: list[bytes] = []
        left = size
        while left:
            part = os.read(self._out, min(left, 4 * READ_BYTES))
            if not part:
                return None
            parts.append(part)
            left -= len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def stop(self) -> None:
        """End the child now (the recording was aborted) and wait for it."""
        if self.process.poll() is None:
            self.process.kill()
        self.close_input()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def wait(self) -> None:
        """Reap the child after its end frame."""
        self.close_input()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
