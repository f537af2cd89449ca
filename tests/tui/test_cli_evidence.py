"""`pitstop run`, `pitstop evidence …` and `pitstop key …` through the real command line.

Real processes, a real store and a fresh master key per test. Bad keys and damaged blobs give one
line on stderr and a non-zero exit, run nothing and write nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from core.engine import Engine
from tests.gitconfig import EMPTY_GITCONFIG


def fresh_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment every `pitstop` call gets: private store and config, a fresh key."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    base.update(
        {
            "PITSTOP_HOME": str(tmp_path / "store"),
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "PITSTOP_KEY": fresh_key(),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Test",
            "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "Test",
            "GIT_COMMITTER_EMAIL": "test@example.com",
        }
    )
    return base


@pytest.fixture
def store(env: dict[str, str]) -> Path:
    return Path(env["PITSTOP_HOME"])


def pitstop(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        check=False,
    )


def ok(env: dict[str, str], *args: str, cwd: Path | None = None) -> bytes:
    result = pitstop(env, *args, cwd=cwd)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def ok_json(env: dict[str, str], *args: str) -> Any:
    return json.loads(ok(env, *args, "--json"))


def one_line_error(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode != 0, result
    text = result.stderr.decode()
    assert "Traceback" not in text, text
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert lines[0].startswith("pitstop: ")
    return lines[0]


@contextmanager
def engine_as(env: dict[str, str]) -> Iterator[Engine]:
    """An in-process engine seeing exactly what a `pitstop` process with `env` would see.

    Used for setting a scene quickly; what is under test always goes through the real CLI.
    """
    with pytest.MonkeyPatch.context() as patch:
        for name in ("PITSTOP_HOME", "PITSTOP_CONFIG_DIR", "PITSTOP_KEY", "PITSTOP_FROZEN_NOW"):
            if name in env:
                patch.setenv(name, env[name])
            else:
                patch.delenv(name, raising=False)
        with Engine() as engine:
            yield engine


def record(env: dict[str, str], task: str, *command: str, label: str | None = None) -> int:
    """Record evidence of `command` (in-process); return its id."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with engine_as(env) as engine:
            _, item = engine.run_command(
                task, list(command), label=label, out_fd=devnull, err_fd=devnull, use_pty=False
            )
    finally:
        os.close(devnull)
    return item.id


def start_task(env: dict[str, str], repo: Path, task_id: str) -> str:
    with engine_as(env) as engine:
        return engine.start_task(repo=repo, objective="cli evidence", task_id=task_id).id


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)
    return path


@pytest.fixture
def task(repo: Path, env: dict[str, str]) -> str:
    return start_task(env, repo, "t1")


def store_digest(store: Path) -> tuple[str, str]:
    """(bytes of every file but -wal/-shm, a logical dump of the database)."""
    files = hashlib.sha256()
    for path in sorted(store.rglob("*")):
        if path.is_file() and not path.name.endswith(("-wal", "-shm")):
            files.update(str(path.relative_to(store)).encode() + b"\0" + path.read_bytes())
    connection = sqlite3.connect(store / "pitstop.db")
    try:
        dump = "\n".join(connection.iterdump())
    finally:
        connection.close()
    return files.hexdigest(), hashlib.sha256(dump.encode()).hexdigest()


def _last_json(stdout: bytes) -> str:
    """`run --json` prints the command's own output first, then the document."""
    text = stdout.decode()
    return text[text.index("{\n") :]


# --- keys -----------------------------------------------------------------------------------


def test_key_init_print_gives_a_usable_key(env: dict[str, str], repo: Path) -> None:
    lines = ok(env, "key", "init", "--print").decode().splitlines()
    exports = dict(
        line.removeprefix("export ").split("=", 1) for line in lines if line.startswith("export ")
    )
    assert set(exports) == {"PITSTOP_KEY", "PITSTOP_IDENTITY", "PITSTOP_SIGNING_KEY"}
    printed = exports["PITSTOP_KEY"].strip("'")
    assert len(base64.b64decode(printed, validate=True)) == 32
    assert exports["PITSTOP_IDENTITY"].strip("'").startswith("AGE-SECRET-KEY-1")
    assert exports["PITSTOP_SIGNING_KEY"].strip("'").startswith("pitstop-sign-1")
    document = ok_json(env, "key", "init", "--print")
    assert set(document) == {
        "key", "id", "identity", "recipient", "signing_key", "signer", "fingerprint"
    } and document["key"] != printed  # fmt: skip
    assert len(base64.b64decode(document["key"], validate=True)) == 32
    # The printed key works as PITSTOP_KEY (for a task it seals from the start: its objective).
    env["PITSTOP_KEY"] = printed
    task = start_task(env, repo, "t1")
    result = pitstop(env, "run", "--task", task, "--quiet", "--", "echo", "works")
    assert result.returncode == 0 and result.stdout == b"works\n"


def test_key_status_and_export_with_pitstop_key(env: dict[str, str], task: str) -> None:
    record(env, task, "true")
    status = ok_json(env, "key", "status")
    assert status["source"] == "environment variable PITSTOP_KEY"
    assert len(status["id"]) == 12 and status["tasks_under_other_keys"] == []
    exported = ok_json(env, "key", "export")
    assert exported["key"] == env["PITSTOP_KEY"] and exported["id"] == status["id"]
    assert ok(env, "key", "export").decode() == env["PITSTOP_KEY"] + "\n"

    env["PITSTOP_KEY"] = fresh_key()
    human = ok(env, "key", "status").decode()
    assert "from environment variable PITSTOP_KEY" in human and status["id"] not in human
    assert "1 task(s) were encrypted under another key: t1" in human


def test_without_any_key_key_commands_explain_both_ways(env: dict[str, str]) -> None:
    del env["PITSTOP_KEY"]
    for args in (["key", "status"], ["key", "export"], ["key", "init"]):
        line = one_line_error(pitstop(env, *args))
        assert "PITSTOP_KEY" in line and "keyring" in line, line


def test_missing_key_refuses_to_run_and_writes_nothing(
    env: dict[str, str], task: str, repo: Path, store: Path, tmp_path: Path
) -> None:
    record(env, task, "true")  # t1 has a data key; t2 has none yet
    start_task(env, repo, "t2")
    del env["PITSTOP_KEY"]
    before = store_digest(store)
    for target in (task, "t2"):
        marker = tmp_path / f"ran-{target}"
        result = pitstop(env, "run", "--task", target, "--", "touch", str(marker))
        line = one_line_error(result)
        assert "PITSTOP_KEY" in line and "keyring" in line, line
        assert not marker.exists(), "the command ran without a key"
        assert result.stdout == b""
    assert store_digest(store) == before


def test_wrong_key_says_the_key_differs_and_changes_nothing(
    env: dict[str, str], task: str, store: Path, tmp_path: Path
) -> None:
    evidence_id = record(env, task, "echo", "hello")
    env["PITSTOP_KEY"] = fresh_key()
    before = store_digest(store)
    line = one_line_error(pitstop(env, "evidence", "show", str(evidence_id), "--full"))
    assert "master key" in line and "PITSTOP_KEY" in line and "backup" in line, line
    marker = tmp_path / "ran"
    line = one_line_error(pitstop(env, "run", "--task", task, "--", "touch", str(marker)))
    assert "master key" in line, line
    assert not marker.exists()
    # Listing needs no key: the facts are plain columns.
    assert [e["id"] for e in ok_json(env, "evidence", "list", task)] == [evidence_id]
    assert store_digest(store) == before


def _blob_update(store: Path, sql: str, args: list[Any]) -> None:
    connection = sqlite3.connect(store / "pitstop.db")
    try:
        with connection:
            connection.execute(sql, args)
    finally:
        connection.close()


def _blob(store: Path, sql: str, args: list[Any]) -> bytes:
    connection = sqlite3.connect(store / "pitstop.db")
    try:
        return bytes(connection.execute(sql, args).fetchone()[0])
    finally:
        connection.close()


def test_tampered_chunk_is_reported(env: dict[str, str], task: str, store: Path) -> None:
    evidence_id = record(env, task, "sh", "-c", "echo precious; echo output")
    select = "SELECT blob FROM evidence_chunks WHERE evidence_id = ? AND seq = 0"
    blob = bytearray(_blob(store, select, [evidence_id]))
    blob[len(blob) // 2 + 10] ^= 0x01
    _blob_update(
        store,
        "UPDATE evidence_chunks SET blob = ? WHERE evidence_id = ? AND seq = 0",
        [bytes(blob), evidence_id],
    )
    result = pitstop(env, "evidence", "show", str(evidence_id), "--full")
    line = one_line_error(result)
    assert f"evidence {evidence_id} chunk 0 failed authentication" in line, line
    assert b"precious\noutput" not in result.stdout
    line = one_line_error(pitstop(env, "evidence", "show", str(evidence_id), "--lines", "1"))
    assert "failed authentication" in line
    # The tail is a separate blob and still reads.
    assert ok(env, "evidence", "show", str(evidence_id)).endswith(b"\n\nprecious\noutput\n")


def test_blob_moved_to_another_evidence_row_fails(
    env: dict[str, str], task: str, store: Path
) -> None:
    first = record(env, task, "echo", "first")
    second = record(env, task, "echo", "second")
    blob = _blob(store, "SELECT blob FROM evidence_chunks WHERE evidence_id = ?", [first])
    _blob_update(store, "UPDATE evidence_chunks SET blob = ? WHERE evidence_id = ?", [blob, second])
    result = pitstop(env, "evidence", "show", str(second), "--full")
    assert "failed authentication" in one_line_error(result)
    assert b"first" not in result.stdout
    tail = _blob(store, "SELECT tail FROM evidence WHERE id = ?", [first])
    _blob_update(store, "UPDATE evidence SET tail = ? WHERE id = ?", [tail, second])
    assert "failed authentication" in one_line_error(pitstop(env, "evidence", "show", str(second)))


# --- evidence add / list / show shapes -------------------------------------------------------

EVIDENCE_FIELDS = {
    "id",
    "task_id",
    "checkpoint_seq",
    "state",
    "source",
    "label",
    "started_at",
    "duration_ms",
    "exit_code",
    "signal",
    "timed_out",
    "bytes_total",
    "lines_total",
    "sha256",
    "stored_bytes",
    "kept_bytes",
    "truncated",
    "omitted_bytes",
    "chunk_count",
    "summary",
    "tail_lines",
    "redactions",
    "ruleset",
    "cap_bytes",
    "failure",
    "command",
    "tail",
}


def test_evidence_add_list_show_json_shapes(env: dict[str, str], task: str, tmp_path: Path) -> None:
    log = tmp_path / "ci.log"
    content = b"collected 3 items\nF..\n== 1 failed, 2 passed in 2.50s ==\n"
    log.write_bytes(content)
    added = ok_json(
        env,
        "evidence",
        "add",
        "--task",
        task,
        "--file",
        str(log),
        "--command",
        "pytest -x",
        "--exit",
        "1",
        "--duration",
        "2.5",
        "--label",
        "ci",
    )
    assert set(added) == EVIDENCE_FIELDS
    assert added["source"] == "file" and added["state"] == "complete"
    assert added["exit_code"] == 1 and added["duration_ms"] == 2500 and added["label"] == "ci"
    assert added["bytes_total"] == len(content) and added["lines_total"] == 3
    assert added["sha256"] == hashlib.sha256(content).hexdigest()
    assert added["summary"] == {
        "tool": "pytest",
        "counts": {"failed": 1, "passed": 2},
        "text": "pytest: 1 failed, 2 passed",
    }
    assert added["checkpoint_seq"] is None and added["truncated"] is False

    listed = ok_json(env, "evidence", "list", task)
    assert isinstance(listed, list) and len(listed) == 1
    assert set(listed[0]) == EVIDENCE_FIELDS
    assert listed[0]["id"] == added["id"] and listed[0]["sha256"] == added["sha256"]
    assert listed[0]["command"] is None and listed[0]["tail"] is None  # listing decrypts nothing

    both = ok_json(env, "evidence", "show", str(added["id"]), "--lines", "2", "--full")
    assert set(both) == {"evidence", "lines", "output"}
    item = both["evidence"]
    assert set(item) == EVIDENCE_FIELDS
    assert item["command"] == {"argv": ["pytest -x"], "cwd": None, "file": str(log)}
    assert item["tail"] == content.decode().rstrip("\n")
    assert both["lines"] == ["F..", "== 1 failed, 2 passed in 2.50s =="]
    assert both["output"] == content.decode()
    shown = ok_json(env, "evidence", "show", str(added["id"]))
    assert set(shown) == {"evidence"} and shown["evidence"] == item

    human = ok(env, "evidence", "list", task).decode()
    assert "ci" in human and "exit 1" in human and "pytest: 1 failed, 2 passed" in human
    shown_text = ok(env, "evidence", "show", str(added["id"])).decode()
    for fact in ("from file", "exit 1", "2.50 s", added["sha256"], "cap 32.0 MiB", "rules"):
        assert fact in shown_text, fact


def test_run_json_and_the_evidence_line(env: dict[str, str], task: str) -> None:
    result = pitstop(
        env,
        "run",
        "--task",
        task,
        "--json",
        "--label",
        "greet",
        "--",
        "sh",
        "-c",
        "echo hello; exit 3",
    )
    assert result.returncode == 3
    assert result.stdout.startswith(b"hello\n")
    document = json.loads(_last_json(result.stdout))
    assert document["exit_code"] == 3
    assert set(document["evidence"]) == EVIDENCE_FIELDS
    assert document["evidence"]["label"] == "greet" and document["evidence"]["exit_code"] == 3

    result = pitstop(env, "run", "--task", task, "--", "echo", "hi")
    assert result.returncode == 0 and result.stdout == b"hi\n"
    line = result.stderr.decode().strip()
    assert line.startswith("pitstop: evidence ") and "exit 0" in line
    assert line.endswith(", 1 line")  # one line, counted in the singular


BAD_INPUT = [
    ["evidence", "show", "999"],
    ["evidence", "list", "t1@7"],
    ["evidence", "list", "nosuch"],
    ["evidence", "add", "--task", "t1", "--file", "{tmp}/missing.log"],
    ["evidence", "add", "--task", "t1", "--file", "{tmp}/neg.log", "--duration", "-1"],
    ["evidence", "show", "1", "--lines", "0"],
    ["run", "--task", "nosuch", "--", "true"],
    ["run", "--task", "t1", "--timeout", "0", "--", "true"],
    ["run", "--task", "t1"],
]


def test_bad_evidence_input_is_one_line_and_changes_nothing(
    env: dict[str, str], task: str, store: Path, tmp_path: Path
) -> None:
    record(env, task, "true")
    (tmp_path / "neg.log").write_text("x\n")
    before = store_digest(store)
    for args in BAD_INPUT:
        one_line_error(pitstop(env, *(a.format(tmp=tmp_path) for a in args)))
        assert store_digest(store) == before, args


def test_a_command_that_cannot_start_leaves_no_evidence(
    env: dict[str, str], task: str, store: Path, tmp_path: Path
) -> None:
    """Invariant 7: `pitstop run -- /no/such/command` is bad input; it must change nothing."""
    record(env, task, "true")
    before = store_digest(store)
    line = one_line_error(pitstop(env, "run", "--task", task, "--", str(tmp_path / "nope")))
    assert "command not found" in line
    assert len(ok_json(env, "evidence", "list", task)) == 1
    assert store_digest(store) == before


# --- evidence and checkpoints ----------------------------------------------------------------


def test_checkpoint_indexes_its_evidence(env: dict[str, str], task: str) -> None:
    evidence_id = record(env, task, "echo", "=== 5 passed in 0.10s ===", label="unit")
    assert "next" in ok(env, "evidence", "list", task).decode()
    checkpoint = ok_json(env, "checkpoint", task)
    assert checkpoint["skipped"] is False and checkpoint["checkpoint"]["seq"] == 1
    listed = ok_json(env, "evidence", "list", f"{task}@1")
    assert [e["id"] for e in listed] == [evidence_id] and listed[0]["checkpoint_seq"] == 1
    manifest = ok_json(env, "show", f"{task}@1")["checkpoint"]["manifest"]
    (entry,) = manifest["evidence"]
    assert entry["id"] == evidence_id and entry["sha256"] == listed[0]["sha256"]
    assert entry["label"] == "unit"
    assert "5 passed" in json.dumps(entry["summary"])
    assert entry["show"] == f"pitstop evidence show {evidence_id}"
    assert not {"tail", "output", "command"} & set(entry)

    # Nothing changed and nothing new: skipped. New evidence only: recorded.
    assert ok_json(env, "checkpoint", task)["skipped"] is True
    second = record(env, task, "echo", "more")
    again = ok_json(env, "checkpoint", task)
    assert again["skipped"] is False and again["checkpoint"]["seq"] == 2
    assert "@2" in ok(env, "evidence", "list", f"{task}@2").decode()
    assert [e["id"] for e in again["checkpoint"]["manifest"]["evidence"]] == [second]
