"""Secrets in snapshots: every changed or untracked file is judged by the redactor's rules.

An untracked file holding a secret is left out and listed with the rule and line; a tracked
file whose change holds one is kept exactly but stored sealed, and restored byte for byte on
checkout and resume; a push never sends such a snapshot as plain trees. The planted secrets are
shapes the redactor has long caught (`ghp_` + 36, `AKIA` + 16 with its secret key, `xoxb-`), so
these tests stand on their own whatever the rules learn next. Every test reads the store's raw
bytes and its repositories' objects, decompressed, and finds none of them there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from corekit import (
    all_store_object_bytes,
    blob_at,
    git,
    init_repo,
    ls_tree,
    only_store_repo,
    raw_bytes_under,
    rewrite_manifests,
    store_repos,
    tree_state,
    write,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from core.engine import CheckpointRequest, Engine
from core.errors import UsageError
from core.models import Checkpoint
from core.snapshot import first_secret
from core.snapshot.sealed_files import STAND_IN_MAGIC

GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GITHUB_2 = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"
AWS_ID = "AKIA" + "QWERTYUIOPASDFGH"
AWS_SECRET = "Zq7Lm3Rt5Wx2Np4Kv6Hy8Jb1Fc9Gd0Sa3Ue5Ti7O"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_2 = "xoxb-" + "210987654321-3210987654321-ZyXwVuTsRqPoNmLkJiHgFeDc"
PLANTED = (GITHUB, GITHUB_2, AWS_ID, AWS_SECRET, SLACK, SLACK_2)

BASE_FILES: dict[str, str | bytes] = {
    "README.md": "# demo\n",
    "src/app.py": "print('hello')\n",
    "src/settings.py": "DEBUG = False\n",
    "bin/release.sh": "#!/bin/sh\necho release\n",
    "docs/old.md": "moved soon\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    made = init_repo(tmp_path / "repo", BASE_FILES)
    (made / "bin/release.sh").chmod(0o755)
    git(made, "add", "bin/release.sh")
    git(made, "commit", "-q", "-m", "executable")
    return made


def _checkpoint(engine: Engine, task_id: str = "t1", **request: object) -> Checkpoint:
    result = engine.checkpoint(task_id, CheckpointRequest(**request))  # type: ignore[arg-type]
    assert result.checkpoint is not None, result.skipped
    return result.checkpoint


def _left_out(cp: Checkpoint) -> dict[str, str]:
    assert cp.manifest is not None
    return {item["path"]: item["reason"] for item in cp.manifest["left_out"]}


def _sealed(cp: Checkpoint) -> dict[tuple[str, str], dict[str, Any]]:
    assert cp.manifest is not None
    return {(e["tree"], e["path"]): e for e in cp.manifest["snapshot"]["sealed"]}


def _leaks(data: bytes, secrets: Iterable[str] = PLANTED) -> list[str]:
    """The planted secrets (whole, or their second half) found in `data`."""
    return [s for s in secrets if s.encode() in data or s[len(s) // 2 :].encode() in data]


def assert_store_holds_no_secret(store_root: Path, secrets: Iterable[str] = PLANTED) -> None:
    """Every file under the store, and every object of its repositories decompressed."""
    secrets = tuple(secrets)
    for path, data in raw_bytes_under(store_root):
        assert not _leaks(data, secrets), path
    for store_repo in store_repos(store_root):
        assert not _leaks(all_store_object_bytes(store_repo), secrets), store_repo


def _stand_in(store_root: Path, tree: str, path: str) -> bytes:
    return blob_at(only_store_repo(store_root), tree, path)


# --- untracked files: left out, listed with the rule and the line ------------------------------


def test_untracked_files_holding_secrets_are_left_out_with_the_rule_and_line(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / "config.yaml", f"github:\n  token: {GITHUB}\n")
    write(
        repo / "notes.txt",
        f"remember:\naws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\n",
    )
    write(repo / "deploy.sh", f"#!/bin/sh\nset -e\nexport SLACK_TOKEN={SLACK}\n", 0o755)
    write(repo / "plain.txt", "nothing to see\n")
    engine.start_task(repo=repo, objective="untracked secrets", task_id="t1")

    cp = _checkpoint(engine)

    left = _left_out(cp)
    assert left["config.yaml"] == "contains a github-token at line 2"
    assert left["notes.txt"] == "contains an aws-access-key-id at line 2"
    assert left["deploy.sh"] == "contains a slack-token at line 3"
    worktree = ls_tree(only_store_repo(store_root), cp.worktree_tree or "")
    assert "plain.txt" in worktree
    assert not {"config.yaml", "notes.txt", "deploy.sh"} & set(worktree)
    assert cp.left_out_count == 3
    assert_store_holds_no_secret(store_root)


# --- tracked files: kept exactly, stored sealed ------------------------------------------------


def test_a_tracked_file_edited_to_hold_a_token_is_sealed_and_checked_out_exactly(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    write(repo / "src/settings.py", f"DEBUG = False\nGITHUB_TOKEN = '{GITHUB}'\n")
    write(repo / "bin/release.sh", f"#!/bin/sh\ncurl -H 'x: {SLACK}' x\n")  # keeps its exec bit
    write(repo / "src/app.py", "print('hello, world')\n")
    engine.start_task(repo=repo, objective="tracked secrets", task_id="t1")

    cp = _checkpoint(engine)

    sealed = _sealed(cp)
    settings_entry = sealed[("worktree", "src/settings.py")]
    assert (settings_entry["rule"], settings_entry["line"]) == ("github-token", 2)
    assert sealed[("worktree", "bin/release.sh")]["mode"] == "100755"
    assert ("index", "src/settings.py") not in sealed  # not staged: the index has the base
    stand_in = _stand_in(store_root, cp.worktree_tree or "", "src/settings.py")
    assert stand_in.startswith(STAND_IN_MAGIC) and not _leaks(stand_in)
    assert "src/settings.py" not in _left_out(cp)
    assert_store_holds_no_secret(store_root)

    target = tmp_path / "restored"
    engine.checkout(cp.ref, target)
    assert tree_state(target) == tree_state(repo)
    assert os.access(target / "bin/release.sh", os.X_OK)


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_staged_secrets_are_sealed_in_the_index_and_resume_restores_both_exactly(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path, packed: bool
) -> None:
    # staged with one token, then edited to hold another ("MM"); a new file added with one
    write(repo / "src/settings.py", f"TOKEN = '{GITHUB}'\n")
    git(repo, "add", "src/settings.py")
    write(repo / "src/settings.py", f"TOKEN = '{GITHUB_2}'\n")
    write(repo / "ops/hook.txt", f"slack\n{SLACK}\n")
    git(repo, "add", "ops/hook.txt")
    if packed:  # the staged blobs live in a pack, as after `git gc`
        git(repo, "repack", "-a", "-d", "-q")
        git(repo, "prune-packed")
        assert "count: 0\n" in git(repo, "count-objects", "-v")
    staged_settings = git(repo, "show", ":src/settings.py")
    status_before = git(repo, "status", "--porcelain")
    engine.start_task(repo=repo, objective="staged secrets", task_id="t1")

    cp = _checkpoint(engine)

    sealed = _sealed(cp)
    assert {key for key in sealed} == {
        ("index", "src/settings.py"),
        ("worktree", "src/settings.py"),
        ("index", "ops/hook.txt"),
        ("worktree", "ops/hook.txt"),  # unchanged since staged: the work tree's is sealed too
    }
    assert sealed[("index", "ops/hook.txt")]["line"] == 2
    assert_store_holds_no_secret(store_root)

    plan = engine.resume(cp.ref, into=tmp_path / "resumed", offline=True)
    resumed = Path(plan.workdir)
    assert tree_state(resumed) == tree_state(repo)
    assert git(resumed, "show", ":src/settings.py") == staged_settings
    assert git(resumed, "status", "--porcelain") == status_before
    assert_store_holds_no_secret(store_root)


def test_resume_in_place_restores_a_sealed_file_and_its_staged_state(
    engine: Engine, repo: Path, tmp_path: Path
) -> None:
    write(repo / "src/settings.py", f"TOKEN = '{GITHUB}'\n")
    git(repo, "add", "src/settings.py")
    write(repo / "src/app.py", f"print('{SLACK}')\n")
    engine.start_task(repo=repo, objective="in place", task_id="t1")
    cp = _checkpoint(engine)
    files, status_before = tree_state(repo), git(repo, "status", "--porcelain")

    git(repo, "reset", "-q", "--hard")
    plan = engine.resume(cp.ref, in_place=True, offline=True)

    assert Path(plan.workdir) == repo
    assert tree_state(repo) == files
    assert git(repo, "status", "--porcelain") == status_before


def test_an_unchanged_sealed_file_keeps_its_stand_in_so_nothing_new_is_skipped(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / "src/settings.py", f"TOKEN = '{GITHUB}'\n")
    engine.start_task(repo=repo, objective="no-op", task_id="t1")
    first = _checkpoint(engine)

    again = engine.checkpoint("t1", CheckpointRequest())
    assert again.checkpoint is None and "nothing changed" in (again.skipped or "")
    forced = _checkpoint(engine, force=True)
    assert forced.worktree_tree == first.worktree_tree

    write(repo / "src/settings.py", f"TOKEN = '{GITHUB_2}'\n")
    changed = _checkpoint(engine)
    assert changed.worktree_tree != first.worktree_tree
    assert (
        _sealed(changed)[("worktree", "src/settings.py")]["plain_blob"]
        != (_sealed(first)[("worktree", "src/settings.py")]["plain_blob"])
    )
    assert_store_holds_no_secret(store_root)


def test_a_sealed_copy_that_is_not_the_manifests_bytes_is_refused_and_nothing_is_written(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    from core.errors import PitstopError

    write(repo / "src/settings.py", f"TOKEN = '{GITHUB}'\n")
    write(repo / "src/app.py", f"print('{SLACK}')\n")
    engine.start_task(repo=repo, objective="tampered", task_id="t1")
    cp = _checkpoint(engine)
    engine.close()

    def swap_copies(document: dict[str, Any]) -> None:  # each path now names the other's bytes
        first, second = document["snapshot"]["sealed"]
        first["blob"], second["blob"] = second["blob"], first["blob"]

    rewrite_manifests(store_root, "t1", swap_copies)
    with Engine() as reopened:
        with pytest.raises(PitstopError) as refused:
            reopened.checkout(cp.ref, tmp_path / "restored")
        assert "the sealed copy of src/" in refused.value.message
        assert "altered or moved" in refused.value.message
        assert not (tmp_path / "restored").exists()


def test_checkpoint_and_show_print_the_rule_and_line_never_the_value(
    engine: Engine, repo: Path
) -> None:
    from tui.render import manifest_text, secret_lines

    write(repo / "config.yaml", f"token: {GITHUB}\n")
    write(repo / "src/settings.py", f"DEBUG = True\nSLACK = '{SLACK}'\n")
    engine.start_task(repo=repo, objective="printing", task_id="t1")
    cp = _checkpoint(engine)

    said = "\n".join(secret_lines(cp.manifest))
    assert "left out: config.yaml — contains a github-token at line 1" in said
    assert "stored encrypted: src/settings.py — contains a slack-token at line 2" in said
    shown = manifest_text(engine.get_checkpoint(cp.ref), [])
    assert "config.yaml  — contains a github-token at line 1" in shown
    assert "src/settings.py  — contains a slack-token at line 2" in shown
    assert not _leaks((said + shown).encode())


# --- --allow-secret ----------------------------------------------------------------------------


def test_allow_secret_keeps_the_file_as_it_is_and_audits_path_and_rule(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / "config.yaml", f"token: {GITHUB}\n")
    write(repo / "src/settings.py", f"SLACK = '{SLACK}'\n")
    engine.start_task(repo=repo, objective="allowed", task_id="t1")

    cp = _checkpoint(engine, allow_secrets=("config.yaml", str(repo / "src/settings.py")))

    assert "config.yaml" not in _left_out(cp) and not _sealed(cp)
    store = only_store_repo(store_root)
    assert blob_at(store, cp.worktree_tree or "", "config.yaml") == f"token: {GITHUB}\n".encode()
    assert cp.manifest is not None
    allowed = {item["path"]: item for item in cp.manifest["snapshot"]["allowed_secrets"]}
    assert allowed["config.yaml"]["rule"] == "github-token"
    assert allowed["src/settings.py"]["rule"] == "slack-token"
    events = [e for e in engine.events("t1") if e.action == "allow-secret"]
    assert len(events) == 2
    reasons = " ".join(e.reason or "" for e in events)
    assert "config.yaml" in reasons and "github-token" in reasons
    assert "src/settings.py" in reasons and "slack-token" in reasons
    assert not _leaks(reasons.encode())
    # the audit trail itself holds no value either (the reason is redacted, then sealed)
    db = b"".join(p.read_bytes() for p in store_root.glob("pitstop.db*"))
    assert not _leaks(db)


@pytest.mark.parametrize("bad", ["../outside.txt", "/etc/passwd", "no-such-file.txt", "."])
def test_allow_secret_outside_the_repository_or_missing_is_refused(
    engine: Engine, repo: Path, bad: str
) -> None:
    write(repo / "config.yaml", f"token: {GITHUB}\n")
    engine.start_task(repo=repo, objective="refused", task_id="t1")
    with pytest.raises(UsageError) as refused:
        engine.checkpoint("t1", CheckpointRequest(allow_secrets=(bad,)))
    assert "--allow-secret" in refused.value.message
    assert engine.list_checkpoints("t1") == []


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`pitstop …` as a user runs it, on the test's private store."""
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_cli_takes_allow_secret_and_prints_what_it_found(repo: Path) -> None:
    write(repo / "config.yaml", f"token: {GITHUB}\n")
    write(repo / "notes.txt", f"{SLACK}\n")
    started = _cli("task", "start", "--repo", str(repo), "--id", "t1", "--objective", "cli")
    assert started.returncode == 0, started.stderr
    result = _cli("checkpoint", "t1", "--allow-secret", "config.yaml")
    assert result.returncode == 0, result.stderr
    assert "left out: notes.txt — contains a slack-token at line 1" in result.stdout
    assert "kept as is (--allow-secret): config.yaml — contains a github-token" in result.stdout
    assert not _leaks((result.stdout + result.stderr).encode())
    refused = _cli("checkpoint", "t1", "--allow-secret", "../x")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines() == [refused.stderr.strip()]
    assert refused.stderr.startswith("pitstop: --allow-secret ../x: ")


# --- an attacker's tricks ----------------------------------------------------------------------


def test_a_token_split_by_a_terminal_escape_is_still_found(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    split = GITHUB[:12] + "\x1b[31m" + GITHUB[12:] + "\x1b[0m"
    write(repo / "session.log", f"$ env\nGH={split}\n")
    write(repo / "src/app.py", f"# {SLACK[:9]}\x1b]0;title\x07{SLACK[9:]}\n")
    engine.start_task(repo=repo, objective="escapes", task_id="t1")
    cp = _checkpoint(engine)
    assert _left_out(cp)["session.log"] == "contains a github-token at line 2"
    assert _sealed(cp)[("worktree", "src/app.py")]["rule"] == "slack-token"
    assert_store_holds_no_secret(store_root, [GITHUB[12:], SLACK[9:]])


def test_a_binary_file_is_judged_by_its_text_runs(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + os.urandom(64).replace(b"ghp_", b"xxxx")
    embedded = png + b"\0\0tEXtComment\0token " + GITHUB.encode() + b"\0" + os.urandom(32)
    write(repo / "assets/shot.png", embedded)
    write(repo / "assets/logo.bin", b"\0\x01\x02" + SLACK.encode() + b"\xff\xfe")
    git(repo, "add", "assets/logo.bin")  # a staged binary holding a token
    engine.start_task(repo=repo, objective="binaries", task_id="t1")
    cp = _checkpoint(engine)
    assert _left_out(cp)["assets/shot.png"].startswith("contains a github-token at line ")
    assert _sealed(cp)[("index", "assets/logo.bin")]["rule"] == "slack-token"
    assert_store_holds_no_secret(store_root)
    target = tmp_path / "restored"
    engine.checkout(cp.ref, target)
    assert (target / "assets/logo.bin").read_bytes() == (repo / "assets/logo.bin").read_bytes()


def test_a_renamed_file_holding_a_secret_is_judged_under_its_new_name(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    git(repo, "mv", "docs/old.md", "docs/new.md")
    write(repo / "docs/new.md", f"moved soon\nslack: {SLACK}\n")  # renamed, then edited
    os.rename(repo / "src/app.py", repo / "src/main.py")  # renamed without git: untracked now
    write(repo / "src/main.py", f"print('{GITHUB}')\n")
    engine.start_task(repo=repo, objective="renames", task_id="t1")
    cp = _checkpoint(engine)
    assert _sealed(cp)[("worktree", "docs/new.md")]["rule"] == "slack-token"
    assert _left_out(cp)["src/main.py"] == "contains a github-token at line 1"
    assert_store_holds_no_secret(store_root)
    target = tmp_path / "restored"
    engine.checkout(cp.ref, target)
    assert (target / "docs/new.md").read_bytes() == (repo / "docs/new.md").read_bytes()
    assert not (target / "docs/old.md").exists()


def test_a_credential_named_file_holding_a_secret_stays_out_even_when_allowed(
    engine: Engine, repo: Path, store_root: Path
) -> None:
    write(repo / ".env", f"GITHUB_TOKEN={GITHUB}\n")
    write(repo / "keys/prod.pem", f"{SLACK}\n")
    engine.start_task(repo=repo, objective="names", task_id="t1")
    cp = _checkpoint(engine, allow_secrets=(".env",))
    left = _left_out(cp)
    assert "credential" in left[".env"] and "credential" in left["keys/prod.pem"]
    assert cp.manifest is not None and not cp.manifest["snapshot"]["allowed_secrets"]
    assert not [e for e in engine.events("t1") if e.action == "allow-secret"]
    assert_store_holds_no_secret(store_root)


def test_a_symlink_to_a_secret_outside_the_repository_is_not_followed(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    outside = write(tmp_path / "elsewhere/credentials.txt", f"token {GITHUB}\n")
    os.symlink(outside, repo / "creds-link")
    os.symlink(outside, repo / "src/linked-settings.py")
    os.unlink(repo / "src/settings.py")
    os.symlink(outside, repo / "src/settings.py")  # a tracked file turned into such a link
    engine.start_task(repo=repo, objective="links", task_id="t1")
    cp = _checkpoint(engine)

    worktree = ls_tree(only_store_repo(store_root), cp.worktree_tree or "")
    for link in ("creds-link", "src/linked-settings.py", "src/settings.py"):
        assert worktree[link][0] == "120000", link  # stored as a link, by its target's name
        assert blob_at(only_store_repo(store_root), cp.worktree_tree or "", link) == (
            str(outside).encode()
        )
    assert not _sealed(cp) and "creds-link" not in _left_out(cp)
    assert_store_holds_no_secret(store_root)
    target = tmp_path / "restored"
    engine.checkout(cp.ref, target)
    assert os.readlink(target / "creds-link") == str(outside)


def test_a_link_whose_target_name_is_a_token_is_sealed_and_restored_as_a_link(
    engine: Engine, repo: Path, store_root: Path, tmp_path: Path
) -> None:
    os.unlink(repo / "src/settings.py")
    os.symlink(f"cache/{GITHUB}", repo / "src/settings.py")
    engine.start_task(repo=repo, objective="link names", task_id="t1")
    cp = _checkpoint(engine)
    assert _sealed(cp)[("worktree", "src/settings.py")]["mode"] == "120000"
    assert_store_holds_no_secret(store_root)
    target = tmp_path / "restored"
    engine.checkout(cp.ref, target)
    assert os.readlink(target / "src/settings.py") == f"cache/{GITHUB}"


# --- push: a snapshot holding a secret never travels plain -------------------------------------


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A bare remote, the author's clone, and a second machine's clone."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    author = init_repo(tmp_path / "author", {"src/app.py": "print('hello')\n", "README.md": "x\n"})
    git(author, "remote", "add", "origin", str(remote))
    git(author, "push", "-q", "origin", "HEAD:refs/heads/main")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    return {"remote": remote, "author": author, "other": other}


def _remote_objects(remote: Path) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=remote,
        capture_output=True,
        check=True,
    ).stdout


def test_push_sends_a_snapshot_holding_a_secret_sealed_and_says_so(
    world: dict[str, Path], tmp_path: Path
) -> None:
    author = world["author"]
    write(author / "src/app.py", f"print('hello')\nTOKEN = '{GITHUB}'\n")
    write(author / "notes.txt", f"{SLACK}\n")
    write(author / "kept.txt", "CLEAN-MARK-4e1f\n")
    with Engine(tmp_path / "store-a") as a:
        task = a.start_task(repo=author, objective="push secrets")
        first = _checkpoint(a, task.id)
        pushed = a.push([task.id])
        assert pushed.sealed_for_secrets == {task.id: [first.seq]}
    raw = _remote_objects(world["remote"])
    assert not _leaks(raw)
    assert b"CLEAN-MARK-4e1f" not in raw  # the whole tree travelled sealed, not only the file
    assert b'"worktree":"sealed"' in raw.replace(b" ", b"")
    assert_store_holds_no_secret(tmp_path / "store-a")

    with Engine(tmp_path / "store-b") as b:
        b.fetch([task.id], repo=world["other"])
        into = tmp_path / "restored"
        b.checkout(f"{task.id}@1", into)
        assert (into / "src/app.py").read_bytes() == (author / "src/app.py").read_bytes()
        assert (into / "kept.txt").read_text() == "CLEAN-MARK-4e1f\n"
        assert not (into / "notes.txt").exists()
    assert_store_holds_no_secret(tmp_path / "store-b")


def test_the_push_cli_says_in_one_line_that_the_snapshot_travels_sealed(
    world: dict[str, Path],
) -> None:
    write(world["author"] / "src/app.py", f"TOKEN = '{GITHUB}'\n")
    with Engine() as engine:
        task = engine.start_task(repo=world["author"], objective="cli push")
        _checkpoint(engine, task.id)
    result = _cli("push", task.id)
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stdout.splitlines() if "secret" in line]
    assert said == [
        f"  {task.id}@1: the snapshot holds a detected secret, so its files travel encrypted "
        "(as with --encrypt-worktree)"
    ]


def test_push_reads_an_older_checkpoint_again_and_seals_what_holds_a_secret(
    world: dict[str, Path], tmp_path: Path
) -> None:
    """A checkpoint whose manifest marks nothing (taken before snapshots were judged) but
    whose tree holds a secret in clear is found out at push time."""
    author = world["author"]
    write(author / "config.yaml", f"token: {GITHUB}\n")
    store = tmp_path / "store-a"
    with Engine(store) as a:
        task = a.start_task(repo=author, objective="older checkpoint")
        _checkpoint(a, task.id, allow_secrets=("config.yaml",))

    def forget_marks(document: dict[str, Any]) -> None:
        document["snapshot"].pop("allowed_secrets", None)
        document["snapshot"].pop("sealed", None)

    rewrite_manifests(store, task.id, forget_marks)
    with Engine(store) as a:
        pushed = a.push([task.id])
    assert pushed.sealed_for_secrets == {task.id: [1]}
    assert not _leaks(_remote_objects(world["remote"]))


def test_a_clean_snapshot_still_travels_as_plain_trees(
    world: dict[str, Path], tmp_path: Path
) -> None:
    write(world["author"] / "src/app.py", "print('PLAIN-MARK-77a0')\n")
    with Engine(tmp_path / "store-a") as a:
        task = a.start_task(repo=world["author"], objective="clean")
        _checkpoint(a, task.id)
        assert a.push([task.id]).sealed_for_secrets == {}
    assert b"PLAIN-MARK-77a0" in _remote_objects(world["remote"])


# --- the scanner itself ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    before=st.lists(st.text(alphabet="abc xyz=:#'\"\t", max_size=30), max_size=6),
    split=st.integers(min_value=0, max_value=len(GITHUB)),
    escape=st.sampled_from(["", "\x1b[31m", "\x1b[1;32m", "\x1b]0;t\x07", "\x1b(B"]),
    binary=st.booleans(),
)
def test_the_line_reported_is_the_token_line_wherever_it_is_split(
    before: list[str], split: int, escape: str, binary: bool
) -> None:
    token = GITHUB[:split] + escape + GITHUB[split:]
    text = "".join(line + "\n" for line in before) + f"key {token}\n"
    data = text.encode()
    if binary:
        data = b"\0\x01" + data.replace(b"\n", b"\n\x02")
    found = first_secret(data)
    assert found is not None and found.rule == "github-token"
    assert found.line == len(before) + 1


def test_text_without_secrets_is_clean() -> None:
    assert first_secret(b"") is None
    assert first_secret(b"def add(a, b):\n    return a + b\n") is None
    assert first_secret(b"\0\x01\x02 short \xff") is None
