"""Operator identities and task recipients: real age and ssh keys, a real store, no stand-ins.

The session's identity comes from PITSTOP_IDENTITY (tests/conftest.py); tests about having none
remove it. ssh keys are made with the real `ssh-keygen`; the one stand-in is an in-memory OS
keyring, which replaces software outside this machine's test run (Secret Service, Keychain).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import keyring.backend
import pyrage
import pytest

from core.engine import Engine
from core.errors import NotFoundError, UsageError
from core.security import crypto, identity
from core.security.crypto import DecryptError, MasterKeyError
from core.security.identity import IdentityError
from core.store.db import open_database
from core.store.migrations import migrate, migrations

needs_ssh_keygen = pytest.mark.skipif(
    shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed"
)


def ssh_keygen(directory: Path, name: str, *args: str) -> Path:
    """A real OpenSSH key pair in `directory` (private key path returned; `.pub` beside it)."""
    path = directory / name
    subprocess.run(
        ["ssh-keygen", "-q", "-N", "", "-C", f"{name}@test", "-f", str(path), *args],
        check=True,
        capture_output=True,
    )
    return path


@pytest.fixture
def ed25519_key(tmp_path: Path) -> Path:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    return ssh_keygen(tmp_path, "id_ed25519", "-t", "ed25519")


def pub_line(private_key: Path) -> str:
    return Path(f"{private_key}.pub").read_text().strip()


def one_line(message: str) -> str:
    assert "\n" not in message, message
    return message


# --- identities ------------------------------------------------------------------------------


def test_identity_from_an_age_secret_in_the_environment() -> None:
    loaded = identity.load_identity()
    assert loaded.kind == "age" and loaded.recipient.startswith("age1")
    assert loaded.source == "environment variable PITSTOP_IDENTITY"
    assert identity.load_identity_or_none() == loaded
    # The private half never shows in a repr (logs, tracebacks, the debugger).
    assert "AGE-SECRET-KEY" not in repr(loaded) and loaded.secret_text not in repr(loaded)


def test_identity_from_an_ssh_ed25519_key_file(
    ed25519_key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PITSTOP_IDENTITY", str(ed25519_key))
    loaded = identity.load_identity()
    assert loaded.kind == "ssh" and str(ed25519_key) in loaded.source
    # Its recipient is the key's own public half, without the comment.
    key_type, body, _comment = pub_line(ed25519_key).split()
    assert loaded.recipient == f"{key_type} {body}"
    assert "PRIVATE KEY" not in repr(loaded)


def test_identity_from_an_age_identity_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = identity.create_identity()
    key_file = tmp_path / "key.txt"
    key_file.write_text(f"# created: today\n# public key: {made.recipient}\n{made.secret_text}\n")
    monkeypatch.setenv("PITSTOP_IDENTITY", str(key_file))
    assert identity.load_identity().recipient == made.recipient


@needs_ssh_keygen
@pytest.mark.parametrize(
    ("keygen_args", "expected"),
    [
        (("-t", "rsa", "-b", "2048"), "ssh-rsa key; Pitstop accepts ssh-ed25519 keys only"),
        (("-t", "ed25519", "-N", "secret phrase"), "protected by a passphrase"),
    ],
    ids=["rsa", "passphrase"],
)
def test_unusable_ssh_keys_are_refused_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    keygen_args: tuple[str, ...],
    expected: str,
) -> None:
    path = tmp_path / "key"
    subprocess.run(
        ["ssh-keygen", "-q", "-N", "", "-f", str(path), *keygen_args],
        check=True,
        capture_output=True,
    )
    monkeypatch.setenv("PITSTOP_IDENTITY", str(path))
    with pytest.raises(IdentityError) as raised:
        identity.load_identity()
    assert expected in one_line(raised.value.message)
    assert raised.value.exit_code == MasterKeyError.exit_code


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("AGE-SECRET-KEY-1NOTREALLY", "PITSTOP_IDENTITY is not a valid age identity"),
        ("/nonexistent/identity", "neither an AGE-SECRET-KEY-1… string nor a readable key file"),
    ],
    ids=["bad-secret", "missing-file"],
)
def test_a_malformed_identity_is_an_error_even_for_callers_that_degrade(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: str
) -> None:
    monkeypatch.setenv("PITSTOP_IDENTITY", value)
    for load in (identity.load_identity, identity.load_identity_or_none):
        with pytest.raises(IdentityError) as raised:
            load()
        assert expected in one_line(raised.value.message)


def test_a_file_that_holds_no_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_key = tmp_path / "notes.txt"
    not_a_key.write_text("hello\n")
    monkeypatch.setenv("PITSTOP_IDENTITY", str(not_a_key))
    with pytest.raises(IdentityError, match="neither an age identity nor an OpenSSH"):
        identity.load_identity()


def test_without_an_identity_the_error_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PITSTOP_IDENTITY")
    # conftest selects the null keyring: refused like for the master key, naming both ways.
    with pytest.raises(IdentityError) as raised:
        identity.load_identity()
    message = one_line(raised.value.message)
    assert "keyring.backends.null" in message
    assert "PITSTOP_IDENTITY" in message and "pitstop key init" in message
    assert identity.load_identity_or_none() is None


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


@pytest.fixture
def memory_keyring(monkeypatch: pytest.MonkeyPatch) -> MemoryKeyring:
    backend = MemoryKeyring()
    monkeypatch.setattr(crypto, "_keyring_backend", lambda: backend)
    monkeypatch.delenv("PITSTOP_IDENTITY")
    monkeypatch.delenv("PITSTOP_KEY")
    return backend


def test_a_real_keyring_keeps_the_identity_and_never_overwrites_it(
    memory_keyring: MemoryKeyring,
) -> None:
    with pytest.raises(IdentityError, match="no operator identity yet"):
        identity.load_identity()
    assert identity.load_identity_or_none() is None

    setup = identity.init_keyring()
    assert setup.backend.endswith("MemoryKeyring") and setup.master_key_id and setup.recipient
    loaded = identity.load_identity()
    assert loaded.recipient == setup.recipient and loaded.source.startswith("keyring ")
    assert crypto.load_master_key().id == setup.master_key_id

    saved = dict(memory_keyring.saved)
    with pytest.raises(UsageError, match="already holds a Pitstop master key and identity"):
        identity.init_keyring()
    with pytest.raises(UsageError, match="already holds a Pitstop identity"):
        identity.store_identity_in_keyring(identity.create_identity())
    assert memory_keyring.saved == saved


def test_init_keeps_an_existing_master_key_and_adds_the_identity(
    memory_keyring: MemoryKeyring,
) -> None:
    key = crypto.generate_key()
    crypto.store_master_key_in_keyring(key)
    setup = identity.init_keyring()
    assert setup.master_key_id is None and setup.recipient is not None
    assert crypto.load_master_key().key == key
    assert identity.load_identity().recipient == setup.recipient


def test_the_environment_wins_over_the_keyring(memory_keyring: MemoryKeyring) -> None:
    identity.init_keyring()
    mine = identity.create_identity()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PITSTOP_IDENTITY", mine.secret_text)
        assert identity.load_identity().recipient == mine.recipient


# --- recipients ------------------------------------------------------------------------------


def test_recipients_are_normalised(ed25519_key: Path) -> None:
    made = identity.create_identity()
    assert identity.parse_recipient(f"  {made.recipient}\n") == made.recipient
    assert identity.parse_recipient(made.recipient.upper()) == made.recipient
    key_type, body, comment = pub_line(ed25519_key).split()
    normal = f"{key_type} {body}"
    assert identity.parse_recipient(f"{key_type} {body} {comment}") == normal
    assert identity.parse_recipient(f"{ed25519_key}.pub") == normal
    assert identity.parse_recipients([normal, f"{normal} other-comment", made.recipient]) == [
        normal,
        made.recipient,
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ user@host", "ssh-rsa key"),
        ("ecdsa-sha2-nistp256 AAAAE2VjZHNh user@host", "ecdsa-sha2-nistp256 key"),
        ("age1notavalidrecipient", "not a valid age recipient"),
        ("ssh-ed25519 not-base64!", "not valid base64"),
        ("ssh-ed25519 AAAAC3NzaC1yc2E=", "damaged"),
        ("ssh-ed25519", "no key after ssh-ed25519"),
        ("AGE-SECRET-KEY-1QQQQ", "secret* key, not a recipient"),
        ("alice", "is not a key"),
        ("", "an empty recipient"),
    ],
)
def test_bad_recipients_are_refused_in_one_line(text: str, expected: str) -> None:
    with pytest.raises(UsageError) as raised:
        identity.parse_recipient(text)
    assert expected in one_line(raised.value.message)


def test_a_private_key_file_is_never_read_as_a_recipient(ed25519_key: Path) -> None:
    with pytest.raises(UsageError, match=r"not a \.pub file"):
        identity.parse_recipient(str(ed25519_key))


# --- encryption to recipients ----------------------------------------------------------------


def test_every_recipient_opens_the_wrapped_secret(
    ed25519_key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = identity.create_identity(), identity.create_identity()
    carol_recipient = pub_line(ed25519_key)  # with its comment: normalised on the way in
    secret = b"a task's data key \x00\xff"
    blob = identity.wrap_for_recipients(secret, [bob.recipient, carol_recipient, alice.recipient])
    assert blob.startswith(b"age-encryption.org/v1\n") and secret not in blob
    assert identity.unwrap(blob, alice) == secret
    assert identity.unwrap(blob, bob) == secret
    monkeypatch.setenv("PITSTOP_IDENTITY", str(ed25519_key))
    assert identity.unwrap(blob, identity.load_identity()) == secret
    # Someone not among the recipients gets None, not an error.
    assert identity.unwrap(blob, identity.create_identity()) is None


def test_wrapping_ignores_order_and_duplicates() -> None:
    alice, bob = identity.create_identity(), identity.create_identity()
    one = identity.wrap_for_recipients(b"k", [alice.recipient, bob.recipient])
    other = identity.wrap_for_recipients(b"k", [bob.recipient, alice.recipient, bob.recipient])

    def stanzas(blob: bytes) -> int:
        return blob.split(b"\n---", 1)[0].count(b"\n-> X25519 ")

    assert stanzas(one) == stanzas(other) == 2
    for blob in (one, other):
        assert identity.unwrap(blob, alice) == identity.unwrap(blob, bob) == b"k"


def test_wrapping_for_nobody_or_a_bad_recipient_is_refused() -> None:
    with pytest.raises(UsageError, match="no recipients"):
        identity.wrap_for_recipients(b"k", [])
    with pytest.raises(UsageError, match="ssh-rsa"):
        identity.wrap_for_recipients(b"k", ["ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ"])


def test_a_damaged_blob_is_a_clear_error() -> None:
    alice = identity.create_identity()
    blob = identity.wrap_for_recipients(b"the data key", [alice.recipient])
    tampered = bytearray(blob)
    tampered[-3] ^= 0x01  # inside the payload's authentication tag
    with pytest.raises(DecryptError) as raised:
        identity.unwrap(bytes(tampered), alice)
    assert "damaged or altered" in one_line(raised.value.message)
    with pytest.raises(DecryptError, match="damaged or altered"):
        identity.unwrap(blob[:-20], alice)
    with pytest.raises(DecryptError, match="not an age file"):
        identity.unwrap(b"PSE\x01 something else", alice)


def test_age_files_made_elsewhere_open_too() -> None:
    alice = identity.create_identity()
    made_by_pyrage = pyrage.encrypt(b"x", [pyrage.x25519.Recipient.from_str(alice.recipient)])
    assert identity.unwrap(bytes(made_by_pyrage), alice) == b"x"


# --- tasks -----------------------------------------------------------------------------------


def share_events(engine: Engine, task_id: str) -> list[str | None]:
    return [e.to_state for e in engine.events(task_id) if e.action == "share"]


def test_a_task_lists_its_recipients_and_its_operator(engine: Engine, repo: Path) -> None:
    own = identity.load_identity().recipient
    bob = identity.create_identity().recipient
    task = engine.start_task(repo=repo, objective="ship", task_id="t1", recipients=[bob])
    assert engine.task_recipients("t1") == [bob, own]
    assert share_events(engine, task.id) == [bob, own]
    assert sorted(engine.remote_recipients("t1")) == sorted([bob, own])
    shared = next(e for e in engine.events("t1") if e.action == "share")
    assert shared.entity == "task" and shared.entity_id == "t1" and shared.actor == engine.actor


def test_sharing_is_idempotent_and_audited(engine: Engine, repo: Path, ed25519_key: Path) -> None:
    engine.start_task(repo=repo, objective="ship", task_id="t1")
    own = identity.load_identity().recipient
    carol = identity.parse_recipient(pub_line(ed25519_key))
    assert engine.share_task("t1", [pub_line(ed25519_key)]) == [own, carol]
    events = engine.events("t1")
    assert engine.share_task("t1", [f"{ed25519_key}.pub", own]) == [own, carol]
    assert engine.events("t1") == events  # nothing new to record
    assert share_events(engine, "t1") == [own, carol]


def test_bad_recipients_change_nothing(engine: Engine, repo: Path) -> None:
    engine.start_task(repo=repo, objective="ship", task_id="t1")
    before = (engine.task_recipients("t1"), engine.events("t1"))
    good = identity.create_identity().recipient
    with pytest.raises(UsageError, match="ssh-rsa"):
        engine.share_task("t1", [good, "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ"])
    with pytest.raises(UsageError, match="at least one"):
        engine.share_task("t1", [])
    assert (engine.task_recipients("t1"), engine.events("t1")) == before
    with pytest.raises(UsageError, match="not a valid age recipient"):
        engine.start_task(repo=repo, objective="other", task_id="t2", recipients=["age1bad"])
    assert [t.id for t in engine.list_tasks()] == ["t1"]


def test_unknown_tasks_are_the_usual_clear_error(engine: Engine) -> None:
    recipient = identity.create_identity().recipient
    for call in (
        lambda: engine.share_task("nope", [recipient]),
        lambda: engine.task_recipients("nope"),
        lambda: engine.remote_recipients("nope"),
    ):
        with pytest.raises(NotFoundError, match="no task 'nope'"):
            call()


def test_without_an_identity_only_the_listed_recipients(
    engine: Engine, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PITSTOP_IDENTITY")
    engine.start_task(repo=repo, objective="ship", task_id="t1")
    assert engine.task_recipients("t1") == [] and engine.remote_recipients("t1") == []
    bob = identity.create_identity().recipient
    engine.share_task("t1", [bob])
    assert engine.remote_recipients("t1") == [bob]
    # Whoever pushes later adds themselves, without it being recorded on the task.
    monkeypatch.setenv("PITSTOP_IDENTITY", str(identity.create_identity().secret_text))
    me = identity.load_identity().recipient
    assert engine.remote_recipients("t1") == [bob, me]
    assert engine.task_recipients("t1") == [bob]


def test_the_recipients_migration_applies_to_an_older_store(
    store_root: Path, make_repo: Callable[..., Path]
) -> None:
    # A store written by the build before 0009: every migration up to 0008, and a task.
    store_root.mkdir(mode=0o700)
    database = store_root / "pitstop.db"
    db = open_database(database)
    migrations.apply(db, stop_before="0009_task_recipients")
    db.close()
    conn = sqlite3.connect(database)
    conn.execute(
        "INSERT INTO tasks (id, repo_root, store_repo, objective, status, created_at, updated_at) "
        "VALUES ('old', '/nowhere', 'nowhere', 'from before', 'paused', ?, ?)",
        ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"],
    )
    conn.commit()
    assert "task_recipients" not in tables(conn)
    conn.close()

    bob = identity.create_identity().recipient
    with Engine() as engine:
        assert engine.task_recipients("old") == []
        assert engine.share_task("old", [bob]) == [bob]
        engine.start_task(repo=make_repo("newer"), objective="after the upgrade", task_id="t1")
        assert engine.task_recipients("t1") == [identity.load_identity().recipient]
    migrate(open_database(database))  # a second migration changes nothing
    conn = sqlite3.connect(database)
    assert "task_recipients" in tables(conn)
    assert conn.execute(
        "SELECT recipient FROM task_recipients WHERE task_id = 'old'"
    ).fetchall() == [(bob,)]
    conn.close()


def tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
