"""Helpers for core tests: run git, build real repositories, fingerprint directories.

Everything here works on real files; nothing replaces a Pitstop component.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

SUBMODULE_ALLOW = ("-c", "protocol.file.allow=always")


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    """Run git in `cwd` and return stdout as text; any failure fails the test loudly."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed in {cwd}: {proc.stderr.decode(errors='replace')}"
        )
    return proc.stdout.decode("utf-8", errors="surrogateescape")


def git_bytes(git_dir: Path, *args: str, input: bytes | None = None) -> bytes:
    """Run git against a bare repository and return raw stdout."""
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], input=input, capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed in {git_dir}: {proc.stderr.decode(errors='replace')}"
        )
    return proc.stdout


def write(path: Path, data: str | bytes, mode: int | None = None) -> Path:
    """Create `path` (and its parents) with `data`; optionally chmod it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    if mode is not None:
        path.chmod(mode)
    return path


def init_repo(path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    """A fresh repository on branch main with one commit holding `files`."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "core.autocrlf", "false")
    for name, data in (files or {"README.md": "hello\n"}).items():
        write(path / name, data)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def store_repos(store_root: Path) -> list[Path]:
    """The bare repositories Pitstop keeps under the store."""
    return sorted((store_root / "repos").glob("*.git"))


def only_store_repo(store_root: Path) -> Path:
    """The single store repository of a test that uses one source repository."""
    repos = store_repos(store_root)
    assert len(repos) == 1, repos
    return repos[0]


def ls_tree(git_dir: Path, tree: str) -> dict[str, tuple[str, str, str]]:
    """Recursive listing of a tree: path -> (mode, type, oid)."""
    raw = git_bytes(git_dir, "ls-tree", "-r", "-z", tree)
    result = {}
    for entry in raw.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, kind, oid = meta.decode().split()
        result[path.decode("utf-8", errors="surrogateescape")] = (mode, kind, oid)
    return result


def blob_at(git_dir: Path, tree: str, path: str) -> bytes:
    """Content of `path` inside `tree` in a bare repository."""
    return git_bytes(git_dir, "cat-file", "blob", f"{tree}:{path}")


def dir_state(root: Path, *, with_dir_mtimes: bool = True) -> dict[str, tuple]:
    """Every entry under `root`: kind, mode, size, mtime_ns and a content hash (or link target).

    Used to prove a directory (a user's `.git`) was not written: any created, deleted, rewritten
    or even touched file changes this value.
    """
    state: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in [*dirnames, *sorted(filenames)]:
            full = Path(dirpath) / name
            rel = str(full.relative_to(root))
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(info.st_mode):
                state[rel] = ("dir", stat.S_IMODE(info.st_mode)) + (
                    (info.st_mtime_ns,) if with_dir_mtimes else ()
                )
            else:
                digest = hashlib.sha256(full.read_bytes()).hexdigest()
                state[rel] = (
                    "file",
                    stat.S_IMODE(info.st_mode),
                    info.st_size,
                    info.st_mtime_ns,
                    digest,
                )
    return state


def tree_state(root: Path, skip: Iterable[str] = ()) -> dict[str, tuple]:
    """A work tree as git would restore it: bytes, exec bit and symlink targets, minus `skip`.

    `skip` holds relative paths; an entry ending in '/' skips a whole directory. `.git` is
    always skipped; directories are implied by the files they hold.
    """
    skipped = list(skip)

    def is_skipped(rel: str) -> bool:
        for item in skipped:
            if item.endswith("/") and (rel + "/").startswith(item):
                return True
            if rel == item:
                return True
        return False

    state: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root and ".git" in dirnames:
            dirnames.remove(".git")
        entries = list(filenames)
        for name in list(dirnames):
            if (Path(dirpath) / name).is_symlink():
                entries.append(name)
                dirnames.remove(name)
        for name in entries:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if name == ".git" or is_skipped(rel):
                continue
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", os.readlink(full))
            else:
                state[rel] = ("file", bool(info.st_mode & stat.S_IXUSR), full.read_bytes())
    return state


def make_objects_loose(git_dir: Path) -> None:
    """Unpack every pack of a bare repository so each object is its own deletable file."""
    pack_dir = git_dir / "objects" / "pack"
    packs = sorted(pack_dir.glob("*.pack"))
    for pack in packs:
        data = pack.read_bytes()
        for sibling in pack_dir.glob(pack.stem + ".*"):
            sibling.unlink()
        git_bytes(git_dir, "unpack-objects", "-q", input=data)


def delete_loose_object(git_dir: Path, oid: str) -> None:
    """Remove one (loose) object file from a bare repository."""
    path = git_dir / "objects" / oid[:2] / oid[2:]
    assert path.exists(), f"object {oid} is not loose in {git_dir}"
    path.chmod(0o600)
    path.unlink()


def all_store_object_bytes(git_dir: Path) -> bytes:
    """Decompressed content of every object in a bare repository, concatenated."""
    return git_bytes(git_dir, "cat-file", "--batch-all-objects", "--batch")


def raw_bytes_under(root: Path) -> Iterable[tuple[Path, bytes]]:
    """Every regular file below `root` with its raw bytes."""
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            full = Path(dirpath) / name
            if full.is_symlink() or not full.is_file():
                continue
            yield full, full.read_bytes()


def copy_repo(source: Path, target: Path) -> Path:
    """A full copy of a repository directory (symlinks preserved)."""
    shutil.copytree(source, target, symlinks=True)
    return target


def rewrite_manifests(
    store_root: Path, task_id: str, change: Callable[[dict[str, Any]], None]
) -> None:
    """Rewrite a task's stored (sealed) manifests as a newer Pitstop might have written them.

    Manifests are encrypted at rest, so a test opens each one with the task's data key,
    changes the document and seals it again, exactly as the engine stores it.
    """
    import sqlite3

    from core.engine import Engine

    with Engine(store_root) as engine:
        rows = engine.db.execute(
            "SELECT seq, manifest FROM checkpoints WHERE task_id = ? AND manifest IS NOT NULL",
            [task_id],
        ).fetchall()
        sealed = []
        for seq, blob in rows:
            item = f"checkpoint/{seq}/manifest"
            document = json.loads(engine.keys.open(task_id, item, bytes(blob), "manifest"))
            change(document)
            sealed.append((seq, engine.keys.seal(task_id, item, json.dumps(document).encode())))
    with sqlite3.connect(store_root / "pitstop.db") as db:
        for seq, blob in sealed:
            db.execute(
                "UPDATE checkpoints SET manifest = ? WHERE task_id = ? AND seq = ?",
                [blob, task_id, seq],
            )


def spy_git_starts(monkeypatch: Any, record: Callable[[list[str]], Any] = list) -> list[Any]:
    """What `record` makes of the argument list (`git`, the subcommand, ...) of every git
    process this process starts from now on, in order, whether `subprocess` or
    `core.git.spawn` starts it (a spawned call's `-C DIR` left out); None is not kept."""
    from core.git.spawn import Spawned

    started: list[Any] = []
    popen_init = subprocess.Popen.__init__
    spawned_init = Spawned.__init__

    def keep(argv: list[str]) -> None:
        item = record(argv)
        if item is not None:
            started.append(item)

    def popen_spy(self: Any, args: Any, *rest: Any, **kw: Any) -> None:
        if isinstance(args, list) and args[:1] == ["git"]:
            keep([str(arg) for arg in args])
        popen_init(self, args, *rest, **kw)

    def spawned_spy(self: Any, args: Any, env: Any, **kw: Any) -> None:
        keep(["git", *(str(arg) for arg in args)])
        spawned_init(self, args, env, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", popen_spy)
    monkeypatch.setattr(Spawned, "__init__", spawned_spy)
    return started
