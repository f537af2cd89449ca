"""`pitstop diff` and `validate` trust a checkpoint a reader walked whole before without walking
its trees again, but only while every file its objects live in is as it was: an object deleted,
truncated or rewritten in place after that (its times set back, even) is still found, and both
commands refuse the checkpoint with one clear line. The store growing does not undo it."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from corekit import git_bytes, make_objects_loose, only_store_repo, write

from core.engine import Engine
from core.models import Checkpoint, CheckpointState
from core.snapshot.verified_reads import READS, packs_state, record_read, still_read


def pitstop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed entry point (its click-free paths included), as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "tui.launch", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def store_of(engine: Engine) -> Path:
    return only_store_repo(engine.paths.root)


def checkpoint(engine: Engine) -> Checkpoint:
    result = engine.checkpoint("t1")
    assert result.checkpoint is not None and result.checkpoint.state is CheckpointState.COMPLETE
    return result.checkpoint


def loose_path(store: Path, oid: str) -> Path:
    path = store / "objects" / oid[:2] / oid[2:]
    assert path.is_file(), f"{oid} is not a loose object of {store}"
    return path


def object_at(store: Path, tree: str, path: str) -> str:
    return git_bytes(store, "rev-parse", f"{tree}:{path}").decode().strip()


def rewrite_in_place(path: Path, data: bytes) -> None:
    """Overwrite an object file through its own inode, and set its times back (as an attacker
    who wants no directory or time to show it would)."""
    before = path.stat()
    path.chmod(0o600)
    with path.open("r+b") as handle:
        handle.write(data)
        handle.truncate()
    path.chmod(before.st_mode & 0o777)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def delete(path: Path) -> None:
    path.chmod(0o600)
    path.unlink()


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    rewrite_in_place(path, bytes(data))


def same_size_other_content(path: Path) -> None:
    """A valid loose object of the same kind, inflating fine, whose content is not its id's."""
    kind_and_body = zlib.decompress(path.read_bytes())
    header, _, body = kind_and_body.partition(b"\0")
    forged = header + b"\0" + bytes(reversed(body))
    rewrite_in_place(path, zlib.compress(forged))


TAMPERINGS: dict[str, Callable[[Path], None]] = {
    "deleted": delete,
    "a byte flipped": flip_a_byte,
    "truncated": lambda path: rewrite_in_place(path, path.read_bytes()[:10]),
    "other content": same_size_other_content,
}


@pytest.fixture
def verified(engine: Engine, repo: Path) -> tuple[Checkpoint, Path]:
    """A task's checkpoint with an edited file in a subdirectory, diffed once (verified)."""
    engine.start_task(repo=repo, objective="tamper", task_id="t1")
    write(repo / "src/app.py", "print('changed')\n")
    found = checkpoint(engine)
    make_objects_loose(store_of(engine))  # a checkpoint packs its objects: one file each here
    assert pitstop("diff", found.ref, cwd=repo).returncode == 0
    assert still_read(store_of(engine), found.commit or "")
    return found, repo


@pytest.mark.parametrize("what", ["blob", "tree"])
@pytest.mark.parametrize("how", list(TAMPERINGS))
def test_a_damaged_object_after_verification_is_refused_with_one_line(
    engine: Engine, verified: tuple[Checkpoint, Path], what: str, how: str
) -> None:
    found, repo = verified
    store = store_of(engine)
    assert found.worktree_tree
    oid = object_at(store, found.worktree_tree, "src/app.py" if what == "blob" else "src")
    TAMPERINGS[how](loose_path(store, oid))

    diff = pitstop("diff", found.ref, cwd=repo)
    assert diff.returncode == 1, diff
    assert diff.stdout == ""
    assert diff.stderr.startswith(f"pitstop: checkpoint {found.ref} is damaged: ")
    assert len(diff.stderr.splitlines()) == 1 and "Traceback" not in diff.stderr

    validate = pitstop("validate", found.ref, "--offline", cwd=repo)
    assert validate.returncode == 4, validate  # blocked
    assert "✗ complete      damaged: " in validate.stdout
    assert "verdict: blocked" in validate.stdout
    assert validate.stderr == ""
    assert not still_read(store, found.commit or "")  # nothing damaged is ever recorded


@pytest.mark.parametrize("how", ["deleted", "a byte flipped"])
def test_a_damaged_pack_after_verification_is_refused_with_one_line(
    engine: Engine, repo: Path, how: str
) -> None:
    """The checkpoint's own objects in the pack its snapshot wrote, read and recorded; the pack
    then deleted, or a byte of it flipped with its times set back: the next reader walks again
    and refuses it."""
    engine.start_task(repo=repo, objective="tamper", task_id="t1")
    write(repo / "src/app.py", "print('changed, packed')\n")
    found = checkpoint(engine)
    store = store_of(engine)
    assert found.worktree_tree
    blob = object_at(store, found.worktree_tree, "src/app.py")
    (pack,) = [
        path
        for path in (store / "objects" / "pack").glob("*.pack")
        if blob
        in git_bytes(store, "show-index", input=path.with_suffix(".idx").read_bytes()).decode()
    ]
    assert pitstop("diff", found.ref, cwd=repo).returncode == 0
    assert still_read(store, found.commit or "")
    TAMPERINGS[how](pack)

    diff = pitstop("diff", found.ref, cwd=repo)
    assert diff.returncode == 1, diff
    # a pack gone: its objects are missing; a byte flipped: git cannot inflate one of them
    assert diff.stderr.startswith(f"pitstop: checkpoint {found.ref} is damaged: "), diff.stderr
    assert len(diff.stderr.splitlines()) == 1 and "Traceback" not in diff.stderr
    validate = pitstop("validate", found.ref, "--offline", cwd=repo)
    assert validate.returncode == 4, validate
    assert "verdict: blocked" in validate.stdout
    assert not still_read(store, found.commit or "")


def test_a_record_that_does_not_match_the_store_buys_nothing(
    engine: Engine, verified: tuple[Checkpoint, Path]
) -> None:
    """A record naming other pack state (an older one, or a forged line) is walked past, and
    the walk records the checkpoint again as it is."""
    found, repo = verified
    store = store_of(engine)
    record = store / READS / (found.commit or "")
    first = pitstop("diff", found.ref, cwd=repo)
    kept = record.read_text()
    record.write_text(f"packs {'0' * 64}\n")
    assert not still_read(store, found.commit or "")
    again = pitstop("diff", found.ref, cwd=repo)  # walked, sound, recorded again
    assert (again.returncode, again.stdout) == (0, first.stdout)
    assert "+print('changed')" in again.stdout
    assert record.read_text() == kept
    assert still_read(store, found.commit or "")


def test_a_read_checkpoint_stays_read_while_the_store_grows(
    engine: Engine, verified: tuple[Checkpoint, Path]
) -> None:
    """The record holds the checkpoint's own files only: newer checkpoints and other objects
    (their loose files, a new fan-out directory) leave it standing, at no cost per object."""
    found, repo = verified
    store = store_of(engine)
    write(repo / "notes.txt", "later\n")
    newer = checkpoint(engine)
    for number in range(40):
        git_bytes(store, "hash-object", "-w", "--stdin", input=f"other {number}\n".encode())
    assert still_read(store, found.commit or "")
    lines = (store / READS / (found.commit or "")).read_text().splitlines()
    assert lines[0].startswith("packs ") and 0 < len(lines) - 1 < 40  # its loose objects only
    assert pitstop("diff", newer.ref, cwd=repo).returncode == 0
    assert still_read(store, newer.commit or "") and still_read(store, found.commit or "")


def test_a_record_vouches_for_nothing_it_cannot_match(tmp_path: Path) -> None:
    """No objects directory: nothing is recorded there, and a record found there (or one for
    a name that is not a commit id) vouches for nothing."""
    store = tmp_path / "store.git"
    (store / READS).mkdir(parents=True)
    commit = "a" * 40
    (store / READS / commit).write_text(f"packs {packs_state(store)}\nbb{'c' * 38} 1:2:3:4\n")
    assert not still_read(store, commit)  # its one loose object is not there
    record_read(store, "b" * 40, "stale", {})
    assert not (store / READS / ("b" * 40)).exists()
    assert not still_read(store, "../" + commit)
