"""The manifest (`pitstop.manifest/1`): what it records, and what it must never record."""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

import pytest
from corekit import (
    all_store_object_bytes,
    git,
    git_bytes,
    only_store_repo,
    raw_bytes_under,
    write,
)

from core.engine import CheckpointRequest, Engine
from core.models import Checkpoint, NamedVersion

SECRET = "s3cret-Value-9f1c"


def _checkpoint(engine: Engine, repo: Path, **task: object) -> Checkpoint:
    engine.start_task(repo=repo, objective="manifest test", task_id="t1", **task)  # type: ignore[arg-type]
    result = engine.checkpoint(
        "t1", CheckpointRequest(note="before lunch", done=("plan",), todo=("code",))
    )
    assert result.checkpoint is not None
    return result.checkpoint


def test_manifest_records_the_repository_and_snapshot(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    git(repo, "remote", "add", "origin", "https://user:tok-abc123@example.com/x.git")
    git(repo, "remote", "add", "mirror", "git@example.com:team/x.git")
    git(repo, "remote", "add", "plain", "https://example.com/plain.git")
    write(repo / "src/app.py", "print('changed')\n")
    write(repo / "new.txt", "new\n")
    cp = _checkpoint(
        engine,
        repo,
        harness=NamedVersion("claude-code", "1.2.3"),
        model=NamedVersion("opus", None),
    )
    doc = cp.manifest
    assert doc is not None
    assert doc["schema"] == "pitstop.manifest/1"
    assert doc["task"] == {"id": "t1", "objective": "manifest test"}
    assert doc["checkpoint"]["seq"] == 1 and doc["checkpoint"]["reason"] == "manual"
    assert doc["checkpoint"]["note"] == "before lunch"
    assert doc["checkpoint"]["parent_commit"] is None

    repository = doc["repository"]
    assert repository["toplevel"] == str(repo.resolve())
    assert repository["base_commit"] == git(repo, "rev-parse", "HEAD").strip() == cp.base_commit
    assert repository["branch"] == "main" == cp.branch
    assert repository["remotes"] == {
        "origin": "https://example.com/x.git",
        "mirror": "git@example.com:team/x.git",
        "plain": "https://example.com/plain.git",
    }
    assert "tok-abc123" not in json.dumps(doc)

    snap = doc["snapshot"]
    assert snap["worktree_tree"] == cp.worktree_tree
    assert snap["index_tree"] == cp.index_tree
    changed = {c["path"]: c for c in snap["changed_files"]}
    assert changed["src/app.py"]["status"] == "M"
    assert changed["new.txt"]["status"] == "A" and changed["new.txt"]["added"] == 1
    assert cp.changed_count == len(changed) == 2
    assert doc["steps"] == {"done": ["plan"], "todo": ["code"]}
    assert doc["harness"] == {"name": "claude-code", "version": "1.2.3"}
    assert doc["model"] == {"name": "opus", "version": None}
    for section in ("evidence", "side_effects", "pending_approvals", "upstream_resources"):
        assert doc[section] == []
    assert doc["stats"]["snapshot_bytes_added"] > 0

    env = doc["environment"]
    assert {"os", "arch", "python", "git"} <= set(env)
    assert env["python"] == platform.python_version()
    assert env["git"] and env["git"][0].isdigit()

    store = only_store_repo(store_root)
    stored = git_bytes(store, "cat-file", "blob", f"{cp.commit}:manifest.enc")
    # Stored sealed (invariant 2): the objective is not readable, yet it opens to the manifest.
    assert doc["task"]["objective"].encode() not in stored
    assert stored.startswith(b"PSE")
    opened = engine.keys.open("t1", f"checkpoint/{cp.seq}/manifest", stored, "manifest")
    assert json.loads(opened) == doc
    assert hashlib.sha256(stored).hexdigest() == cp.manifest_sha256
    header = json.loads(git_bytes(store, "cat-file", "blob", f"{cp.commit}:pitstop.json"))
    assert header["manifest_sha256"] == cp.manifest_sha256
    assert header["key_ids"] == [engine.keys.data_key_id("t1")]
    second = engine.checkpoint("t1", CheckpointRequest(force=True)).checkpoint
    assert second and second.manifest["checkpoint"]["parent_commit"] == cp.commit


def test_detached_head_and_upstream(engine: Engine, repo: Path, make_repo) -> None:
    upstream = make_repo("upstream", {"u.txt": "u\n"})
    git(repo, "remote", "add", "origin", str(upstream))
    git(repo, "fetch", "-q", "origin")
    git(repo, "branch", "-q", "--set-upstream-to=origin/main", "main")
    cp = _checkpoint(engine, repo)
    assert cp.manifest["repository"]["upstream"] == {
        "name": "origin/main",
        "head": git(upstream, "rev-parse", "HEAD").strip(),
    }
    git(repo, "checkout", "-q", "--detach")
    detached = engine.checkpoint("t1", CheckpointRequest(force=True)).checkpoint
    assert detached is not None
    assert detached.branch is None and detached.manifest["repository"]["branch"] is None


def test_credential_fingerprints_never_store_the_value(
    engine: Engine, repo: Path, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_TOKEN", SECRET)
    monkeypatch.delenv("ABSENT_TOKEN", raising=False)
    cp = _checkpoint(engine, repo, credentials=("MY_TOKEN", "ABSENT_TOKEN"))
    creds = {c["name"]: c for c in cp.manifest["credentials"]}
    assert creds["MY_TOKEN"]["present"] is True
    fingerprint = creds["MY_TOKEN"]["fingerprint"]
    assert fingerprint and fingerprint.startswith("hmac-sha256:")
    assert creds["ABSENT_TOKEN"] == {"name": "ABSENT_TOKEN", "present": False, "fingerprint": None}
    assert SECRET not in json.dumps(cp.manifest)
    assert hashlib.sha256(SECRET.encode()).hexdigest()[:32] not in fingerprint  # keyed, not bare

    # same value, same store: same fingerprint; a changed value: a different one
    again = engine.checkpoint("t1", CheckpointRequest(force=True)).checkpoint
    assert (
        again
        and {c["name"]: c for c in again.manifest["credentials"]}["MY_TOKEN"]["fingerprint"]
        == fingerprint
    )
    monkeypatch.setenv("MY_TOKEN", SECRET + "-rotated")
    rotated = engine.checkpoint("t1", CheckpointRequest(force=True)).checkpoint
    assert (
        rotated
        and {c["name"]: c for c in rotated.manifest["credentials"]}["MY_TOKEN"]["fingerprint"]
        != fingerprint
    )

    engine.close()
    needle = SECRET.encode()
    for path, data in raw_bytes_under(store_root):
        assert needle not in data, path
    assert needle not in all_store_object_bytes(only_store_repo(store_root))


def test_lockfiles_found_anywhere_in_the_tree(engine: Engine, repo: Path, store_root: Path) -> None:
    write(repo / "uv.lock", "version = 1\n")
    write(repo / "web/package-lock.json", '{"lockfileVersion": 3}\n')
    write(repo / "requirements-dev.txt", "pytest\n")
    write(repo / "Cargo.lock", "# cargo\n")
    write(repo / "notalock.json", "{}\n")
    cp = _checkpoint(engine, repo)
    locks = cp.manifest["lockfiles"]
    assert set(locks) == {"uv.lock", "web/package-lock.json", "requirements-dev.txt", "Cargo.lock"}
    expected = git(repo, "hash-object", "web/package-lock.json").strip()
    assert locks["web/package-lock.json"] == expected


def test_left_out_listed_in_manifest_with_reasons(engine: Engine, repo: Path) -> None:
    write(repo / ".gitignore", "*.log\n")
    write(repo / "x.log", "ignored\n")
    write(repo / ".env.local", "A=1\n")
    write(repo / "big.bin", b"0" * 2048)
    engine.start_task(repo=repo, objective="left out", task_id="t1")
    cp = engine.checkpoint("t1", CheckpointRequest(max_file_bytes=1024)).checkpoint
    assert cp is not None
    reasons = {item["path"]: item["reason"] for item in cp.manifest["left_out"]}
    assert set(reasons) == {"x.log", ".env.local", "big.bin"}
    assert all(reason for reason in reasons.values())
    assert cp.left_out_count == 3


KEY_RACE = """
import os, sys, time
from pathlib import Path
from core.security.fingerprint import load_or_create_key

print("ready", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.0002)
print(load_or_create_key(Path(sys.argv[1])).hex(), flush=True)
"""


def test_fingerprint_key_created_once_when_processes_race(tmp_path: Path) -> None:
    """Every process opening a fresh store at once must end up with one and the same key.

    Otherwise fingerprints recorded by the losers can never match again.
    """
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    key_path = tmp_path / "fingerprint.key"
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(root)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", KEY_RACE, str(key_path), str(go)],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.write_text("go")
    keys = set()
    errors = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        if proc.returncode != 0:
            errors.append(err.strip().splitlines()[-1])
        else:
            keys.add(out.strip())
    assert errors == []
    assert keys == {key_path.read_bytes().hex()}
    assert (key_path.stat().st_mode & 0o777) == 0o600
