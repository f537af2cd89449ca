"""Shared tasks against an attacker who can push to the remote but holds no key (issue #14).

Three real stores over a real bare repository: Alice owns the task, Bob is a member (he reads and
writes, he is no approver), Mallory can push anything to the remote and signs with a key of her
own. Every forgery is refused, reported in one line, leaves the victim's rows unchanged, and is
dropped from the remote by the next honest push; the legitimate flow still converges.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyrage
import pytest

from core import store
from core.engine import CheckpointRequest, Engine
from core.errors import NotAllowedError, PitstopError
from core.ledger.fact_format import LEGACY_SCHEMA, SCHEMA, canonical, fact_path, fact_uid
from core.ledger.roster import Member, roster_plain
from core.models import CheckpointReason, EffectState, Risk, TaskStatus
from core.security import identity, signing
from core.sharing import key_file
from tests.core import trustkit
from tests.core.corekit import git, init_repo

TASK = "ship-billing"


def _secret() -> str:
    return str(pyrage.x25519.Identity.generate())


def _recipient(secret: str) -> str:
    return str(pyrage.x25519.Identity.from_str(secret).to_public())


@dataclass
class World:
    remote: Path
    alice_repo: Path
    bob_repo: Path
    carol_repo: Path
    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    alice: str
    bob: str
    mallory: str

    def be(self, secret: str) -> None:
        self.monkeypatch.setenv("PITSTOP_IDENTITY", secret)

    def store(self, who: str) -> Engine:
        secret = {"alice": self.alice, "bob": self.bob, "carol": self.bob, "mallory": self.mallory}
        self.be(secret[who])
        return Engine(self.tmp / f"store-{who}", actor=who)

    def signing_key_of(self, secret: str) -> signing.SigningKey:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("PITSTOP_IDENTITY", secret)
            return signing.load_signing_key()


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    import os

    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    alice_repo = init_repo(tmp_path / "alice", {"app.py": "print('v1')\n"})
    git(alice_repo, "remote", "add", "origin", str(remote))
    git(alice_repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    clones = []
    for name in ("bob", "carol"):
        subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / name)], check=True)
        clones.append(tmp_path / name)
    return World(
        remote=remote,
        alice_repo=alice_repo,
        bob_repo=clones[0],
        carol_repo=clones[1],
        tmp=tmp_path,
        monkeypatch=monkeypatch,
        alice=os.environ["PITSTOP_IDENTITY"],
        bob=_secret(),
        mallory=_secret(),
    )


def _shared(world: World) -> None:
    """Alice's task with a confirmed deploy and a rejected high-risk approval, shared with Bob
    (a member who is no approver), pushed, and fetched by Bob."""
    bob_key = world.signing_key_of(world.bob)
    with world.store("alice") as a:
        a.start_task(repo=world.alice_repo, objective="ship billing", task_id=TASK,
                     approvers=["alice"])  # fmt: skip
        a.propose_effect(TASK, "deploy", "deploy", target="prod")
        a.move_effect(TASK, "deploy", EffectState.IN_PROGRESS)
        a.move_effect(TASK, "deploy", EffectState.CONFIRMED)
        a.request_approval(TASK, "drop the users table", risk=Risk.HIGH)
        a.decide_approval(f"{TASK}:1", False, "never")
        a.request_approval(TASK, "rotate the API key", risk=Risk.HIGH)
        a.share_task(TASK, [_recipient(world.bob)], signer=bob_key.public, label="bob")
        a.checkpoint(TASK, CheckpointRequest(reason=CheckpointReason.MILESTONE))
        a.push([TASK])
    with world.store("bob") as b:
        assert b.fetch([TASK], repo=world.bob_repo).fetched[TASK]["adopted"] is True


def _state(engine: Engine) -> tuple[Any, ...]:
    task = engine.get_task(TASK)
    return (
        task.status,
        task.budget,
        task.tokens_used,
        sorted(
            (e.key, e.state.value, e.attempts, e.needs_approval) for e in engine.list_effects(TASK)
        ),
        sorted((a.id, a.state.value, a.decided_by) for a in engine.list_approvals(TASK)),
        len(engine.events(TASK)),
    )


# --- forged facts -------------------------------------------------------------------------------


def _first(files: trustkit.Files, kind: str, **match: Any) -> dict[str, Any]:
    return next(
        d for d in trustkit.facts_in(files, kind) if all(d.get(k) == v for k, v in match.items())
    )


def _forged_decision(files: trustkit.Files, key: signing.SigningKey) -> str:
    request = _first(files, "approval-request", approval=f"{TASK}:1")
    plain = {"schema": SCHEMA, "kind": "approval-decision", "task": TASK,
             "approval": f"{TASK}:1", "request": request["uid"], "state": "approved",
             "decided_by": "alice", "decided_at": "2000-01-01T00:00:00.000000Z"}  # fmt: skip
    return trustkit.add_fact(files, plain, key)


def _forged_effect(files: trustkit.Files, key: signing.SigningKey) -> str:
    confirmed = _first(files, "effect", key="deploy", state="confirmed")
    plain = trustkit.plain_of(confirmed)
    plain.update(state="failed", at="2000-01-01T00:00:00.000000Z")  # "settled first"
    return trustkit.add_fact(files, plain, key)


def _lifted_approval_requirement(files: trustkit.Files, key: signing.SigningKey) -> str:
    confirmed = _first(files, "effect", key="deploy", state="confirmed")
    plain = trustkit.plain_of(confirmed)
    plain.update(key="deploy-2", state="proposed", needs_approval=False, attempts=0)
    return trustkit.add_fact(files, plain, key)


def _fake_event(files: trustkit.Files, key: signing.SigningKey) -> str:
    plain = {"schema": SCHEMA, "kind": "event", "task": TASK, "event": "mallory:1",
             "at": "2026-01-01T00:00:00.000000Z", "actor": "alice", "interface": "cli",
             "entity": "effect", "entity_id": "deploy", "action": "confirm",
             "from_state": "uncertain", "to_state": "confirmed"}  # fmt: skip
    return trustkit.add_fact(files, plain, key)


def _altered_real_fact(files: trustkit.Files, key: signing.SigningKey) -> str:
    """Alice's own confirmed fact with its state changed: her signature no longer holds."""
    confirmed = _first(files, "effect", key="deploy", state="confirmed")
    document = dict(confirmed)
    document["state"] = "failed"
    plain = trustkit.plain_of(document)
    document["uid"] = fact_uid(plain)
    path = fact_path(document["uid"])
    files[path] = canonical(document)
    return path


def _unsigned_legacy_fact(files: trustkit.Files, key: signing.SigningKey) -> str:
    plain = {"schema": LEGACY_SCHEMA, "kind": "approval-decision", "task": TASK,
             "approval": f"{TASK}:2", "request": "0" * 64, "state": "approved",
             "decided_by": "alice", "decided_at": "2000-01-01T00:00:00.000000Z"}  # fmt: skip
    document = {**plain, "uid": fact_uid(plain)}
    path = fact_path(document["uid"])
    files[path] = canonical(document)
    return path


def _roster_takeover(files: trustkit.Files, key: signing.SigningKey) -> str:
    """A roster version after the current one, naming Mallory owner: not signed by an owner."""
    current = max(trustkit.facts_in(files, "roster"), key=lambda d: d["version"])
    plain = roster_plain(
        TASK, version=current["version"] + 1, prev=current["uid"],
        at="2026-01-01T00:00:00.000000Z", owners=[key.public],
        members=[Member("mallory", key.public, None)], approvers_any=True,
    )  # fmt: skip
    return trustkit.add_fact(files, plain, key)


def _second_genesis(files: trustkit.Files, key: signing.SigningKey) -> str:
    plain = roster_plain(TASK, version=1, prev=None, at="2000-01-01T00:00:00.000000Z",
                         owners=[key.public], members=[Member("mallory", key.public, None)],
                         approvers_any=True)  # fmt: skip
    return trustkit.add_fact(files, plain, key)


def _oversized(files: trustkit.Files, key: signing.SigningKey) -> str:
    path = fact_path("f" * 64)
    files[path] = b'{"pad":"' + b"x" * (2 << 20) + b'"}'
    return path


def _not_json(files: trustkit.Files, key: signing.SigningKey) -> str:
    path = fact_path("e" * 64)
    files[path] = b"\xff\xfe not json"
    return path


FORGERIES: dict[str, Callable[[trustkit.Files, signing.SigningKey], str]] = {
    "decision by a stranger": _forged_decision,
    "confirmed deploy turned failed": _forged_effect,
    "approval requirement lifted": _lifted_approval_requirement,
    "fake audit event": _fake_event,
    "altered real fact": _altered_real_fact,
    "unsigned legacy fact": _unsigned_legacy_fact,
    "roster change by a non-owner": _roster_takeover,
    "second genesis": _second_genesis,
    "oversized fact": _oversized,
    "not JSON": _not_json,
}


def _refusals(fetched: dict[str, Any]) -> list[str]:
    """Every line a fetch gave for what it refused: facts judged and set aside, and facts too
    large to be read at all."""
    return [*fetched["ledger"]["rejected"], *fetched.get("refused", [])]


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_forged_fact_is_refused_reported_and_dropped_by_the_next_honest_push(
    world: World, forgery: str
) -> None:
    _shared(world)
    mallory = world.signing_key_of(world.mallory)
    with world.store("alice") as a:
        alice_before = _state(a)
    with world.store("bob") as b:
        bob_before = _state(b)
    planted: list[str] = []
    trustkit.tamper(
        world.remote, TASK, lambda files: planted.append(FORGERIES[forgery](files, mallory))
    )

    with world.store("bob") as b:
        fetched = b.fetch([TASK], repo=world.bob_repo).fetched[TASK]
        lines = _refusals(fetched)
        assert len(lines) == 1 and "\n" not in lines[0]
        assert lines[0].startswith(f"{TASK}: refused") or "over its 1048576-byte limit" in lines[0]
        assert _state(b) == bob_before
        assert b.fetch([TASK], repo=world.bob_repo).fetched[TASK]["ledger"]["rejected"] == []
    with world.store("alice") as a:
        report = a.sync([TASK])
        assert _state(a) == alice_before
        assert _refusals(report["fetched"][TASK])
    remote_files = trustkit.read_files(world.remote, trustkit.ledger_ref(TASK))
    assert planted[0] not in remote_files, "an honest push must not carry a forged fact on"


def test_a_fact_moved_from_another_task_is_refused(world: World) -> None:
    _shared(world)
    with world.store("alice") as a:
        a.start_task(repo=world.alice_repo, objective="other", task_id="other-task")
        a.propose_effect("other-task", "deploy", "deploy")
        a.checkpoint("other-task", CheckpointRequest(reason=CheckpointReason.MILESTONE))
        a.push(["other-task"])
    other = trustkit.read_files(world.remote, trustkit.ledger_ref("other-task"))
    moved = _first(other, "effect", key="deploy")
    path = fact_path(moved["uid"])
    trustkit.tamper(world.remote, TASK, lambda files: files.update({path: other[path]}))
    with world.store("bob") as b:
        before = _state(b)
        (line,) = b.fetch([TASK], repo=world.bob_repo).fetched[TASK]["ledger"]["rejected"]
        assert "belongs to task 'other-task'" in line
        assert _state(b) == before


# --- members who overreach, and removed members -----------------------------------------------


def test_a_member_who_is_no_approver_cannot_decide_here_or_elsewhere(world: World) -> None:
    _shared(world)
    with world.store("bob") as b:
        b.actor = "alice"  # the name any process of Bob's can claim: it is not what counts
        with pytest.raises(NotAllowedError, match="may not decide approvals"):
            b.decide_approval(f"{TASK}:2", True, "looks fine")
    # Bob signs a decision himself and pushes it: Alice's store refuses it
    bob_key = world.signing_key_of(world.bob)
    files = trustkit.read_files(world.remote, trustkit.ledger_ref(TASK))
    request = _first(files, "approval-request", approval=f"{TASK}:2")
    plain = {"schema": SCHEMA, "kind": "approval-decision", "task": TASK,
             "approval": f"{TASK}:2", "request": request["uid"], "state": "approved",
             "decided_by": "alice", "decided_at": "2026-01-01T00:00:00.000000Z"}  # fmt: skip
    trustkit.tamper(world.remote, TASK, lambda f: trustkit.add_fact(f, plain, bob_key))
    with world.store("alice") as a:
        (line,) = a.fetch([TASK], repo=world.alice_repo).fetched[TASK]["ledger"]["rejected"]
        assert "not an approver" in line and "bob" in line
        assert a.get_approval(f"{TASK}:2").state.value == "pending"


def test_a_removed_member_is_no_longer_heard_and_cannot_read_what_comes_after(world: World) -> None:
    _shared(world)
    bob_key = world.signing_key_of(world.bob)
    with world.store("alice") as a:
        a.unshare_task(TASK, [_recipient(world.bob)])
        a.push([TASK])
        before = _state(a)
    files = trustkit.read_files(world.remote, trustkit.ledger_ref(TASK))
    assert identity.unwrap(files["keys/data-key.age"], identity._age_identity(
        world.bob, "bob", "test")) is None  # fmt: skip
    with world.store("bob") as b:
        b.fetch([TASK], repo=world.bob_repo)  # Bob learns he was removed
        b.propose_effect(TASK, "migrate", "deploy")
        b.push([TASK])  # Bob's push may still reach the remote: he has push access
    with world.store("alice") as a:
        lines = a.fetch([TASK], repo=world.alice_repo).fetched[TASK]["ledger"]["rejected"]
        assert lines and all("does not admit" in line for line in lines)
        assert signing.fingerprint(bob_key.public) in lines[0]
        assert _state(a) == before


# --- headers and keys --------------------------------------------------------------------------


def test_header_edits_cancel_nothing_and_an_injected_recipient_gets_no_key(world: World) -> None:
    _shared(world)
    mallory_recipient = _recipient(world.mallory)

    def edit(files: trustkit.Files) -> None:
        header = trustkit.header(files)
        header.update(status="cancelled", tokens_used=10**9,
                      budget={"tokens": 1, "usd": 0.01, "minutes": 1})  # fmt: skip
        header["recipients"] = [*header["recipients"], mallory_recipient]
        trustkit.set_header(files, header)

    trustkit.tamper(world.remote, TASK, edit)
    with world.store("bob") as b:
        before = _state(b)
        (line,) = b.fetch([TASK], repo=world.bob_repo).fetched[TASK]["ledger"]["rejected"]
        assert "refused its task header" in line and "signature does not verify" in line
        assert _state(b) == before and b.get_task(TASK).status is not TaskStatus.CANCELLED
    with world.store("alice") as a:
        a.sync([TASK])
        assert a.get_task(TASK).status is not TaskStatus.CANCELLED
    files = trustkit.read_files(world.remote, trustkit.ledger_ref(TASK))
    mallory_identity = identity._age_identity(world.mallory, "mallory", "test")
    assert key_file.decode_key_file(files["keys/data-key.age"], mallory_identity) is None
    assert mallory_recipient not in trustkit.header(files)["recipients"]


def test_a_stranger_cannot_found_a_task_a_new_store_trusts_without_noticing(world: World) -> None:
    _shared(world)
    mallory = world.signing_key_of(world.mallory)
    trustkit.tamper(world.remote, TASK, lambda files: _second_genesis(files, mallory))
    alice_fp = world.signing_key_of(world.alice).fingerprint
    with world.store("carol") as c:  # Bob's identity on a new machine: nothing pinned yet
        with pytest.raises(PitstopError, match="competing owners") as raised:
            c.fetch([TASK], repo=world.carol_repo)
        assert "--expect-owner" in raised.value.message and "\n" not in raised.value.message
        assert TASK not in [t.id for t in c.list_tasks()]
        with pytest.raises(PitstopError, match="not founded by the owner you expected"):
            c.fetch(
                [TASK],
                repo=world.carol_repo,
                expect_owner=mallory.fingerprint[:4] + "XXXX-XXXX-XXXX",
            )
        fetched = c.fetch([TASK], repo=world.carol_repo, expect_owner=alice_fp.lower())
        assert fetched.fetched[TASK]["owner"] == alice_fp
        assert c.get_approval(f"{TASK}:1").state.value == "rejected"


# --- the legitimate flow -------------------------------------------------------------------------


def test_share_fetch_decide_elsewhere_and_sync_both_ways_converge(world: World) -> None:
    _shared(world)
    with world.store("bob") as b:
        b.propose_effect(TASK, "migrate", "deploy")
        b.move_effect(TASK, "migrate", EffectState.IN_PROGRESS)
        b.move_effect(TASK, "migrate", EffectState.CONFIRMED)
        b.sync([TASK])
    with world.store("alice") as a:
        report = a.sync([TASK])
        assert report["fetched"][TASK]["ledger"]["rejected"] == []
        assert a.get_effect(TASK, "migrate").state is EffectState.CONFIRMED
        a.decide_approval(f"{TASK}:2", True, "rotate it")
        a.sync([TASK])
        alice_state = _state(a)
    with world.store("bob") as b:
        b.sync([TASK])
        assert b.get_approval(f"{TASK}:2").state.value == "approved"
        assert _state(b)[3:5] == alice_state[3:5]
    with world.store("alice") as a:
        assert a.push([TASK]).tasks[TASK]["ledger_updated"] is False


def test_signatures_are_bound_to_task_and_schema() -> None:
    key = signing.create_signing_key()
    sig = key.sign(SCHEMA, "a", b"body")
    assert signing.verify(key.public, sig, SCHEMA, "a", b"body")
    assert not signing.verify(key.public, sig, SCHEMA, "b", b"body")
    assert not signing.verify(key.public, sig, "pitstop.remote-task/1", "a", b"body")
    assert not signing.verify(key.public, sig, SCHEMA, "a", b"body2")
    other = signing.create_signing_key()
    assert not signing.verify(other.public, sig, SCHEMA, "a", b"body")
    assert not signing.verify("ed25519:!!", sig, SCHEMA, "a", b"body")
    assert json.dumps(signing.fingerprint(key.public)).count("-") == 3


def test_a_replayed_old_ledger_changes_nothing_and_the_next_push_restores_it(
    world: World,
) -> None:
    _shared(world)
    ref = trustkit.ledger_ref(TASK)
    old_tip = subprocess.run(
        ["git", "rev-parse", ref], cwd=world.remote, capture_output=True, check=True, text=True
    ).stdout.strip()
    with world.store("alice") as a:
        a.decide_approval(f"{TASK}:2", True, "rotate it")
        a.push([TASK])
        alice_state = _state(a)
    with world.store("bob") as b:
        b.fetch([TASK], repo=world.bob_repo)
        bob_state = _state(b)
    # Mallory rolls the remote ledger back to before the decision (a force-push of old facts)
    subprocess.run(["git", "update-ref", ref, old_tip], cwd=world.remote, check=True)
    with world.store("bob") as b:
        report = b.sync([TASK])
        assert report["fetched"][TASK]["ledger"]["rejected"] == []
        assert _state(b)[3:5] == bob_state[3:5]
        assert b.get_approval(f"{TASK}:2").state.value == "approved"
    with world.store("alice") as a:
        a.sync([TASK])
        assert _state(a)[3:5] == alice_state[3:5]
    files = trustkit.read_files(world.remote, ref)
    assert _first(files, "approval-decision", approval=f"{TASK}:2")["state"] == "approved"


def test_through_git_daemon_a_forged_decision_is_refused_and_the_flow_converges(
    world: World,
) -> None:
    """The same over the network: everyone, Mallory included, talks to `git daemon`."""
    with trustkit.git_daemon(world.remote.parent) as port:
        url = f"git://127.0.0.1:{port}/{world.remote.name}"
        bob_key = world.signing_key_of(world.bob)
        with world.store("alice") as a:
            a.start_task(repo=world.alice_repo, objective="over the wire", task_id=TASK,
                         approvers=["alice"])  # fmt: skip
            a.request_approval(TASK, "drop the users table", risk=Risk.HIGH)
            a.share_task(TASK, [_recipient(world.bob)], signer=bob_key.public, label="bob")
            a.checkpoint(TASK, CheckpointRequest(reason=CheckpointReason.MILESTONE))
            a.push([TASK], url)
        with world.store("bob") as b:
            assert b.fetch([TASK], url, world.bob_repo).fetched[TASK]["adopted"] is True
        mallory = world.signing_key_of(world.mallory)

        trustkit.push_forgery(url, world.tmp, TASK, lambda f: _forged_decision(f, mallory))
        with world.store("bob") as b:
            (line,) = b.sync([TASK], url)["fetched"][TASK]["ledger"]["rejected"]
            assert "does not admit" in line
            assert b.get_approval(f"{TASK}:1").state.value == "pending"
        with world.store("alice") as a:
            a.decide_approval(f"{TASK}:1", False, "never")
            a.sync([TASK], url)
        with world.store("bob") as b:
            b.sync([TASK], url)
            assert b.get_approval(f"{TASK}:1").state.value == "rejected"


def test_unsharing_someone_the_task_never_had_changes_nothing(world: World) -> None:
    with world.store("alice") as a:
        a.start_task(repo=world.alice_repo, objective="never shared", task_id=TASK)
        with pytest.raises(PitstopError, match="shared with none of nobody"):
            a.unshare_task(TASK, ["nobody"])
        assert a.roster(TASK) is None  # no roster was founded on the way to the refusal
        assert store.ledger_fact_records(a.db, TASK) == {}
