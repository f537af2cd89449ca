"""Fields are free text too: objectives, harness and model names and versions, evidence labels,
effect kinds and targets are redacted before storage and sealed at rest (DESIGN §6.6), and a
task header carries them only sealed (§6.7).

Each test plants secrets the redactor catches (a GitHub token, an AWS key pair, a Slack token)
and ordinary words that identify the work, then reads the raw bytes of the store's database (and
its WAL), every object of the store's repositories and every object of a pushed bare remote
(decompressed by `git cat-file --batch-all-objects --batch`) for them; lists read them back
opened with the key, and show the marker without it.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from corekit import git, init_repo, write

from core import store
from core.engine import CheckpointRequest, Engine
from core.errors import PitstopError, SchemaTooNewError
from core.models import CheckpointReason, EffectState, NamedVersion, TaskStatus
from core.redaction.redact import redact_text
from core.sharing.layout import canonical
from core.sharing.signed_header import sign_header
from core.store.db import open_database, write_txn
from core.store.migrations import migrations, schema_version

GITHUB = "ghp_" + "F1eldS3cr3tT0k3nAbCdEfGhIjKlMnOpQrSt"
AWS_ID = "AKIA" + "QX7ZP3LMNB5VT2RY"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8trU9mLx"
SLACK = "xoxb-" + "1234567890123-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
SECRETS = (GITHUB, AWS_ID, AWS_SECRET, SLACK)

OBJECTIVE = f"Rotate the Zeppelin billing keys {GITHUB} before the Marzipan launch"
HARNESS = NamedVersion("Saffron-harness", f"2.0.14-{SLACK}")
MODEL = NamedVersion("Juniper-model", "Obsidian-7")
LABEL = f"Tangerine suite {AWS_ID} aws_secret_access_key={AWS_SECRET}"
KIND = "Periwinkle-deploy"
TARGET = f"https://Cinnamon.example.invalid/hook?t={SLACK}"
WORDS = ("Zeppelin", "Marzipan", "Saffron", "Juniper", "Obsidian", "Tangerine", "Periwinkle",
         "Cinnamon")  # fmt: skip
TASK = "fields-task"


def test_the_planted_secrets_are_ones_the_redactor_catches() -> None:
    """Otherwise the tests below would prove nothing about sealing."""
    for text in (OBJECTIVE, HARNESS.version or "", LABEL, TARGET, f"ship-{GITHUB}"):
        redacted, findings = redact_text(text)
        assert findings, text
        assert not any(secret in redacted for secret in SECRETS), redacted


# --- helpers -----------------------------------------------------------------------------------


def database_bytes(store_root: Path) -> bytes:
    """The database, its WAL and shared memory, as they lie on disk."""
    names = ("pitstop.db", "pitstop.db-wal", "pitstop.db-shm")
    return b"".join((store_root / n).read_bytes() for n in names if (store_root / n).exists())


def all_objects(git_dir: Path) -> bytes:
    """Every object of a repository, decompressed (loose and packed alike)."""
    done = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=git_dir,
        capture_output=True,
        check=True,
    )
    return done.stdout


def leaks(raw: bytes) -> list[str]:
    """The planted secrets and words readable in `raw` (words in either case)."""
    found = [s for s in SECRETS if s.encode() in raw]
    found += [w for w in WORDS if w.encode() in raw or w.lower().encode() in raw]
    return found


def store_leaks(store_root: Path) -> list[str]:
    """Planted text in the store's database or any object of its repositories."""
    raw = database_bytes(store_root)
    for repo in sorted((store_root / "repos").glob("*.git")):
        raw += all_objects(repo)
    return leaks(raw)


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A project on a bare remote, the author's clone, and a second machine's clone."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    author = init_repo(tmp_path / "author", {"app.py": "value = 1\n"})
    git(author, "remote", "add", "origin", str(remote))
    git(author, "push", "-q", "origin", "HEAD:refs/heads/main")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    return {"remote": remote, "author": author, "other": other, "tmp": tmp_path}


def planted_task(engine: Engine, repo: Path, tmp: Path) -> None:
    """A task whose every free-text field holds a secret or an identifying word, checkpointed."""
    engine.start_task(repo=repo, objective=OBJECTIVE, task_id=TASK, harness=HARNESS, model=MODEL)
    log = write(tmp / "run.log", "collected 2 items\n2 passed\n")
    engine.add_evidence_file(TASK, log, command="pytest -q", exit_code=0, label=LABEL)
    engine.propose_effect(TASK, "fx-1", KIND, target=TARGET)
    engine.propose_effect(TASK, "fx-2", f"ship-{GITHUB}")
    engine.move_effect(TASK, "fx-1", EffectState.IN_PROGRESS)
    write(repo / "app.py", "value = 2\n")
    engine.checkpoint(TASK, CheckpointRequest(reason=CheckpointReason.MILESTONE))


def redacted(text: str) -> str:
    return redact_text(text)[0]


def assert_opened(engine: Engine) -> None:
    """Every list shows the fields opened: the words kept, the secrets redacted."""
    task = engine.get_task(TASK)
    assert task.objective == redacted(OBJECTIVE) and "Zeppelin" in task.objective
    assert task.harness == NamedVersion("Saffron-harness", redacted(HARNESS.version or ""))
    assert task.model == MODEL
    assert [t.objective for t in engine.list_tasks()] == [task.objective]
    assert [s.task for s in engine.task_summaries()] == [task]
    assert [s.task for s in engine.first_task_summaries(10, [TaskStatus.RUNNING])] == [task]
    (item,) = engine.list_evidence(TASK)
    assert item.label == redacted(LABEL) and engine.get_evidence(item.id).label == item.label
    kinds = {e.key: (e.kind, e.target) for e in engine.list_effects(TASK)}
    assert kinds == {
        "fx-1": (KIND, redacted(TARGET)),
        "fx-2": ("ship-[REDACTED:github-token]", None),
    }
    manifest = engine.get_checkpoint(f"{TASK}@1").manifest or {}
    assert manifest["task"]["objective"] == task.objective
    assert manifest["harness"]["name"] == "Saffron-harness"
    assert manifest["model"] == {"name": "Juniper-model", "version": "Obsidian-7"}
    assert [e["label"] for e in manifest["evidence"]] == [item.label]


def assert_marked(engine: Engine) -> None:
    """Without the key, every list still works and shows the marker for each sealed field."""
    task = engine.get_task(TASK)
    assert task.objective == store.UNREADABLE
    assert task.harness == NamedVersion(store.UNREADABLE) and task.model == task.harness
    assert task.status is TaskStatus.RUNNING  # ids, states, times and counts stay plain
    assert [s.task.objective for s in engine.task_summaries()] == [store.UNREADABLE]
    assert [s.task.objective for s in engine.first_task_summaries(5, [])] == [store.UNREADABLE]
    assert [i.label for i in engine.list_evidence(TASK)] == [store.UNREADABLE]
    assert {e.kind for e in engine.list_effects(TASK)} == {store.UNREADABLE}


# --- at rest -----------------------------------------------------------------------------------


def test_fields_are_sealed_at_rest_and_lists_open_them(
    engine: Engine, tmp_path: Path, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = init_repo(tmp_path / "repo", {"app.py": "value = 1\n"})
    planted_task(engine, repo, tmp_path)
    assert store_leaks(store_root) == []
    assert_opened(engine)
    engine.close()

    for key in (None, base64.b64encode(os.urandom(32)).decode()):
        if key is None:
            monkeypatch.delenv("PITSTOP_KEY")
        else:
            monkeypatch.setenv("PITSTOP_KEY", key)
        with Engine(store_root) as keyless:
            assert_marked(keyless)


def test_a_harness_version_a_hook_learns_is_redacted_and_sealed(
    engine: Engine, tmp_path: Path, store_root: Path
) -> None:
    repo = init_repo(tmp_path / "repo", {"app.py": "value = 1\n"})
    engine.start_task(repo=repo, objective="plain work", task_id=TASK)
    engine.link_harness_session(
        TASK, "claude-code", "session-1", harness_version=f"2.1.0-Saffron-{SLACK}"
    )
    assert store_leaks(store_root) == []
    harness = engine.get_task(TASK).harness
    assert harness == NamedVersion("claude-code", "2.1.0-Saffron-[REDACTED:slack-token]")


def test_a_generated_task_id_never_carries_a_secret(engine: Engine, tmp_path: Path) -> None:
    """Ids are plain: one made from the objective's first words takes the redacted ones."""
    repo = init_repo(tmp_path / "repo", {"app.py": "value = 1\n"})
    task = engine.start_task(repo=repo, objective=f"{GITHUB} fix the login")
    assert task.id.startswith("fix-the-login-"), task.id
    assert GITHUB.lower()[:8] not in task.id


# --- on the remote -----------------------------------------------------------------------------


def test_no_field_reaches_a_remote_in_clear_and_a_fetch_opens_them(
    world: dict[str, Path], tmp_path: Path
) -> None:
    with Engine(tmp_path / "store-a") as a:
        planted_task(a, world["author"], tmp_path)
        a.push([TASK])
    assert leaks(all_objects(world["remote"])) == []
    header = json.loads(
        git(world["remote"], "cat-file", "blob", f"refs/pitstop/ledger/{TASK}:task.json")
    )
    for name in ("objective", "harness", "harness_version", "model", "model_version"):
        assert name not in header, f"task.json carries {name} in clear"

    with Engine(tmp_path / "store-b") as b:
        assert b.fetch([TASK], repo=world["other"]).fetched[TASK]["adopted"] is True
        assert_opened(b)
    assert store_leaks(tmp_path / "store-b") == []


def _signed_header_with(a: Engine, remote: Path, **plain: Any) -> None:
    """Rewrite the task header on the remote with `plain` fields added, signed by the task's
    owner (an older Pitstop wrote such fields, or a member means them to be taken)."""
    from tests.core.hostile_kit import replace_file

    ref = f"refs/pitstop/ledger/{TASK}"
    header = json.loads(git(remote, "cat-file", "blob", f"{ref}:task.json"))
    header.update(plain)
    replace_file(remote, ref, "task.json", canonical(sign_header(a, TASK, header)))


HOSTILE = {
    "objective": "Hostile Quagmire objective",
    "harness": "Quagmire-harness",
    "harness_version": "9.9-Quagmire",
    "model": "Quagmire-model",
}


def test_free_text_in_a_signed_headers_plain_fields_is_ignored_with_one_line(
    world: dict[str, Path], tmp_path: Path
) -> None:
    with Engine(tmp_path / "store-a") as a:
        planted_task(a, world["author"], tmp_path)
        a.push([TASK])
        _signed_header_with(a, world["remote"], **HOSTILE)
    with Engine(tmp_path / "store-b") as b:
        outcome = b.fetch([TASK], repo=world["other"]).fetched[TASK]
        (line,) = outcome["refused"]
        assert "harness, harness_version, model, objective in clear; ignored" in line
        assert_opened(b)  # the sealed part's values, never the plain ones
        assert "Quagmire" not in json.dumps(b.list_remote(repo=world["other"]).tasks, default=str)
    assert b"Quagmire" not in database_bytes(tmp_path / "store-b")


def test_free_text_an_attacker_puts_in_a_header_is_refused_with_one_line(
    world: dict[str, Path], tmp_path: Path
) -> None:
    """Without the owner's key the rewritten header does not verify: nothing of it is taken."""
    from tests.core.hostile_kit import replace_file

    with Engine(tmp_path / "store-a") as a:
        planted_task(a, world["author"], tmp_path)
        a.push([TASK])
    ref = f"refs/pitstop/ledger/{TASK}"
    header = json.loads(git(world["remote"], "cat-file", "blob", f"{ref}:task.json"))
    replace_file(world["remote"], ref, "task.json", canonical({**header, **HOSTILE}))
    with Engine(tmp_path / "store-b") as b:
        with pytest.raises(PitstopError) as refused:
            b.fetch([TASK], repo=world["other"])
        assert "\n" not in refused.value.message
        assert "signature does not verify" in refused.value.message
        assert TASK not in {t.id for t in b.list_tasks()}
    assert b"Quagmire" not in database_bytes(tmp_path / "store-b")


@pytest.mark.parametrize(
    "recipient", ["Quagmire project lead", "age1 not-a-key", "ssh-rsa AAAAB3Nza Quagmire"]
)
def test_a_header_whose_recipients_hold_words_is_refused(
    world: dict[str, Path], tmp_path: Path, recipient: str
) -> None:
    """Recipients are keys; words in their place are refused before any signature is read."""
    with Engine(tmp_path / "store-a") as a:
        planted_task(a, world["author"], tmp_path)
        a.push([TASK])
        header = json.loads(
            git(world["remote"], "cat-file", "blob", f"refs/pitstop/ledger/{TASK}:task.json")
        )
        _signed_header_with(a, world["remote"], recipients=[*header["recipients"], recipient])
    with Engine(tmp_path / "store-b") as b:
        with pytest.raises(PitstopError) as refused:
            b.fetch([TASK], repo=world["other"])
        assert "a recipient" in refused.value.message and "\n" not in refused.value.message
    assert b"Quagmire" not in database_bytes(tmp_path / "store-b")


# --- the migration -----------------------------------------------------------------------------


def _previous_store(store_root: Path) -> None:
    """A store as the Pitstop before `0017_sealed_fields` wrote it: its fields in clear."""
    store_root.mkdir(mode=0o700)
    db = open_database(store_root / "pitstop.db")
    with write_txn(db):
        migrations.apply(db, stop_before="0017_sealed_fields")
    at = "2026-01-01T00:00:00.000000Z"
    with write_txn(db):
        db.execute(
            "INSERT INTO tasks (id, repo_root, store_repo, objective, status, harness, "
            "harness_version, model, model_version, created_at, updated_at) "
            "VALUES (?, '/nowhere', 'nowhere.git', ?, 'paused', ?, ?, ?, ?, ?, ?)",
            [TASK, redacted(OBJECTIVE), HARNESS.name, redacted(HARNESS.version or ""),
             MODEL.name, MODEL.version, at, at],
        )  # fmt: skip
        db.execute(
            "INSERT INTO tasks (id, repo_root, store_repo, objective, status, created_at, "
            "updated_at) VALUES ('gone-task', '/nowhere', 'nowhere.git', 'GONE-OBJECTIVE', "
            "'expired', ?, ?)",
            [at, at],
        )
        db.execute(
            "INSERT INTO evidence (task_id, state, source, label, started_at, cap_bytes) "
            "VALUES (?, 'complete', 'file', ?, ?, 1024)",
            [TASK, redacted(LABEL), at],
        )
        db.execute(
            "INSERT INTO effects (task_id, key, kind, state, created_at, updated_at) "
            "VALUES (?, 'fx-1', ?, 'proposed', ?, ?)",
            [TASK, KIND, at, at],
        )
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def _reads_back_migrated(engine: Engine) -> None:
    task = engine.get_task(TASK)
    assert (task.objective, task.model) == (redacted(OBJECTIVE), MODEL)
    assert task.harness == NamedVersion(HARNESS.name, redacted(HARNESS.version or ""))
    assert [i.label for i in engine.list_evidence(TASK)] == [redacted(LABEL)]
    assert [e.kind for e in engine.list_effects(TASK)] == [KIND]
    assert [s.task.objective for s in engine.task_summaries() if s.task.id == TASK] == [
        redacted(OBJECTIVE)
    ]


def test_migration_seals_the_fields_of_a_previous_store(store_root: Path) -> None:
    _previous_store(store_root)
    assert "Zeppelin" in leaks(database_bytes(store_root))  # the test's premise
    with Engine(store_root) as engine:
        assert "0017_sealed_fields" in migrations.applied(engine.db)
        assert schema_version(engine.db) == migrations.names()[-1]
        _reads_back_migrated(engine)
        # a task gc retired (expired, no key left) is not given a fresh key to seal with
        assert not store.has_wrapped_key(engine.db, "gone-task")
    with sqlite3.connect(store_root / "pitstop.db") as db:
        types = db.execute(
            "SELECT typeof(objective), typeof(harness), typeof(harness_version), typeof(model), "
            "typeof(model_version) FROM tasks WHERE id = ?",
            [TASK],
        ).fetchone()
        assert types == ("blob",) * 5
        assert db.execute("SELECT typeof(label) FROM evidence").fetchone() == ("blob",)
        assert db.execute("SELECT typeof(kind) FROM effects").fetchone() == ("blob",)
    assert leaks(database_bytes(store_root)) == []
    # a task gc retired keeps what it had: sealing it would need the key gc deleted
    assert b"GONE-OBJECTIVE" in database_bytes(store_root)


def test_migration_without_a_key_keeps_fields_readable_and_seals_new_ones(
    store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _previous_store(store_root)
    monkeypatch.delenv("PITSTOP_KEY")
    with Engine(store_root) as engine:
        _reads_back_migrated(engine)  # as they were: clear text reads as itself
        assert not store.has_wrapped_key(engine.db, TASK)
    monkeypatch.setenv("PITSTOP_KEY", base64.b64encode(os.urandom(32)).decode())
    repo = init_repo(tmp_path / "repo", {"app.py": "value = 1\n"})
    with Engine(store_root) as engine:
        engine.start_task(repo=repo, objective="Later Gazpacho work", task_id="later")
        assert engine.get_task("later").objective == "Later Gazpacho work"
    assert b"Gazpacho" not in database_bytes(store_root)


def test_a_store_from_a_newer_pitstop_is_still_refused_untouched(store_root: Path) -> None:
    _previous_store(store_root)
    with Engine(store_root):
        pass
    conn = sqlite3.connect(store_root / "pitstop.db")
    conn.execute(
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
        "VALUES ('pitstop', '0099_from_the_future', '2099-01-01 00:00:00.000000+00:00')"
    )
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = (store_root / "pitstop.db").read_bytes()
    with pytest.raises(SchemaTooNewError) as refused:
        Engine(store_root)
    assert "0099_from_the_future" in refused.value.message and "\n" not in refused.value.message
    assert (store_root / "pitstop.db").read_bytes() == before


def test_an_effect_fact_from_an_older_pitstop_keeps_its_plain_kind_readable(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older Pitstop put an effect's kind in the fact's plain part (`effect_kind`) and not
    in its sealed content: a fetch still takes it, redacted, and seals it here."""
    from core.ledger import facts as ledger_facts

    current = ledger_facts.local_facts

    def as_an_older_pitstop(session: Any, task_id: str) -> list[tuple[dict[str, Any], Any]]:
        found = []
        for plain, content in current(session, task_id):
            if plain["kind"] == "effect":
                content = {k: v for k, v in content.items() if k != "kind"}
                plain = {**plain, "effect_kind": f"legacy-{GITHUB}"}
            found.append((plain, content))
        return found

    with Engine(tmp_path / "store-a") as a:
        planted_task(a, world["author"], tmp_path)
        monkeypatch.setattr(ledger_facts, "local_facts", as_an_older_pitstop)
        a.push([TASK])
    monkeypatch.setattr(ledger_facts, "local_facts", current)
    with Engine(tmp_path / "store-b") as b:
        b.fetch([TASK], repo=world["other"])
        kinds = {e.key: e.kind for e in b.list_effects(TASK)}
        assert kinds == dict.fromkeys(("fx-1", "fx-2"), "legacy-[REDACTED:github-token]")
    with sqlite3.connect(tmp_path / "store-b" / "pitstop.db") as db:
        assert db.execute("SELECT DISTINCT typeof(kind) FROM effects").fetchall() == [("blob",)]


def test_cost_estimates_classify_runs_by_their_opened_label(engine: Engine, tmp_path: Path) -> None:
    """A run without a command line is classified by its label, which is sealed: opened first."""
    from core.economics.metrics import recorded_runs
    from core.economics.work_kinds import WorkKind

    repo = init_repo(tmp_path / "repo", {"app.py": "value = 1\n"})
    engine.start_task(repo=repo, objective="plain work", task_id=TASK)
    log = write(tmp_path / "build.log", "done\n")
    engine.add_evidence_file(TASK, log, label="compile the Tangerine bundle")
    (run,), _notes = recorded_runs(engine.db, engine.keys, TASK)
    assert (run.kind, run.label) == (WorkKind.BUILD, "compile the Tangerine bundle")
    (unopened,), notes = recorded_runs(engine.db, None, TASK)
    assert (unopened.kind, unopened.label) == (WorkKind.OTHER, store.UNREADABLE) and notes
