"""A remote written by an attacker with push access and no key: malformed, oversized and
mislabelled refs, headers, checkpoints, evidence and facts.

Each is refused with one line, leaves the victim's store as it was, and never stops the healthy
task on the same remote from listing and fetching. Real git throughout: the attacker writes
objects and refs into the bare remote with git plumbing (tests/core/hostile_kit.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.engine import Engine
from core.errors import PitstopError
from core.git import plumbing
from core.git.objects import EMPTY_TREE
from core.git.reader import ObjectReader
from tests.core.hostile_kit import (
    HEALTHY,
    TARGET,
    World,
    blob,
    build_world,
    dump,
    point_ref,
    raw_json,
    read,
    ref_oid,
    replace_file,
    with_file,
)

LEDGER = f"refs/pitstop/ledger/{TARGET}"
CHECKPOINTS = f"refs/pitstop/checkpoints/{TARGET}"
MIB = 1024 * 1024


@pytest.fixture
def world(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> World:
    """A fresh copy of the remote with `healthy-task` and `target-task`, and a clone of it."""
    return build_world(tmp_path_factory.getbasetemp() / "hostile-world", tmp_path)


@pytest.fixture
def largest_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The size of every object content the store's readers hand out during the test."""
    sizes: list[int] = []
    original = ObjectReader.read

    def spy(self: ObjectReader, spec: str) -> tuple[str, bytes] | None:
        found = original(self, spec)
        if found is not None:
            sizes.append(len(found[1]))
        return found

    monkeypatch.setattr(ObjectReader, "read", spy)
    yield sizes


def _header(world: World) -> dict[str, Any]:
    return dict(json.loads(read(world.remote, f"{LEDGER}:task.json")))


def _checkpoint(world: World) -> dict[str, Any]:
    return dict(json.loads(read(world.remote, f"{CHECKPOINTS}:checkpoint.json")))


def _evidence_dir(world: World) -> str:
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{CHECKPOINTS}:evidence"],
        cwd=world.remote,
        capture_output=True,
        check=True,
    ).stdout.split()
    assert len(names) == 1
    return f"evidence/{names[0].decode()}"


def _item(world: World) -> dict[str, Any]:
    return dict(json.loads(read(world.remote, f"{CHECKPOINTS}:{_evidence_dir(world)}/item.json")))


def _rows_of(engine: Engine, task_id: str) -> dict[str, int]:
    """How many rows of each table (but the remembered listings) are about `task_id`."""
    conn = engine.db.conn
    counts = {}
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        column = "task_id" if "task_id" in columns else "id" if table == "tasks" else None
        if column and table != "remote_listing":
            sql = f"SELECT count(*) FROM {table} WHERE {column} = ?"
            count = conn.execute(sql, [task_id]).fetchone()[0]
            if count:
                counts[table] = count
    return counts


def _refused_alone(world: World, words: str) -> None:
    """The target task is refused with one line naming `words`, the victim's store is left as
    it was, and the healthy task on the same remote still lists and fetches."""
    with Engine(world.tmp / "victim") as victim:
        before = dump(victim)
        with pytest.raises(PitstopError) as refused:
            victim.fetch([TARGET], world.url, world.clone)
        assert words in refused.value.message
        assert "\n" not in refused.value.message
        assert dump(victim) == before, "a refused fetch changed the store"

        listing = victim.list_remote(world.url, world.clone)
        assert HEALTHY in [t.task_id for t in listing.tasks]
        result = victim.fetch([], world.url, world.clone)
        assert HEALTHY in result.fetched
        assert TARGET not in result.fetched
        assert words in result.problems[TARGET]
        assert TARGET not in {t.id for t in victim.list_tasks()}
        assert _rows_of(victim, TARGET) == {}
        victim.gc()  # retention works on what came in
        assert [c.seq for c in victim.list_checkpoints(HEALTHY)] == [1]


def _checkpoint_refused_alone(world: World, words: str) -> None:
    """The target task's forged checkpoint is refused with one line naming `words` while the
    task's ledger still comes in; nothing of the checkpoint is recorded, and the healthy task
    on the same remote still lists and fetches."""
    with Engine(world.tmp / "victim") as victim:
        outcome = victim.fetch([TARGET], world.url, world.clone).fetched[TARGET]
        (line,) = outcome["refused_checkpoints"]
        assert words in line and "\n" not in line and "refused" in line
        assert outcome["checkpoints"] == 0
        assert victim.list_checkpoints(TARGET) == []
        assert victim.list_evidence(TARGET) == []
        assert not victim.db.execute(
            "SELECT 1 FROM remote_exports WHERE task_id = ?", [TARGET]
        ).fetchall()
        listing = victim.list_remote(world.url, world.clone)
        assert HEALTHY in [t.task_id for t in listing.tasks]
        result = victim.fetch([], world.url, world.clone)
        assert HEALTHY in result.fetched
        victim.gc()  # retention works on what came in
        assert [c.seq for c in victim.list_checkpoints(HEALTHY)] == [1]


# --- task.json ---------------------------------------------------------------------------------

HEADER_CASES: dict[str, tuple[Callable[[dict[str, Any]], bytes], str]] = {
    "nan usd": (lambda h: raw_json(h, usd_used="NaN"), "not valid JSON"),
    "infinite usd": (lambda h: raw_json(h, usd_used="-Infinity"), "not valid JSON"),
    "1e309 tokens": (lambda h: raw_json(h, tokens_used="1e309"), "not valid JSON"),
    "negative tokens": (lambda h: raw_json({**h, "tokens_used": -1}), "tokens_used"),
    "bool tokens": (lambda h: raw_json({**h, "tokens_used": True}), "tokens_used"),
    "float tokens": (lambda h: raw_json({**h, "tokens_used": 1.5}), "tokens_used"),
    "huge budget": (lambda h: raw_json({**h, "budget": {"tokens": 10**30}}), "budget: tokens"),
    "negative budget": (lambda h: raw_json({**h, "budget": {"usd": -5}}), "budget: usd"),
    "bad time": (lambda h: raw_json({**h, "updated_at": "yesterday"}), "updated_at"),
    "impossible time": (
        lambda h: raw_json({**h, "created_at": "2024-13-45T99:00:00.000000Z"}),
        "created_at",
    ),
    "unknown status": (lambda h: raw_json({**h, "status": "hacked"}), "status"),
    "bad checkpoint seq": (
        lambda h: raw_json({**h, "checkpoints": [{**h["checkpoints"][0], "seq": "1; rm -rf ~"}]}),
        "seq",
    ),
    "unknown reason": (
        lambda h: raw_json({**h, "checkpoints": [{**h["checkpoints"][0], "reason": "pwned"}]}),
        "reason",
    ),
    "recipients object": (lambda h: raw_json({**h, "recipients": {"a": 1}}), "recipients"),
    "escape codes": (lambda h: raw_json({**h, "harness": "\x1b[31mred"}), "control character"),
    "bidi override": (lambda h: raw_json({**h, "model": "gpt\u202e"}), "control character"),
    "another task": (lambda h: raw_json({**h, "task": HEALTHY}), "is for task"),
    "dotted task": (lambda h: raw_json({**h, "task": "a..b"}), "not a valid task id"),
    "shell task": (lambda h: raw_json({**h, "task": "x;rm -rf ~"}), "not a valid task id"),
    "bad store id": (lambda h: raw_json({**h, "origin_store": "../../x"}), "origin_store"),
    "sealed not base64": (lambda h: raw_json({**h, "sealed": "!!"}), "sealed"),
    "no schema": (lambda h: raw_json({k: v for k, v in h.items() if k != "schema"}), "schema"),
    "not JSON": (lambda h: b"\xff\xfe{not json", "not valid JSON"),
    "an array": (lambda h: b"[1, 2, 3]", "not a JSON object"),
    "deep nesting": (lambda h: b"[" * 60_000, "nested too deeply"),
    "10 MiB": (lambda h: raw_json({**h, "pad": "x" * (10 * MIB)}), "over its 65536-byte limit"),
}


@pytest.mark.parametrize("case", HEADER_CASES, ids=list(HEADER_CASES))
def test_a_forged_task_header_is_refused_alone(
    world: World, case: str, largest_read: list[int]
) -> None:
    forge, words = HEADER_CASES[case]
    replace_file(world.remote, LEDGER, "task.json", forge(_header(world)))
    _refused_alone(world, words)
    assert max(largest_read) < MIB, "an oversized blob was read"


# --- checkpoint.json ---------------------------------------------------------------------------

CHECKPOINT_CASES: dict[str, tuple[Callable[[dict[str, Any]], bytes], str]] = {
    "bool seq": (lambda c: raw_json({**c, "seq": True}), "seq"),
    "text seq": (lambda c: raw_json({**c, "seq": "1"}), "seq"),
    "negative bytes": (lambda c: raw_json({**c, "bytes_added": -1}), "bytes_added"),
    "huge count": (lambda c: raw_json({**c, "changed_count": 2**70}), "changed_count"),
    "nan ms": (lambda c: raw_json(c, creation_ms="NaN"), "not valid JSON"),
    "1e309 count": (lambda c: raw_json(c, left_out_count="1e309"), "not valid JSON"),
    "bad time": (lambda c: raw_json({**c, "created_at": "soon"}), "created_at"),
    "unknown reason": (lambda c: raw_json({**c, "reason": "pwned"}), "reason"),
    "unknown worktree": (lambda c: raw_json({**c, "worktree": "exec"}), "worktree"),
    "bad evidence id": (lambda c: raw_json({**c, "evidence": ["2; rm"]}), "evidence id"),
    "another task": (lambda c: raw_json({**c, "task": HEALTHY}), "belongs to task"),
    "bad hash": (lambda c: raw_json({**c, "manifest_sha256": "zz"}), "manifest_sha256"),
    "bad base": (lambda c: raw_json({**c, "base_commit": "HEAD; rm -rf ~"}), "base_commit"),
    "an array": (lambda c: b"[]", "not a JSON object"),
    "not JSON": (lambda c: b"{{{", "not valid JSON"),
    "300 KiB": (lambda c: raw_json({**c, "pad": "x" * (300 * 1024)}), "over its 262144-byte"),
}


@pytest.mark.parametrize("case", CHECKPOINT_CASES, ids=list(CHECKPOINT_CASES))
def test_a_forged_checkpoint_is_refused_alone(world: World, case: str) -> None:
    forge, words = CHECKPOINT_CASES[case]
    replace_file(world.remote, CHECKPOINTS, "checkpoint.json", forge(_checkpoint(world)))
    _checkpoint_refused_alone(world, words)


# --- evidence item.json ------------------------------------------------------------------------


def _plain(**values: Any) -> Callable[[dict[str, Any]], bytes]:
    return lambda i: raw_json({**i, "plain": {**i["plain"], **values}})


ITEM_CASES: dict[str, tuple[Callable[[dict[str, Any]], bytes], str]] = {
    "shell exit code": (_plain(exit_code="0; rm -rf"), "exit_code"),
    "1e309 exit code": (
        lambda i: raw_json({**i, "plain": "@@P@@"}).replace(
            b'"@@P@@"', raw_json(i["plain"], exit_code="1e309")
        ),
        "not valid JSON",
    ),
    "bool exit code": (_plain(exit_code=False), "exit_code"),
    "negative duration": (_plain(duration_ms=-5), "duration_ms"),
    "bad sha256": (_plain(sha256="../../etc/passwd"), "sha256"),
    "unknown state": (_plain(state="running"), "state"),
    "a column of ours": (_plain(task_id=HEALTHY), "unknown field"),
    "an id": (_plain(id=1), "unknown field"),
    "bad chunk": (lambda i: raw_json({**i, "chunks": [{"seq": "x"}]}), "seq"),
    "another item": (lambda i: raw_json({**i, "origin_id": 999}), "filed as evidence"),
    "an array": (lambda i: b"[0]", "not a JSON object"),
    "not JSON": (lambda i: b"exit 0", "not valid JSON"),
    "100 KiB": (lambda i: raw_json({**i, "pad": "x" * (100 * 1024)}), "over its 65536-byte"),
}


@pytest.mark.parametrize("case", ITEM_CASES, ids=list(ITEM_CASES))
def test_a_forged_evidence_item_is_refused_alone(world: World, case: str) -> None:
    forge, words = ITEM_CASES[case]
    path = f"{_evidence_dir(world)}/item.json"
    replace_file(world.remote, CHECKPOINTS, path, forge(_item(world)))
    _checkpoint_refused_alone(world, words)


def test_an_evidence_file_naming_another_column_is_refused(world: World) -> None:
    replace_file(world.remote, CHECKPOINTS, f"{_evidence_dir(world)}/task_id.enc", b"x")
    _checkpoint_refused_alone(world, "unknown file")


# --- ledger facts ------------------------------------------------------------------------------


def test_an_oversized_fact_is_left_out_unread_and_the_rest_applies(
    world: World, largest_read: list[int]
) -> None:
    uid = "ff" + "0" * 62
    huge = json.dumps({"schema": "pitstop.ledger/1", "pad": "x" * (2 * MIB)}).encode()
    replace_file(world.remote, LEDGER, f"facts/ff/{uid}.json", huge)
    with Engine(world.tmp / "victim") as victim:
        result = victim.fetch([TARGET], world.url, world.clone)
        refused = result.fetched[TARGET]["refused"]
        assert len(refused) == 1
        assert uid in refused[0] and "over its 1048576-byte limit" in refused[0]
        assert victim.get_task(TARGET).objective == f"work on {TARGET}"
        assert [c.seq for c in victim.list_checkpoints(TARGET)] == [1]
    assert max(largest_read) < MIB, "the oversized fact was read"


# --- ref names ---------------------------------------------------------------------------------

BAD_NAMES = ("Evil-Task", "x;rm${IFS}-rf", "$(touch${IFS}pwned)", "a" * 65, "nested/task")


def _plant_bad_refs(world: World) -> None:
    healthy = ref_oid(world.remote, f"refs/pitstop/ledger/{HEALTHY}")
    for name in BAD_NAMES:
        assert point_ref(world.remote, f"refs/pitstop/ledger/{name}", healthy).returncode == 0
    # git itself refuses `..` in a ref name; such an id can only come inside a header
    assert point_ref(world.remote, "refs/pitstop/ledger/a..b", healthy).returncode != 0


def test_refs_named_for_no_valid_task_are_skipped_with_a_line_each(world: World) -> None:
    _plant_bad_refs(world)
    with Engine(world.tmp / "victim") as victim:
        listing = victim.list_remote(world.url, world.clone)
        assert sorted(t.task_id for t in listing.tasks) == [HEALTHY, TARGET]
        assert len(listing.problems) == len(BAD_NAMES)
        assert all("not a valid task id" in why for why in listing.problems.values())
        assert {row["task_id"] for row in victim.remote_only_tasks()} == {HEALTHY, TARGET}

        result = victim.fetch([], world.url, world.clone)
        assert sorted(result.fetched) == [HEALTHY, TARGET]
        assert len(result.problems) == len(BAD_NAMES)
        assert {t.id for t in victim.list_tasks()} == {HEALTHY, TARGET}

        for name in ("Evil-Task", "x*:refs/heads/main"):  # named on purpose: one line, exit 2
            before = dump(victim)
            with pytest.raises(PitstopError) as refused:
                victim.fetch([name], world.url, world.clone)
            assert "invalid task id" in refused.value.message
            assert refused.value.exit_code == 2
            assert dump(victim) == before


# --- the command line --------------------------------------------------------------------------


def _cli(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PITSTOP_HOME=str(world.tmp / "victim"))
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args, "--remote", world.url],
        cwd=world.clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_cli_prints_one_line_per_bad_task_and_exits_1(world: World) -> None:
    _plant_bad_refs(world)
    replace_file(world.remote, LEDGER, "task.json", raw_json({**_header(world), "usd_used": -1}))
    listed = _cli(world, "remote", "list")
    assert listed.returncode == 1, listed.stderr
    assert "Traceback" not in listed.stderr + listed.stdout
    lines = listed.stdout.splitlines()
    assert sum(HEALTHY in line for line in lines) == 1
    assert sum("not listed" in line for line in lines) == len(BAD_NAMES) + 1
    assert sum(TARGET in line and "usd_used" in line for line in lines) == 1

    fetched = _cli(world, "fetch")
    assert fetched.returncode == 1, fetched.stderr
    assert "Traceback" not in fetched.stderr + fetched.stdout
    lines = fetched.stdout.splitlines()
    assert any(HEALTHY in line and "new task" in line for line in lines)
    assert sum("not fetched" in line for line in lines) == len(BAD_NAMES) + 1

    alone = _cli(world, "fetch", TARGET)
    assert alone.returncode == 1
    assert "Traceback" not in alone.stderr
    assert len(alone.stderr.strip().splitlines()) == 1 and "usd_used" in alone.stderr


# --- the capped reader itself ------------------------------------------------------------------


@pytest.fixture(params=["git", "git before 2.36"])
def git_kind(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """This git, or one without `cat-file --batch-command` (a wrapper that refuses it as a git
    before 2.36 does), so the reader's fallback to `--batch` and `--batch-check` runs too."""
    if request.param == "git before 2.36":
        real = shutil.which("git")
        assert real is not None
        bin_dir = tmp_path / "old-git"
        bin_dir.mkdir()
        wrapper = bin_dir / "git"
        wrapper.write_text(
            "#!/bin/sh\n"
            'case "$*" in *--batch-command*) echo "error: unknown option" >&2; exit 129;; esac\n'
            f'exec {real} "$@"\n'
        )
        wrapper.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        refused = subprocess.run(["git", "cat-file", "--batch-command"], capture_output=True)
        assert refused.returncode == 129  # the reader meets what an old git says
    return str(request.param)


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_read_capped_refuses_an_oversized_blob_unread(
    tmp_path: Path, packed: bool, largest_read: list[int], git_kind: str
) -> None:
    repo = tmp_path / "objects.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    small = blob(repo, b"small\n")
    big = blob(repo, b"x" * (3 * MIB))
    tree = with_file(repo, with_file(repo, EMPTY_TREE, "a/small.txt", small), "big.bin", big)
    if packed:
        assert point_ref(repo, "refs/keep", tree).returncode == 0
        subprocess.run(["git", "repack", "-adq"], cwd=repo, check=True)
        subprocess.run(["git", "prune-packed"], cwd=repo, check=True)
        for oid in (small, big, tree):
            assert not (repo / "objects" / oid[:2] / oid[2:]).exists()
    caps = {small: 100, big: MIB, f"{tree}:a/small.txt": 100, f"{tree}:big.bin": MIB, "f" * 40: 9}
    for opened in (False, True):
        if opened:
            with plumbing.session(repo):
                found = plumbing.read_capped(repo, caps)
        else:
            found = plumbing.read_capped(repo, caps)
        assert found[small] == found[f"{tree}:a/small.txt"] == b"small\n"
        assert found[big] == found[f"{tree}:big.bin"] == plumbing.Oversized(3 * MIB, MIB)
        assert found["f" * 40] is None
        assert plumbing.read_capped(repo, {small: 5})[small] == plumbing.Oversized(6, 5)
    assert max(largest_read) < MIB


def test_a_path_missing_from_a_loose_tree_is_known_missing_without_cat_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.git import reader

    repo = tmp_path / "objects.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    small = blob(repo, b"small\n")
    tree = with_file(repo, EMPTY_TREE, "a/small.txt", small)

    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cat-file was started to learn what the loose trees already say")

    monkeypatch.setattr(reader, "start_git", no_process)
    found = plumbing.read_objects(
        repo, [f"{tree}:note.enc", f"{tree}:a/none", f"{tree}:a/small.txt"]
    )
    assert found == {
        f"{tree}:note.enc": None,
        f"{tree}:a/none": None,
        f"{tree}:a/small.txt": b"small\n",
    }
    capped = plumbing.read_capped(repo, {f"{tree}:note.enc": 10, f"{tree}:a/small.txt": 10})
    assert capped == {f"{tree}:note.enc": None, f"{tree}:a/small.txt": b"small\n"}
