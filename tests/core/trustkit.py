"""An attacker with push access to a Pitstop remote, and no key: what they can write, and how.

They can read every plain byte of the remote (headers, roster, fact plain parts) and write any
commit under `refs/pitstop/*`: here they write straight into the bare repository, which is what
a push does. They sign with a key of their own; they never hold a task's data key or an owner's
signing key.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.ledger.fact_format import encode_fact, fact_path, fact_uid
from core.security import signing

Files = dict[str, bytes]


def _git(
    remote: Path, *args: str, data: bytes | None = None, env: Mapping[str, str] | None = None
) -> str:
    return (
        subprocess.run(
            ["git", *args],
            cwd=remote,
            input=data,
            capture_output=True,
            check=True,
            env={**os.environ, **(env or {})},
        )
        .stdout.decode()
        .strip()
    )


def ledger_ref(task_id: str) -> str:
    return f"refs/pitstop/ledger/{task_id}"


def read_files(remote: Path, ref: str) -> Files:
    """Every file of the commit `ref` names on the remote."""
    listing = _git(remote, "ls-tree", "-r", ref)
    files: Files = {}
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        oid = meta.split()[2]
        files[path] = subprocess.run(
            ["git", "cat-file", "blob", oid], cwd=remote, capture_output=True, check=True
        ).stdout
    return files


def write_files(remote: Path, ref: str, files: Files, *, parent: bool = True) -> str:
    """Make `files` the whole tree of a new commit on `ref` (after the old tip, by default)."""
    index = remote / "attacker.index"
    env = {"GIT_INDEX_FILE": str(index)}
    index.unlink(missing_ok=True)
    for path, data in sorted(files.items()):
        oid = _git(remote, "hash-object", "-w", "--stdin", data=data)
        _git(remote, "update-index", "--add", "--cacheinfo", f"100644,{oid},{path}", env=env)
    tree = _git(remote, "write-tree", env=env)
    index.unlink(missing_ok=True)
    args = ["commit-tree", tree, "-m", "not pitstop"]
    if parent:
        args += ["-p", _git(remote, "rev-parse", ref)]
    commit = _git(remote, *args)
    _git(remote, "update-ref", ref, commit)
    return commit


def tamper(remote: Path, task_id: str, edit: Callable[[Files], None]) -> None:
    """Rewrite the task's remote ledger tree with `edit` (in place) and push it."""
    files = read_files(remote, ledger_ref(task_id))
    edit(files)
    write_files(remote, ledger_ref(task_id), files)


def facts_in(files: Files, kind: str | None = None) -> list[dict[str, Any]]:
    """The parsed fact documents of a ledger tree (of one kind, when given)."""
    found = []
    for path, data in files.items():
        if path.startswith(("facts/", "roster/")):
            document = json.loads(data)
            if kind is None or document.get("kind") == kind:
                found.append(document)
    return found


def plain_of(document: Mapping[str, Any]) -> dict[str, Any]:
    """A fact document's plain part (what its uid covers)."""
    return {k: v for k, v in document.items() if k not in ("uid", "sealed", "by", "sig")}


def signed_fact(plain: Mapping[str, Any], key: signing.SigningKey) -> tuple[str, bytes]:
    """A well-formed v2 fact signed by `key`: (path, bytes)."""
    return fact_path(fact_uid(plain), str(plain["kind"])), encode_fact(plain, None, key)


def add_fact(files: Files, plain: Mapping[str, Any], key: signing.SigningKey) -> str:
    """Put a fact signed by `key` into a ledger tree; return its path."""
    path, data = signed_fact(plain, key)
    files[path] = data
    return path


def header(files: Files) -> dict[str, Any]:
    return dict(json.loads(files["task.json"]))


def set_header(files: Files, document: Mapping[str, Any]) -> None:
    files["task.json"] = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


@contextmanager
def git_daemon(base: Path) -> Iterator[int]:
    """`git daemon` serving every repository under `base` on 127.0.0.1, pushes enabled."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    process = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
         f"--base-path={base}", "--listen=127.0.0.1", f"--port={port}", str(base)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError("git daemon did not start")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


def push_forgery(url: str, workdir: Path, task_id: str, edit: Callable[[Files], None]) -> None:
    """What an attacker does over the network: fetch the task's ledger into a bare repository
    of their own, rewrite it, and force-push it back."""
    mine = workdir / "mallory.git"
    if not mine.exists():
        subprocess.run(["git", "init", "-q", "--bare", str(mine)], check=True)
    ref = ledger_ref(task_id)
    _git(mine, "fetch", "-q", url, f"+{ref}:{ref}")
    tamper(mine, task_id, edit)
    _git(mine, "push", "-q", "--force", url, f"{ref}:{ref}")
