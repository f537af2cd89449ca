"""An attacker with push access to a project's remote, and the world they attack.

The world: a bare remote, the owner's store that pushed two tasks to it (`healthy-task` and
`target-task`, the second with evidence and ledger facts), and a clone for the victim's store.
It is built once per test session and copied for each test. The attacker holds no key: they
write objects and refs into the bare remote directly with git plumbing (`hash-object`, `mktree`,
`commit-tree`, `update-ref`), the way any contributor or CI token could push them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.engine import CheckpointRequest, Engine
from core.models import CheckpointReason
from tests.core.corekit import git, init_repo, write

HEALTHY = "healthy-task"
TARGET = "target-task"
_PRISTINE: dict[str, Path] = {}


@dataclass(frozen=True)
class World:
    """A copy of the attacked world for one test."""

    remote: Path
    clone: Path
    tmp: Path

    @property
    def url(self) -> str:
        """The remote as the victim names it."""
        return str(self.remote)


def build_world(cache: Path, tmp: Path) -> World:
    """A fresh copy of the world (built once into `cache`)."""
    if "root" not in _PRISTINE:
        _build(cache)
        _PRISTINE["root"] = cache
    root = _PRISTINE["root"]
    shutil.copytree(root / "remote.git", tmp / "remote.git", symlinks=True)
    shutil.copytree(root / "clone", tmp / "clone", symlinks=True)
    return World(tmp / "remote.git", tmp / "clone", tmp)


def _build(root: Path) -> None:
    remote = root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    author = init_repo(root / "author", {"src/app.py": "value = 1\n", "README.md": "# p\n"})
    git(author, "remote", "add", "origin", str(remote))
    git(author, "push", "-q", "origin", "HEAD:refs/heads/main")
    with Engine(root / "owner-store") as owner:
        for task_id in (HEALTHY, TARGET):
            task = owner.start_task(repo=author, objective=f"work on {task_id}", task_id=task_id)
            write(author / "src/app.py", f"value = {task_id!r}\n")
            if task_id == TARGET:
                log = write(root / "pytest.log", "collected 1 item\n1 passed\n")
                owner.add_evidence_file(task.id, log, command="pytest", exit_code=0, duration_s=1)
            owner.checkpoint(task.id, CheckpointRequest(reason=CheckpointReason.MILESTONE))
        owner.push([HEALTHY, TARGET])
    subprocess.run(["git", "clone", "-q", str(remote), str(root / "clone")], check=True)


# --- the attacker's plumbing -------------------------------------------------------------------


def _git(repo: Path, *args: str, data: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, input=data, capture_output=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {proc.stderr.decode()}")
    return proc.stdout.decode().strip()


def ref_oid(remote: Path, ref: str) -> str:
    """Where a ref of the remote points."""
    return _git(remote, "rev-parse", ref)


def blob(remote: Path, data: bytes) -> str:
    """Write a blob into the remote."""
    return _git(remote, "hash-object", "-w", "--stdin", data=data)


def read(remote: Path, spec: str) -> bytes:
    """A blob of the remote by `REV:PATH`."""
    return subprocess.run(
        ["git", "cat-file", "blob", spec], cwd=remote, capture_output=True, check=True
    ).stdout


def with_file(remote: Path, tree: str, path: str, oid: str | None) -> str:
    """A copy of `tree` with the blob at `path` replaced, added (or removed, for None)."""
    head, _, rest = path.partition("/")
    entries = {}
    for line in _git(remote, "ls-tree", tree).splitlines():
        meta, name = line.split("\t", 1)
        entries[name] = meta
    if rest:
        sub = entries.get(head)
        base = sub.split()[2] if sub else _git(remote, "mktree", data=b"")
        entries[head] = f"040000 tree {with_file(remote, base, rest, oid)}"
    elif oid is None:
        entries.pop(head, None)
    else:
        entries[head] = f"100644 blob {oid}"
    body = "".join(f"{meta}\t{name}\n" for name, meta in entries.items())
    return _git(remote, "mktree", data=body.encode())


def replace_file(
    remote: Path, ref: str, path: str, data: bytes | None, *, new_ref: str = ""
) -> str:
    """Point `new_ref` (default: `ref` itself) at a commit like `ref`'s tip, with `path` holding
    `data` instead; its parents are the tip's. Returns the new commit."""
    tip = ref_oid(remote, ref)
    tree = with_file(remote, f"{tip}^{{tree}}", path, None if data is None else blob(remote, data))
    parents = _git(remote, "log", "-1", "--format=%P", tip).split()
    args = ["commit-tree", tree, "-m", "attacker"]
    for parent in parents:
        args += ["-p", parent]
    commit = _git(remote, *args)
    _git(remote, "update-ref", new_ref or ref, commit)
    return commit


def point_ref(remote: Path, ref: str, oid: str) -> subprocess.CompletedProcess[bytes]:
    """Try to create a ref in the remote (git itself may refuse the name)."""
    return subprocess.run(
        ["git", "update-ref", ref, oid], cwd=remote, capture_output=True, check=False
    )


def raw_json(document: dict[str, Any], **raw: str) -> bytes:
    """`document` as JSON with some top-level values written as raw text (`NaN`, `1e309`)."""
    placeholders = {name: f"@@RAW-{name}@@" for name in raw}
    text = json.dumps({**document, **placeholders}, sort_keys=True)
    for name, value in raw.items():
        text = text.replace(json.dumps(placeholders[name]), value)
    return text.encode()


def dump(engine: Engine) -> str:
    """Everything the victim's database holds, as SQL."""
    return "\n".join(engine.db.conn.iterdump())
