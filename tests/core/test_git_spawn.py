"""A git process started without `subprocess` (`core.git.spawn`) behaves as `start_git`'s:
the same bytes and exit codes, both pipes read to their end however much each holds, nothing
of the parent's but the pipes handed over, and one stopped unread is reaped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from corekit import git, write

from core.errors import GitError
from core.git.run import finish_git, spawn_git, start_git


def _fake_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """A `git` first on PATH running `body` (Python): a process that writes as git never
    does, to test the reading of its pipes."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    script = bin_dir / "git"
    script.write_text(f"#!{sys.executable}\nimport os, sys, time\n{body}\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_a_spawned_diff_is_the_diff_start_git_gives(repo: Path) -> None:
    write(repo / "big.txt", "".join(f"line {n}\n" for n in range(40_000)))  # > a pipe's 64 KiB
    git(repo, "add", "big.txt")
    git(repo, "commit", "-qm", "big")
    args = ["diff", "--no-color", "HEAD~1", "HEAD"]
    env = {"GIT_DIR": str(repo / ".git")}
    expected = finish_git(start_git(args, env=env), "diff")
    assert len(expected) > 200_000
    assert finish_git(spawn_git(args, env=env), "diff") == expected


def test_a_failing_call_fails_in_the_same_words(repo: Path) -> None:
    args = ["diff", "0" * 40, "HEAD"]
    env = {"GIT_DIR": str(repo / ".git")}
    with pytest.raises(GitError) as started:
        finish_git(start_git(args, env=env), "diff")
    with pytest.raises(GitError) as spawned:
        finish_git(spawn_git(args, env=env), "diff")
    assert spawned.value.message == started.value.message
    assert spawned.value.message.startswith("git diff failed: ")


def test_both_pipes_are_read_however_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each stream far past a pipe's capacity, interleaved: read one after the other, git
    would stall on the other one and this would never end."""
    _fake_git(
        tmp_path,
        monkeypatch,
        "for n in range(400):\n"
        "    os.write(1, b'o' * 1000 + b'\\n')\n"
        "    os.write(2, b'e' * 1000 + b'\\n')\n"
        "sys.exit(3)",
    )
    process = spawn_git(["anything"])
    out, err = process.communicate()
    assert (len(out), len(err), process.returncode) == (400_400, 400_400, 3)
    assert finish_git(spawn_git(["anything"]), "x", ok_codes=(3,)) == out


def test_the_child_gets_no_descriptor_of_the_parent_but_its_pipes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "held-open.db"
    secret.write_text("the parent's file\n")
    held = os.open(secret, os.O_RDONLY)  # what a store keeps open: close-on-exec by default
    try:
        _fake_git(
            tmp_path,
            monkeypatch,
            "for fd in sorted(os.listdir('/proc/self/fd')):\n"
            "    try: print(fd, os.readlink(f'/proc/self/fd/{fd}'))\n"
            "    except OSError: pass",
        )
        out, _err = spawn_git(["list-fds"]).communicate()
    finally:
        os.close(held)
    links = dict(line.split(" ", 1) for line in out.decode().splitlines())
    assert str(secret) not in links.values(), links
    assert {"0", "1", "2"} <= set(links)
    assert links["0"] == os.devnull


def test_a_process_stopped_unread_is_killed_and_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_git(tmp_path, monkeypatch, "os.write(1, b'started\\n')\ntime.sleep(60)")
    process = spawn_git(["wait"])
    process.stop()
    assert process.returncode == -9
    with pytest.raises(ChildProcessError):
        os.waitpid(process.pid, os.WNOHANG)  # reaped: no zombie left
    process.stop()  # twice: nothing more to do


def test_no_git_on_the_path_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitError) as spawned:
        spawn_git(["diff"])
    with pytest.raises(GitError) as started:
        start_git(["diff"])
    assert spawned.value.message == started.value.message


def test_the_module_loads_nothing_of_subprocess() -> None:
    """The module loads nothing of `subprocess`'s (the point of it)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, core.git.spawn; print('subprocess' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert probe.stdout.strip() == "False"


def test_a_read_only_call_answers_as_the_subprocess_one_does(repo: Path) -> None:
    """In a working directory, with an input larger than a pipe holds (written as git reads
    it), and failing: the same exit code and bytes either way."""
    from core.git.run import run_git_process

    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    head = git(repo, "rev-parse", "HEAD").strip()
    lines = (f"{head}\n" * 20_000).encode()  # ~820 KB on stdin
    calls = [
        (["rev-parse", "--show-toplevel", "HEAD"], None),
        (["cat-file", "--batch-check"], lines),
        (["rev-parse", "--verify", "no-such-ref"], None),
    ]
    for args, data in calls:
        plain = run_git_process(args, cwd=repo, input=data)
        spawned = run_git_process(args, cwd=repo, input=data, read_only=True)
        assert (spawned.returncode, spawned.stdout, spawned.stderr) == (
            plain.returncode,
            plain.stdout,
            plain.stderr,
        )
    assert spawned.returncode == 128 and b"single revision" in spawned.stderr


def test_a_spawned_process_is_polled_and_started_in_its_directory(repo: Path) -> None:
    (repo / "sub").mkdir()
    process = spawn_git(["rev-parse", "--show-prefix"], cwd=repo / "sub")
    while process.poll() is None:
        pass
    assert process.returncode == 0 and process.poll() == 0
    assert finish_git(process, "rev-parse") == b"sub/\n"  # read after it was reaped


def test_a_git_that_stops_reading_its_input_ends_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Input git never reads (it exits first) is dropped, as `subprocess` drops it; and the
    child runs with SIGPIPE and SIGXFSZ at their defaults, as under `subprocess` (Python
    itself ignores SIGPIPE, and an ignored signal stays ignored across exec)."""
    from core.git.run import run_git_process

    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    script = bin_dir / "git"
    script.write_text("#!/bin/sh\ngrep '^SigIgn' /proc/self/status\nexit 3\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    done = run_git_process(["anything"], input=b"x" * 2_000_000, read_only=True)
    assert done.returncode == 3
    ignored = int(done.stdout.split()[1], 16)
    assert not ignored & (1 << (13 - 1)) and not ignored & (1 << (25 - 1)), done.stdout
