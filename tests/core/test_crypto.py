"""Encryption at rest: envelopes, master keys, per-task data keys, tampering and moved blobs.

Blobs are checked against the real store: a byte flipped in a stored chunk, a chunk or tail moved
to another row, or a different master key must each fail loudly, never show other content.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import keyring.backend
import pytest

from core.engine import Engine
from core.security import crypto
from core.security.crypto import DecryptError, MasterKeyError


def fresh_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


@pytest.fixture
def master_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = fresh_key()
    monkeypatch.setenv("PITSTOP_KEY", key)
    return key


@pytest.fixture
def task_id(engine: Engine, make_repo: Callable[..., Path], master_key: str) -> str:
    return engine.start_task(repo=make_repo("work"), objective="crypto", task_id="ck").id


@pytest.fixture
def devnull() -> Iterator[int]:
    fd = os.open(os.devnull, os.O_WRONLY)
    yield fd
    os.close(fd)


def record(engine: Engine, task: str, text: str, devnull: int) -> int:
    code = f"import sys; sys.stdout.write({text!r})"
    outcome, item = engine.run_command(
        task, [sys.executable, "-c", code], out_fd=devnull, err_fd=devnull, use_pty=False
    )
    assert outcome.exit_code == 0
    return item.id


def reopen() -> Engine:
    """A new engine on the same store, as a new `pitstop` process would open it."""
    return Engine()


# --- envelopes ------------------------------------------------------------------------------


def test_the_cipher_is_cryptographys_public_aesgcm() -> None:
    """core.security.crypto takes AESGCM from cryptography's binding (a faster import): the same
    class the public module exports, or that module's own when the binding is laid out otherwise."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    assert type(crypto.aesgcm(crypto.generate_key())) is AESGCM


def test_cryptography_loads_only_when_something_is_sealed_or_opened() -> None:
    """Importing the module (every command does) loads no cryptography; sealing loads the
    cipher but not `cryptography.exceptions` (it loads `typing`), a failed open does (issue 22)."""
    probe = """
import sys
from core.security import crypto
before = sorted(m for m in sys.modules if m.startswith(("cryptography", "typing")))
key = crypto.generate_key()
sealed = crypto.seal(key, b"text", b"aad")
assert crypto.open_envelope(key, sealed, b"aad", "it") == b"text"
after_use = "cryptography.exceptions" in sys.modules, "typing" in sys.modules
try:
    crypto.open_envelope(key, sealed, b"other", "it")
except crypto.DecryptError:
    pass
print(before, after_use, "cryptography.exceptions" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]", "(False,", "False)", "True"], done.stdout


def test_envelope_round_trip_and_format() -> None:
    key = crypto.generate_key()
    aad = crypto.associated_data("store", "task", "evidence/1/chunk/0")
    sealed = crypto.seal(key, b"hello", aad)
    assert sealed[:3] == b"PSE" and sealed[3] == crypto.ENVELOPE_VERSION
    assert crypto.envelope_key_id(sealed) == crypto.key_id(key)
    assert b"hello" not in sealed
    assert crypto.open_envelope(key, sealed, aad, "x") == b"hello"
    # A fresh nonce each time: the same plaintext never gives the same envelope.
    assert crypto.seal(key, b"hello", aad) != sealed


def test_envelope_is_bound_to_store_task_and_item() -> None:
    key = crypto.generate_key()
    sealed = crypto.seal(key, b"data", crypto.associated_data("s1", "t1", "evidence/1/tail"))
    for other in (
        crypto.associated_data("s2", "t1", "evidence/1/tail"),
        crypto.associated_data("s1", "t2", "evidence/1/tail"),
        crypto.associated_data("s1", "t1", "evidence/2/tail"),
        crypto.associated_data("s1", "t1", "evidence/1/command"),
    ):
        with pytest.raises(DecryptError, match="failed authentication"):
            crypto.open_envelope(key, sealed, other, "the tail")


def test_every_altered_byte_is_detected() -> None:
    key = crypto.generate_key()
    aad = crypto.associated_data("s", "t", "i")
    sealed = crypto.seal(key, b"some evidence output\n" * 4, aad)
    for index in range(len(sealed)):
        altered = bytearray(sealed)
        altered[index] ^= 0x01
        with pytest.raises(DecryptError):
            crypto.open_envelope(key, bytes(altered), aad, "blob")
    with pytest.raises(DecryptError, match="truncated"):
        crypto.open_envelope(key, sealed[:3], aad, "blob")
    with pytest.raises(DecryptError):
        crypto.open_envelope(key, sealed[:-1], aad, "blob")


def test_wrong_key_and_unknown_version_are_clear() -> None:
    key, other = crypto.generate_key(), crypto.generate_key()
    aad = crypto.associated_data("s", "t", "i")
    sealed = crypto.seal(key, b"x", aad)
    with pytest.raises(
        DecryptError, match=r"sealed with key .* not one of its task's keys: .* swapped"
    ):
        crypto.open_envelope(other, sealed, aad, "blob")
    newer = sealed[:3] + bytes([crypto.ENVELOPE_VERSION + 1]) + sealed[4:]
    with pytest.raises(DecryptError, match=r"envelope version 2.*upgrade"):
        crypto.open_envelope(key, newer, aad, "blob")


# --- the master key -------------------------------------------------------------------------


def test_master_key_from_environment(master_key: str) -> None:
    loaded = crypto.load_master_key()
    assert loaded.key == base64.b64decode(master_key)
    assert "PITSTOP_KEY" in loaded.source
    assert loaded.id == crypto.key_id(loaded.key) and len(loaded.id) == 12


@pytest.mark.parametrize(
    ("value", "complaint"),
    [("not base64!!", "not valid base64"), (base64.b64encode(b"short").decode(), "5 bytes")],
)
def test_malformed_environment_key_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str, complaint: str
) -> None:
    monkeypatch.setenv("PITSTOP_KEY", value)
    with pytest.raises(MasterKeyError, match=complaint) as error:
        crypto.load_master_key()
    assert "PITSTOP_KEY" in error.value.message and "\n" not in error.value.message


def _fake_backend(module: str, name: str) -> Any:
    cls = type(name, (), {"get_password": lambda *a: "x", "set_password": lambda *a: None})
    cls.__module__ = module
    return cls()


@pytest.mark.parametrize(
    "backend",
    [
        _fake_backend("keyring.backends.null", "Keyring"),
        _fake_backend("keyring.backends.fail", "Keyring"),
        _fake_backend("keyrings.alt.file", "PlaintextKeyring"),
    ],
    ids=["null", "fail", "keyrings.alt"],
)
def test_unsafe_keyrings_are_refused_naming_both_ways(
    monkeypatch: pytest.MonkeyPatch, backend: Any
) -> None:
    monkeypatch.setattr(crypto, "_keyring_backend", lambda: backend)
    with pytest.raises(MasterKeyError) as error:
        crypto.load_master_key()
    message = error.value.message
    assert "PITSTOP_KEY" in message and "keyring" in message and "\n" not in message
    with pytest.raises(MasterKeyError):
        crypto.store_master_key_in_keyring(crypto.generate_key())


@pytest.fixture(autouse=True)
def _no_master_key_unless_a_test_sets_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """conftest gives every test a PITSTOP_KEY; these tests are about where a key comes from."""
    monkeypatch.delenv("PITSTOP_KEY", raising=False)


def test_the_real_null_keyring_is_refused() -> None:
    # conftest sets the null keyring backend; the fixture above clears PITSTOP_KEY.
    with pytest.raises(MasterKeyError, match=r"keyring\.backends\.null.*PITSTOP_KEY"):
        crypto.load_master_key()


def test_a_chainer_of_unsafe_backends_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    chainer = _fake_backend("keyring.backends.chainer", "ChainerBackend")
    chainer.backends = [
        _fake_backend("keyring.backends.fail", "Keyring"),
        _fake_backend("keyrings.alt.file", "EncryptedKeyring"),
    ]
    monkeypatch.setattr(crypto, "_keyring_backend", lambda: chainer)
    with pytest.raises(MasterKeyError):
        crypto.load_master_key()


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A stand-in for a real OS keyring (Secret Service, Keychain): keeps secrets in memory."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.saved: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.saved.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.saved[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.saved.pop((service, username), None)


def test_a_safe_keyring_stores_and_serves_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = MemoryKeyring()
    monkeypatch.setattr(crypto, "_keyring_backend", lambda: backend)
    with pytest.raises(MasterKeyError, match="no master key yet"):
        crypto.load_master_key()
    key = crypto.generate_key()
    assert crypto.store_master_key_in_keyring(key).endswith("MemoryKeyring")
    loaded = crypto.load_master_key()
    assert loaded.key == key and "keyring" in loaded.source
    with pytest.raises(Exception, match="already holds"):
        crypto.store_master_key_in_keyring(crypto.generate_key())
    # PITSTOP_KEY wins over the keyring.
    monkeypatch.setenv("PITSTOP_KEY", fresh_key())
    assert crypto.load_master_key().key != key


# --- keys and blobs in the store -------------------------------------------------------------


def test_no_key_material_in_clear_in_the_store(
    engine: Engine, task_id: str, master_key: str, store_root: Path, devnull: int
) -> None:
    record(engine, task_id, "hello\n", devnull)
    data_key = engine.keys.data_key(task_id, create=False)
    master = base64.b64decode(master_key)
    for path in store_root.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            for secret in (master, master_key.encode(), data_key, base64.b64encode(data_key)):
                assert secret not in raw, path


def test_each_task_has_its_own_data_key(
    engine: Engine, task_id: str, make_repo: Callable[..., Path]
) -> None:
    other = engine.start_task(repo=make_repo("other"), objective="other", task_id="ck2").id
    assert engine.keys.data_key(task_id, create=True) != engine.keys.data_key(other, create=True)


def test_wrong_master_key_gives_a_clear_error_and_runs_nothing(
    engine: Engine,
    task_id: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    devnull: int,
) -> None:
    evidence_id = record(engine, task_id, "hello\n", devnull)
    engine.close()
    monkeypatch.setenv("PITSTOP_KEY", fresh_key())
    with reopen() as other:
        with pytest.raises(MasterKeyError) as error:
            other.get_evidence(evidence_id)
        message = error.value.message
        assert "master key" in message and "PITSTOP_KEY" in message and "\n" not in message
        with pytest.raises(MasterKeyError):
            list(other.evidence_output(evidence_id))
        # The plain facts stay listable without the key.
        assert [e.id for e in other.list_evidence(task_id)] == [evidence_id]
        marker = tmp_path / "ran"
        with pytest.raises(MasterKeyError):
            other.run_command(
                task_id, ["touch", str(marker)], out_fd=devnull, err_fd=devnull, use_pty=False
            )
        assert not marker.exists()
        assert [e.id for e in other.list_evidence(task_id)] == [evidence_id]


def _flip_last_byte(engine: Engine, table: str, column: str, where: str, args: list[Any]) -> None:
    row = engine.db.execute(f"SELECT {column} FROM {table} WHERE {where}", args).fetchone()
    blob = bytearray(row[0])
    blob[-5] ^= 0x40
    with engine.db.conn:
        engine.db.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", [bytes(blob), *args])


def test_tampered_chunk_fails_authentication(engine: Engine, task_id: str, devnull: int) -> None:
    evidence_id = record(engine, task_id, "line one\nline two\n", devnull)
    assert b"".join(engine.evidence_output(evidence_id)) == b"line one\nline two\n"
    _flip_last_byte(engine, "evidence_chunks", "blob", "evidence_id = ? AND seq = 0", [evidence_id])
    with pytest.raises(DecryptError, match=f"evidence {evidence_id} chunk 0 failed authentication"):
        list(engine.evidence_output(evidence_id))
    with pytest.raises(DecryptError):
        engine.evidence_last_lines(evidence_id, 1)


def test_tampered_tail_and_command_fail_authentication(
    engine: Engine, task_id: str, devnull: int
) -> None:
    evidence_id = record(engine, task_id, "hello\n", devnull)
    _flip_last_byte(engine, "evidence", "tail", "id = ?", [evidence_id])
    with pytest.raises(DecryptError, match="tail failed authentication"):
        engine.get_evidence(evidence_id)
    evidence_id = record(engine, task_id, "hello\n", devnull)
    _flip_last_byte(engine, "evidence", "command", "id = ?", [evidence_id])
    with pytest.raises(DecryptError, match="command failed authentication"):
        engine.get_evidence(evidence_id)


def test_blob_moved_to_another_row_fails_to_decrypt(
    engine: Engine, task_id: str, make_repo: Callable[..., Path], devnull: int
) -> None:
    first = record(engine, task_id, "first output\n", devnull)
    second = record(engine, task_id, "second output\n", devnull)
    db = engine.db

    def blob(evidence_id: int) -> bytes:
        return bytes(
            db.execute(
                "SELECT blob FROM evidence_chunks WHERE evidence_id = ? AND seq = 0", [evidence_id]
            ).fetchone()[0]
        )

    with db.conn:
        db.execute(
            "UPDATE evidence_chunks SET blob = ? WHERE evidence_id = ? AND seq = 0",
            [blob(first), second],
        )
    with pytest.raises(DecryptError, match="failed authentication"):
        list(engine.evidence_output(second))
    assert b"".join(engine.evidence_output(first)) == b"first output\n"

    # A tail moved between rows fails too.
    tail = db.execute("SELECT tail FROM evidence WHERE id = ?", [first]).fetchone()[0]
    third = record(engine, task_id, "third\n", devnull)
    with db.conn:
        db.execute("UPDATE evidence SET tail = ? WHERE id = ?", [tail, third])
    with pytest.raises(DecryptError, match="failed authentication"):
        engine.get_evidence(third)

    # A chunk moved to another task's evidence (another data key) fails as well.
    other = engine.start_task(repo=make_repo("other"), objective="other", task_id="ck3").id
    fourth = record(engine, other, "other task\n", devnull)
    with db.conn:
        db.execute(
            "UPDATE evidence_chunks SET blob = ? WHERE evidence_id = ? AND seq = 0",
            [blob(first), fourth],
        )
    with pytest.raises(DecryptError):
        list(engine.evidence_output(fourth))


def test_chunks_swapped_within_one_item_fail(engine: Engine, task_id: str) -> None:
    from core.evidence.storage import EvidenceLimits, EvidenceRecorder

    recorder = EvidenceRecorder(
        engine.db,
        engine.keys,
        task_id,
        source="file",
        label=None,
        command={"argv": []},
        limits=EvidenceLimits(chunk_bytes=16),
    )
    recorder.feed(b"0123456789abcdef" * 2)
    item = recorder.finish(exit_code=0)
    db = engine.db
    blobs = [
        bytes(r[0])
        for r in db.execute(
            "SELECT blob FROM evidence_chunks WHERE evidence_id = ? ORDER BY seq", [item.id]
        ).fetchall()
    ]
    assert len(blobs) == 2
    with db.conn:
        for seq, data in enumerate(reversed(blobs)):
            db.execute(
                "UPDATE evidence_chunks SET blob = ? WHERE evidence_id = ? AND seq = ?",
                [data, item.id, seq],
            )
    with pytest.raises(DecryptError):
        list(engine.evidence_output(item.id))
