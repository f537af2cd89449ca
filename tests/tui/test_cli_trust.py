"""Trust through the real command line: keys, rosters, expected owners and refused facts.

Two operators (Alice owns the task, Bob is a member), each with their own store, config and
keys made by `pitstop key init --print`, over a real bare repository; Mallory has push access
only and writes straight into it (tests/core/trustkit.py). Every command runs as a real process;
every bad input is one line on stderr, exit 2, and changes nothing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from core.ledger.fact_format import SCHEMA
from core.ledger.roster import Member, roster_plain
from core.security import signing
from tests.core import trustkit

TASK = "ship-billing"
FINGERPRINT = re.compile(r"^[A-Z2-7]{4}(-[A-Z2-7]{4}){3}$")


def _git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@dataclass
class Operator:
    """One person: their store, config and keys, and the clone they work in."""

    name: str
    env: dict[str, str]
    repo: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tui.cli", *args],
            env=self.env,
            cwd=self.repo,
            capture_output=True,
            text=True,
            check=False,
        )

    def ok(self, *args: str) -> str:
        result = self.run(*args)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr, result.stderr
        return result.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json"))

    @cached_property
    def public(self) -> dict[str, Any]:
        """What `key show --json` says (asked once)."""
        return dict(self.json("key", "show"))


def one_line_error(result: subprocess.CompletedProcess[str], exit_code: int) -> str:
    assert result.returncode == exit_code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pitstop: "), result.stderr
    return lines[0]


def exports(printed: str) -> dict[str, str]:
    """The `export NAME='value'` lines of `key init --print`."""
    found = {}
    for line in printed.splitlines():
        if line.startswith("export "):
            name, value = line.removeprefix("export ").split("=", 1)
            found[name] = value.strip("'")
        else:
            assert line.startswith("# "), line
    return found


@dataclass
class World:
    remote: Path
    alice: Operator
    bob: Operator
    base_env: dict[str, str]
    tmp: Path


@pytest.fixture
def world(tmp_path: Path) -> World:
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    base.update(
        {
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "GIT_CONFIG_GLOBAL": str(gitconfig),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Test",
            "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "Test",
            "GIT_COMMITTER_EMAIL": "test@example.com",
        }
    )
    remote = tmp_path / "remote.git"
    _git(tmp_path, base, "init", "-q", "--bare", "-b", "main", str(remote))
    alice_repo = tmp_path / "alice-repo"
    alice_repo.mkdir()
    (alice_repo / "app.py").write_text("print('v1')\n")
    for args in (
        ("init", "-q", "-b", "main"),
        ("add", "-A"),
        ("commit", "-qm", "init"),
        ("remote", "add", "origin", str(remote)),
        ("push", "-q", "origin", "main"),
    ):
        _git(alice_repo, base, *args)  # fmt: skip
    _git(tmp_path, base, "clone", "-q", str(remote), str(tmp_path / "bob-repo"))
    operators = []
    for name in ("alice", "bob"):
        config = tmp_path / f"config-{name}"
        config.mkdir()
        (config / "config.toml").write_text(f'[operator]\nname = "{name}"\n')
        env = {**base, "PITSTOP_HOME": str(tmp_path / f"store-{name}"),
               "PITSTOP_CONFIG_DIR": str(config)}  # fmt: skip
        made = Operator(name, env, tmp_path / f"{name}-repo").ok("key", "init", "--print")
        env.update(exports(made))
        operators.append(Operator(name, env, tmp_path / f"{name}-repo"))
    return World(remote, operators[0], operators[1], base, tmp_path)


def _shared(world: World, *, push: bool = True) -> None:
    """Alice's task with one checkpoint, shared with Bob (who may write), pushed."""
    alice, bob = world.alice, world.bob
    alice.ok("task", "start", "--repo", ".", "--objective", "ship billing", "--id", TASK)
    share = bob.public["share_command"].replace("TASK", TASK, 1)
    alice.ok(*shlex.split(share)[1:])
    (alice.repo / "app.py").write_text("print('v2')\n")
    alice.ok("checkpoint", TASK, "--note", "half done")
    if push:
        alice.ok("push", TASK)


# --- keys --------------------------------------------------------------------------------------


def test_key_init_print_and_key_show_give_both_public_halves_and_a_line_to_paste(
    world: World,
) -> None:
    alice = world.alice
    assert set(exports(alice.ok("key", "init", "--print"))) == {
        "PITSTOP_KEY", "PITSTOP_IDENTITY", "PITSTOP_SIGNING_KEY"
    }  # fmt: skip
    secret = alice.env["PITSTOP_SIGNING_KEY"]
    assert secret.startswith("pitstop-sign-1")
    shown = alice.json("key", "show")
    key = signing.parse_public_key(shown["signing"]["public"])
    fp = shown["signing"]["fingerprint"]
    assert FINGERPRINT.match(fp) and fp == signing.fingerprint(key)
    assert shown == {
        "recipient": shown["recipient"],
        "source": "environment variable PITSTOP_IDENTITY",
        "kind": "age",
        "signing": {
            "public": key,
            "fingerprint": fp,
            "source": "environment variable PITSTOP_SIGNING_KEY",
        },
        "share_command": f"pitstop task share TASK --recipient {shown['recipient']} "
        f"--signer {key} --name alice",
    }
    human = alice.ok("key", "show")
    assert secret not in human and alice.env["PITSTOP_IDENTITY"] not in human
    assert f"age recipient  {shown['recipient']}\n" in human
    assert f"signing key    {key}\n" in human
    assert f"fingerprint    {fp}\n" in human
    assert "read it aloud: " + ", ".join(" ".join(g) for g in fp.split("-")) in human
    assert "from environment variable PITSTOP_SIGNING_KEY" in human
    assert f"  {shown['share_command']}\n" in human
    printed = alice.json("key", "init", "--print")
    assert set(printed) == {"key", "id", "identity", "recipient", "signing_key", "signer",
                            "fingerprint"}  # fmt: skip
    assert signing.fingerprint(printed["signer"]) == printed["fingerprint"] != fp


def test_key_show_with_only_an_identity_signs_through_the_derived_key(world: World) -> None:
    alice = world.alice
    del alice.env["PITSTOP_SIGNING_KEY"]
    shown = alice.json("key", "show")
    assert shown["signing"]["source"] == (
        "the age identity in environment variable PITSTOP_IDENTITY, through a key derived from it"
    )
    del alice.env["PITSTOP_IDENTITY"]
    line = one_line_error(alice.run("key", "show"), 1)
    assert "PITSTOP_IDENTITY" in line and "pitstop key init" in line


@pytest.fixture
def keyring_env(world: World, tmp_path: Path) -> tuple[Operator, Path]:
    """Alice with no secrets in her environment and a keyring that keeps them (JSON stand-in)."""
    path = tmp_path / "keyring.json"
    env = {k: v for k, v in world.alice.env.items()
           if k not in ("PITSTOP_KEY", "PITSTOP_IDENTITY", "PITSTOP_SIGNING_KEY")}  # fmt: skip
    env["PYTHON_KEYRING_BACKEND"] = "keyring_file.JsonFileKeyring"
    env["TEST_KEYRING_FILE"] = str(path)
    here = str(Path(__file__).resolve().parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
    return Operator("alice", env, world.alice.repo), path


def test_key_init_keeps_a_signing_key_in_the_keyring_and_never_replaces_one(
    keyring_env: tuple[Operator, Path],
) -> None:
    alice, path = keyring_env
    made = alice.json("key", "init")
    saved = json.loads(path.read_text())
    assert saved.keys() == {"pitstop/master-key", "pitstop/age-identity", "pitstop/signing-key"}
    assert saved["pitstop/signing-key"].startswith("pitstop-sign-1")
    shown = alice.json("key", "show")
    assert shown["signing"]["public"] == made["signer"]
    assert shown["signing"]["fingerprint"] == made["fingerprint"]
    assert shown["signing"]["source"] == "keyring keyring_file.JsonFileKeyring"
    before = path.read_text()
    line = one_line_error(alice.run("key", "init"), 2)
    assert "already holds" in line
    assert path.read_text() == before


def test_key_init_never_gives_an_operator_who_already_signs_a_new_key(
    keyring_env: tuple[Operator, Path], world: World
) -> None:
    """An identity from an older Pitstop signs through its derived key, which rosters name:
    `key init` adding the missing master key must not make that operator a stranger."""
    alice, path = keyring_env
    alice.env["PITSTOP_IDENTITY"] = world.alice.env["PITSTOP_IDENTITY"]
    before = alice.json("key", "show")["signing"]
    said = alice.ok("key", "init").splitlines()
    assert said[-1] == (
        "signing key: yours is kept (the age identity in environment variable PITSTOP_IDENTITY, "
        "through a key derived from it)"
    )
    assert "pitstop/signing-key" not in json.loads(path.read_text())
    assert alice.json("key", "show")["signing"] == before
    one_line_error(alice.run("key", "init"), 2)  # nothing left to add
    assert "pitstop/signing-key" not in json.loads(path.read_text())


# --- rosters -----------------------------------------------------------------------------------


def test_share_with_a_signer_shows_the_roster_and_approvers_and_unshare_rotate(
    world: World,
) -> None:
    alice, bob = world.alice, world.bob
    alice_fp = alice.public["signing"]["fingerprint"]
    bob_keys = bob.public
    bob_fp = bob_keys["signing"]["fingerprint"]
    alice.ok("task", "start", "--repo", ".", "--objective", "ship billing", "--id", TASK)
    assert "roster      none yet" in alice.ok("task", "show", TASK)
    shared = alice.ok("task", "share", TASK, "--recipient", bob_keys["recipient"],
                      "--signer", bob_keys["signing"]["public"], "--name", "bob")  # fmt: skip
    assert shared.splitlines()[:2] == [
        f"task {TASK} shared with 1 more recipient(s)",
        f"  bob ({bob_fp}) may write facts to it",
    ]
    shown = alice.ok("task", "show", TASK)
    assert f"owner       {alice_fp}  founded here\n" in shown
    assert re.search(rf"^  alice  {alice_fp}  owner, may decide$", shown, re.M)
    assert re.search(rf"^  bob    {bob_fp}  member, may decide$", shown, re.M)
    assert "may decide  any member\n" in shown
    document = alice.json("task", "show", TASK)
    assert document["roster"]["owner"] == alice_fp and document["refused"] == 0
    assert [m["label"] for m in document["roster"]["members"]] == ["alice", "bob"]

    added = alice.ok("task", "approver", "add", TASK, "bob")
    assert added.count("\n") == 1
    assert added.startswith(f"task {TASK}: may decide: bob ({bob_fp}) (roster version ")
    assert "may decide  bob" in alice.ok("task", "show", TASK)
    by_key = alice.json("task", "approver", "add", TASK, alice.public["signing"]["public"])
    assert {m["label"] for m in by_key["members"] if m["approver"]} == {"alice", "bob"}
    stranger = alice.ok("task", "approver", "add", TASK, "carol")
    assert "no member is labelled carol yet" in stranger and stranger.count("\n") == 1
    removed = alice.ok("task", "approver", "remove", TASK, "bob", "carol",
                       alice.public["signing"]["public"])  # fmt: skip
    assert f"task {TASK}: may decide: any member" in removed

    gone = alice.ok("task", "unshare", TASK, "--recipient", "bob")
    assert "removed bob; its data key rotated" in gone.splitlines()[0]
    assert bob_keys["recipient"] not in gone
    after = alice.json("task", "show", TASK)
    assert [m["label"] for m in after["roster"]["members"]] == ["alice"]
    assert bob_keys["recipient"] not in after["recipients"]
    actions = [e["action"] for e in alice.json("log", TASK) if e["entity"] == "roster"]
    assert actions[0] == "found" and actions[-1] == "unshare"


# --- fetching: the owner you expected, and facts refused -----------------------------------------


def test_fetch_with_a_wrong_expected_owner_takes_nothing_and_a_right_one_pins_it(
    world: World,
) -> None:
    _shared(world)
    alice_fp = world.alice.public["signing"]["fingerprint"]
    bob = world.bob
    listed = bob.ok("remote", "list")
    assert f"owner {alice_fp}, not pinned yet" in listed
    other = signing.create_signing_key().fingerprint
    line = one_line_error(bob.run("fetch", TASK, "--expect-owner", other), 1)
    assert f"not founded by the owner you expected ({other})" in line and alice_fp in line
    assert bob.json("task", "list") == []
    assert not (world.tmp / "store-bob" / "tasks").exists() or bob.json("task", "list") == []

    spoken = " ".join(alice_fp.lower().replace("-", ""))  # as someone typed it from a call
    fetched = bob.ok("fetch", TASK, "--expect-owner", spoken)
    assert f"  {TASK}: new task, 1 new checkpoint(s), owner {alice_fp}\n" in fetched
    assert "refused" not in fetched
    shown = bob.ok("task", "show", TASK)
    assert f"owner       {alice_fp}  pinned from --expect-owner\n" in shown
    assert f"owner {alice_fp}, pinned here" in bob.ok("remote", "list")
    remote = bob.json("remote", "list")["tasks"][0]
    assert (remote["owner"], remote["owner_note"]) == (alice_fp, "pinned here")


def _forged_event(files: trustkit.Files, key: signing.SigningKey) -> str:
    plain = {"schema": SCHEMA, "kind": "event", "task": TASK, "event": "mallory:1",
             "at": "2026-01-01T00:00:00.000000Z", "actor": "alice", "interface": "cli",
             "entity": "effect", "entity_id": "deploy", "action": "confirm",
             "from_state": "uncertain", "to_state": "confirmed"}  # fmt: skip
    return trustkit.add_fact(files, plain, key)


def test_a_forged_fact_is_one_line_in_sync_and_listed_by_task_refused(world: World) -> None:
    _shared(world)
    bob = world.bob
    bob.ok("fetch", TASK)
    log_before = bob.json("log", TASK)
    mallory = signing.create_signing_key()
    planted: list[str] = []
    trustkit.tamper(world.remote, TASK, lambda f: planted.append(_forged_event(f, mallory)))
    uid = planted[0].rsplit("/", 1)[-1].removesuffix(".json")[:12]

    synced = bob.ok("sync", TASK)
    refused = [line for line in synced.splitlines() if "refused event fact" in line]
    assert len(refused) == 1, synced
    assert refused[0].startswith(f"  {TASK}: refused event fact {uid}")
    assert f"signed by {mallory.fingerprint}" in refused[0]
    assert f"  {TASK}: 1 fact(s) refused and not applied; `pitstop task refused {TASK}`" in synced
    assert bob.json("log", TASK) == log_before

    listed = bob.ok("task", "refused", TASK)
    lines = listed.splitlines()
    assert lines[0] == f"task {TASK}: 1 fact(s) from elsewhere refused, never applied"
    assert len(lines) == 2 and lines[1].split()[:2] == ["event", uid]
    assert f"signed by {mallory.fingerprint}" in lines[1] and "roster" in lines[1]
    (row,) = bob.json("task", "refused", TASK)
    assert row["kind"] == "event" and row["signed_by"] == mallory.fingerprint
    assert f"refused     1 refused fact from elsewhere — pitstop task refused {TASK}\n" in bob.ok(
        "task", "show", TASK
    )
    again = bob.ok("sync", TASK)
    assert "refused" not in again, again


def test_remote_list_names_each_owner_and_survives_unsigned_and_contested_tasks(
    world: World,
) -> None:
    _shared(world)
    alice = world.alice
    for task_id in ("older-task", "contested"):
        alice.ok("task", "start", "--repo", ".", "--objective", task_id, "--id", task_id)
        alice.ok("checkpoint", task_id)
        alice.ok("push", task_id)

    def strip_roster(files: trustkit.Files) -> None:
        for path in [p for p in files if p.startswith("roster/")]:
            del files[path]

    mallory = signing.create_signing_key()

    def second_genesis(files: trustkit.Files) -> None:
        plain = roster_plain("contested", version=1, prev=None, at="2000-01-01T00:00:00.000000Z",
                             owners=[mallory.public],
                             members=[Member("mallory", mallory.public, None)],
                             approvers_any=True)  # fmt: skip
        trustkit.add_fact(files, plain, mallory)

    trustkit.tamper(world.remote, "older-task", strip_roster)
    trustkit.tamper(world.remote, "contested", second_genesis)
    document = world.bob.json("remote", "list")
    owners = {t["task"]: (t["owner"], t["owner_note"]) for t in document["tasks"]}
    alice_fp = alice.public["signing"]["fingerprint"]
    assert owners == {
        TASK: (alice_fp, "not pinned yet"),
        "older-task": (None, "unsigned (older Pitstop)"),
        "contested": (None, "competing owners: fetch with --expect-owner FINGERPRINT"),
    }
    human = world.bob.ok("remote", "list")
    assert "owner unsigned (older Pitstop)" in human
    assert "owner competing owners" in human
    # Alice pinned her own tasks when she founded them: a second genesis does not move that
    assert ("contested", alice_fp, "pinned here") in [
        (t["task"], t["owner"], t["owner_note"]) for t in alice.json("remote", "list")["tasks"]
    ]


# --- bad input ----------------------------------------------------------------------------------

BAD: dict[str, tuple[Callable[[World], list[str]], str]] = {
    "malformed fingerprint": (
        lambda w: ["fetch", TASK, "--expect-owner", "K7QF-2M9X"],
        "is not a fingerprint",
    ),
    "malformed signer": (
        lambda w: [
            "task",
            "share",
            TASK,
            "--recipient",
            w.bob.public["recipient"],
            "--signer",
            "ed25519:AAAA",
        ],
        "--signer: signing key 'ed25519:AAAA' is not 32 bytes long",
    ),
    "not a signing key": (
        lambda w: [
            "task",
            "share",
            TASK,
            "--recipient",
            w.bob.public["recipient"],
            "--signer",
            w.bob.public["recipient"],
        ],
        "is not a signing key",
    ),
    "signer for two recipients": (
        lambda w: [
            "task",
            "share",
            TASK,
            "--recipient",
            w.bob.public["recipient"],
            "--recipient",
            w.alice.public["recipient"],
            "--signer",
            w.bob.public["signing"]["public"],
        ],
        "exactly one --recipient",
    ),
    "share unknown task": (
        lambda w: ["task", "share", "nope", "--recipient", w.bob.public["recipient"]],
        "no task 'nope'",
    ),
    "approver of unknown task": (lambda w: ["task", "approver", "add", "nope", "bob"], "nope"),
    "approver with a malformed key": (
        lambda w: ["task", "approver", "add", TASK, "ed25519:!!"],
        "approver: the signing key",
    ),
    "approver with a bad name": (
        lambda w: ["task", "approver", "add", TASK, "bob smith"],
        "invalid approver",
    ),
    "unshare nobody": (
        lambda w: ["task", "unshare", TASK, "--recipient", "carol"],
        "names none of carol",
    ),
    "refused of unknown task": (lambda w: ["task", "refused", "nope"], "no task 'nope'"),
    "show unknown task": (lambda w: ["task", "show", "nope"], "no task 'nope'"),
}


def test_bad_input_is_one_line_exit_2_and_changes_nothing(world: World) -> None:
    _shared(world, push=False)
    alice = world.alice
    before = (alice.ok("task", "show", TASK, "--json"), alice.ok("log", TASK, "--json"))
    for case, (args, expected) in sorted(BAD.items()):
        line = one_line_error(alice.run(*args(world)), 2)
        assert expected in line, (case, line)
    assert (alice.ok("task", "show", TASK, "--json"), alice.ok("log", TASK, "--json")) == before
