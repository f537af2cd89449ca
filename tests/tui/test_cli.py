"""The `pitstop` command line end to end: real processes, real git repos, real SQLite stores.

Every bad input must give one line on stderr, the documented exit code, no traceback, and leave
the store unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.corekit import make_objects_loose
from tests.gitconfig import EMPTY_GITCONFIG

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture()
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    env.update(GIT_ENV)
    env["PITSTOP_HOME"] = str(tmp_path / "store")
    env["PITSTOP_CONFIG_DIR"] = str(tmp_path / "config")
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    env["PITSTOP_KEY"] = os.environ["PITSTOP_KEY"]
    return env


@pytest.fixture()
def repo(tmp_path: Path, cli_env: dict[str, str]) -> Path:
    path = tmp_path / "repo"
    path.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=path, env=cli_env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    (path / "app.py").write_text("def main():\n    return 1\n")
    (path / "README.md").write_text("# demo\n")
    (path / "logo.bin").write_bytes(bytes(range(256)))
    git("add", "-A")
    git("commit", "-q", "-m", "initial")
    return path


def run(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def ok_json(env: dict[str, str], *args: str) -> object:
    result = run(env, *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int) -> None:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("pitstop: ")


def store_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        # SQLite's -wal/-shm files come and go with every connection; the data lives elsewhere.
        if path.is_file() and not path.name.endswith(("-wal", "-shm")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def test_task_lifecycle_and_checkpoint_round_trip(
    cli_env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    started = ok_json(
        cli_env,
        "task",
        "start",
        "--repo",
        str(repo / "README.md"),
        "--objective",
        "Make main return 2",
        "--id",
        "ret2",
        "--harness",
        "claude-code@2.0.14",
        "--model",
        "sonnet@4.5",
        "--budget-tokens",
        "1000",
        "--credential",
        "MY_TOKEN",
    )
    assert isinstance(started, dict)
    assert started["id"] == "ret2"
    assert started["repo_root"] == str(repo)
    assert started["harness"] == {"name": "claude-code", "version": "2.0.14"}

    (repo / "app.py").write_text("def main():\n    return 2\n")
    (repo / "logo.bin").write_bytes(bytes(range(255, -1, -1)))
    (repo / "notes.txt").write_text("untracked note\n")
    made = ok_json(
        cli_env,
        "checkpoint",
        "ret2",
        "--note",
        "halfway",
        "--done",
        "edit app",
        "--todo",
        "run tests",
        "--tokens-used",
        "300",
    )
    assert isinstance(made, dict) and made["skipped"] is False
    assert made["checkpoint"]["ref"] == "ret2@1"
    assert made["checkpoint"]["state"] == "complete"

    skipped = ok_json(cli_env, "checkpoint", "ret2")
    assert skipped == {"skipped": True, "message": skipped["message"]}  # type: ignore[index]
    assert "nothing changed" in skipped["message"]  # type: ignore[index]
    forced = ok_json(cli_env, "checkpoint", "ret2", "--force", "--reason", "before-wait")
    assert forced["checkpoint"]["ref"] == "ret2@2"  # type: ignore[index]

    listed = ok_json(cli_env, "checkpoints", "ret2")
    assert [c["ref"] for c in listed] == ["ret2@1", "ret2@2"]  # type: ignore[union-attr]
    assert ok_json(cli_env, "task", "show", "ret2")["status"] == "waiting"  # type: ignore[index]

    shown = ok_json(cli_env, "show", "ret2@1")
    assert isinstance(shown, dict) and shown["damaged"] is False
    manifest = shown["checkpoint"]["manifest"]
    assert manifest["schema"] == "pitstop.manifest/1"
    assert manifest["steps"] == {"done": ["edit app"], "todo": ["run tests"]}
    assert {c["path"] for c in manifest["snapshot"]["changed_files"]} == {
        "app.py",
        "logo.bin",
        "notes.txt",
    }

    patch = run(cli_env, "diff", "ret2@1")
    assert patch.returncode == 0
    assert "+    return 2" in patch.stdout
    assert "Binary files a/logo.bin and b/logo.bin differ" in patch.stdout
    stat = run(cli_env, "diff", "ret2@2", "--against", "previous", "--stat")
    assert stat.returncode == 0 and stat.stdout == ""

    out = tmp_path / "restored"
    restored = ok_json(cli_env, "checkout", "ret2@1", "--into", str(out))
    assert restored["files"] == 4  # type: ignore[index]
    assert (out / "app.py").read_text() == "def main():\n    return 2\n"
    assert (out / "logo.bin").read_bytes() == bytes(range(255, -1, -1))
    assert (out / "notes.txt").read_text() == "untracked note\n"

    done = ok_json(cli_env, "task", "done", "ret2", "--reason", "merged")
    assert done["status"] == "done"  # type: ignore[index]
    events = ok_json(cli_env, "log", "ret2")
    actions = [(e["action"], e["interface"]) for e in events]  # type: ignore[union-attr]
    assert ("start", "cli") in actions and ("done", "cli") in actions
    assert any(e["reason"] == "merged" for e in events)  # type: ignore[union-attr]


def test_human_output_reads_well(cli_env: dict[str, str], repo: Path) -> None:
    assert (
        run(
            cli_env, "task", "start", "--repo", str(repo), "--objective", "x", "--id", "hx"
        ).returncode
        == 0
    )
    (repo / "app.py").write_text("changed\n")
    made = run(cli_env, "checkpoint", "hx", "--note", "n1")
    assert made.returncode == 0
    assert made.stdout.startswith("checkpoint hx@1 complete: 1 changed file(s)")
    listing = run(cli_env, "task", "list")
    assert listing.stdout.splitlines()[0].split() == [
        "ID",
        "STATUS",
        "AGE",
        "CHECKPOINTS",
        "OBJECTIVE",
    ]
    assert "hx" in listing.stdout
    shown = run(cli_env, "show", "hx")
    assert "checkpoint  hx@1  (complete, manual)" in shown.stdout
    assert "M app.py" in shown.stdout


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["task", "show", "nope"], 2, "no task 'nope'"),
        (["checkpoint", "nope"], 2, "no task 'nope'"),
        (["show", "a@b@c"], 2, "invalid checkpoint"),
        (["show", "known@99"], 2, "has no checkpoint 99"),
        (["checkpoint", "known", "--reason", "bogus"], 2, "--reason"),
        (["task", "start", "--repo", "/nonexistent/path", "--objective", "x"], 2, "does not exist"),
        (["task", "start", "--repo", "{tmp}", "--objective", "x"], 2, "not inside a git work tree"),
        (
            ["task", "start", "--repo", "{repo}", "--objective", "x", "--id", "Bad Id"],
            2,
            "invalid task id",
        ),
        (
            ["task", "start", "--repo", "{repo}", "--objective", "x", "--id", "known"],
            1,
            "already exists",
        ),
        (
            ["task", "start", "--repo", "{repo}", "--objective", "x", "--harness", "@1"],
            2,
            "invalid --harness",
        ),
        (
            ["task", "start", "--repo", "{repo}", "--objective", "x", "--budget-usd", "-1"],
            2,
            "--budget-usd",
        ),
        (["checkout", "known@1", "--into", "{repo}"], 2, "not empty"),
        (["diff", "known@1", "--against", "yesterday"], 2, "--against"),
        (["no-such-command"], 2, "No such command"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    cli_env: dict[str, str], repo: Path, tmp_path: Path, args: list[str], code: int, fragment: str
) -> None:
    assert (
        run(
            cli_env, "task", "start", "--repo", str(repo), "--objective", "k", "--id", "known"
        ).returncode
        == 0
    )
    assert run(cli_env, "checkpoint", "known", "--force").returncode == 0
    outside = tmp_path / "plain"
    outside.mkdir()
    args = [a.format(tmp=outside, repo=repo) for a in args]
    store = Path(cli_env["PITSTOP_HOME"])
    before = store_digest(store)
    result = run(cli_env, *args)
    assert_one_line_error(result, code)
    assert fragment in result.stderr
    assert store_digest(store) == before


def test_store_from_a_newer_pitstop_is_refused(cli_env: dict[str, str], repo: Path) -> None:
    import sqlite3

    assert run(cli_env, "task", "list").returncode == 0
    db_path = Path(cli_env["PITSTOP_HOME"]) / "pitstop.db"
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
            "VALUES ('pitstop', '9999_future', 'later')"
        )
    conn.close()  # checkpoints the WAL, so the digest below sees the whole database
    before = store_digest(db_path.parent)
    result = run(cli_env, "task", "list")
    assert_one_line_error(result, 1)
    assert "newer Pitstop" in result.stderr
    assert store_digest(db_path.parent) == before


def test_damaged_checkpoint_is_reported_by_show(cli_env: dict[str, str], repo: Path) -> None:
    assert (
        run(
            cli_env, "task", "start", "--repo", str(repo), "--objective", "d", "--id", "dmg"
        ).returncode
        == 0
    )
    (repo / "new.txt").write_text("only in the snapshot\n")
    assert run(cli_env, "checkpoint", "dmg").returncode == 0
    shown = ok_json(cli_env, "show", "dmg@1")
    tree = shown["checkpoint"]["worktree_tree"]  # type: ignore[index]
    store_repo = next((Path(cli_env["PITSTOP_HOME"]) / "repos").glob("*.git"))
    make_objects_loose(store_repo)  # a checkpoint packs its objects: one file each, to lose one
    loose = store_repo / "objects" / tree[:2] / tree[2:]
    assert loose.exists(), "the snapshot tree is now a loose object"
    loose.unlink()
    result = run(cli_env, "show", "dmg@1")
    assert result.returncode == 1
    assert "DAMAGED" in result.stdout
    assert result.stderr.strip().startswith("pitstop: checkpoint dmg@1 is damaged")
    checkout = run(cli_env, "checkout", "dmg@1", "--into", str(repo.parent / "out"))
    assert_one_line_error(checkout, 1)
    assert not (repo.parent / "out").exists()


def test_store_location_precedence(cli_env: dict[str, str], tmp_path: Path) -> None:
    from_env = ok_json(cli_env, "locate")
    assert from_env["store"] == cli_env["PITSTOP_HOME"]  # type: ignore[index]
    explicit = tmp_path / "explicit"
    from_flag = ok_json(cli_env, "--store", str(explicit), "--init", "locate")
    assert from_flag["store"] == str(explicit)  # type: ignore[index]
    assert oct(explicit.stat().st_mode & 0o777) == "0o700"
    assert oct((explicit / "pitstop.db").stat().st_mode & 0o777) == "0o600"
    env = {k: v for k, v in cli_env.items() if k != "PITSTOP_HOME"}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    default = ok_json(env, "locate")
    assert default["store"] == str(tmp_path / "xdg" / "pitstop")  # type: ignore[index]


def test_help_does_not_import_the_dashboard_or_the_engine(cli_env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tui.cli", "--help"],
        env=cli_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert "checkpoint" in result.stdout
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines()}
    for heavy in ("textual", "sqlite_utils", "git"):
        assert heavy not in imported, f"{heavy} is imported by `pitstop --help`"


LOADED_AT_EXIT = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
from tui.cli import main
main(sys.argv[1:])
"""


def test_a_command_imports_only_its_own_command_module(cli_env: dict[str, str]) -> None:
    # sys.modules, not -X importtime: the lazy group imports with importlib, which it misses.
    result = subprocess.run(
        [sys.executable, "-c", LOADED_AT_EXIT, "locate"],
        env=cli_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stderr.splitlines()[-1]))
    command_modules = {name for name in loaded if name.startswith("tui.cli.")}
    assert command_modules == {"tui.cli.base", "tui.cli.lazy", "tui.cli.locate"}
    assert "textual" not in loaded
