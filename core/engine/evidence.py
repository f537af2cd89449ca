"""Evidence: what a task's commands showed, recorded redacted and sealed, and read back.

Three ways in — a command Pitstop runs itself, a log file a harness kept, output a hook already
holds in memory — all feed the same streaming recorder, so every item is redacted, chunked and
audited alike whichever harness produced it. The readers stream output chunk by chunk: a build
log can be larger than anything worth holding in memory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import nullcontext, suppress
from pathlib import Path

from core import clock, numbers, store
from core.engine.checkpoints import parse_checkpoint_ref
from core.errors import (
    CommandStartError,
    ConflictError,
    DiskFullError,
    PitstopError,
    UsageError,
)
from core.models import Task
from core.session import Session
from core.store.db import batch_txn, write_txn

TYPE_CHECKING = False  # `typing` is for type checkers only (issue 22: start-up)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:  # evidence pulls in redaction, zstd and crypto: loaded only when used
    from core.evidence import storage as evidence
    from core.evidence.capture import RunOutcome


def run_command(
    session: Session,
    task_id: str,
    argv: Sequence[str],
    *,
    label: str | None = None,
    timeout: float | None = None,
    cwd: str | os.PathLike[str] | None = None,
    out_fd: int = 1,
    err_fd: int = 2,
    use_pty: bool | None = None,
    limits: evidence.EvidenceLimits | None = None,
    source: str = "run",
) -> tuple[RunOutcome, evidence.Evidence]:
    """Run a command with live output and record what it showed as evidence on the task.

    `source` is `drill` for a drill's replay: kept as evidence of the drill, never part of the
    task's own record (no checkpoint takes it, the cost model does not count it)."""
    from core.evidence import storage as evidence
    from core.evidence.capture import check_startable, run_captured

    _require_open_task(session, task_id)
    if timeout is not None:
        numbers.seconds(timeout, "--timeout", positive=True)
    workdir = Path(cwd).expanduser().absolute() if cwd else Path.cwd()
    check_startable(argv, workdir)
    recorder = evidence.EvidenceRecorder(
        session.db,
        session.keys,
        task_id,
        source=source,
        label=label,
        command=evidence.command_record(argv, str(workdir)),
        limits=evidence.checked_limits(limits or evidence.EvidenceLimits()),
    )
    try:
        outcome = run_captured(
            argv,
            sink=recorder.feed,
            cwd=workdir,
            timeout=timeout,
            out_fd=out_fd,
            err_fd=err_fd,
            use_pty=use_pty,
        )
        item = recorder.finish(
            exit_code=None if outcome.signal else outcome.returncode,
            signal=outcome.signal,
            timed_out=outcome.timed_out,
            duration_ms=outcome.duration_ms,
        )
    except CommandStartError:
        recorder.discard()  # nothing ran, so nothing is recorded (invariant 7)
        raise
    except DiskFullError as exc:
        raise _kept_on_full_disk(session, recorder) from exc
    except BaseException as exc:
        recorder.abort(getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")
        raise
    _record_evidence_event(session, item)
    return outcome, item


def _kept_on_full_disk(session: Session, recorder: Any) -> DiskFullError:
    """What a run that filled the disk kept: the output chunks stored before it, marked
    incomplete when there is still room to say so (the chunks stay readable either way)."""
    from core.store.db import disk_full

    # without even room for that, the item stays as it was: its stored chunks readable
    with suppress(DiskFullError):
        recorder.abort("the disk holding the store was full; the output stored before is kept")
    chunks = store.list_chunks(session.db, recorder.id)
    kept = sum(int(chunk["raw_len"]) for chunk in chunks)
    return disk_full(
        f"evidence #{recorder.id} keeps the first {kept} bytes of the command's output "
        f"({len(chunks)} chunk(s)), the rest was lost"
    )


def add_evidence_file(
    session: Session,
    task_id: str,
    path: str | os.PathLike[str],
    *,
    command: str | None = None,
    exit_code: int | None = None,
    duration_s: float | None = None,
    label: str | None = None,
    limits: evidence.EvidenceLimits | None = None,
) -> evidence.Evidence:
    """Record output a harness captured itself (a log file) as evidence."""
    from core.evidence import storage as evidence

    _require_open_task(session, task_id)
    _check_outcome(exit_code, duration_s)
    source = Path(path).expanduser()
    try:
        handle = source.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror}") from exc
    with handle:
        recorder = evidence.EvidenceRecorder(
            session.db,
            session.keys,
            task_id,
            source="file",
            label=label,
            command=evidence.command_record(
                [command] if command else [], None, file=str(source.absolute())
            ),
            limits=evidence.checked_limits(limits or evidence.EvidenceLimits()),
        )
        try:
            while block := handle.read(evidence.DEFAULT_CHUNK_BYTES):
                recorder.feed(block)
        except OSError as exc:  # the file went away or a disk failed halfway through
            recorder.abort(f"reading {source} failed: {exc.strerror or exc}")
            raise PitstopError(
                f"cannot read {source} to the end ({exc.strerror or exc}); the evidence item "
                f"{recorder.id} is marked incomplete"
            ) from exc
        except BaseException:
            recorder.abort("recording was interrupted")
            raise
    item = recorder.finish(
        exit_code=exit_code,
        duration_ms=int(duration_s * 1000) if duration_s is not None else None,
    )
    _record_evidence_event(session, item)
    return item


def add_evidence_output(
    session: Session,
    task_id: str,
    output: bytes,
    *,
    argv: Sequence[str],
    cwd: str | None = None,
    exit_code: int | None = None,
    duration_s: float | None = None,
    label: str | None = None,
    source: str = "hook",
    timed_out: bool = False,
    limits: evidence.EvidenceLimits | None = None,
    agent: Mapping[str, str] | None = None,
) -> evidence.Evidence:
    """Record output a harness already captured in memory (a hook's tool response).

    `agent` names the subagent that ran the command (`id`, `type`), sealed with the command.
    """
    from core.evidence import storage as evidence

    # Output shorter than one batch is recorded on this thread alone, so its four writes
    # (the item, its chunk, its completion, the audit event) can commit as one: one fsync.
    batch = batch_txn(session.db) if len(output) < evidence.BATCH_BYTES else nullcontext()
    with batch:
        _require_open_task(session, task_id)
        _check_outcome(exit_code, duration_s)
        recorder = evidence.EvidenceRecorder(
            session.db,
            session.keys,
            task_id,
            source=source,
            label=label,
            command=evidence.command_record(list(argv), cwd, agent=agent),
            limits=evidence.checked_limits(limits or evidence.EvidenceLimits()),
        )
        for start in range(0, len(output), evidence.DEFAULT_CHUNK_BYTES):
            recorder.feed(output[start : start + evidence.DEFAULT_CHUNK_BYTES])
        item = recorder.finish(
            exit_code=exit_code,
            timed_out=timed_out,
            duration_ms=int(duration_s * 1000) if duration_s is not None else None,
        )
        _record_evidence_event(session, item)
    return item


def _require_open_task(session: Session, task_id: str) -> Task:
    task = store.get_task(session.db, task_id)
    if task.status.is_final:
        raise ConflictError(f"task {task_id} is {task.status.value}; it takes no evidence")
    return task


def _check_outcome(exit_code: int | None, duration_s: float | None) -> None:
    """Refuse an exit code or duration that could not be stored, before anything is written."""
    if exit_code is not None:
        numbers.storable_integer(exit_code, "--exit")
    if duration_s is not None:
        numbers.seconds(duration_s, "--duration")


def _record_evidence_event(session: Session, item: evidence.Evidence) -> None:
    with write_txn(session.db):
        session.record_event(
            item.task_id,
            "evidence",
            str(item.id),
            "record",
            None,
            item.outcome,
            item.label,
            clock.now_iso(),
        )


def list_evidence(session: Session, spec: str) -> list[evidence.Evidence]:
    """Evidence of a task (`TASK`) or of one of its checkpoints (`TASK@SEQ`), oldest first; its
    labels opened (the marker when the key is not available)."""
    from core.evidence import storage as evidence

    task_id, seq = parse_checkpoint_ref(spec)
    store.get_task(session.db, task_id)
    if seq is not None:
        store.get_checkpoint(session.db, task_id, seq)
    rows = store.list_evidence(session.db, task_id, checkpoint_seq=seq, keys=session.keys)
    return [evidence.evidence_from_row(row) for row in rows]


def get_evidence(session: Session, evidence_id: int, *, decrypt: bool = True) -> evidence.Evidence:
    """One evidence item, with its command and tail decrypted."""
    from core.evidence import storage as evidence

    numbers.storable_integer(evidence_id, "the evidence id")

    return evidence.load_evidence(session.db, session.keys, evidence_id, decrypt=decrypt)


def evidence_output(session: Session, evidence_id: int) -> Iterator[bytes]:
    """The full kept (redacted) output of an evidence item, streamed chunk by chunk."""
    from core.evidence import storage as evidence

    item = get_evidence(session, evidence_id, decrypt=False)
    return evidence.iter_output(session.db, session.keys, item)


def evidence_last_lines(session: Session, evidence_id: int, count: int) -> list[bytes]:
    """The last `count` lines of an evidence item's output, read from its end."""
    from core.evidence import storage as evidence

    item = get_evidence(session, evidence_id, decrypt=False)
    return evidence.last_lines(session.db, session.keys, item, count)


def evidence_chunk_index(session: Session, evidence_id: int) -> list[dict[str, Any]]:
    """Where each stored chunk of an item's output sits: seq, offset, raw_len, lines."""
    item = get_evidence(session, evidence_id, decrypt=False)
    chunks = store.list_chunks(session.db, evidence_id)
    if not chunks and item.stored_bytes:
        session.keys.data_key(item.task_id, create=False)  # gc took the output with the key
    return [
        {
            "seq": c["seq"],
            "offset": c["offset"],
            "raw_len": c["raw_len"],
            "first_line": c["first_line"],
            "line_count": c["line_count"],
        }
        for c in chunks
    ]


def evidence_chunk(session: Session, evidence_id: int, seq: int) -> bytes:
    """One chunk of an item's kept (redacted) output, decrypted and decompressed."""
    from core.evidence import storage as evidence

    item = get_evidence(session, evidence_id, decrypt=False)
    numbers.storable_integer(seq, "the chunk number")
    return next(evidence.read_chunks(session.db, session.keys, item, [seq]))
