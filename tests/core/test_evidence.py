"""Evidence capture through the engine: real processes, a real store, a real master key.

What the evidence issue asks to be shown: secrets split across read chunks and PEM blocks spanning
lines never reach the tail, the full output or any byte of the store; binary and non-UTF-8 output
round-trips exactly; `\\r` progress bars leave their final state in the tail; the storage cap
keeps head and tail visibly; evidence belongs to the next checkpoint and is indexed (not copied)
by its manifest.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core import store
from core.engine import Engine
from core.errors import PitstopError
from core.evidence.storage import EvidenceLimits, EvidenceRecorder

# Credential-shaped test values (random, so they are not on any allow-list and never collide).
GITHUB_TOKEN = "ghp_" + "".join(
    secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789") for _ in range(36)
)
AWS_KEY = "AKIA" + "".join(secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZ234567") for _ in range(16))


@pytest.fixture
def master_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh master key in PITSTOP_KEY (the keyring is the null backend)."""
    key = base64.b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("PITSTOP_KEY", key)
    return key


@pytest.fixture
def task_id(engine: Engine, make_repo: Callable[..., Path], master_key: str) -> str:
    repo = make_repo("work")
    return engine.start_task(repo=repo, objective="evidence tests", task_id="ev").id


@pytest.fixture
def devnull() -> Iterator[int]:
    fd = os.open(os.devnull, os.O_WRONLY)
    yield fd
    os.close(fd)


def run_py(
    engine: Engine,
    task: str,
    code: str,
    devnull: int,
    *,
    use_pty: bool = False,
    limits: EvidenceLimits | None = None,
) -> int:
    """Run a Python snippet through `Engine.run_command`; return the evidence id."""
    outcome, item = engine.run_command(
        task,
        [sys.executable, "-c", textwrap.dedent(code)],
        out_fd=devnull,
        err_fd=devnull,
        use_pty=use_pty,
        limits=limits,
    )
    assert outcome.exit_code == 0, outcome
    return item.id


def full_output(engine: Engine, evidence_id: int) -> bytes:
    return b"".join(engine.evidence_output(evidence_id))


def store_bytes(root: Path) -> dict[str, bytes]:
    """Raw bytes of every file under the store (database, WAL, keys, git objects, anything)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def assert_not_in_store(root: Path, needles: list[str]) -> None:
    files = store_bytes(root)
    assert files, "the store is empty"
    for name, data in files.items():
        for needle in needles:
            assert needle.encode() not in data, f"{needle[:12]}… found in clear in {name}"


# --- secrets split across reads, multi-line PEM blocks ---------------------------------------


def test_secret_split_across_two_writes_is_redacted_everywhere(
    engine: Engine, task_id: str, store_root: Path, devnull: int
) -> None:
    half = len(GITHUB_TOKEN) // 2
    code = f"""
        import os, time
        os.write(1, b"auth ok, token {GITHUB_TOKEN[:half]}")
        time.sleep(0.3)
        os.write(1, b"{GITHUB_TOKEN[half:]} stored\\n")
        time.sleep(0.2)
        os.write(1, b"aws {AWS_KEY[:7]}")
        time.sleep(0.3)
        os.write(1, b"{AWS_KEY[7:]}\\n")
    """
    evidence_id = run_py(engine, task_id, code, devnull)
    item = engine.get_evidence(evidence_id)
    assert item.chunk_count >= 1
    assert item.redactions == 2
    full = full_output(engine, evidence_id)
    for text in (item.tail or "", full.decode()):
        assert GITHUB_TOKEN not in text and AWS_KEY not in text
        assert "[REDACTED:" in text
        # No half of a secret survives either.
        assert GITHUB_TOKEN[half:] not in text and AWS_KEY[7:] not in text
    assert full.startswith(b"auth ok, token [REDACTED:")
    assert b" stored\n" in full
    assert [
        line.decode() for line in engine.evidence_last_lines(evidence_id, 2)
    ] == full.decode().splitlines()
    assert_not_in_store(store_root, [GITHUB_TOKEN, AWS_KEY, GITHUB_TOKEN[half:], AWS_KEY[7:]])


def test_every_split_point_of_a_secret_is_redacted(engine: Engine, task_id: str) -> None:
    """The recorder fed the same stream split at every byte gives the same redacted output."""
    stream = f"before\nexport GITHUB_TOKEN={GITHUB_TOKEN}\nafter\n".encode()
    reference: bytes | None = None
    start = stream.index(b"ghp_") - 2
    for cut in range(start, start + len(GITHUB_TOKEN) + 4):
        recorder = EvidenceRecorder(
            engine.db, engine.keys, task_id, source="file", label=None, command={"argv": []}
        )
        recorder.feed(stream[:cut])
        recorder.feed(stream[cut:])
        item = recorder.finish(exit_code=0)
        output = full_output(engine, item.id)
        assert GITHUB_TOKEN.encode() not in output, cut
        assert item.sha256 == hashlib.sha256(stream).hexdigest()
        reference = reference or output
        assert output == reference, cut
    assert reference is not None and b"[REDACTED:" in reference


def test_one_byte_reads_still_redact(engine: Engine, task_id: str) -> None:
    stream = f"x-api: Authorization: Bearer {GITHUB_TOKEN}\nkey {AWS_KEY}\n".encode()
    recorder = EvidenceRecorder(
        engine.db, engine.keys, task_id, source="file", label=None, command={"argv": []}
    )
    for i in range(len(stream)):
        recorder.feed(stream[i : i + 1])
    item = recorder.finish(exit_code=0)
    output = full_output(engine, item.id)
    assert GITHUB_TOKEN.encode() not in output and AWS_KEY.encode() not in output
    assert item.bytes_total == len(stream)


def _pem_block() -> tuple[str, list[str]]:
    body = base64.b64encode(os.urandom(48 * 12)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    block = (
        "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----\n"
    )
    return block, lines


def test_multiline_pem_block_written_in_pieces_is_redacted(
    engine: Engine, task_id: str, store_root: Path, devnull: int
) -> None:
    block, body_lines = _pem_block()
    pieces = [block[:50], block[50:300], block[300:]]
    code = f"""
        import os, time
        os.write(1, b"writing key.pem\\n")
        for piece in {pieces!r}:
            os.write(1, piece.encode())
            time.sleep(0.15)
        os.write(1, b"done\\n")
    """
    evidence_id = run_py(engine, task_id, code, devnull)
    item = engine.get_evidence(evidence_id)
    full = full_output(engine, evidence_id).decode()
    assert full.startswith("writing key.pem\n")
    assert full.endswith("done\n")
    assert "[REDACTED:private-key]" in full
    assert "[REDACTED:private-key]" in (item.tail or "")
    for line in body_lines:
        assert line not in full
        assert line not in (item.tail or "")
    last = b"\n".join(engine.evidence_last_lines(evidence_id, 10)).decode()
    assert not any(line in last for line in body_lines)
    assert_not_in_store(store_root, body_lines)


def test_pem_block_through_a_pty_is_redacted(
    engine: Engine, task_id: str, store_root: Path, devnull: int
) -> None:
    """A terminal turns `\\n` into `\\r\\n`; the block is still caught."""
    block, body_lines = _pem_block()
    code = f"""
        import sys, time
        for line in {block.splitlines()!r}:
            print(line, flush=True)
            time.sleep(0.01)
    """
    evidence_id = run_py(engine, task_id, code, devnull, use_pty=True)
    full = full_output(engine, evidence_id).decode()
    assert "[REDACTED:private-key]" in full
    assert not any(line in full for line in body_lines)
    assert_not_in_store(store_root, body_lines)


# --- binary, non-UTF-8 and progress bars --------------------------------------------------------


def test_binary_and_non_utf8_output_round_trips(
    engine: Engine, task_id: str, tmp_path: Path, devnull: int
) -> None:
    data = (
        bytes(range(256)) * 64
        + "café ünïcode ✓\n".encode()
        + "latin-1 caf\xe9\n".encode("latin-1")
        + b"\xff\xfe\x00\x00 utf-16ish \x80\x81\r\n"
        + os.urandom(300_000)  # several read chunks, few newlines
        + b"\n\x1b[31mred\x1b[0m no final newline"
    )
    blob = tmp_path / "blob.bin"
    blob.write_bytes(data)
    outcome, item = engine.run_command(
        task_id, ["cat", str(blob)], out_fd=devnull, err_fd=devnull, use_pty=False
    )
    assert outcome.exit_code == 0
    assert item.bytes_total == len(data)
    assert item.sha256 == hashlib.sha256(data).hexdigest()
    assert item.lines_total == data.count(b"\n") + 1  # the last line has no newline
    full = full_output(engine, item.id)
    if item.redactions == 0:  # random bytes could in theory look like a secret
        assert full == data
    assert full.endswith(b"\x1b[31mred\x1b[0m no final newline")
    assert engine.evidence_last_lines(item.id, 1) == [b"\x1b[31mred\x1b[0m no final newline"]


def test_stdout_and_stderr_are_both_captured_and_passed_through(
    engine: Engine, task_id: str, tmp_path: Path
) -> None:
    out_path, err_path = tmp_path / "out", tmp_path / "err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        outcome, item = engine.run_command(
            task_id,
            ["sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"],
            out_fd=out.fileno(),
            err_fd=err.fileno(),
            use_pty=False,
        )
    assert outcome.exit_code == 3 and item.exit_code == 3
    assert out_path.read_bytes() == b"to-stdout\n"
    assert err_path.read_bytes() == b"to-stderr\n"
    assert sorted(full_output(engine, item.id).splitlines()) == [b"to-stderr", b"to-stdout"]
    assert item.bytes_total == 20 and item.lines_total == 2


PROGRESS = r"""
    import sys, time
    out = sys.stdout
    print("downloading", flush=True)
    for pct in (0, 25, 50, 75, 100):
        out.write(f"\rfile-a [{'#' * (pct // 25):<4}] {pct:3d}%")
        out.flush()
        time.sleep(0.01)
    print(flush=True)
    for pct in (10, 60, 100):
        out.write(f"\rfile-b {pct:3d}%")
        out.flush()
        time.sleep(0.01)
    print(" done", flush=True)
    print("finished", flush=True)
"""


@pytest.mark.parametrize("use_pty", [False, True], ids=["pipe", "pty"])
def test_progress_bar_tail_shows_the_final_state(
    engine: Engine, task_id: str, devnull: int, use_pty: bool
) -> None:
    evidence_id = run_py(engine, task_id, PROGRESS, devnull, use_pty=use_pty)
    item = engine.get_evidence(evidence_id)
    assert (item.tail or "").split("\n") == [
        "downloading",
        "file-a [####] 100%",
        "file-b 100% done",
        "finished",
    ]
    assert item.tail_lines == 4
    # The full output keeps every intermediate state.
    assert b" 50%" in full_output(engine, evidence_id)


# --- the threaded pipeline (streams longer than one batch) -------------------------------------


def _long_stream(size: int) -> tuple[bytes, list[str]]:
    """`size` bytes of log lines with a secret every ~40 KiB, some split by the batch size."""
    lines: list[bytes] = []
    planted: list[str] = []
    total = 0
    i = 0
    while total < size:
        if i % 500 == 250:
            token = "ghp_" + "".join(
                secrets.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(36)
            )
            planted.append(token)
            line = f"remote: using token {token} for https://github.com/acme/app.git\n".encode()
        else:
            line = f"tests/test_mod_{i}.py::test_case[{i % 97}] PASSED [{i % 100:3d}%]\n".encode()
        lines.append(line)
        total += len(line)
        i += 1
    return b"".join(lines), planted


@pytest.mark.parametrize("piece", [1000, 65536, 1 << 20])
def test_a_stream_longer_than_a_batch_is_recorded_exactly(
    engine: Engine, task_id: str, store_root: Path, piece: int
) -> None:
    """Through the redaction and storage threads: same bytes, hash and counts as in one piece."""
    from core.evidence.storage import BATCH_BYTES
    from core.redaction.redact import redact_bytes

    stream, planted = _long_stream(3 * BATCH_BYTES + 12345)
    recorder = EvidenceRecorder(
        engine.db,
        engine.keys,
        task_id,
        source="file",
        label=None,
        command={"argv": []},
        limits=EvidenceLimits(chunk_bytes=100_000),
    )
    for start in range(0, len(stream), piece):
        recorder.feed(stream[start : start + piece])
    item = recorder.finish(exit_code=0)
    assert item.state == "complete"
    assert item.bytes_total == len(stream)
    assert item.sha256 == hashlib.sha256(stream).hexdigest()
    assert item.lines_total == stream.count(b"\n")
    assert item.redactions == len(planted)
    output = full_output(engine, item.id)
    assert output == redact_bytes(stream)
    assert item.chunk_count == len(store.list_chunks(engine.db, item.id)) >= 8
    assert_not_in_store(store_root, planted)


def test_a_failing_storage_stage_fails_the_recording_visibly(
    engine: Engine, task_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error in a worker thread reaches the caller, and the item is marked incomplete."""
    from core.evidence.storage import BATCH_BYTES

    def broken(*_args: object, **_kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store, "insert_chunk", broken)
    recorder = EvidenceRecorder(
        engine.db,
        engine.keys,
        task_id,
        source="file",
        label=None,
        command={"argv": []},
        limits=EvidenceLimits(chunk_bytes=10_000),
    )
    stream, _ = _long_stream(4 * BATCH_BYTES)
    with pytest.raises(OSError, match="disk full"):
        for start in range(0, len(stream), 4096):
            recorder.feed(stream[start : start + 4096])
        recorder.finish(exit_code=0)
    item = engine.get_evidence(recorder.id)
    assert item.state == "incomplete"


# --- limits ------------------------------------------------------------------------------


def test_tail_keeps_the_last_lines_within_its_limits(engine: Engine, task_id: str) -> None:
    recorder = EvidenceRecorder(
        engine.db,
        engine.keys,
        task_id,
        source="file",
        label=None,
        command={"argv": []},
        limits=EvidenceLimits(tail_lines=7, tail_bytes=1024),
    )
    for i in range(1000):
        recorder.feed(f"line {i:04d}\n".encode())
    item = recorder.finish(exit_code=0)
    loaded = engine.get_evidence(item.id)
    assert loaded.tail == "\n".join(f"line {i:04d}" for i in range(993, 1000))
    assert loaded.tail_lines == 7 and loaded.lines_total == 1000

    recorder = EvidenceRecorder(
        engine.db,
        engine.keys,
        task_id,
        source="file",
        label=None,
        command={"argv": []},
        limits=EvidenceLimits(tail_lines=200, tail_bytes=1024),
    )
    for i in range(100):
        recorder.feed(b"x" * 100 + f" {i:03d}\n".encode())
    item = recorder.finish(exit_code=0)
    loaded = engine.get_evidence(item.id)
    tail = (loaded.tail or "").encode()
    assert len(tail) <= 1024
    assert tail.endswith(b" 099")
    assert loaded.tail_lines == len(tail.split(b"\n")) < 200


def test_cap_keeps_head_and_tail_visibly(engine: Engine, task_id: str) -> None:
    """Past the cap the middle goes, flagged, with the count and hash of the whole stream."""
    limits = EvidenceLimits(cap_bytes=64 * 1024, chunk_bytes=8 * 1024)
    recorder = EvidenceRecorder(
        engine.db,
        engine.keys,
        task_id,
        source="file",
        label=None,
        command={"argv": []},
        limits=limits,
    )
    sha = hashlib.sha256()
    total = 0
    lines: list[bytes] = []
    for i in range(20_000):
        # Incompressible enough that 20k lines are far over a 64 KiB compressed cap.
        line = f"{i:06d} {hashlib.sha256(str(i).encode()).hexdigest()}\n".encode()
        recorder.feed(line)
        sha.update(line)
        total += len(line)
        lines.append(line)
    item = recorder.finish(exit_code=0)
    assert item.truncated and item.omitted_bytes > 0
    assert item.bytes_total == total and item.sha256 == sha.hexdigest()
    assert item.lines_total == 20_000
    assert item.stored_bytes <= limits.cap_bytes
    stored = engine.db.execute(
        "SELECT sum(length(blob)) FROM evidence_chunks WHERE evidence_id = ?", [item.id]
    ).fetchone()[0]
    assert stored == item.stored_bytes
    assert item.kept_bytes + item.omitted_bytes == total
    full = full_output(engine, item.id)
    assert full.startswith(b"".join(lines[:50]))
    assert full.endswith(b"".join(lines[-50:]))
    assert (
        f"[… {item.omitted_bytes} bytes of output omitted here: over the storage cap …]".encode()
        in full
    )
    assert engine.evidence_last_lines(item.id, 3) == [line.rstrip(b"\n") for line in lines[-3:]]
    assert (engine.get_evidence(item.id).tail or "").endswith(lines[-1].decode().rstrip("\n"))


def test_last_lines_never_splice_head_and_tail_silently(engine: Engine, task_id: str) -> None:
    """Asking for more lines than the kept tail holds must not glue the head onto the tail.

    Invariant 4: what was dropped is shown as dropped. `evidence show --lines N` either stops at
    the gap or marks it, as `--full` does; it never presents head lines as if they preceded the
    tail.
    """
    limits = EvidenceLimits(cap_bytes=64 * 1024, chunk_bytes=8 * 1024)
    recorder = EvidenceRecorder(
        engine.db,
        engine.keys,
        task_id,
        source="file",
        label=None,
        command={"argv": []},
        limits=limits,
    )
    lines = [
        f"{i:06d} {hashlib.sha256(str(i).encode()).hexdigest()}".encode() for i in range(20_000)
    ]
    for line in lines:
        recorder.feed(line + b"\n")
    item = recorder.finish(exit_code=0)
    assert item.truncated
    got = engine.evidence_last_lines(item.id, len(lines))
    marked = any(b"omitted" in line for line in got)
    contiguous = got == lines[len(lines) - len(got) :]
    assert marked or contiguous, (
        f"{len(got)} lines returned; the first is {got[0][:20]!r}, which is not where the kept "
        "tail starts, and no omission marker was shown"
    )


def test_last_lines_reads_across_chunk_boundaries(engine: Engine, task_id: str) -> None:
    recorder = EvidenceRecorder(
        engine.db,
        engine.keys,
        task_id,
        source="file",
        label=None,
        command={"argv": []},
        limits=EvidenceLimits(chunk_bytes=100),
    )
    for i in range(50):
        recorder.feed(f"row {i:02d} {'.' * 30}\n".encode())
    item = recorder.finish(exit_code=0)
    assert len(store.list_chunks(engine.db, item.id)) > 10
    assert engine.evidence_last_lines(item.id, 12) == [
        f"row {i:02d} {'.' * 30}".encode() for i in range(38, 50)
    ]
    assert engine.evidence_last_lines(item.id, 500)[0] == b"row 00 " + b"." * 30


# --- evidence and checkpoints ------------------------------------------------------------


def test_evidence_belongs_to_the_next_checkpoint(
    engine: Engine, task_id: str, devnull: int
) -> None:
    first = run_py(engine, task_id, "print('=== 3 passed in 0.01s ===')", devnull)
    assert [e.id for e in engine.list_evidence(task_id)] == [first]
    assert engine.get_evidence(first).checkpoint_seq is None

    result = engine.checkpoint(task_id)
    assert result.checkpoint is not None and result.checkpoint.seq == 1
    assert [e.id for e in engine.list_evidence(f"{task_id}@1")] == [first]
    item = engine.get_evidence(first)
    assert item.checkpoint_seq == 1
    index = result.checkpoint.manifest["evidence"]
    assert len(index) == 1
    entry = index[0]
    assert entry["id"] == first and entry["sha256"] == item.sha256
    assert entry["bytes"] == item.bytes_total and entry["lines"] == item.lines_total
    assert "pytest" in json.dumps(entry["summary"])
    # The manifest points at the output; it never carries it.
    assert not {"tail", "output", "command"} & set(entry)
    assert "3 passed" not in json.dumps({k: v for k, v in entry.items() if k != "summary"})

    # Nothing changed in the work tree: a plain checkpoint is a no-op…
    skipped = engine.checkpoint(task_id)
    assert skipped.checkpoint is None and skipped.skipped
    # …but new evidence makes the next one worth recording, and it holds only the new item.
    second = run_py(engine, task_id, "print('again')", devnull)
    result = engine.checkpoint(task_id)
    assert result.checkpoint is not None and result.checkpoint.seq == 2, result.skipped
    assert [e["id"] for e in result.checkpoint.manifest["evidence"]] == [second]
    assert [e.id for e in engine.list_evidence(f"{task_id}@2")] == [second]
    assert [e.id for e in engine.list_evidence(f"{task_id}@1")] == [first]
    assert [e.id for e in engine.list_evidence(task_id)] == [first, second]


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_a_file_that_fails_halfway_leaves_an_incomplete_item_not_a_writing_one(
    engine: Engine, task_id: str
) -> None:
    # /proc/self/mem opens, then its first read fails (EIO): a read error after the item exists
    with pytest.raises(PitstopError, match="marked incomplete"):
        engine.add_evidence_file(task_id, "/proc/self/mem")
    (item,) = engine.list_evidence(task_id)
    assert item.state == "incomplete"
    assert "failed" in (item.failure or "")
