"""A task's first push sends what the remote lacks, not the base commit's tree again (issue 21).

The store holds a task's base commit at depth 1, and a checkpoint's remote commit carries that
commit's tree as `base/`. A remote that has the base in its history already holds every blob of
it; the first push must not send them again — also when the remote's branch has moved past the
base since (the user's repository, having fetched it, tells git what that branch holds).

Each push into the bare remote lands as one pack (`receive.unpackLimit=1`), so the objects and
bytes the remote received are the new packs' own, read from their indexes.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.engine import CheckpointRequest, Engine
from tests.core import trustkit
from tests.core.corekit import git, init_repo, only_store_repo, write

FILES = {f"src/mod{n:03}.py": f"value = {n}\n" + "# filler\n" * 150 for n in range(120)}


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Path]:
    """A repository with history on a bare remote that keeps every push as its own pack."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    git(remote, "config", "receive.unpackLimit", "1")
    author = init_repo(tmp_path / "author", FILES)
    for number in range(3):
        write(author / "src/mod000.py", f"value = 'revision {number}'\n")
        git(author, "commit", "-q", "-am", f"revision {number}")
    git(author, "remote", "add", "origin", str(remote))
    git(author, "push", "-q", "origin", "HEAD:refs/heads/main")
    return {"remote": remote, "author": author, "tmp": tmp_path}


def _packs(remote: Path) -> dict[Path, set[str]]:
    """Each pack of the remote: the ids of the objects it holds."""
    packs = {}
    for index in sorted((remote / "objects" / "pack").glob("*.idx")):
        with index.open("rb") as handle:
            listing = subprocess.run(
                ["git", "show-index"], stdin=handle, capture_output=True, check=True
            )
        packs[index] = {line.split()[1] for line in listing.stdout.decode().splitlines()}
    return packs


def _received(remote: Path, before: dict[Path, set[str]]) -> tuple[set[str], int]:
    """The objects the remote received since `before`, and the bytes of the packs they came in."""
    new = {index: oids for index, oids in _packs(remote).items() if index not in before}
    size = sum(index.with_suffix(".pack").stat().st_size for index in new)
    return set().union(*new.values()) if new else set(), size


def _blobs(repo: Path, commit: str) -> set[str]:
    listing = git(repo, "ls-tree", "-r", commit)
    return {line.split()[2] for line in listing.splitlines() if line.split()[1] == "blob"}


def _advance_remote(project: dict[str, Path]) -> None:
    """Someone else moves the remote's main past the author's base (the author fetches it)."""
    other = project["tmp"] / "colleague"
    subprocess.run(
        ["git", "clone", "-q", "-b", "main", str(project["remote"]), str(other)], check=True
    )
    for name in ("src/mod050.py", "src/mod051.py"):
        write(other / name, "value = 'moved on'\n")
    write(other / "src/added.py", "ADDED = 1\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "moved on")
    git(other, "push", "-q", "origin", "HEAD:main")
    git(project["author"], "fetch", "-q", "origin")


def _first_push(project: dict[str, Path], url: str | None = None) -> tuple[str, set[str], int]:
    """Start a task on the author's HEAD, change two files, checkpoint and push it (the task's
    first push): (its base commit, the objects and bytes the remote received)."""
    author = project["author"]
    base = git(author, "rev-parse", "HEAD").strip()
    before = _packs(project["remote"])
    with Engine(project["tmp"] / "store") as engine:
        task = engine.start_task(repo=author, objective="send only what is missing")
        write(author / "src/mod007.py", "value = 'the task changed it'\n")
        write(author / "src/task_new.py", "NEW = True\n")
        engine.checkpoint(task.id, CheckpointRequest(force=True))
        assert (only_store_repo(project["tmp"] / "store") / "shallow").exists()
        pushed = engine.push([task.id], url)
        assert pushed.tasks[task.id]["checkpoints_sent"] == 1
    objects, size = _received(project["remote"], before)
    return base, objects, size


def _assert_remote_whole_and_readable(project: dict[str, Path], url: str | None = None) -> None:
    """The remote is complete (fsck), depends on no other repository, and a second store
    fetches the checkpoint and restores the task's files from it."""
    remote = project["remote"]
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=remote, check=True)
    assert not (remote / "objects" / "info" / "alternates").exists()
    store_repo = only_store_repo(project["tmp"] / "store")
    assert not (store_repo / "objects" / "info" / "alternates").exists()
    other = project["tmp"] / "second-machine"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    with Engine(project["tmp"] / "store-b") as engine:
        task_id = engine.list_remote(url or str(remote), repo=other).tasks[0].task_id
        engine.fetch([task_id], url or str(remote), repo=other)
        into = project["tmp"] / "restored"
        engine.checkout(f"{task_id}@1", into)
    assert (into / "src/mod007.py").read_text() == "value = 'the task changed it'\n"
    assert (into / "src/mod099.py").read_text() == FILES["src/mod099.py"]


def test_first_push_onto_the_base_itself_sends_no_base_blob(project: dict[str, Path]) -> None:
    base, received, size = _first_push(project)
    unchanged = _blobs(project["author"], base)
    assert len(unchanged) == len(FILES)
    assert not received & unchanged, "the base tree's blobs were sent again"
    assert len(received) < 40, sorted(received)
    assert size < 20_000
    _assert_remote_whole_and_readable(project)


def test_first_push_after_the_remote_moved_past_the_base_sends_no_base_blob(
    project: dict[str, Path],
) -> None:
    _advance_remote(project)
    base, received, size = _first_push(project)
    remote_main = git(project["remote"], "rev-parse", "main").strip()
    assert remote_main != base
    # every blob of the base the remote's main still holds: the remote has them all (its
    # history holds the base), and none of them travels again
    still_there = _blobs(project["author"], base) & _blobs(project["author"], remote_main)
    assert len(still_there) == len(FILES) - 2
    assert not received & still_there, "the base tree's blobs were sent again"
    assert len(received) < 40, sorted(received)
    assert size < 20_000
    _assert_remote_whole_and_readable(project)


@pytest.fixture
def daemon_url(project: dict[str, Path]) -> Iterator[str]:
    """`git daemon` serving the bare remote on 127.0.0.1 with pushes enabled."""
    with trustkit.git_daemon(project["remote"].parent) as port:
        yield f"git://127.0.0.1:{port}/{project['remote'].name}"


def test_the_remote_never_sees_the_users_objects(project: dict[str, Path]) -> None:
    """The alternate is the pushing side's alone: the remote's receive-pack (a local path
    remote is started by the push itself) checks what it received against its own objects,
    never the user's, so a missing object could not pass as present."""
    log = project["tmp"] / "receive-env.log"
    hook = project["remote"] / "hooks" / "pre-receive"
    # (a value the receiving side inherited would show here: its quarantine appends to it)
    echo = f'echo "alternates=$GIT_ALTERNATE_OBJECT_DIRECTORIES" >> "{log}"'
    hook.write_text(f"#!/bin/sh\n{echo}\ncat >/dev/null\n")
    hook.chmod(0o755)
    _advance_remote(project)
    log.unlink(missing_ok=True)
    _base, received, _size = _first_push(project)
    assert len(received) < 40
    seen = log.read_text()
    assert "alternates=" in seen
    assert str(project["author"]) not in seen, seen
    _assert_remote_whole_and_readable(project)


def test_first_push_through_git_daemon_sends_no_base_blob(
    project: dict[str, Path], daemon_url: str
) -> None:
    _advance_remote(project)
    base, received, _size = _first_push(project, daemon_url)
    remote_main = git(project["remote"], "rev-parse", "main").strip()
    still_there = _blobs(project["author"], base) & _blobs(project["author"], remote_main)
    assert not received & still_there, "the base tree's blobs were sent again"
    assert len(received) < 40, sorted(received)
    _assert_remote_whole_and_readable(project, daemon_url)


def test_a_remote_without_the_base_gets_all_of_it(tmp_path: Path) -> None:
    """The other side of the guarantee: a remote that lacks the base (the user never pushed
    it) receives its whole tree, and is complete after the push."""
    remote = tmp_path / "empty.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(remote, "config", "receive.unpackLimit", "1")
    author = init_repo(tmp_path / "author", FILES)
    git(author, "remote", "add", "origin", str(remote))
    project = {"remote": remote, "author": author, "tmp": tmp_path}
    base, received, _size = _first_push(project)
    assert _blobs(author, base) <= received
    _assert_remote_whole_and_readable(project)


def test_a_damaged_object_in_the_users_repository_does_not_stop_the_push(
    project: dict[str, Path],
) -> None:
    """The user's objects only ever save bytes: when one of them is damaged and spoils the
    push, it is made again without them, whole, and the user's repository is left as it was."""
    _advance_remote(project)
    author = project["author"]
    tree = git(author, "rev-parse", "origin/main^{tree}").strip()
    loose = author / ".git" / "objects" / tree[:2] / tree[2:]
    assert loose.exists()  # the fetch left the remote tip's root tree loose
    loose.chmod(0o644)
    loose.write_bytes(b"not a zlib stream")
    base, received, _size = _first_push(project)
    assert _blobs(author, base) <= received  # sent whole, as with no help from the user
    assert loose.read_bytes() == b"not a zlib stream"
    _assert_remote_whole_and_readable(project)
