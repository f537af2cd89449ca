"""Key rotation: removing a recipient gives a task a fresh data key for what is written after.

Real stores (their own databases and master keys), real git (a bare remote), operators with their
own age identities. The removed recipient keeps the keys they had — what was sealed before stays
theirs — but nothing sealed after the rotation opens with any of them, and the key file pushed
after it is not encrypted to them at all. Retired keys go with the current one when gc retires
the task. A key file that was swapped, or made by someone who never held the task's keys, is
refused with one line and changes nothing.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyrage
import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import store
from core.engine import CheckpointRequest, Engine
from core.errors import PitstopError
from core.models import CheckpointReason, TaskStatus
from core.security import crypto, identity
from core.security.keys import TaskKeys
from core.sharing import key_file
from core.sharing.key_file import KeyFileError, TaskKeySet
from core.sharing.layout import KEY_FILE
from core.store.db import open_database, write_txn
from core.store.migrations import migrations
from tests.core.corekit import git, git_bytes, init_repo, write

NOTE_BEFORE = "NOTE-BEFORE-ROTATION-31c0"
NOTE_AFTER = "NOTE-AFTER-ROTATION-8e5d"
TAIL_BEFORE = "TAIL-BEFORE-77aa"
TAIL_AFTER = "TAIL-AFTER-19bf"
ASK_AFTER = "deploy after the rotation 4c4c"


def _identity() -> str:
    return str(pyrage.x25519.Identity.generate())


def _recipient(secret: str) -> str:
    return str(pyrage.x25519.Identity.from_str(secret).to_public())


def _me(monkeypatch: pytest.MonkeyPatch, secret: str) -> identity.Identity:
    monkeypatch.setenv("PITSTOP_IDENTITY", secret)
    return identity.load_identity()


def _checkpoint(engine: Engine, task_id: str, repo: Path, note: str, tail: str) -> int:
    write(repo / "progress.txt", f"{note}\n")
    log = write(repo.parent / f"{note}.log", f"collected 1 item\n{tail}\n1 passed\n")
    engine.add_evidence_file(task_id, log, command=f"pytest -q # {note}", exit_code=0)
    made = engine.checkpoint(
        task_id, CheckpointRequest(reason=CheckpointReason.MILESTONE, note=note, force=True)
    )
    assert made.checkpoint is not None
    return made.checkpoint.seq


def _new_blobs(engine: Engine, task_id: str, seq: int) -> list[bytes]:
    """Every envelope a checkpoint and its evidence keep in the store."""
    checkpoint = store.get_checkpoint(engine.db, task_id, seq)
    found = [checkpoint.sealed_note, checkpoint.sealed_manifest]
    rows = engine.db.execute(
        "SELECT command, tail FROM evidence WHERE task_id = ? AND checkpoint_seq = ?",
        [task_id, seq],
    ).fetchall()
    found += [bytes(value) for row in rows for value in row if value is not None]
    found += [
        bytes(row[0])
        for row in engine.db.execute(
            "SELECT blob FROM evidence_chunks WHERE evidence_id IN "
            "(SELECT id FROM evidence WHERE task_id = ? AND checkpoint_seq = ?)",
            [task_id, seq],
        ).fetchall()
    ]
    assert all(blob is not None for blob in found)
    return [blob for blob in found if blob is not None]


def _opens_raw(key: bytes, envelope: bytes, aad: bytes) -> bool:
    """Decrypt ignoring the key id the envelope names: only the key itself decides."""
    kid_len = envelope[4]
    start = 5 + kid_len
    try:
        AESGCM(key).decrypt(envelope[start : start + 12], envelope[start + 12 :], aad)
    except InvalidTag:
        return False
    return True


# --- one store --------------------------------------------------------------------------------


def test_rotation_keeps_old_content_readable_and_seals_new_content_with_the_new_key(
    store_root: Path, repo: Path
) -> None:
    with Engine(store_root) as engine:
        task_id = engine.start_task(repo=repo, objective="rotate me").id
        _checkpoint(engine, task_id, repo, NOTE_BEFORE, TAIL_BEFORE)
        old_id = engine.keys.data_key_id(task_id)
        old_key = engine.keys.data_key(task_id, create=False)
        before = _new_blobs(engine, task_id, 1)
        assert {crypto.envelope_key_id(blob) for blob in before} == {old_id}

        new_id = engine.rotate_task_key(task_id, "recipient removed")
        assert new_id != old_id and engine.keys.data_key_id(task_id) == new_id
        assert set(engine.keys.all_keys(task_id)) == {old_id, new_id}
        _checkpoint(engine, task_id, repo, NOTE_AFTER, TAIL_AFTER)
        approval = engine.request_approval(task_id, ASK_AFTER)
        after = _new_blobs(engine, task_id, 2)
        assert len(after) >= 4
        assert {crypto.envelope_key_id(blob) for blob in after} == {new_id}
        sealed_action = engine.db.execute(
            "SELECT action FROM approvals WHERE task_id = ? AND seq = ?", [task_id, approval.seq]
        ).fetchone()[0]
        assert crypto.envelope_key_id(bytes(sealed_action)) == new_id
        rotate = [e for e in engine.events(task_id) if e.action == "rotate-key"]
        assert [(e.from_state, e.to_state, e.reason) for e in rotate] == [
            (old_id, new_id, "recipient removed")
        ]

    # another process: both keys were kept, each opens what it sealed
    with Engine(store_root) as engine:
        assert engine.get_checkpoint(f"{task_id}@1").note == NOTE_BEFORE
        assert engine.get_checkpoint(f"{task_id}@2").note == NOTE_AFTER
        for seq, tail in ((1, TAIL_BEFORE), (2, TAIL_AFTER)):
            item = next(i for i in engine.list_evidence(task_id) if i.checkpoint_seq == seq)
            assert any(tail.encode() in line for line in engine.evidence_last_lines(item.id, 5))
        assert engine.verify(engine.get_checkpoint(f"{task_id}@1")) == []
        assert engine.verify(engine.get_checkpoint(f"{task_id}@2")) == []
        assert any(a.action == ASK_AFTER for a in engine.list_approvals(task_id))
        # what was sealed after does not open with the old key, whatever the envelope says
        aad = crypto.associated_data(engine.keys.scope(task_id), task_id, "checkpoint/2/note")
        note_after = store.get_checkpoint(engine.db, task_id, 2).sealed_note
        assert note_after is not None
        assert _opens_raw(engine.keys.data_key(task_id, create=False), note_after, aad)
        assert not _opens_raw(old_key, note_after, aad)
        with pytest.raises(crypto.DecryptError):
            crypto.open_envelope(old_key, note_after, aad, "the note")


def test_a_process_that_cached_the_old_key_seals_with_the_new_one(
    store_root: Path, repo: Path
) -> None:
    with Engine(store_root) as first, Engine(store_root) as second:
        task_id = first.start_task(repo=repo, objective="two processes").id
        _checkpoint(first, task_id, repo, NOTE_BEFORE, TAIL_BEFORE)
        old_id = first.keys.data_key_id(task_id)  # cached in the first process
        new_id = second.rotate_task_key(task_id)
        _checkpoint(first, task_id, repo, NOTE_AFTER, TAIL_AFTER)
        assert {crypto.envelope_key_id(blob) for blob in _new_blobs(first, task_id, 2)} == {new_id}
        assert first.get_checkpoint(f"{task_id}@2").note == NOTE_AFTER
        assert second.get_checkpoint(f"{task_id}@2").note == NOTE_AFTER
        assert first.get_checkpoint(f"{task_id}@1").note == NOTE_BEFORE
        assert old_id in first.keys.all_keys(task_id)


def test_a_rotation_that_rolls_back_leaves_the_old_key_current(
    store_root: Path, repo: Path
) -> None:
    with Engine(store_root) as engine:
        task_id = engine.start_task(repo=repo, objective="rolled back").id
        old_id = engine.keys.data_key_id(task_id)
        with pytest.raises(RuntimeError, match="boom"), write_txn(engine.db):
            engine.keys.rotate(task_id)
            engine.keys.seal(task_id, "probe", b"sealed inside the rotation's transaction")
            raise RuntimeError("boom")
        assert crypto.key_id(engine.keys.data_key(task_id, create=False)) == old_id
        assert engine.keys.data_key_id(task_id) == old_id
        assert set(engine.keys.all_keys(task_id)) == {old_id}
        with pytest.raises(RuntimeError, match="write transaction"):
            engine.keys.rotate(task_id)


def test_a_retired_key_moved_back_into_the_current_row_is_refused(
    store_root: Path, repo: Path
) -> None:
    """Someone who can write the database but has no master key cannot make new content seal
    with a key a removed recipient holds."""
    with Engine(store_root) as engine:
        task_id = engine.start_task(repo=repo, objective="swap the rows").id
        old_id = engine.keys.data_key_id(task_id)
        engine.rotate_task_key(task_id)
        retired = store.old_wrapped_keys(engine.db, task_id)[old_id]
        with write_txn(engine.db):
            engine.db.execute(
                "UPDATE task_keys SET wrapped = ? WHERE task_id = ?", [retired, task_id]
            )
    with Engine(store_root) as engine, pytest.raises(crypto.DecryptError, match="authentication"):
        engine.keys.seal(task_id, "probe", b"must not be sealed with the old key")


def test_gc_retirement_deletes_every_key_of_the_task(
    store_root: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-10-01T12:00:00+00:00")
    with Engine(store_root) as engine:
        task_id = engine.start_task(repo=repo, objective="retire me").id
        _checkpoint(engine, task_id, repo, NOTE_BEFORE, TAIL_BEFORE)
        engine.rotate_task_key(task_id)
        engine.rotate_task_key(task_id)
        _checkpoint(engine, task_id, repo, NOTE_AFTER, TAIL_AFTER)
        assert len(store.old_wrapped_keys(engine.db, task_id)) == 2
        engine.finish_task(task_id, TaskStatus.DONE, "merged")
        items = engine.list_evidence(task_id)
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-11-30T12:00:00+00:00")
    with Engine(store_root) as engine:
        report = engine.gc()
        assert [r.task_id for r in report.plan.retirements] == [task_id]
        assert not store.has_wrapped_key(engine.db, task_id)
        assert store.old_wrapped_keys(engine.db, task_id) == {}
        for table in ("task_keys", "task_old_keys"):
            count = engine.db.execute(
                f"SELECT count(*) FROM {table} WHERE task_id = ?", [task_id]
            ).fetchone()[0]
            assert count == 0, table
        for item in items:  # sealed with the first key and with the last: both gone
            with pytest.raises(crypto.MasterKeyError, match="deleted by gc"):
                engine.get_evidence(item.id)
        with pytest.raises(crypto.MasterKeyError), write_txn(engine.db):
            engine.keys.rotate(task_id)
        assert engine.gc().plan.retirements == ()


def test_rotating_a_task_with_no_key_is_one_clear_error(store_root: Path, repo: Path) -> None:
    with Engine(store_root) as engine, pytest.raises(PitstopError, match="no task"):
        engine.rotate_task_key("no-such-task")


def test_keys_of_a_store_from_before_rotation_stay_readable_after_the_migration(
    store_root: Path,
) -> None:
    store_root.mkdir(mode=0o700)
    db = open_database(store_root / "pitstop.db")
    with write_txn(db):
        migrations.apply(db, stop_before="0015_task_key_history")
    at = "2026-01-01T00:00:00.000000Z"
    with write_txn(db):
        db.execute(
            "INSERT INTO tasks (id, repo_root, store_repo, objective, status, created_at, "
            "updated_at) VALUES ('old-task', '/nowhere', 'nowhere.git', 'old', 'paused', ?, ?)",
            [at, at],
        )
    sealed = TaskKeys(db).seal("old-task", "probe", b"sealed before 0015")
    db.close()
    with Engine(store_root) as engine:
        assert engine.keys.open("old-task", "probe", sealed, "probe") == b"sealed before 0015"
        engine.rotate_task_key("old-task")
        assert engine.keys.open("old-task", "probe", sealed, "probe") == b"sealed before 0015"


# --- the key file -----------------------------------------------------------------------------


def _key_set(count: int) -> TaskKeySet:
    keys = [os.urandom(32) for _ in range(count)]
    return TaskKeySet({crypto.key_id(k): k for k in keys}, crypto.key_id(keys[-1]))


def test_a_single_key_is_written_and_read_as_older_pitstops_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = _identity()
    me = _me(monkeypatch, secret)
    single = _key_set(1)
    blob = key_file.encode_key_file(single.keys, single.current, [me.recipient])
    assert identity.unwrap(blob, me) == single.keys[single.current]  # what older Pitstops read
    legacy = identity.wrap_for_recipients(single.keys[single.current], [me.recipient])
    assert key_file.decode_key_file(legacy, me) == single
    several = _key_set(3)
    blob = key_file.encode_key_file(several.keys, several.current, [me.recipient])
    assert key_file.decode_key_file(blob, me) == several
    stranger = _me(monkeypatch, _identity())
    assert key_file.decode_key_file(blob, stranger) is None


def test_the_header_binds_the_key_file(monkeypatch: pytest.MonkeyPatch) -> None:
    me = _me(monkeypatch, _identity())
    ours, theirs = _key_set(2), _key_set(2)
    blob = key_file.encode_key_file(ours.keys, ours.current, [me.recipient])
    header = {key_file.HEADER_FIELD: key_file.header_entry(ours.keys, ours.current)}
    assert key_file.open_key_file(blob, me, header, "t") == ours
    swapped = key_file.encode_key_file(theirs.keys, theirs.current, [me.recipient])
    with pytest.raises(KeyFileError, match="does not match its header"):
        key_file.open_key_file(swapped, me, header, "t")
    with pytest.raises(KeyFileError, match="header names none"):
        key_file.open_key_file(blob, me, {}, "t")  # several keys under a header that names none
    other_current = dict(header[key_file.HEADER_FIELD], current=sorted(ours.keys)[0])
    if other_current["current"] != ours.current:
        with pytest.raises(KeyFileError):
            key_file.open_key_file(blob, me, {key_file.HEADER_FIELD: other_current}, "t")


def test_encoding_refuses_a_key_set_that_is_not_one(monkeypatch: pytest.MonkeyPatch) -> None:
    me = _me(monkeypatch, _identity())
    good = _key_set(2)
    wrong_id = {"0" * 12: os.urandom(32)}
    for keys, current in (
        ({}, "x"),
        (good.keys, "f" * 12),
        (wrong_id, "0" * 12),
        ({crypto.key_id(b"short"): b"short"}, crypto.key_id(b"short")),
    ):
        with pytest.raises(KeyFileError):
            key_file.encode_key_file(keys, current, [me.recipient])


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=14), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def _near_documents(draw: st.DrawFn) -> bytes:
    """Key documents that are almost right: one field wrong, missing or of another type."""
    keys = draw(st.lists(st.binary(min_size=0, max_size=40), min_size=0, max_size=3))
    entries: dict[str, object] = {
        draw(st.sampled_from([crypto.key_id(k), crypto.key_id(k)[:11], "Z" * 12]))
        if draw(st.booleans())
        else crypto.key_id(k): draw(
            st.sampled_from([base64.b64encode(k).decode(), base64.b64encode(k).decode() + "!"])
        )
        for k in keys
    }
    document: dict[str, object] = {
        "schema": draw(st.sampled_from([key_file.KEYS_SCHEMA, "pitstop.task-keys/2", 7])),
        "current": draw(st.sampled_from([*(list(entries) or ["none"]), 3, None])),
        "keys": draw(st.sampled_from([entries, [], "keys", None])),
    }
    for name in draw(st.lists(st.sampled_from(sorted(document)), max_size=2)):
        document.pop(name, None)
    if draw(st.booleans()):
        document.update(draw(st.dictionaries(st.text(max_size=8), _JSON, max_size=2)))
    return json.dumps(document).encode()


_GOOD_FILES: dict[str, bytes] = {}


def _good_file(me: identity.Identity) -> bytes:
    if me.recipient not in _GOOD_FILES:
        keys = _key_set(2)
        _GOOD_FILES[me.recipient] = key_file.encode_key_file(*keys, [me.recipient])
    return _GOOD_FILES[me.recipient]


@pytest.fixture(scope="module")
def age_me() -> Iterator[identity.Identity]:
    generated = pyrage.x25519.Identity.generate()
    yield identity.Identity(str(generated.to_public()), "test", "age", str(generated).encode())


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=8, unique=True),
    pick=st.integers(min_value=0),
)
def test_key_files_round_trip(age_me: identity.Identity, keys: list[bytes], pick: int) -> None:
    by_id = {crypto.key_id(k): k for k in keys}
    current = crypto.key_id(keys[pick % len(keys)])
    blob = key_file.encode_key_file(by_id, current, [age_me.recipient])
    assert key_file.decode_key_file(blob, age_me) == TaskKeySet(by_id, current)
    entry = key_file.header_entry(by_id, current)
    assert key_file.open_key_file(blob, age_me, {key_file.HEADER_FIELD: entry}, "t") == (
        TaskKeySet(by_id, current)
    )


@settings(max_examples=300, deadline=None)
@given(
    payload=st.one_of(
        st.binary(max_size=200), _JSON.map(lambda d: json.dumps(d).encode()), _near_documents()
    )
)
def test_a_malformed_payload_is_one_clear_error(payload: bytes) -> None:
    try:
        found = key_file.parse_payload(payload)
    except KeyFileError as exc:
        assert "\n" not in exc.message and exc.message
        return
    # whatever is accepted is a consistent key set
    assert found.current in found.keys
    assert all(crypto.key_id(k) == kid and len(k) == 32 for kid, k in found.keys.items())


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_damaged_or_hostile_key_file_is_one_clear_error(
    age_me: identity.Identity, data: st.DataObject
) -> None:
    good = _good_file(age_me)  # one file: age adds random-length stanzas, so a replay sees it
    kind = data.draw(st.sampled_from(["flip", "truncate", "random", "age-garbage", "payload"]))
    if kind == "flip":
        at = data.draw(st.integers(0, len(good) - 1))
        blob = good[:at] + bytes([good[at] ^ data.draw(st.integers(1, 255))]) + good[at + 1 :]
    elif kind == "truncate":
        blob = good[: data.draw(st.integers(0, len(good) - 1))]
    elif kind == "random":
        blob = data.draw(st.binary(max_size=400))
    elif kind == "age-garbage":
        blob = identity.AGE_MAGIC + data.draw(st.binary(max_size=300))
    else:  # a well-encrypted file whose payload is not a key set
        payload = data.draw(st.one_of(st.binary(max_size=100), _near_documents()))
        blob = identity.wrap_for_recipients(payload, [age_me.recipient])
    try:
        found = key_file.decode_key_file(blob, age_me)
    except KeyFileError as exc:
        assert "\n" not in exc.message and exc.message
        return
    assert found is None or found.current in found.keys


def test_an_oversized_key_file_is_refused_before_it_is_decrypted(
    age_me: identity.Identity,
) -> None:
    with pytest.raises(KeyFileError, match="over the"):
        key_file.decode_key_file(identity.AGE_MAGIC + b"x" * key_file.MAX_KEY_FILE_BYTES, age_me)


# --- stores that share a task through a bare remote -------------------------------------------


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A project on a bare remote, the owner's clone, and the other machines' clones."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    owner = init_repo(tmp_path / "owner", {"README.md": "# project\n", "src/app.py": "x = 1\n"})
    git(owner, "remote", "add", "origin", str(remote))
    git(owner, "push", "-q", "origin", "HEAD:refs/heads/main")
    clones = {}
    for name in ("bob", "carol"):
        clones[name] = tmp_path / name
        subprocess.run(["git", "clone", "-q", str(remote), str(clones[name])], check=True)
    return {"remote": remote, "owner": owner, **clones, "tmp": tmp_path}


def _remote_file(remote: Path, ref: str, path: str) -> bytes:
    return git_bytes(remote, "show", f"{ref}:{path}")


def _remote_paths(remote: Path, ref: str) -> dict[str, str]:
    out = git_bytes(remote, "ls-tree", "-r", ref).decode()
    return {line.split("\t")[1]: line.split()[2] for line in out.splitlines()}


def _remove_recipient(engine: Engine, task_id: str, recipient: str) -> None:
    """What `task unshare` does to the local recipient list (the roster change is signed there)."""
    with write_txn(engine.db):
        engine.db.execute(
            "DELETE FROM task_recipients WHERE task_id = ? AND recipient = ?", [task_id, recipient]
        )


def test_a_removed_recipient_reads_what_came_before_and_nothing_after(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner_secret, bob_secret, carol_secret = (
        os.environ["PITSTOP_IDENTITY"],
        _identity(),
        _identity(),
    )
    ledger = "refs/pitstop/ledger/"
    with Engine(tmp_path / "store-a") as a:
        task_id = a.start_task(repo=world["owner"], objective="shared then narrowed").id
        ledger += task_id
        _checkpoint(a, task_id, world["owner"], NOTE_BEFORE, TAIL_BEFORE)
        a.share_task(task_id, [_recipient(bob_secret), _recipient(carol_secret)])
        a.push([task_id])
        old_id = a.keys.data_key_id(task_id)
    old_key_file = _remote_file(world["remote"], ledger, KEY_FILE)
    old_facts = set(_remote_paths(world["remote"], ledger))

    carol = _me(monkeypatch, carol_secret)
    with Engine(tmp_path / "store-c") as c:
        assert c.fetch([task_id], repo=world["carol"]).fetched[task_id]["checkpoints"] == 1
        assert c.get_checkpoint(f"{task_id}@1").note == NOTE_BEFORE
    carol_keys = key_file.decode_key_file(old_key_file, carol)
    assert carol_keys is not None and set(carol_keys.keys) == {old_id}

    _me(monkeypatch, bob_secret)
    with Engine(tmp_path / "store-b") as b:
        b.fetch([task_id], repo=world["bob"])
        assert b.keys.data_key_id(task_id) == old_id

    # the owner removes Carol: the key rotates, and what is written after uses the new key
    _me(monkeypatch, owner_secret)
    with Engine(tmp_path / "store-a") as a:
        a.unshare_task(task_id, [_recipient(carol_secret)])  # a signed roster change, and a new key
        new_id = a.keys.data_key_id(task_id)
        assert new_id != old_id
        _checkpoint(a, task_id, world["owner"], NOTE_AFTER, TAIL_AFTER)
        a.request_approval(task_id, ASK_AFTER)
        pushed = a.push([task_id])
        assert pushed.tasks[task_id]["checkpoints_sent"] == 1
        scope = a.keys.scope(task_id)

    new_key_file = _remote_file(world["remote"], ledger, KEY_FILE)
    assert new_key_file != old_key_file
    assert key_file.decode_key_file(new_key_file, carol) is None  # not encrypted to her at all
    header = json.loads(_remote_file(world["remote"], ledger, "task.json"))
    assert _recipient(carol_secret) not in header["recipients"]
    assert header[key_file.HEADER_FIELD]["current"] == new_id

    # every envelope written after the rotation names the new key and refuses Carol's
    checkpoints = f"refs/pitstop/checkpoints/{task_id}"
    sealed_after: list[tuple[bytes, bytes | None]] = []
    meta = json.loads(_remote_file(world["remote"], checkpoints, "checkpoint.json"))
    sealed_after.append(
        (
            base64.b64decode(meta["sealed"]),
            crypto.associated_data(scope, task_id, "remote/checkpoint/2"),
        )
    )
    sealed_after.append(
        (base64.b64decode(header["sealed"]), crypto.associated_data(scope, task_id, "remote/task"))
    )
    for path in _remote_paths(world["remote"], checkpoints):
        if path.endswith(".enc") and "/1/" not in path:
            sealed_after.append((_remote_file(world["remote"], checkpoints, path), None))
    new_fact_paths = set(_remote_paths(world["remote"], ledger)) - old_facts
    for path in new_fact_paths:
        fact = json.loads(_remote_file(world["remote"], ledger, path))
        if "sealed" in fact:
            sealed_after.append((base64.b64decode(fact["sealed"]), None))
    assert len(sealed_after) >= 5 and len(new_fact_paths) >= 2
    for envelope, aad in sealed_after:
        assert crypto.envelope_key_id(envelope) == new_id
        if aad is not None:
            assert not _opens_raw(carol_keys.keys[old_id], envelope, aad)
            with pytest.raises(crypto.DecryptError):
                crypto.open_envelope(carol_keys.keys[old_id], envelope, aad, "new content")

    # Bob, still a recipient, reads old and new, and what he writes now uses the new key too
    bob = _me(monkeypatch, bob_secret)
    bob_keys = key_file.decode_key_file(new_key_file, bob)
    assert bob_keys is not None and bob_keys.current == new_id
    assert set(bob_keys.keys) == {old_id, new_id}
    assert _opens_raw(bob_keys.keys[new_id], *sealed_after[0])  # type: ignore[arg-type]
    with Engine(tmp_path / "store-b") as b:
        result = b.fetch([task_id], repo=world["bob"])
        assert result.fetched[task_id]["checkpoints"] == 1
        assert b.keys.data_key_id(task_id) == new_id
        assert b.get_checkpoint(f"{task_id}@1").note == NOTE_BEFORE
        assert b.get_checkpoint(f"{task_id}@2").note == NOTE_AFTER
        assert b.verify(b.get_checkpoint(f"{task_id}@2")) == []
        tails = [
            line for item in b.list_evidence(task_id) for line in b.evidence_last_lines(item.id, 5)
        ]
        assert any(TAIL_BEFORE.encode() in t for t in tails)
        assert any(TAIL_AFTER.encode() in t for t in tails)
        assert any(a.action == ASK_AFTER for a in b.list_approvals(task_id))
        b.request_approval(task_id, "bob asks after the rotation")
        assert b.push([task_id]).tasks[task_id]["ledger_updated"] is True
    bob_facts = set(_remote_paths(world["remote"], ledger)) - old_facts - new_fact_paths
    assert bob_facts
    for path in bob_facts:
        fact = json.loads(_remote_file(world["remote"], ledger, path))
        if "sealed" in fact:
            assert crypto.envelope_key_id(base64.b64decode(fact["sealed"])) == new_id
    assert key_file.decode_key_file(_remote_file(world["remote"], ledger, KEY_FILE), carol) is None

    # Carol's own store: what she had stays hers; the new checkpoint never arrives
    _me(monkeypatch, carol_secret)
    with Engine(tmp_path / "store-c") as c:
        result = c.fetch([task_id], repo=world["carol"])
        assert result.no_key == [task_id] and result.fetched == {}
        assert [cp.seq for cp in c.list_checkpoints(task_id)] == [1]
        assert c.get_checkpoint(f"{task_id}@1").note == NOTE_BEFORE
        assert c.keys.data_key_id(task_id) == old_id


def test_a_rotation_alone_rewrites_the_key_file_and_a_quiet_push_keeps_it(
    world: dict[str, Path], tmp_path: Path
) -> None:
    with Engine(tmp_path / "store-a") as a:
        task_id = a.start_task(repo=world["owner"], objective="rotate, same recipients").id
        _checkpoint(a, task_id, world["owner"], NOTE_BEFORE, TAIL_BEFORE)
        a.push([task_id])
        ledger = f"refs/pitstop/ledger/{task_id}"
        first = _remote_paths(world["remote"], ledger)[KEY_FILE]
        assert a.push([task_id]).tasks[task_id]["ledger_updated"] is False
        new_id = a.rotate_task_key(task_id)
        assert a.push([task_id]).tasks[task_id]["ledger_updated"] is True
        second = _remote_paths(world["remote"], ledger)[KEY_FILE]
        assert second != first
        assert a.push([task_id]).tasks[task_id]["ledger_updated"] is False
        assert _remote_paths(world["remote"], ledger)[KEY_FILE] == second
    me = identity.load_identity()
    found = key_file.decode_key_file(_remote_file(world["remote"], ledger, KEY_FILE), me)
    assert found is not None and found.current == new_id and len(found.keys) == 2


def _replace_ledger_files(remote: Path, ref: str, files: dict[str, bytes]) -> None:
    """Push access and no key: a new ledger commit whose named files are replaced."""
    tip = git_bytes(remote, "rev-parse", ref).decode().strip()
    index = remote / "attacker.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}

    def run(*args: str, data: bytes | None = None) -> str:
        return (
            subprocess.run(
                ["git", f"--git-dir={remote}", *args],
                input=data,
                env=env,
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )

    run("read-tree", tip)
    for path, data in files.items():
        oid = run("hash-object", "-w", "--stdin", data=data)
        run("update-index", "--add", "--cacheinfo", f"100644,{oid},{path}")
    tree = run("write-tree")
    commit = run("commit-tree", tree, "-p", tip, "-m", "pitstop ledger")
    run("update-ref", ref, commit)
    index.unlink()


@pytest.mark.parametrize("attack", ["own-keys", "swapped-file"])
def test_a_key_file_from_someone_who_never_held_the_keys_is_refused(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attack: str
) -> None:
    owner_secret, bob_secret = os.environ["PITSTOP_IDENTITY"], _identity()
    with Engine(tmp_path / "store-a") as a:
        task_id = a.start_task(repo=world["owner"], objective="attacked").id
        _checkpoint(a, task_id, world["owner"], NOTE_BEFORE, TAIL_BEFORE)
        a.share_task(task_id, [_recipient(bob_secret)])
        a.push([task_id])
    ledger = f"refs/pitstop/ledger/{task_id}"
    _me(monkeypatch, bob_secret)
    with Engine(tmp_path / "store-b") as b:
        b.fetch([task_id], repo=world["bob"])
        before = b.keys.all_keys(task_id)

    # the attacker knows every recipient's public key, so can encrypt keys of their own to them
    header = json.loads(_remote_file(world["remote"], ledger, "task.json"))
    planted = _key_set(2)
    blob = key_file.encode_key_file(planted.keys, planted.current, header["recipients"])
    files = {KEY_FILE: blob}
    if attack == "own-keys":  # a consistent header too: what a signature on it must stop
        header[key_file.HEADER_FIELD] = key_file.header_entry(planted.keys, planted.current)
        files["task.json"] = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    _replace_ledger_files(world["remote"], ledger, files)

    with Engine(tmp_path / "store-b") as b:
        # a task held here already: the forged header and key file are refused and reported,
        # the rest of the task still syncs, and nothing of the file is taken
        fetched = b.fetch([task_id], repo=world["bob"]).fetched[task_id]
        (line,) = fetched["ledger"]["rejected"]
        assert "\n" not in line and line.startswith(f"{task_id}: refused its task header")
        expected = (
            "signature does not verify"
            if attack == "own-keys"
            else "its key file is not the one its signed header names"
        )
        assert expected in line
        assert b.keys.all_keys(task_id) == before
        assert b.keys.data_key_id(task_id) in before
        assert b.get_checkpoint(f"{task_id}@1").note == NOTE_BEFORE
    _me(monkeypatch, owner_secret)
