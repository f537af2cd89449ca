"""Bad numbers, bad store paths and damaged rows through the real `pitstop` process (issue #17).

Each one used to end as "internal error" (or was silently accepted: a NaN budget, a half-written
evidence row); now each is one line naming the problem, the documented exit code, and a store
whose rows and repository bytes are exactly what they were.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from tests.tui.test_cli import assert_one_line_error, cli_env, ok_json, repo, run

__all__ = ["cli_env", "repo"]  # fixtures, shared with test_cli

BIG = "9" * 25  # past SQLite's 64-bit integers
HUGE_FLOAT = "9" * 400  # past a float: int("9"*400) * 86400 is inf


def store_state(root: Path) -> str:
    """The store's rows (a logical dump, WAL included) and its repositories' bytes."""
    digest = hashlib.sha256()
    with sqlite3.connect(root / "pitstop.db") as db:
        for line in db.iterdump():
            digest.update(line.encode())
    for path in sorted((root / "repos").rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


@pytest.fixture()
def busy_store(cli_env: dict[str, str], repo: Path, tmp_path: Path) -> Path:
    """A task `t` with one checkpoint, one evidence item and one proposed side effect."""
    ok_json(cli_env, "task", "start", "--repo", str(repo), "--objective", "x", "--id", "t")
    ok_json(cli_env, "checkpoint", "t", "--note", "first")
    (tmp_path / "out.txt").write_text("ok\n")
    ok_json(cli_env, "evidence", "add", "--task", "t", "--file", str(tmp_path / "out.txt"))
    ok_json(cli_env, "effect", "propose", "--task", "t", "--key", "k", "--kind", "deploy")
    return Path(cli_env["PITSTOP_HOME"])


def _refusals(repo: Path, out: Path) -> list[tuple[str, ...]]:
    add = ("evidence", "add", "--task", "t", "--file", str(out))
    start = ("task", "start", "--repo", str(repo), "--objective", "x", "--id")
    guard = ("effect", "guard", "--task", "t", "--key", "g", "--kind", "deploy")
    return [
        ("checkpoint", "t", "--usd-used", "nan"),
        ("checkpoint", "t", "--usd-used", "inf"),
        ("checkpoint", "t", "--usd-used", "-inf"),
        ("checkpoint", "t", "--tokens-used", BIG),
        (*start, "b1", "--budget-usd", "nan"),
        (*start, "b2", "--budget-usd", "inf"),
        (*start, "b3", "--budget-minutes", "nan"),
        (*start, "b4", "--budget-tokens", BIG),
        (*add, "--duration", "nan"),
        (*add, "--duration", "inf"),
        (*add, "--exit", BIG),
        (*add, "--cap-mib", "nan"),
        (*add, "--cap-mib", "inf"),
        ("run", "--task", "t", "--timeout", "nan", "--", "true"),
        ("run", "--task", "t", "--timeout", "inf", "--", "true"),
        ("run", "--task", "t", "--cap-mib", "nan", "--", "true"),
        ("run", "--task", "t", "--tail-lines", BIG, "--", "true"),
        ("evidence", "show", BIG),
        ("evidence", "list", f"t@{BIG}"),
        ("show", f"t@{BIG}"),
        ("validate", f"t@{BIG}"),
        ("diff", f"t@{BIG}"),
        ("approval", "request", "--task", "t", "--action", "a", "--expires-in", "9999999999d"),
        ("approval", "request", "--task", "t", "--action", "a", "--expires-in", f"{HUGE_FLOAT}d"),
        (*guard, "--wait", "nan", "--", "true"),
        (*guard, "--timeout", "nan", "--", "true"),
        (*guard, "--timeout", "inf", "--", "true"),
        ("effect", "check", "--task", "t", "--key", "k", "--timeout", "nan"),
    ]


def test_bad_numbers_are_one_line_and_change_nothing(
    cli_env: dict[str, str], repo: Path, busy_store: Path, tmp_path: Path
) -> None:
    before = store_state(busy_store)
    wrong = []
    for args in _refusals(repo, tmp_path / "out.txt"):
        result = run(cli_env, *args)
        try:
            assert_one_line_error(result, 2)
            assert "internal error" not in result.stderr
        except AssertionError:
            wrong.append((args, result.returncode, result.stderr.strip()))
        if store_state(busy_store) != before:
            wrong.append((args, "changed the store", result.stderr.strip()))
            before = store_state(busy_store)
    assert not wrong, "\n".join(map(str, wrong))


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("/proc/nope", "cannot create the store directory /proc/nope"),
        ("/dev/null", "the store path /dev/null is not a directory"),
    ],
)
def test_an_impossible_store_path_is_one_line(
    cli_env: dict[str, str], store: str, says: str
) -> None:
    for args in (("--store", store, "--init", "task", "list"), ("demo", store, "--no-ui")):
        result = run(cli_env, *args)
        assert_one_line_error(result, 1)
        assert says in result.stderr
    assert Path("/dev/null").is_char_device()


def _damage(store: Path, sql: str) -> None:
    with sqlite3.connect(store / "pitstop.db") as db:
        db.execute(sql)


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        (
            "DELETE FROM _sqlite_migrations WHERE name = '0005_validations_resumes'",
            "records later migrations but not 0005_validations_resumes",
        ),
        ("UPDATE tasks SET status = 'bogus'", "unknown task status 'bogus' (task t)"),
        ("UPDATE checkpoints SET state = 'odd'", "unknown checkpoint state 'odd' (checkpoint t@1)"),
        ("UPDATE effects SET state = 'odd'", "unknown effect state 'odd'"),
    ],
)
def test_a_hand_edited_database_is_named_with_what_to_do(
    cli_env: dict[str, str], busy_store: Path, sql: str, says: str
) -> None:
    _damage(busy_store, sql)
    before = store_state(busy_store)
    for args in (("task", "show", "t"), ("checkpoints", "t"), ("effect", "list", "--task", "t")):
        result = run(cli_env, *args)
        if result.returncode == 0:
            continue  # this command does not read the damaged row
        assert_one_line_error(result, 1)
        assert says in result.stderr and "pitstop doctor" in result.stderr
        break
    else:
        pytest.fail(f"no command noticed {sql}")
    assert store_state(busy_store) == before


def test_checkpoints_json_without_the_key_shows_the_placeholder(
    cli_env: dict[str, str], busy_store: Path
) -> None:
    keyless = {**cli_env, "PITSTOP_KEY": ""}
    result = run(keyless, "checkpoints", "t", "--json")
    assert result.returncode == 0, result.stderr
    (first,) = json.loads(result.stdout)
    assert first["note"] == "[encrypted: the key to read it is not available]"
    assert first["sealed_note"] is None and first["sealed_manifest"] is None
    text = run(keyless, "checkpoints", "t")
    assert "[encrypted: the key to read it is not available]" in text.stdout


def test_nothing_is_half_written_by_a_refused_evidence_add(
    cli_env: dict[str, str], busy_store: Path, tmp_path: Path
) -> None:
    run(
        cli_env,
        "evidence",
        "add",
        "--task",
        "t",
        "--file",
        str(tmp_path / "out.txt"),
        "--duration",
        "nan",
    )
    listed = ok_json(cli_env, "evidence", "list", "t")
    assert isinstance(listed, list) and [item["state"] for item in listed] == ["complete"]
