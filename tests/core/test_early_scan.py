"""The early scan (core/snapshot/early_scan.py): a `git status` started before the engine loads
is used only for the very repository and index the snapshot takes, never changes what the
snapshot records, never writes the user's repository, and leaves nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from corekit import blob_at, dir_state, git, only_store_repo, spy_git_starts, write

from core.engine import CheckpointRequest, Engine
from core.models import Checkpoint
from core.paths import StorePaths
from core.snapshot import early_scan, locate_calls


def _tmp(store_root: Path) -> Path:
    return StorePaths(store_root).tmp


def _scratch(store_root: Path) -> list[str]:
    tmp = _tmp(store_root)
    return (
        sorted(p.name for p in tmp.iterdir() if p.name.startswith("snapshot-"))
        if tmp.exists()
        else []
    )


def _forced(engine: Engine, task_id: str = "t1") -> Checkpoint:
    result = engine.checkpoint(task_id, CheckpointRequest(force=True))
    assert result.checkpoint is not None
    return result.checkpoint


def test_the_snapshot_takes_over_a_scan_of_its_repository(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    engine.start_task(repo=repo, objective="early", task_id="t1")
    _forced(engine)
    write(repo / "src/app.py", "print('edited')\n")
    write(repo / "new.txt", "untracked\n")
    before = dir_state(repo / ".git")

    early_scan.start(str(repo / "src"), _tmp(store_root))
    scan = early_scan._pending
    assert scan is not None
    assert _scratch(store_root) == [scan.directory.name]
    made = _forced(engine)

    assert early_scan._pending is None  # claimed
    assert scan.process.returncode == 0  # its output was read, not thrown away
    assert _scratch(store_root) == []  # its copy went with the snapshot's scratch directory
    store = only_store_repo(store_root)
    assert blob_at(store, made.worktree_tree or "", "src/app.py") == b"print('edited')\n"
    assert blob_at(store, made.worktree_tree or "", "new.txt") == b"untracked\n"
    assert dir_state(repo / ".git") == before  # invariant 8
    assert engine.verify(made) == []


def test_a_scan_of_another_repository_is_discarded(
    engine: Engine, make_repo: Callable[..., Path], repo: Path, store_root: Path
) -> None:
    other = make_repo("other", {"a.txt": "other repo\n"})
    write(other / "a.txt", "changed in the other repository\n")
    engine.start_task(repo=repo, objective="early", task_id="t1")
    write(repo / "README.md", "# edited\n")

    early_scan.start(str(other), _tmp(store_root))
    scan = early_scan._pending
    assert scan is not None
    made = _forced(engine)

    assert early_scan._pending is None
    assert scan.process.returncode is not None  # killed or finished, not left running
    assert _scratch(store_root) == []
    store = only_store_repo(store_root)
    assert blob_at(store, made.worktree_tree or "", "README.md") == b"# edited\n"
    # nothing of the other repository's change came in through its scan
    names = git(store, "ls-tree", "-r", "--name-only", made.worktree_tree or "").split()
    assert "a.txt" not in names


def test_a_failed_early_scan_is_run_again_and_changes_nothing(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    engine.start_task(repo=repo, objective="early", task_id="t1")
    write(repo / "src/util.py", "def add(a, b):\n    return b + a\n")
    early_scan.start(str(repo), _tmp(store_root))
    scan = early_scan._pending
    assert scan is not None
    scan.process.kill()  # as if it died: its (empty) output must not be taken for "no change"
    scan.process.wait()
    made = _forced(engine)
    store = only_store_repo(store_root)
    assert blob_at(store, made.worktree_tree or "", "src/util.py") == (
        b"def add(a, b):\n    return b + a\n"
    )
    assert _scratch(store_root) == []


def test_no_scan_is_started_where_git_would_look_differently(
    repo: Path, store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tmp(store_root).parent.mkdir(parents=True, exist_ok=True)
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    early_scan.start(str(linked), _tmp(store_root))  # a `.git` file: the snapshot's own way
    assert early_scan._pending is None
    early_scan.start(str(tmp_path / "missing"), _tmp(store_root))
    assert early_scan._pending is None
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(repo.parent))
    early_scan.start(str(repo), _tmp(store_root))
    assert early_scan._pending is None
    assert _scratch(store_root) == []


def test_no_store_is_created_for_a_guess(repo: Path, tmp_path: Path) -> None:
    nowhere = tmp_path / "no-store-yet"
    early_scan.start(str(repo), StorePaths(nowhere).tmp)
    assert early_scan._pending is None
    assert not nowhere.exists()


def test_the_command_line_leaves_no_scan_behind(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    """`pitstop checkpoint` starts the scan in its directory; taken or skipped, nothing stays."""
    engine.start_task(repo=repo, objective="early", task_id="t1")
    write(repo / "docs/guide.txt", "line 1\nline 2 edited\n")
    env = {**os.environ, "PITSTOP_HOME": str(store_root)}
    program = [sys.executable, "-c", "from tui.launch import main; main()"]
    taken = subprocess.run(
        [*program, "checkpoint", "t1"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert taken.returncode == 0, taken.stderr
    assert "checkpoint t1@1 complete" in taken.stdout
    skipped = subprocess.run(
        [*program, "checkpoint", "t1"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert skipped.returncode == 0, skipped.stderr
    assert "nothing changed" in skipped.stdout
    assert _scratch(store_root) == []
    latest = engine.list_checkpoints("t1")[0]
    store = only_store_repo(store_root)
    assert (
        blob_at(store, latest.worktree_tree or "", "docs/guide.txt") == b"line 1\nline 2 edited\n"
    )


def _git_starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every git subcommand this process starts from now on."""
    return spy_git_starts(monkeypatch, lambda argv: argv[1])


def test_locate_takes_the_calls_started_beside_the_scan(
    repo: Path, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core import snapshot

    _tmp(store_root).parent.mkdir(parents=True, exist_ok=True)
    git(repo, "remote", "add", "origin", "https://example.invalid/repo.git")
    fresh = snapshot.locate(repo)
    early_scan.start(str(repo), _tmp(store_root))
    assert early_scan._pending is not None and locate_calls._early is not None
    started_in, config, facts = locate_calls._early
    assert started_in == repo
    calls = _git_starts(monkeypatch)
    taken = snapshot.locate(repo)
    assert calls == []  # no config or rev-parse of its own
    assert taken == fresh and taken.remotes  # the same facts the calls give when run then
    assert config.returncode == 0 and facts.returncode == 128  # read: 128, no upstream here
    assert locate_calls._early is None
    early_scan.discard()
    assert _scratch(store_root) == []


def test_locate_elsewhere_starts_its_own_and_the_early_calls_are_stopped(
    repo: Path, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core import snapshot

    _tmp(store_root).parent.mkdir(parents=True, exist_ok=True)
    fresh = snapshot.locate(repo)
    early_scan.start(str(repo / "src"), _tmp(store_root))  # a subdirectory: another question
    assert early_scan._pending is not None and locate_calls._early is not None
    early_calls = locate_calls._early[1:]
    calls = _git_starts(monkeypatch)
    assert snapshot.locate(repo) == fresh
    assert sorted(calls) == ["config", "rev-parse"]
    assert locate_calls._early is not None  # not taken
    early_scan.discard()
    assert locate_calls._early is None
    assert all(process.returncode is not None for process in early_calls)  # none left running
    assert _scratch(store_root) == []


_WARM_UP = """
import sys
from pathlib import Path
from core.git.spawn import Spawned
from core.snapshot.take import _while_status_walks
from core.redaction import literal_gate

status, state, index = sys.argv[1], sys.argv[2], Path(sys.argv[3])
process = Spawned(["-c", "alias.sleepy=!" + status, "sleepy"], {"PATH": "/usr/bin:/bin"})
if state == "done":
    process.wait()
assert "core.redaction.redact" not in sys.modules
_while_status_walks(process, index)
print("core.redaction.redact" in sys.modules, literal_gate.automaton.cache_info().currsize)
process.stop()
"""


def _index_of(tmp_path: Path, entries: int) -> Path:
    """An index file whose header says it holds `entries` files (all the check reads)."""
    index = tmp_path / f"index-{entries}"
    index.write_bytes(b"DIRC" + (2).to_bytes(4, "big") + entries.to_bytes(4, "big"))
    return index


@pytest.mark.parametrize(
    ("status", "state", "entries", "loaded"),
    [
        ("sleep 3", "running", 5000, "True 1"),  # a large tree still being walked: load now
        ("true", "done", 5000, "False 0"),  # git is done: nothing to fill
        ("sleep 3", "running", 300, "False 0"),  # a small tree: its walk ends first
    ],
)
def test_the_secret_scan_loads_while_a_large_status_still_walks_and_only_then(
    tmp_path: Path, status: str, state: str, entries: int, loaded: str
) -> None:
    """While `git status` walks a large tree, the snapshot loads the rules and their literal
    gate (what the scan of a changed file needs first) instead of waiting idle; once git is
    done, or on a small tree (whose walk would end before the loading), nothing."""
    index = _index_of(tmp_path, entries)
    argv = [sys.executable, "-c", _WARM_UP, status, state, str(index)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == loaded
