"""What a snapshot leaves out (ignored, too large, credential-like), each listed with a reason."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest
from corekit import all_store_object_bytes, git, ls_tree, only_store_repo, write
from hypothesis import given
from hypothesis import strategies as st

from core import snapshot
from core.engine import CheckpointRequest, Engine
from core.models import Checkpoint
from core.snapshot.patterns import matches_any

PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAq7BFUpkGp3+LQmlQLeakedKeyMaterialForTestsOnly0000\n"
    "-----END RSA PRIVATE KEY-----\n"
)


def _checkpoint(engine: Engine, repo: Path, **request: object) -> Checkpoint:
    engine.start_task(repo=repo, objective="test exclusion", task_id="t1")
    result = engine.checkpoint("t1", CheckpointRequest(**request))  # type: ignore[arg-type]
    assert result.checkpoint is not None, result.skipped
    return result.checkpoint


def _left_out(cp: Checkpoint) -> dict[str, dict]:
    assert cp.manifest is not None
    return {item["path"]: item for item in cp.manifest["left_out"]}


def test_ignored_files_are_left_out_and_directories_collapsed(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / ".gitignore", "*.log\nbuild/\nnode_modules/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    write(repo / "debug.log", "IGNORED-LOG-CONTENT\n")
    write(repo / "src/trace.log", "IGNORED-NESTED-LOG\n")
    for index in range(20):
        write(repo / f"build/obj/{index}.o", f"IGNORED-BUILD-{index}\n")
    write(repo / "node_modules/pkg/index.js", "IGNORED-NODE-MODULE\n")
    write(repo / "kept.txt", "kept\n")

    cp = _checkpoint(engine, repo)
    left = _left_out(cp)
    for path in ("debug.log", "src/trace.log", "build/", "node_modules/"):
        assert path in left, sorted(left)
        assert "ignored" in left[path]["reason"]
    assert not any(path.startswith("build/obj") for path in left)  # collapsed, not one per file
    assert cp.left_out_count == len(cp.manifest["left_out"])

    store = only_store_repo(store_root)
    worktree = ls_tree(store, cp.worktree_tree or "")
    assert "kept.txt" in worktree
    assert not any(
        p.endswith(".log") or p.startswith(("build/", "node_modules/")) for p in worktree
    )
    everything = all_store_object_bytes(store)
    for marker in (b"IGNORED-LOG-CONTENT", b"IGNORED-BUILD-3", b"IGNORED-NODE-MODULE"):
        assert marker not in everything


def test_files_over_the_size_limit_are_left_out(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / "small.txt", "x" * 100)
    write(repo / "big_untracked.bin", b"B" * 101)
    write(repo / "src/app.py", "# grown\n" + "y" * 200)  # a tracked file grows past the limit
    write(repo / "exactly.txt", "z" * 100)

    cp = _checkpoint(engine, repo, max_file_bytes=100)
    left = _left_out(cp)
    assert left["big_untracked.bin"]["size"] == 101
    assert "larger than 100 bytes" in left["big_untracked.bin"]["reason"]
    assert "larger than 100 bytes" in left["src/app.py"]["reason"]
    assert "small.txt" not in left and "exactly.txt" not in left
    assert cp.manifest["snapshot"]["max_file_bytes"] == 100

    store = only_store_repo(store_root)
    worktree = ls_tree(store, cp.worktree_tree or "")
    assert "small.txt" in worktree and "exactly.txt" in worktree
    assert "big_untracked.bin" not in worktree
    head_app = git(repo, "rev-parse", "HEAD:src/app.py").strip()
    assert worktree["src/app.py"][2] == head_app  # kept at its committed/staged version
    assert b"B" * 101 not in all_store_object_bytes(store)


def test_default_size_limit_comes_from_config(
    engine: Engine, repo: Path, isolated_env: dict[str, Path]
) -> None:
    (isolated_env["config"] / "config.toml").write_text("[snapshot]\nmax_file_bytes = 50\n")
    write(repo / "big.txt", "q" * 60)
    with Engine() as configured:
        cp = _checkpoint(configured, repo)
    assert "big.txt" in _left_out(cp)
    assert cp.manifest["snapshot"]["max_file_bytes"] == 50


CREDENTIAL_NAMES = [
    ".env",
    ".env.local",
    "config/.env.production",
    "x.pem",
    "certs/server.key",
    "id_rsa",
    "home/id_ed25519",
    "credentials.json",
    "credentials-prod.json",
    ".netrc",
]
SAFE_NAMES = [".env.example", "id_rsa.pub", "config/.env.sample", "credentials.json.template"]


def test_credential_looking_untracked_files_are_left_out(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    for index, name in enumerate(CREDENTIAL_NAMES):
        write(repo / name, f"SECRET-VALUE-{index}-zq\n")
    for name in SAFE_NAMES:
        write(repo / name, f"safe template {name}\n")

    cp = _checkpoint(engine, repo)
    left = _left_out(cp)
    store = only_store_repo(store_root)
    worktree = ls_tree(store, cp.worktree_tree or "")
    for name in CREDENTIAL_NAMES:
        assert name in left, name
        assert "credential" in left[name]["reason"]
        assert name not in worktree
    for name in SAFE_NAMES:
        assert name in worktree, name
        assert name not in left
    everything = all_store_object_bytes(store)
    assert b"SECRET-VALUE-" not in everything


def test_untracked_file_holding_a_private_key_block_is_left_out(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / "notes/deploy.txt", "how to deploy\n" + PRIVATE_KEY)
    write(repo / "notes/plain.txt", "-----BEGIN CERTIFICATE-----\npublic\n")

    cp = _checkpoint(engine, repo)
    left = _left_out(cp)
    assert "private key" in left["notes/deploy.txt"]["reason"]
    store = only_store_repo(store_root)
    worktree = ls_tree(store, cp.worktree_tree or "")
    assert "notes/deploy.txt" not in worktree
    assert "notes/plain.txt" in worktree
    assert b"LeakedKeyMaterial" not in all_store_object_bytes(store)


def test_left_out_secrets_never_reach_the_store_dir_in_clear(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / ".env", "API_TOKEN=RAW-DOTENV-SECRET-77\n")
    write(repo / "key.txt", PRIVATE_KEY)
    cp = _checkpoint(engine, repo)
    assert {".env", "key.txt"} <= set(_left_out(cp))
    engine.close()
    for path, data in _walk_bytes(store_root):
        assert b"RAW-DOTENV-SECRET-77" not in data, path
        assert b"LeakedKeyMaterial" not in data, path


def _walk_bytes(root: Path):
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            yield path, path.read_bytes()


@pytest.mark.parametrize("limit", [0, -5])
def test_non_positive_size_limit_is_refused(engine: Engine, repo: Path, limit: int) -> None:
    from core.errors import UsageError

    engine.start_task(repo=repo, objective="limits", task_id="t1")
    with pytest.raises(UsageError):
        engine.checkpoint("t1", CheckpointRequest(max_file_bytes=limit))
    assert engine.list_checkpoints("t1") == []


@given(
    st.one_of(
        st.text(alphabet=".-_*/\nenvkyprsqtidjolcmx[]", max_size=24),
        st.sampled_from(snapshot.SECRET_NAME_PATTERNS + snapshot.LOCKFILE_PATTERNS).map(
            lambda pattern: pattern.replace("*", "x.y")
        ),
    )
)
def test_name_patterns_match_as_fnmatch_matches_them(name: str) -> None:
    """The secret-name and lockfile checks (string operations, no regex) agree with fnmatchcase,
    for our patterns and for ones the string checks leave to fnmatch."""
    for patterns in (
        snapshot.SECRET_NAME_PATTERNS,
        snapshot.LOCKFILE_PATTERNS,
        ("*.e?v", "[!.]*", "id_*_*", "**"),
    ):
        expected = any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
        assert matches_any(patterns, name) is expected
