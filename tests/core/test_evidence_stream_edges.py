"""Capture at full speed keeps its promises at the edges of its pieces (issue 21).

A fast capture reads, batches, redacts and chunks the stream in large pieces. These tests plant a
secret across every kind of boundary, at every offset, and look at every file the store holds; they
check the recorded hash against the sha256 of what the command really printed; and they kill
`pitstop run` with SIGKILL in the middle of a stream and look at what is left.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import store
from core.engine import Engine
from core.evidence.storage import BATCH_BYTES, EvidenceLimits, EvidenceRecorder
from core.redaction.redact import redact_bytes

ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
CHUNK = 4096
"""A small chunk size that divides BATCH_BYTES: a chunk boundary, a batch boundary and (with the
right read size) a read boundary fall on the same byte."""


def _token() -> str:
    return "ghp_" + "".join(secrets.choice(ALPHABET) for _ in range(36))


def _filler(size: int) -> bytes:
    """`size` bytes of ordinary log lines (no secrets)."""
    line = b"tests/test_mod.py::test_case PASSED [ 42%]\n"
    return (line * (size // len(line) + 1))[:size]


def _every_file(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _assert_nowhere_in_clear(root: Path, token: str) -> None:
    files = _every_file(root)
    assert files, "nothing was written"
    needles = [token.encode(), token[4:].encode(), token[-20:].encode()]
    for name, data in files.items():
        for needle in needles:
            assert needle not in data, f"a piece of the secret is in clear in {name}"


@pytest.fixture
def task_id(engine: Engine, make_repo: Callable[..., Path]) -> str:
    return engine.start_task(repo=make_repo("work"), objective="stream edges", task_id="se").id


def _record(engine: Engine, task_id: str, stream: bytes, piece: int) -> int:
    recorder = EvidenceRecorder(
        engine.db,
        engine.keys,
        task_id,
        source="file",
        label=None,
        command={"argv": []},
        limits=EvidenceLimits(chunk_bytes=CHUNK),
    )
    for start in range(0, len(stream), piece):
        recorder.feed(stream[start : start + piece])
    item = recorder.finish(exit_code=0)
    assert item.state == "complete"
    assert item.sha256 == hashlib.sha256(stream).hexdigest()
    assert item.bytes_total == len(stream)
    return item.id


def _stream_with_secret_at(boundary: int, offset: int, token: str) -> bytes:
    """Log lines with `token` on a line of its own, `offset` of its characters before
    `boundary` (so it straddles it unless offset is 0 or its whole length)."""
    line = f"remote: using token {token} here\n".encode()
    at = line.index(token.encode())
    head = _filler(boundary - offset - at)
    stream = head + line + _filler(BATCH_BYTES)
    assert stream[boundary - offset : boundary - offset + len(token)] == token.encode()
    return stream


@pytest.mark.parametrize("offset", range(41))
def test_a_secret_straddling_a_batch_and_chunk_boundary_never_reaches_disk(
    engine: Engine, task_id: str, store_root: Path, tmp_path: Path, offset: int
) -> None:
    """A 40-character token cut at each of its 41 offsets by the place where a read, a batch
    handed to the redaction thread and a stored chunk all end."""
    token = _token()
    stream = _stream_with_secret_at(BATCH_BYTES, offset, token)
    evidence_id = _record(engine, task_id, stream, piece=BATCH_BYTES // 4)
    output = b"".join(engine.evidence_output(evidence_id))
    assert output == redact_bytes(stream)
    assert token.encode() not in output
    assert b"[REDACTED" in output
    _assert_nowhere_in_clear(tmp_path, token)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    boundary=st.sampled_from([CHUNK, 3 * CHUNK, BATCH_BYTES, BATCH_BYTES + CHUNK]),
    offset=st.integers(min_value=0, max_value=40),
    piece=st.sampled_from([1, 7, 4096, 65536, 65537, BATCH_BYTES, 1 << 20]),
)
def test_a_secret_straddling_any_boundary_never_reaches_disk(
    engine: Engine,
    task_id: str,
    tmp_path: Path,
    boundary: int,
    offset: int,
    piece: int,
) -> None:
    """Any read size, any boundary (a chunk's, a batch's, both), any offset into the token."""
    if piece == 1 and boundary > CHUNK:
        piece = 4093  # one-byte reads of 300 KB take too long; a prime size still splits it
    token = _token()
    stream = _stream_with_secret_at(boundary, offset, token)
    evidence_id = _record(engine, task_id, stream, piece=piece)
    output = b"".join(engine.evidence_output(evidence_id))
    assert token.encode() not in output
    assert output == redact_bytes(stream)
    _assert_nowhere_in_clear(tmp_path, token)


# --- through the real CLI ------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import os, sys
    total, token = int(sys.argv[1]), sys.argv[2]
    line = b"".join(b"2024-06-02T10:00:%02d.000Z INFO worker GET /api/v2/%d 200\\n" % (i % 60, i)
                    for i in range(1000))
    secret = ("auth: using token " + token + "\\n").encode()
    sent = 0
    while total < 0 or sent < total:
        piece = line + secret
        if total >= 0:
            piece = piece[: total - sent]
        os.write(1, piece)
        sent += len(piece)
    """
)


def _cli(tmp_path: Path) -> tuple[list[str], Path]:
    writer = tmp_path / "writer.py"
    writer.write_text(WRITER)
    return [sys.executable, "-m", "tui.cli"], writer


def _expected_output(total: int, token: str) -> bytes:
    line = b"".join(
        b"2024-06-02T10:00:%02d.000Z INFO worker GET /api/v2/%d 200\n" % (i % 60, i)
        for i in range(1000)
    )
    piece = line + f"auth: using token {token}\n".encode()
    return (piece * (total // len(piece) + 1))[:total]


def test_the_recorded_hash_is_the_sha256_of_what_the_command_printed(
    engine: Engine, task_id: str, tmp_path: Path
) -> None:
    """`pitstop run` at full speed through pipes: the passthrough is exact, and the evidence's
    sha256 and byte count are those of the command's real output (secrets included)."""
    cli, writer = _cli(tmp_path)
    total = 5 * 1024 * 1024 + 4321
    token = _token()
    passthrough = tmp_path / "out.bin"
    args = [str(total), token]
    with passthrough.open("wb") as out:
        result = subprocess.run(
            [*cli, "run", "--task", task_id, "--quiet", "--", sys.executable, str(writer), *args],
            stdout=out,
            stderr=subprocess.PIPE,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    printed = passthrough.read_bytes()
    assert printed == _expected_output(total, token)
    (item,) = engine.list_evidence(task_id)
    assert item.state == "complete"
    assert item.bytes_total == total
    assert item.sha256 == hashlib.sha256(printed).hexdigest()
    assert token.encode() not in b"".join(engine.evidence_output(item.id))
    passthrough.unlink()  # the command's own output holds the token; the store must not
    _assert_nowhere_in_clear(tmp_path, token)


def test_kill_9_mid_stream_leaves_no_evidence_offered_as_complete(
    engine: Engine, task_id: str, tmp_path: Path, store_root: Path
) -> None:
    """SIGKILL while chunks are being stored: the item stays `writing`, with no hash and no
    exit code; no checkpoint would take it; no secret is on disk in clear."""
    cli, writer = _cli(tmp_path)
    token = _token()
    proc = subprocess.Popen(
        [*cli, "run", "--task", task_id, "--quiet", "--", sys.executable, str(writer), "-1", token],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_chunks(store_root / "pitstop.db", 3, proc)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    _wait_for_writer_to_die(writer)
    engine.db.execute("SELECT 1").fetchone()  # a fresh read of the store
    (item,) = engine.list_evidence(task_id)
    assert item.state == "writing"
    assert item.sha256 is None
    assert item.exit_code is None
    assert item.outcome == "writing"
    assert store.list_chunks(engine.db, item.id)  # what was stored so far is there
    pending = store.list_evidence(engine.db, task_id, pending=True)
    assert [row for row in pending if row["id"] == item.id] == []
    _assert_nowhere_in_clear(tmp_path, token)


def _wait_for_chunks(db_file: Path, count: int, proc: subprocess.Popen[bytes]) -> None:
    """Wait (a bounded time) until the running item has `count` chunks stored."""
    for _ in range(600):
        assert proc.poll() is None, "pitstop run ended before it was killed"
        if db_file.exists():
            connection = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True, timeout=5)
            try:
                stored = connection.execute("SELECT COUNT(*) FROM evidence_chunks").fetchone()[0]
            except sqlite3.OperationalError:
                stored = 0
            finally:
                connection.close()
            if stored >= count:
                return
        time.sleep(0.05)
    raise AssertionError("no chunks were stored within 30 s")


def _wait_for_writer_to_die(writer: Path) -> None:
    """The command loses its reader when Pitstop dies and ends on EPIPE; wait for that, so
    nothing writes to the store's directory while it is read."""
    for _ in range(200):
        found = subprocess.run(["pgrep", "-f", str(writer)], capture_output=True, check=False)
        if found.returncode != 0:
            return
        time.sleep(0.05)
    raise AssertionError("the command outlived pitstop run by 10 s")
