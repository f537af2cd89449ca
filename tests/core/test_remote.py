"""Remote checkpoints end to end: store A pushes, store B lists, fetches, validates, resumes.

Real git everywhere: a bare repository on disk and `git daemon` on 127.0.0.1 as remotes, two
stores with their own databases and master keys, operators with their own age identities.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyrage
import pytest

from core.engine import CheckpointRequest, Engine
from core.errors import PitstopError
from core.models import CheckpointReason
from tests.core import trustkit
from tests.core.corekit import git, init_repo, write

OBJECTIVE_MARK = "OBJECTIVE-MARK-b7c1e9"
NOTE_MARK = "NOTE-MARK-44f0aa"
TAIL_MARK = "TAIL-MARK-9d2e61"
SECRET = "ghp_" + "R3m0teL3akT3stT0k3nAbCdEfGhIjKlMn0pQ"
REASON_MARK = "REASON-MARK-5a5a21"


def _identity() -> str:
    return str(pyrage.x25519.Identity.generate())


def _recipient(secret: str) -> str:
    return str(pyrage.x25519.Identity.from_str(secret).to_public())


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A project on a bare remote, the author's clone, and a second machine's clone."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    files = {f"src/mod{n}.py": f"value = {n}\n" for n in range(30)}
    files["README.md"] = "# project\n"
    author = init_repo(tmp_path / "author", files)
    # relative, as people often have it: Pitstop must resolve it against the repository
    git(author, "remote", "add", "origin", "../remote.git")
    git(author, "push", "-q", "origin", "HEAD:refs/heads/main")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    return {"remote": remote, "author": author, "other": other, "tmp": tmp_path}


def _work(engine: Engine, repo: Path, tmp: Path) -> str:
    """A task with changed, added and untracked files, evidence with a secret, a note."""
    task = engine.start_task(repo=repo, objective=f"Migrate billing {OBJECTIVE_MARK}")
    write(repo / "src/mod1.py", "value = 'changed'\n")
    write(repo / "src/new_module.py", "NEW = True\n")
    write(repo / "notes.txt", "untracked but kept\n")
    git(repo, "add", "src/new_module.py")
    log = write(tmp / "pytest.log", f"collected 3 items\n{TAIL_MARK} token={SECRET}\n3 passed\n")
    engine.add_evidence_file(task.id, log, command="pytest -q", exit_code=0, duration_s=1.5)
    engine.checkpoint(
        task.id, CheckpointRequest(reason=CheckpointReason.MILESTONE, note=f"half way {NOTE_MARK}")
    )
    return task.id


def _all_remote_bytes(remote: Path) -> bytes:
    out = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=remote,
        capture_output=True,
        check=True,
    )
    return out.stdout


def test_push_list_fetch_validate_resume_on_another_machine(
    world: dict[str, Path], tmp_path: Path
) -> None:
    with Engine(tmp_path / "store-a") as a:
        task_id = _work(a, world["author"], tmp_path)
        pushed = a.push([task_id])
        assert pushed.tasks[task_id]["checkpoints_sent"] == 1
        assert pushed.tasks[task_id]["ledger_updated"] is True
        again = a.push([task_id])
        assert again.tasks[task_id] == {"checkpoints_sent": 0, "ledger_updated": False}
        original = a.get_checkpoint(f"{task_id}@1")

    refs = git(world["remote"], "for-each-ref", "--format=%(refname)", "refs/pitstop/")
    assert refs.split() == [f"refs/pitstop/checkpoints/{task_id}", f"refs/pitstop/ledger/{task_id}"]

    with Engine(tmp_path / "store-b") as b:
        listing = b.list_remote(repo=world["other"]).tasks
        assert [t.task_id for t in listing] == [task_id]
        assert listing[0].readable and not listing[0].local
        assert [c.seq for c in listing[0].checkpoints] == [1]

        result = b.fetch([task_id], repo=world["other"])
        assert result.fetched[task_id]["adopted"] is True
        assert result.fetched[task_id]["checkpoints"] == 1
        assert b.fetch([task_id], repo=world["other"]).fetched[task_id]["checkpoints"] == 0

        task = b.get_task(task_id)
        assert task.objective == f"Migrate billing {OBJECTIVE_MARK}"
        assert task.repo_root == str(world["other"].resolve())
        fetched = b.get_checkpoint(f"{task_id}@1")
        assert fetched.note == f"half way {NOTE_MARK}"
        assert fetched.manifest == original.manifest
        assert b.verify(fetched) == []

        items = b.list_evidence(task_id)
        assert len(items) == 1
        lines = b.evidence_last_lines(items[0].id, 5)
        assert any(TAIL_MARK.encode() in line for line in lines)
        assert not any(SECRET.encode() in line for line in lines)

        into = tmp_path / "restored"
        b.checkout(f"{task_id}@1", into)
        for name in ("src/mod1.py", "src/new_module.py", "notes.txt", "README.md"):
            assert filecmp.cmp(into / name, world["author"] / name, shallow=False), name

        report = b.validate(f"{task_id}@1", offline=True)
        assert report.verdict.value in ("ready", "ready_with_warnings"), report
        plan = b.resume(f"{task_id}@1", into=tmp_path / "resumed", offline=True)
        assert (Path(plan.workdir) / "src/new_module.py").read_text() == "NEW = True\n"

        listing = b.list_remote(repo=world["other"]).tasks
        assert listing[0].local and listing[0].checkpoints[0].local

    # every object Pitstop wrote itself is well-formed, here and on the remote
    for repo in (
        world["remote"],
        *(tmp_path / "store-a" / "repos").glob("*.git"),
        *(tmp_path / "store-b" / "repos").glob("*.git"),
    ):
        subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo, check=True)


def test_nothing_readable_leaves_the_machine(world: dict[str, Path], tmp_path: Path) -> None:
    with Engine(tmp_path / "store-a") as a:
        task_id = _work(a, world["author"], tmp_path)
        a.push([task_id])
    raw = _all_remote_bytes(world["remote"])
    assert raw, "the remote holds objects"
    for marker in (OBJECTIVE_MARK, NOTE_MARK, TAIL_MARK, SECRET, "collected 3 items", "pytest -q"):
        assert marker.encode() not in raw, marker
    # the source itself is plain on purpose: it shares objects with the repository
    assert b"NEW = True" in raw


def test_a_non_recipient_sees_no_key_until_shared(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Engine(tmp_path / "store-a") as a:
        task_id = _work(a, world["author"], tmp_path)
        a.push([task_id])

    own = os.environ["PITSTOP_IDENTITY"]
    stranger = _identity()
    monkeypatch.setenv("PITSTOP_IDENTITY", stranger)
    with Engine(tmp_path / "store-c") as c:
        listing = c.list_remote(repo=world["other"]).tasks
        assert listing[0].readable is False
        result = c.fetch([task_id], repo=world["other"])
        assert result.no_key == [task_id] and result.fetched == {}
        with pytest.raises(PitstopError):
            c.get_task(task_id)
        db_bytes = b"".join(
            p.read_bytes() for p in (tmp_path / "store-c").rglob("*") if p.is_file()
        )
        assert OBJECTIVE_MARK.encode() not in db_bytes
        for store_repo in (tmp_path / "store-c" / "repos").glob("*.git"):
            held = _all_remote_bytes(store_repo)  # not even the plain snapshot objects came
            assert b"NEW = True" not in held and b"untracked but kept" not in held

    monkeypatch.setenv("PITSTOP_IDENTITY", own)
    with Engine(tmp_path / "store-a") as a:
        a.share_task(task_id, [_recipient(stranger)])
        assert a.push([task_id]).tasks[task_id]["ledger_updated"] is True

    monkeypatch.setenv("PITSTOP_IDENTITY", stranger)
    with Engine(tmp_path / "store-c") as c:
        result = c.fetch([task_id], repo=world["other"])
        assert result.fetched[task_id]["checkpoints"] == 1
        assert c.get_task(task_id).objective.endswith(OBJECTIVE_MARK)


def test_new_checkpoints_travel_both_ways(world: dict[str, Path], tmp_path: Path) -> None:
    with Engine(tmp_path / "store-a") as a:
        task_id = _work(a, world["author"], tmp_path)
        a.push([task_id])
    with Engine(tmp_path / "store-b") as b:
        b.fetch([task_id], repo=world["other"])
        plan = b.resume(f"{task_id}@1", in_place=False, into=tmp_path / "b-work", offline=True)
        del plan
        # B continues the task where it resumed it (a worktree of its clone), checkpoints there
        write(tmp_path / "b-work" / "src/mod2.py", "value = 'from b'\n")
        b.checkpoint(task_id, CheckpointRequest(reason=CheckpointReason.MILESTONE))
        sent = b.push([task_id])
        assert sent.tasks[task_id]["checkpoints_sent"] == 1
    with Engine(tmp_path / "store-a") as a:
        result = a.fetch([task_id])
        assert result.fetched[task_id]["checkpoints"] == 1
        assert [c.seq for c in a.list_checkpoints(task_id)] == [1, 2]
        assert "mod2.py" in a.diff(f"{task_id}@2")


def test_unknown_task_and_bad_remote_are_one_line_errors(
    world: dict[str, Path], tmp_path: Path
) -> None:
    with Engine(tmp_path / "store-b") as b:
        with pytest.raises(PitstopError, match="holds no task 'nope'"):
            b.fetch(["nope"], repo=world["other"])
        with pytest.raises(PitstopError, match="no remote 'upstream'"):
            b.list_remote("upstream", repo=world["other"])
        with pytest.raises(PitstopError, match="failed"):
            b.list_remote(str(tmp_path / "missing.git"), repo=world["other"])


@pytest.fixture
def daemon(world: dict[str, Path]) -> Iterator[str]:
    """`git daemon` serving the bare remote on 127.0.0.1 with pushes enabled."""
    if shutil.which("git") is None:
        pytest.skip("git missing")
    with trustkit.git_daemon(world["remote"].parent) as port:
        yield f"git://127.0.0.1:{port}/{world['remote'].name}"


def test_through_git_daemon(world: dict[str, Path], daemon: str, tmp_path: Path) -> None:
    with Engine(tmp_path / "store-a") as a:
        task_id = _work(a, world["author"], tmp_path)
        a.add_remote("shared", daemon, world["author"])
        assert a.push([task_id], "shared").tasks[task_id]["checkpoints_sent"] == 1
    with Engine(tmp_path / "store-b") as b:
        listing = b.list_remote(daemon, repo=world["other"]).tasks
        assert [t.task_id for t in listing] == [task_id]
        result = b.fetch([task_id], daemon, repo=world["other"])
        assert result.fetched[task_id]["checkpoints"] == 1
        into = tmp_path / "restored"
        b.checkout(f"{task_id}@1", into)
        assert filecmp.cmp(into / "src/mod1.py", world["author"] / "src/mod1.py", shallow=False)
        report = b.validate(f"{task_id}@1", offline=True)
        assert report.verdict.value in ("ready", "ready_with_warnings")


def test_ledger_decisions_travel_and_merge_through_sync(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.models import ApprovalState, EffectState
    from core.security import signing

    alice, bob = os.environ["PITSTOP_IDENTITY"], _identity()
    monkeypatch.setenv("PITSTOP_IDENTITY", bob)
    bob_key = signing.load_signing_key()
    monkeypatch.setenv("PITSTOP_IDENTITY", alice)
    with Engine(tmp_path / "store-a", actor="alice") as a:
        task_id = _work(a, world["author"], tmp_path)
        approval = a.request_approval(task_id, f"deploy preview {REASON_MARK}")
        a.propose_effect(task_id, "deploy-1", "deploy", target="preview")
        a.move_effect(task_id, "deploy-1", EffectState.IN_PROGRESS)
        a.share_task(task_id, [_recipient(bob)], signer=bob_key.public, label="bob")
        a.push([task_id])

    monkeypatch.setenv("PITSTOP_IDENTITY", bob)
    with Engine(tmp_path / "store-b", actor="bob") as b:
        b.fetch([task_id], repo=world["other"])
        assert b.get_approval(approval.id).state is ApprovalState.PENDING
        assert b.get_effect(task_id, "deploy-1").state is EffectState.IN_PROGRESS
        b.decide_approval(approval.id, True, f"looks fine {REASON_MARK}")
        b.move_effect(task_id, "deploy-1", EffectState.CONFIRMED, reason="saw it live")
        report = b.sync([task_id])
        assert task_id in report["pushed"]

    raw = _all_remote_bytes(world["remote"])
    assert REASON_MARK.encode() not in raw and b"saw it live" not in raw

    monkeypatch.setenv("PITSTOP_IDENTITY", alice)
    with Engine(tmp_path / "store-a", actor="alice") as a:
        a.sync([task_id])
        decided = a.get_approval(approval.id)
        assert decided.state is ApprovalState.APPROVED
        assert decided.decided_by == "bob"
        assert a.get_effect(task_id, "deploy-1").state is EffectState.CONFIRMED
        # syncing again changes nothing on either side
        again = a.sync([task_id])
        assert again["pushed"][task_id]["ledger_updated"] is False


def test_conflicting_decisions_keep_the_first_and_show_the_other(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.models import ApprovalState

    with Engine(tmp_path / "store-a", actor="alice") as a:
        task_id = _work(a, world["author"], tmp_path)
        approval = a.request_approval(task_id, "publish the package")
        a.push([task_id])
    with Engine(tmp_path / "store-b", actor="bob") as b:
        b.fetch([task_id], repo=world["other"])
    # both decide without syncing: alice first (rejects), bob a minute later (approves)
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-11-30T10:00:00+00:00")
    with Engine(tmp_path / "store-a", actor="alice") as a:
        a.decide_approval(approval.id, False, "not before the release notes")
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-11-30T10:01:00+00:00")
    with Engine(tmp_path / "store-b", actor="bob") as b:
        b.decide_approval(approval.id, True, "ship it")
        b.sync([task_id])
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-11-30T10:02:00+00:00")
    with Engine(tmp_path / "store-a", actor="alice") as a:
        a.sync([task_id])
        assert a.get_approval(approval.id).state is ApprovalState.REJECTED
    with Engine(tmp_path / "store-b", actor="bob") as b:
        b.sync([task_id])
        kept = b.get_approval(approval.id)
        assert kept.state is ApprovalState.REJECTED and kept.decided_by == "alice"
        shown = b.ledger_conflicts(task_id)
        assert len(shown) == 1, "the overruled decision is recorded as a conflict"


def test_a_host_that_refuses_custom_refs_gets_one_clear_message(
    world: dict[str, Path], tmp_path: Path
) -> None:
    hook = world["remote"] / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\nwhile read old new ref; do case $ref in refs/pitstop/*) "
        'echo "refusing $ref" >&2; exit 1;; esac; done\n'
    )
    hook.chmod(0o755)
    with Engine(tmp_path / "store-a") as a:
        task_id = _work(a, world["author"], tmp_path)
        with pytest.raises(PitstopError, match="only accepts branches and tags"):
            a.push([task_id])
    assert git(world["remote"], "for-each-ref", "refs/pitstop/") == ""


def test_files_left_out_for_secrets_never_reach_the_remote(
    world: dict[str, Path], tmp_path: Path
) -> None:
    write(world["author"] / ".env", f"API_TOKEN={SECRET}\n")
    with Engine(tmp_path / "store-a") as a:
        task_id = _work(a, world["author"], tmp_path)
        assert a.get_checkpoint(f"{task_id}@1").left_out_count >= 1
        a.push([task_id])
    raw = _all_remote_bytes(world["remote"])
    assert SECRET.encode() not in raw and b"API_TOKEN" not in raw


def test_encrypt_worktree_sends_the_snapshot_sealed(world: dict[str, Path], tmp_path: Path) -> None:
    with Engine(tmp_path / "store-a") as a:
        task_id = _work(a, world["author"], tmp_path)
        assert a.push([task_id], seal_worktree=True).tasks[task_id]["checkpoints_sent"] == 1
    raw = _all_remote_bytes(world["remote"])
    for marker in (b"NEW = True", b"untracked but kept", b"value = 'changed'"):
        assert marker not in raw, marker
    with Engine(tmp_path / "store-b") as b:
        b.fetch([task_id], repo=world["other"])
        fetched = b.get_checkpoint(f"{task_id}@1")
        assert b.verify(fetched) == []
        into = tmp_path / "restored"
        b.checkout(f"{task_id}@1", into)
        for name in ("src/mod1.py", "src/new_module.py", "notes.txt"):
            assert filecmp.cmp(into / name, world["author"] / name, shallow=False), name
        assert b.validate(f"{task_id}@1", offline=True).verdict.value in (
            "ready",
            "ready_with_warnings",
        )
        # pushing from B reuses the fetched commit: nothing new to send
        assert b.push([task_id]).tasks[task_id]["checkpoints_sent"] == 0


def test_the_fetching_store_points_its_checkpoint_ref_at_the_newest(
    world: dict[str, Path], tmp_path: Path
) -> None:
    with Engine(tmp_path / "store-a") as a:
        task_id = _work(a, world["author"], tmp_path)
        a.push([task_id])
    with Engine(tmp_path / "store-b") as b:
        b.fetch([task_id], repo=world["other"])
        newest = b.get_checkpoint(f"{task_id}@1").commit
        (store_repo,) = (tmp_path / "store-b" / "repos").glob("*.git")
        ref = git(store_repo, "rev-parse", f"refs/pitstop/checkpoints/{task_id}")
        assert ref.strip() == newest


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen missing")
def test_an_ssh_ed25519_recipient_reads_with_their_own_ssh_key(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dana@laptop", "-f", str(key)],
        check=True,
    )
    with Engine(tmp_path / "store-a") as a:
        task_id = _work(a, world["author"], tmp_path)
        a.share_task(task_id, [str(key.with_suffix(".pub"))])
        a.push([task_id])
    monkeypatch.setenv("PITSTOP_IDENTITY", str(key))
    with Engine(tmp_path / "store-d") as d:
        listing = d.list_remote(repo=world["other"]).tasks
        assert listing[0].readable
        assert d.fetch([task_id], repo=world["other"]).fetched[task_id]["checkpoints"] == 1
        assert d.get_task(task_id).objective.endswith(OBJECTIVE_MARK)


def test_a_push_over_someone_elses_push_merges_instead_of_losing_it(
    world: dict[str, Path], tmp_path: Path
) -> None:
    from core.models import ApprovalState

    with Engine(tmp_path / "store-a", actor="alice") as a:
        task_id = _work(a, world["author"], tmp_path)
        first = a.request_approval(task_id, "open the pull request")
        a.push([task_id])
    with Engine(tmp_path / "store-b", actor="bob") as b:
        b.fetch([task_id], repo=world["other"])
        b.decide_approval(first.id, True, "go")
        b.push([task_id])
    remote_before = git(world["remote"], "rev-parse", f"refs/pitstop/ledger/{task_id}").strip()
    with Engine(tmp_path / "store-a", actor="alice") as a:
        # A has not fetched: what it knows of the remote ledger is stale
        second = a.request_approval(task_id, "post the release note")
        a.push([task_id])
        merged = git(world["remote"], "rev-parse", f"refs/pitstop/ledger/{task_id}").strip()
        parents = git(world["remote"], "rev-list", "--parents", "-n", "1", merged).split()[1:]
        assert remote_before in parents, "A's push merged B's ledger instead of replacing it"
    with Engine(tmp_path / "store-b", actor="bob") as b:
        b.sync([task_id])
        assert b.get_approval(first.id).state is ApprovalState.APPROVED
        assert b.get_approval(second.id).state is ApprovalState.PENDING


def test_refs_are_read_like_git_reads_them_loose_and_packed(tmp_path: Path) -> None:
    from core.git import plumbing

    repo = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    head = git(repo, "rev-parse", "HEAD").strip()
    git_dir = repo / ".git"
    for name in ("refs/pitstop/ledger/t1", "refs/pitstop/remotes/k/ledger/t2"):
        git(repo, "update-ref", name, head)
    git(repo, "pack-refs", "--all")
    git(repo, "update-ref", "refs/pitstop/checkpoints/t3", head)  # loose beside packed
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/pitstop/")
    expected = dict(line.split(" ", 1) for line in out.splitlines())
    assert plumbing.refs_under(git_dir, "refs/pitstop/") == expected
    assert len(expected) == 3
