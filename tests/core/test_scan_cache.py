"""Contents judged clean are not scanned again — and nothing else is spared a scan.

The cache of clean judgements (`core/snapshot/scan_cache.py`) must never let a secret through:
changed contents have another digest, a file holding a secret is never remembered, another
version of the detectors starts afresh, and a damaged or foreign list is an empty one. The
snapshot-level tests run real checkpoints twice over the same files; the unit tests read the
list's bytes as they lie in the store.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from corekit import init_repo, only_store_repo, write

from core.engine import CheckpointRequest, Engine
from core.models import Checkpoint
from core.snapshot import scan_cache
from core.snapshot.scan_cache import CACHE_NAME, MAX_ENTRIES, CleanScans, content_digest

GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo", {"README.md": "# demo\n", "src/app.py": "print(1)\n"})


def _checkpoint(engine: Engine, **request: object) -> Checkpoint:
    result = engine.checkpoint("t1", CheckpointRequest(force=True, **request))  # type: ignore[arg-type]
    assert result.checkpoint is not None, result.skipped
    return result.checkpoint


def _left_out(cp: Checkpoint) -> dict[str, str]:
    assert cp.manifest is not None
    return {item["path"]: item["reason"] for item in cp.manifest["left_out"]}


def test_a_clean_file_is_remembered_and_a_secret_added_to_it_is_still_found(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / "notes.txt", "work in progress\n")
    write(repo / "src/app.py", "print(2)\n")
    engine.start_task(repo=repo, objective="cache", task_id="t1")
    first = _checkpoint(engine)
    assert _left_out(first) == {}
    cache = CleanScans(only_store_repo(store_root))
    assert cache.is_clean(content_digest(b"work in progress\n"))
    assert cache.is_clean(content_digest(b"print(2)\n"))

    write(repo / "notes.txt", f"work in progress\ntoken {GITHUB}\n")
    second = _checkpoint(engine)
    assert _left_out(second) == {"notes.txt": "contains a github-token at line 2"}
    write(repo / "src/app.py", f"print(2)\nTOKEN = '{GITHUB}'\n")
    third = _checkpoint(engine)
    assert third.manifest is not None
    assert [e["path"] for e in third.manifest["snapshot"]["sealed"]] == ["src/app.py"]


def test_a_file_holding_a_secret_is_never_remembered(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    held = f"token {GITHUB}\n".encode()
    write(repo / "config.txt", held.decode())
    engine.start_task(repo=repo, objective="cache", task_id="t1")
    for _ in range(3):
        assert _left_out(_checkpoint(engine)) == {"config.txt": "contains a github-token at line 1"}
    assert not CleanScans(only_store_repo(store_root)).is_clean(content_digest(held))


def test_the_list_holds_digests_only_never_contents(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / "notes.txt", "a distinctive sentence nobody else writes\n")
    engine.start_task(repo=repo, objective="cache", task_id="t1")
    _checkpoint(engine)
    data = (only_store_repo(store_root) / CACHE_NAME).read_bytes()
    assert b"distinctive" not in data
    lines = data.decode("ascii").splitlines()
    assert lines[0] == scan_cache.detectors_digest()
    assert content_digest(b"a distinctive sentence nobody else writes\n") in lines[1:]
    assert os.stat(only_store_repo(store_root) / CACHE_NAME).st_mode & 0o077 == 0


def test_other_detectors_start_afresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule file or redactor module changed on disk (or another version) is another digest,
    so what an older redactor judged clean is judged again."""
    store_repo = tmp_path / "store.git"
    store_repo.mkdir()
    cache = CleanScans(store_repo)
    digest = content_digest(b"judged clean\n")
    cache.add(digest)
    cache.save()
    assert CleanScans(store_repo).is_clean(digest)

    rules = Path(scan_cache.__file__).parent.parent / "redaction" / "rules"
    rule_file = sorted(rules.glob("*.toml"))[0]
    info = rule_file.stat()
    os.utime(rule_file, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    try:
        assert not CleanScans(store_repo).is_clean(digest)
    finally:
        os.utime(rule_file, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert CleanScans(store_repo).is_clean(digest)

    monkeypatch.setattr(scan_cache.core, "__version__", "99.0.0")
    assert not CleanScans(store_repo).is_clean(digest)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not a digest\n",
        "\n".join(["0" * 40] * 3),
        "\xff\xfe garbage",
    ],
)
def test_a_damaged_or_foreign_list_is_an_empty_one(tmp_path: Path, text: str) -> None:
    store_repo = tmp_path / "store.git"
    store_repo.mkdir()
    (store_repo / CACHE_NAME).write_bytes(text.encode("latin-1"))
    cache = CleanScans(store_repo)
    assert cache.known == {}
    # a planted digest under a forged header line is not read either
    (store_repo / CACHE_NAME).write_text("forged\n" + content_digest(b"x") + "\n")
    assert not CleanScans(store_repo).is_clean(content_digest(b"x"))


def test_the_list_keeps_the_newest_entries_up_to_its_bound(tmp_path: Path) -> None:
    store_repo = tmp_path / "store.git"
    store_repo.mkdir()
    cache = CleanScans(store_repo)
    digests = [content_digest(str(n).encode()) for n in range(MAX_ENTRIES + 10)]
    for digest in digests:
        cache.add(digest)
    cache.save()
    again = CleanScans(store_repo)
    assert len(again.known) == MAX_ENTRIES
    assert not again.is_clean(digests[0]) and again.is_clean(digests[-1])


def test_a_second_checkpoint_of_the_same_files_does_not_load_the_redactor(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    """The point of the list: an unchanged file costs no rule loading (in a fresh process,
    as a hook is)."""
    write(repo / "notes.txt", "work in progress\n")
    engine.start_task(repo=repo, objective="cache", task_id="t1")
    _checkpoint(engine)
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\n"
        "from core.engine import CheckpointRequest, Engine\n"
        "with Engine() as e:\n"
        "    assert e.checkpoint('t1', CheckpointRequest(force=True)).checkpoint\n"
        "print('core.redaction.redact' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, str(probe)], capture_output=True, text=True, env=os.environ, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    write(repo / "notes.txt", "work in progress, changed\n")
    out = subprocess.run(
        [sys.executable, str(probe)], capture_output=True, text=True, env=os.environ, check=False
    )
    assert out.stdout.strip() == "True", out.stderr
