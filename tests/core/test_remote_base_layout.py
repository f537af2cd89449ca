"""The base commit on a remote, both ways it has been written (issue 21).

An older Pitstop made each checkpoint's remote commit take the base commit as its second parent,
so a push sent the base commit's whole history. Now the remote commit's only parent is the
previous checkpoint's, and the base travels as `base/` (its tree) and `base.commit` (its bytes):
a shallow store can push, and a fetching store keeps the base commit as a shallow commit. A
store fetches, verifies, diffs against base, validates, restores and pushes on either layout.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from corekit import git, git_bytes, init_repo, only_store_repo, write

from core import clock, store
from core.engine import Engine
from core.git import plumbing
from core.sharing.attestation import attest
from core.sharing.checkpoint_export import export_checkpoint
from core.store.db import write_txn


def _project(path: Path) -> Path:
    repo = init_repo(path, {"README.md": "# project\n", "src/app.py": "print('v0')\n"})
    for number in range(5):
        write(repo / "src/app.py", f"print('v{number + 1}')\n")
        git(repo, "commit", "-q", "-am", f"revision {number}")
    return repo


def _export_rewritten(
    engine: Engine,
    task_id: str,
    entries: Callable[[list[str]], list[str]],
    base_parent: bool,
    sealed: bool = False,
) -> None:
    """Export the task's checkpoints with their top-level tree entries passed through
    `entries` (ls-tree lines), the base commit a second parent when `base_parent`, each
    recorded and attested by this store as its own export."""
    store_repo = only_store_repo(engine.paths.root)
    task = store.get_task(engine.db, task_id, engine.keys)
    previous: str | None = None
    for checkpoint in store.list_checkpoints(engine.db, task_id):
        assert checkpoint.base_commit
        current = export_checkpoint(engine, store_repo, task, checkpoint.seq, None, sealed)
        listing = git_bytes(store_repo, "ls-tree", current).decode().splitlines()
        kept = entries(listing)
        tree = git_bytes(store_repo, "mktree", input=("\n".join(kept) + "\n").encode()).decode()
        older = plumbing.commit(
            store_repo,
            tree.strip(),
            [p for p in (previous, checkpoint.base_commit if base_parent else None) if p],
            f"pitstop checkpoint {task_id}@{checkpoint.seq}",
            clock.git_timestamp(checkpoint.created_at),
        )
        with write_txn(engine.db):
            store.record_export(engine.db, task_id, checkpoint.seq, older)
            attest(engine, store_repo, task_id, older)
        previous = older


def _without_base(listing: list[str]) -> list[str]:
    kept = [line for line in listing if not line.endswith(("\tbase", "\tbase.commit"))]
    assert len(kept) == len(listing) - 2
    return kept


def _as_an_older_pitstop_wrote(engine: Engine, repo: Path, task_id: str, sealed: bool) -> None:
    """Export the task's checkpoints as an older Pitstop did: its store held the base commit's
    history, and each remote commit's parents were the previous one and the base commit."""
    store_repo = only_store_repo(engine.paths.root)
    git_bytes(store_repo, "fetch", "-q", "--unshallow", str(repo), "HEAD")
    assert not (store_repo / "shallow").exists()
    _export_rewritten(engine, task_id, _without_base, base_parent=True, sealed=sealed)


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "sealed worktree"])
@pytest.mark.parametrize("layout", ["base as second parent", "base carried beside"])
def test_a_store_fetches_and_uses_either_layout(layout: str, sealed: bool, tmp_path: Path) -> None:
    repo = _project(tmp_path / "repo")
    write(repo / "src/app.py", "print('work in progress')\n")
    write(repo / "notes.md", "untracked\n")
    remote = tmp_path / "remote.git"
    onward = tmp_path / "onward.git"
    for bare in (remote, onward):
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    with Engine(tmp_path / "store-a") as a:
        a.start_task(repo=repo, objective="either layout", task_id="t1")
        first = a.checkpoint("t1").checkpoint
        write(repo / "src/app.py", "print('second')\n")
        second = a.checkpoint("t1").checkpoint
        assert first is not None and second is not None and first.base_commit
        base = first.base_commit
        diffs = [a.diff(cp.ref, "base") for cp in (first, second)]
        if layout == "base as second parent":
            _as_an_older_pitstop_wrote(a, repo, "t1", sealed)
        pushed = a.push(["t1"], str(remote), seal_worktree=sealed)
        assert pushed.tasks["t1"]["checkpoints_sent"] == 2
    tip = git_bytes(remote, "rev-parse", "refs/pitstop/checkpoints/t1").decode().strip()
    parents = git_bytes(remote, "rev-parse", f"{tip}^@", f"{tip}~1^@").decode().split()
    base_parent = git(repo, "rev-parse", f"{base}^").strip()
    names = git_bytes(remote, "ls-tree", "--name-only", tip).decode().split()
    assert ("snapshot.pack.enc" in names, "worktree" in names) == (sealed, not sealed)
    if layout == "base as second parent":
        assert parents[1:] == [base, base]  # the second: the first and base; the first: base
        assert git_bytes(remote, "cat-file", "-t", base_parent).strip() == b"commit"
    else:
        assert len(parents) == 1  # the second's parent is the first; the first has none
        assert git_bytes(remote, "cat-file", "-t", f"{tip}:base.commit").strip() == b"blob"

    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(repo), str(other)], check=True)
    with Engine(tmp_path / "store-b") as b:
        fetched = b.fetch(["t1"], remote=str(remote), repo=other).fetched["t1"]
        assert fetched["checkpoints"] == 2, fetched
        store_b = only_store_repo(tmp_path / "store-b")
        assert git_bytes(store_b, "cat-file", "-t", base).strip() == b"commit"
        if layout == "base carried beside":
            assert (store_b / "shallow").read_text().split() == [base]
            held = git_bytes(
                store_b, "cat-file", "--batch-check", input=f"{base_parent}\n".encode()
            )
            assert held.endswith(b"missing\n")
        for seq, expected in ((1, diffs[0]), (2, diffs[1])):
            cp = b.get_checkpoint(f"t1@{seq}")
            assert cp.base_commit == base
            assert b.verify(cp) == []
            assert b.diff(cp.ref, "base") == expected
            report = b.validate(cp.ref, offline=True)
            assert report.verdict.value in ("ready", "ready_with_warnings"), report
        b.checkout("t1@2", tmp_path / "restored")
        assert (tmp_path / "restored/src/app.py").read_text() == "print('second')\n"
        assert (tmp_path / "restored/notes.md").read_text() == "untracked\n"
        assert b.push(["t1"], str(onward)).tasks["t1"]["checkpoints_sent"] == 2
    assert git_bytes(onward, "rev-parse", "refs/pitstop/checkpoints/t1").decode().strip() == tip
    for bare in (remote, onward, store_b, only_store_repo(tmp_path / "store-a")):
        git_bytes(bare, "fsck", "--strict", "--no-dangling")


def _blob(store_repo: Path, data: bytes) -> str:
    return git_bytes(store_repo, "hash-object", "-w", "--stdin", input=data).decode().strip()


@pytest.mark.parametrize("forgery", ["another commit's bytes", "another tree", "no base at all"])
def test_a_carried_base_commit_that_is_not_the_base_is_refused(
    forgery: str, tmp_path: Path
) -> None:
    """Even an attested remote commit (its author's own store signed it) is refused when what
    it carries is not the base commit its checkpoint.json names: the fetching store would keep
    a base that diffs and validation then trust."""
    repo = _project(tmp_path / "repo")
    write(repo / "src/app.py", "print('work in progress')\n")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    with Engine(tmp_path / "store-a") as a:
        a.start_task(repo=repo, objective="forged base", task_id="t1")
        cp = a.checkpoint("t1").checkpoint
        assert cp is not None and cp.base_commit
        store_a = only_store_repo(tmp_path / "store-a")
        parent = git(repo, "rev-parse", f"{cp.base_commit}^").strip()
        other_raw = git_bytes(repo / ".git", "cat-file", "commit", parent)
        other_tree = git(repo, "rev-parse", f"{parent}^{{tree}}").strip()
        git_bytes(store_a, "fetch", "-q", str(repo), parent)  # so the store can name its tree

        def edit(listing: list[str]) -> list[str]:
            kept = _without_base(listing)
            base = [line for line in listing if line.endswith("\tbase")]
            raw = [line for line in listing if line.endswith("\tbase.commit")]
            if forgery == "another commit's bytes":
                return [*kept, *base, f"100644 blob {_blob(store_a, other_raw)}\tbase.commit"]
            if forgery == "another tree":
                return [*kept, *raw, f"040000 tree {other_tree}\tbase"]
            return kept

        _export_rewritten(a, "t1", edit, base_parent=False)
        a.push(["t1"], str(remote))
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    with Engine(tmp_path / "store-b") as b:
        fetched = b.fetch(["t1"], remote=str(remote), repo=other).fetched["t1"]
        assert fetched["checkpoints"] == 0, fetched
        (line,) = fetched["refused_checkpoints"]
        why = {
            "another commit's bytes": f"its base commit is not {cp.base_commit[:12]}",
            "another tree": "its base commit does not name the base tree it carries",
            "no base at all": f"it carries neither its base commit {cp.base_commit[:12]}",
        }[forgery]
        assert line.startswith("checkpoint t1@1 refused: ") and why in line, line
        assert b.list_checkpoints("t1") == []
        store_b = only_store_repo(tmp_path / "store-b")
        assert not (store_b / "shallow").exists()
        missing = git_bytes(
            store_b, "cat-file", "--batch-check", input=f"{cp.base_commit}\n".encode()
        )
        assert missing.endswith(b"missing\n")
