"""A checkpoint costs few git processes (issue 8: a hook that checkpoints runs on every
compaction and session end), and each shortcut gives exactly what the git command it replaces
gave: the same commit ids, the same ref, the same changed files, lockfiles and upstream facts.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest
from corekit import git, git_bytes, make_objects_loose, only_store_repo, spy_git_starts, write

from core import snapshot
from core.engine import CheckpointRequest, Engine
from core.errors import DamagedCheckpointError, NotAGitRepoError
from core.git import plumbing
from core.git.reader import object_sizes
from core.git.run import PITSTOP_IDENT
from core.models import ChangedFile, Checkpoint, CheckpointState
from core.snapshot import store_repos
from core.snapshot.source import head_without_upstream


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every git subcommand this process starts, in order."""
    yield spy_git_starts(monkeypatch, lambda argv: argv[1] if len(argv) > 1 else "")


def _forced(engine: Engine, task_id: str = "t1") -> Checkpoint:
    result = engine.checkpoint(task_id, CheckpointRequest(force=True))
    assert result.checkpoint is not None
    return result.checkpoint


def test_a_checkpoint_after_another_runs_few_git_processes(
    engine: Engine, repo: Path, git_calls: list[str]
) -> None:
    engine.start_task(repo=repo, objective="count", task_id="t1")
    write(repo / "notes.txt", "work in progress\n")
    _forced(engine)

    git_calls.clear()
    unchanged = _forced(engine)
    # config beside one rev-parse for the repository and its HEAD, and status; the staged
    # tree is the last one (the index is the same bytes: core/snapshot/staged_tree.py), the
    # work tree's tree is written in Python (a plain repository: no attributes, no converting
    # config), nothing else is written through git, and what is re-read (commits, manifests,
    # trees) is loose or packed, read without cat-file; the previous checkpoint's trees are
    # not walked again (nothing left the store since)
    assert sorted(git_calls) == ["config", "rev-parse", "status"], git_calls
    assert "cat-file" not in git_calls
    assert "rev-list" not in git_calls
    assert engine.verify(unchanged) == []

    write(repo / "notes.txt", "more work\n")
    write(repo / "src/app.py", "print('changed')\n")
    git_calls.clear()
    edited = _forced(engine)
    # plus the diff against the previous trees, the stored check of what it added, and the
    # changed files against the base commit
    assert len(git_calls) <= 8, git_calls
    assert "rev-list" not in git_calls and "write-tree" not in git_calls  # nothing staged
    for forbidden in (
        "hash-object",
        "mktree",
        "commit-tree",
        "update-ref",
        "ls-tree",
        "--version",
        "update-index",
        "cat-file",
    ):
        assert forbidden not in git_calls
    assert engine.verify(edited) == []


def test_checkpoint_commit_has_the_ids_git_plumbing_gives(engine: Engine, repo: Path) -> None:
    engine.start_task(repo=repo, objective="parity", task_id="t1")
    write(repo / "src/app.py", "print('parity')\n")
    first = _forced(engine)
    second = _forced(engine)
    store = only_store_repo(engine.paths.root)
    assert second.commit and first.commit and second.worktree_tree and second.index_tree
    header = git_bytes(store, "cat-file", "blob", f"{second.commit}:pitstop.json")
    sealed = git_bytes(store, "cat-file", "blob", f"{second.commit}:{snapshot.MANIFEST_FILE}")
    header_oid = git_bytes(store, "hash-object", "--stdin", input=header).decode().strip()
    manifest_oid = git_bytes(store, "hash-object", "--stdin", input=sealed).decode().strip()
    listing = (
        f"100644 blob {header_oid}\tpitstop.json\n"
        f"100644 blob {manifest_oid}\t{snapshot.MANIFEST_FILE}\n"
        f"040000 tree {second.worktree_tree}\tworktree\n"
        f"040000 tree {second.index_tree}\tindex\n"
    )
    root = git_bytes(store, "mktree", input=listing.encode()).decode().strip()
    message = git_bytes(store, "log", "-1", "--format=%B", second.commit).decode().strip()
    when = git_bytes(store, "log", "-1", "--format=%ct", second.commit).decode().strip()
    env = {
        **os.environ,
        **PITSTOP_IDENT,
        "GIT_AUTHOR_DATE": f"@{when} +0000",
        "GIT_COMMITTER_DATE": f"@{when} +0000",
        "GIT_DIR": str(store),
    }
    parents = ["-p", first.commit, "-p", second.base_commit or ""]
    expected = subprocess.run(
        ["git", "commit-tree", root, "-m", message, *parents],
        env=env,
        capture_output=True,
        check=True,
    )
    assert expected.stdout.decode().strip() == second.commit
    fsck = subprocess.run(
        ["git", f"--git-dir={store}", "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        check=False,
    )
    assert fsck.returncode == 0, fsck.stderr


def test_checkpoint_ref_is_written_as_git_writes_it(engine: Engine, repo: Path) -> None:
    engine.start_task(repo=repo, objective="ref", task_id="t1")
    store_root = engine.paths.root
    first = _forced(engine)
    store = only_store_repo(store_root)
    ref = "refs/pitstop/checkpoints/t1"
    lock = store / f"{ref}.lock"
    lock.write_text("left by a killed writer\n")  # a writer killed mid-update
    second = _forced(engine)
    assert not lock.exists()
    resolved = git_bytes(store, "rev-parse", "--verify", ref).decode().strip()
    assert resolved == second.commit != first.commit
    assert git_bytes(store, "for-each-ref", "--format=%(refname)", ref).decode().split() == [ref]
    ref_file = store / ref
    assert ref_file.read_text() == f"{second.commit}\n"
    assert stat.S_IMODE(ref_file.stat().st_mode) == 0o600
    for directory in (store / "refs/pitstop", store / "refs/pitstop/checkpoints"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert [p.name for p in ref_file.parent.iterdir()] == ["t1"]  # no lock or temp file left


def test_lockfiles_and_changed_files_match_a_fresh_reading(
    engine: Engine, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(repo / "uv.lock", "version = 1\n")
    write(repo / "web/package-lock.json", "{}\n")
    write(repo / "web/requirements-dev.txt", "pytest\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "locks")
    engine.start_task(repo=repo, objective="locks", task_id="t1")

    def into_a_directory() -> None:
        (repo / "uv.lock").unlink()
        write(repo / "uv.lock/oops.txt", "a directory now\n")

    steps = [
        lambda: None,  # the first checkpoint: read from the whole tree
        lambda: write(repo / "uv.lock", "version = 2\n"),  # changed, unstaged
        lambda: (repo / "web/package-lock.json").unlink(),  # removed
        lambda: write(repo / "api/poetry.lock", "new\n"),  # added, untracked
        lambda: None,  # nothing changed: everything carried over
        lambda: git(repo, "mv", "web/requirements-dev.txt", "web/requirements-test.txt"),
        into_a_directory,
    ]
    lockfiles_in, changed_files = snapshot.lockfiles_in, snapshot.changed_files
    walked: list[str] = []
    diffed: list[str] = []

    def walk(store_repo: Path, tree: str) -> dict[str, str]:
        walked.append(tree)
        return lockfiles_in(store_repo, tree)

    def diff(store_repo: Path, old: str, new: str) -> list[ChangedFile]:
        diffed.append(new)
        return changed_files(store_repo, old, new)

    monkeypatch.setattr(snapshot, "lockfiles_in", walk)
    monkeypatch.setattr(snapshot, "changed_files", diff)
    for step in steps:
        step()
        checkpoint = engine.get_checkpoint(_forced(engine).ref)
        assert checkpoint.manifest and checkpoint.worktree_tree and checkpoint.base_commit
        store = only_store_repo(engine.paths.root)
        assert checkpoint.manifest["lockfiles"] == lockfiles_in(store, checkpoint.worktree_tree)
        base_tree = snapshot.tree_of_commit(store, checkpoint.base_commit)
        fresh = changed_files(store, base_tree, checkpoint.worktree_tree)
        recorded = checkpoint.manifest["snapshot"]["changed_files"]
        assert recorded == [change._asdict() for change in fresh]
    assert len(walked) == 1  # only the first checkpoint walked its whole tree
    # the unchanged one reused its predecessor's list, and the first edit updated it for the one
    # path it changed; from the deletion on, a rename could pair: the whole diff each time
    assert len(diffed) == len(steps) - 2


def test_changed_files_reads_renames_binaries_and_deletions(repo: Path, tmp_path: Path) -> None:
    write(repo / "big.txt", "".join(f"line {n}\n" for n in range(40)))
    write(repo / "blob.bin", b"\0\1\2")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "more")
    old = git(repo, "rev-parse", "HEAD^{tree}").strip()
    git(repo, "mv", "big.txt", "moved big.txt")
    write(repo / "moved big.txt", "".join(f"line {n}\n" for n in range(41)))
    write(repo / "blob.bin", b"\0\1\3")
    git(repo, "rm", "-q", "delete_me.txt")
    write(repo / "new file.txt", "new\n")
    git(repo, "add", "-A")
    new = git(repo, "write-tree").strip()
    changes = {c.path: c for c in snapshot.changed_files(repo / ".git", old, new)}
    assert set(changes) == {"moved big.txt", "blob.bin", "delete_me.txt", "new file.txt"}
    assert changes["moved big.txt"].status == "R"
    assert changes["moved big.txt"].old_path == "big.txt"
    assert (changes["moved big.txt"].added, changes["moved big.txt"].deleted) == (1, 0)
    assert changes["blob.bin"].status == "M" and changes["blob.bin"].added is None
    assert (changes["delete_me.txt"].status, changes["delete_me.txt"].deleted) == ("D", 1)
    assert (changes["new file.txt"].status, changes["new file.txt"].added) == ("A", 1)


def _upstream_facts(engine: Engine) -> dict[str, object]:
    checkpoint = engine.get_checkpoint(_forced(engine).ref)
    assert checkpoint.manifest
    repository = checkpoint.manifest["repository"]
    return {"upstream": repository["upstream"], "remotes": repository["remotes"]}


def test_upstream_and_remotes_match_the_separate_questions(
    engine: Engine, repo: Path, tmp_path: Path, git_calls: list[str]
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", f"https://user:secret@example.com/{remote.name}")
    git(repo, "remote", "add", "local", str(remote))
    git(repo, "push", "-q", "local", "main")
    git(repo, "branch", "-q", "--set-upstream-to=local/main", "main")
    engine.start_task(repo=repo, objective="upstream", task_id="t1")
    source = snapshot.resolve_source_repo(repo)
    head = git(repo, "rev-parse", "HEAD").strip()

    facts = _upstream_facts(engine)
    git_calls.clear()
    assert _upstream_facts(engine) == facts
    assert git_calls.count("rev-parse") == 1  # the repository, HEAD and its upstream at once
    assert facts["upstream"] == {"name": "local/main", "head": head}
    assert facts["remotes"] == {"origin": "https://example.com/remote.git", "local": str(remote)}
    expected = snapshot.repo_facts(source)
    assert facts["upstream"] == {"name": expected.upstream, "head": expected.upstream_head}

    git(repo, "checkout", "-q", "-b", "topic")  # a branch without an upstream, beside one with
    assert _upstream_facts(engine)["upstream"] == {"name": None, "head": None}
    git(repo, "checkout", "-q", "--detach")
    assert _upstream_facts(engine)["upstream"] == {"name": None, "head": None}
    git(repo, "checkout", "-q", "main")
    git(repo, "update-ref", "-d", "refs/remotes/local/main")  # the upstream branch is gone
    expected = snapshot.repo_facts(source)
    assert _upstream_facts(engine)["upstream"] == {
        "name": expected.upstream,
        "head": expected.upstream_head,
    }


def test_git_version_is_cached_per_git_executable(tmp_path: Path) -> None:
    asked = snapshot.git_version()
    assert snapshot.git_version(tmp_path) == asked
    cache = tmp_path / "git-version"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    key = cache.read_text().split("\n", 1)[0]
    cache.write_text(f"{key}\nfrom the cache")
    assert snapshot.git_version(tmp_path) == "from the cache"
    cache.write_text("another git\nstale")
    assert snapshot.git_version(tmp_path) == asked


def test_an_object_the_store_failed_to_copy_leaves_the_checkpoint_incomplete(
    engine: Engine, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.start_task(repo=repo, objective="uncopied", task_id="t1")
    _forced(engine)
    write(repo / "staged.txt", "STAGED: ONLY IN THE USER'S OBJECTS\n")
    git(repo, "add", "staged.txt")
    write(repo / "staged.txt", "in the work tree: hashed into the store itself\n")

    def copy_nothing(
        store_repo: Path,
        source: object,
        oids: list[str],
        base_commit: object = None,
        held_before: object = None,
        packed_now: Collection[str] = (),
    ) -> tuple[int, int]:
        sizes = object_sizes(store_repo, [oid for oid in oids if oid not in packed_now])
        return 0, sum(1 for size in sizes.values() if size is None)

    monkeypatch.setattr(store_repos, "copy_missing_objects", copy_nothing)
    with pytest.raises(DamagedCheckpointError, match="missing from the store"):
        engine.checkpoint("t1", CheckpointRequest(force=True))
    latest = engine.list_checkpoints("t1")[-1]
    assert latest.state is CheckpointState.INCOMPLETE and latest.seq == 2


def test_locate_agrees_with_resolve_and_refuses_the_same_paths(repo: Path, tmp_path: Path) -> None:
    located = snapshot.locate(repo / "src/app.py")
    assert located.source == snapshot.resolve_source_repo(repo)
    assert located.head is not None
    assert located.head.commit == git(repo, "rev-parse", "HEAD").strip()
    assert (located.head.branch, located.head.upstream) == ("main", None)

    unborn = tmp_path / "unborn"
    git(tmp_path, "init", "-q", "-b", "trunk", str(unborn))
    fresh = snapshot.locate(unborn)
    assert fresh.source == snapshot.resolve_source_repo(unborn) and fresh.head is None

    for nowhere in (tmp_path / "missing", tmp_path):
        with pytest.raises(NotAGitRepoError):
            snapshot.locate(nowhere)


def test_locate_reads_the_branch_git_would_name(repo: Path, tmp_path: Path) -> None:
    """Without an upstream the branch comes from the HEAD file: the same answer as
    `git rev-parse --symbolic-full-name HEAD`, on a branch, detached, and in a linked worktree."""

    def branch_git_names(where: Path) -> str | None:
        ref = git(where, "rev-parse", "--symbolic-full-name", "HEAD").strip()
        return ref.removeprefix("refs/heads/") if ref != "HEAD" else None

    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side/topic", str(linked))
    detached = tmp_path / "detached"
    git(repo, "worktree", "add", "-q", "--detach", str(detached))
    for where, expected in ((repo, "main"), (linked, "side/topic"), (detached, None)):
        located = snapshot.locate(where)
        assert located.head is not None
        assert located.head.branch == expected == branch_git_names(where)
        assert located.head.commit == git(where, "rev-parse", "HEAD").strip()
        assert located.source == snapshot.resolve_source_repo(where)


def test_the_object_reader_answers_as_cat_file_does(engine: Engine, repo: Path) -> None:
    """Loose and packed objects are read from their files, the rest through cat-file: every
    kind of spec gives what `git cat-file --batch` gives, before and after the objects are
    packed."""
    engine.start_task(repo=repo, objective="reads", task_id="t1")
    write(repo / "src/deep/er/file.txt", "deep\n")
    first = _forced(engine)
    write(repo / "notes.txt", "more\n")
    second = _forced(engine)
    store = only_store_repo(engine.paths.root)
    assert first.commit and second.commit and second.worktree_tree
    found_loose = [
        second.commit,
        f"{second.commit}^{{tree}}",
        f"{second.commit}:{snapshot.MANIFEST_FILE}",
        f"{second.commit}:worktree",
        f"{second.commit}:worktree/src/deep/er/file.txt",
        f"{second.commit}:worktree/src/deep/er/",
        f"{second.worktree_tree}:src/deep",
        f"{second.worktree_tree}^{{tree}}",
        f"{first.commit}:pitstop.json",
    ]
    asked_of_git = [  # missing, abbreviated, named by a ref: cat-file answers
        f"{second.commit}:worktree/no/such/file",
        f"{second.commit}:worktree/notes.txt/x",
        second.commit[:12],
        "0" * 40,
        "refs/pitstop/checkpoints/t1:pitstop.json",
    ]

    def cat_file(spec: str) -> tuple[str, bytes] | None:
        out = git_bytes(store, "cat-file", "--batch", input=spec.encode() + b"\n")
        header, _, rest = out.partition(b"\n")
        fields = header.decode().split()
        return (fields[1], rest[: int(fields[2])]) if len(fields) == 3 else None

    for packed in (False, True):
        if packed:
            git(store, "repack", "-a", "-d", "-q")
            git(store, "prune-packed")
        reader = plumbing.ObjectReader(store)
        try:
            for spec in found_loose:
                assert reader.read(spec) == cat_file(spec), (packed, spec)
            # loose or packed (whole or a delta), all read from the files: no cat-file at all
            assert reader._process is None, packed
            for spec in asked_of_git:
                assert reader.read(spec) == cat_file(spec), (packed, spec)
        finally:
            reader.close()


def test_a_damaged_previous_checkpoint_starts_the_chain_afresh(engine: Engine, repo: Path) -> None:
    """The previous checkpoint's objects are walked while the next snapshot is taken; when one
    is gone from the store, that snapshot is not built on it: the new checkpoint stores what it
    needs again, verifies, and restores byte for byte."""
    engine.start_task(repo=repo, objective="afresh", task_id="t1")
    write(repo / "only-here.txt", "a file the store holds once\n")
    first = _forced(engine)
    store = only_store_repo(engine.paths.root)
    blob = git(repo, "hash-object", "only-here.txt").strip()
    make_objects_loose(store)  # a checkpoint packs its objects: one file each, to delete one
    loose = store / "objects" / blob[:2] / blob[2:]
    assert loose.exists()
    loose.chmod(0o600)
    loose.unlink()  # damage: the previous checkpoint can no longer be restored
    assert engine.verify(first) != []

    write(repo / "notes.txt", "the next step\n")
    second = _forced(engine)
    assert second.state is CheckpointState.COMPLETE
    assert engine.verify(second) == []
    git(
        store, "cat-file", "-e", blob
    )  # stored again: the new chain does not lean on the damaged one
    checkpoint = engine.get_checkpoint(second.ref)
    assert checkpoint.manifest and checkpoint.manifest["checkpoint"]["parent_commit"] is None


def test_an_old_style_symlinked_head_still_names_its_branch(engine: Engine, repo: Path) -> None:
    """A HEAD that is a symbolic link to its branch (what git wrote long ago, and still reads)
    is not taken for a detached HEAD: the checkpoint records the branch git names."""
    head = repo / ".git" / "HEAD"
    head.unlink()
    head.symlink_to("refs/heads/main")
    assert git(repo, "rev-parse", "--symbolic-full-name", "HEAD").strip() == "refs/heads/main"
    engine.start_task(repo=repo, objective="symlinked head", task_id="t1")
    write(repo / "notes.txt", "work\n")
    assert _forced(engine).branch == "main"


def test_a_reftable_heads_stub_is_not_read_as_a_branch(repo: Path) -> None:
    """A reftable repository keeps `ref: refs/heads/.invalid` in its HEAD file (so that older
    git refuses it); the branch is then asked through git, never recorded as `.invalid`."""
    source = snapshot.resolve_source_repo(repo)
    commit = git(repo, "rev-parse", "HEAD").strip()
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    head = source.git_dir / "HEAD"
    assert head_without_upstream(source, commit=commit, tree=tree) == (
        snapshot.HeadFacts(commit, tree, "main")
    )
    head.write_text("ref: refs/heads/.invalid\n")
    assert head_without_upstream(source, commit=commit, tree=tree) is None
