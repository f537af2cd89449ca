"""Resume end to end on a real repository, through the engine.

A task is paused mid-edit (a staged edit, an unstaged edit, an untracked file and a deletion)
after it ran a test command, confirmed one side effect, failed another and had an approval
decided. Resuming it into a new directory must give back exactly that world — the same bytes,
the same staged/unstaged split, HEAD at the base commit on `pitstop/<task>` — and a brief that
tells the next agent what is done, what is not, and what must not be done twice.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from corekit import git, init_repo, rewrite_manifests, tree_state

from core.engine import CheckpointRequest, Engine
from core.engine import resume as resume_usecase
from core.errors import NotFoundError, ResumeRefusedError, UsageError
from core.models import Budget, CheckpointReason, EffectState, NamedVersion, TaskStatus
from core.restore.resume import harness_command

BASE_FILES: dict[str, str | bytes] = {
    "README.md": "# demo\n",
    "src/app.py": "print('hello')\n",
    "src/util.py": "def add(a, b):\n    return a + b\n",
    "docs/guide.txt": "line 1\nline 2\n",
    "delete_me.txt": "bye\n",
    "bin/run.sh": "#!/bin/sh\necho run\n",
    "uv.lock": 'version = 1\n[[package]]\nname = "requests"\nversion = "2.31.0"\n',
}


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = base64.b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("PITSTOP_KEY", key)
    return key


@pytest.fixture
def devnull() -> Iterator[int]:
    fd = os.open(os.devnull, os.O_WRONLY)
    yield fd
    os.close(fd)


def pause_mid_edit(repo: Path) -> None:
    (repo / "src/app.py").write_text("print('hello, world')\nprint('half done')\n")
    (repo / "src/util.py").write_text("def add(a, b):\n    return a + b + 0\n")
    git(repo, "add", "src/util.py")
    (repo / "src/util.py").write_text("def add(a, b):\n    return a + b  # staged, then edited\n")
    (repo / "src/new_module.py").write_text("VALUE = 42\n")
    (repo / "bin/run.sh").chmod(0o755)
    git(repo, "rm", "-q", "delete_me.txt")


def status(path: Path) -> str:
    return git(path, "status", "--porcelain=v1", "--untracked-files=all")


def staged_diff(path: Path) -> str:
    return git(path, "diff", "--cached", "--no-color")


def unstaged_diff(path: Path) -> str:
    return git(path, "diff", "--no-color")


def resume_rows(store_root: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(store_root / "pitstop.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM resumes ORDER BY id")]


def write_config(isolated_env: dict[str, Path], text: str) -> None:
    (isolated_env["config"] / "config.toml").write_text(text, encoding="utf-8")


class Paused:
    def __init__(self, engine: Engine, repo: Path, task_id: str, ref: str) -> None:
        self.engine, self.repo, self.task_id, self.ref = engine, repo, task_id, ref


@pytest.fixture
def paused(engine: Engine, tmp_path: Path) -> Paused:
    repo = init_repo(tmp_path / "repo", BASE_FILES)
    task = engine.start_task(repo=repo, objective="fix the login bug")
    pause_mid_edit(repo)
    checkpoint = engine.checkpoint(task.id).checkpoint
    assert checkpoint is not None
    return Paused(engine, repo, task.id, checkpoint.ref)


# --- the whole story ----------------------------------------------------------------------------


def test_resume_into_a_new_directory_restores_the_exact_world_and_briefs_the_agent(
    engine: Engine, tmp_path: Path, store_root: Path, devnull: int
) -> None:
    repo = init_repo(tmp_path / "repo", BASE_FILES)
    base = git(repo, "rev-parse", "HEAD").strip()
    task = engine.start_task(
        repo=repo,
        objective="fix the login bug",
        budget=Budget(tokens=1000, usd=10.0),
    )
    _outcome, tests = engine.run_command(
        task.id,
        [sys.executable, "-c", "print('collected 3 items'); print('3 passed in 0.01s')"],
        label="unit tests",
        out_fd=devnull,
        err_fd=devnull,
    )
    engine.propose_effect(task.id, "pr-17", "pr", target="github.com/acme/app/pull/17")
    engine.move_effect(task.id, "pr-17", EffectState.IN_PROGRESS)
    engine.move_effect(task.id, "pr-17", EffectState.CONFIRMED, note="opened #17")
    engine.propose_effect(task.id, "deploy-staging", "deploy", target="staging")
    engine.move_effect(task.id, "deploy-staging", EffectState.IN_PROGRESS)
    engine.move_effect(task.id, "deploy-staging", EffectState.FAILED, note="quota exceeded")
    approval = engine.request_approval(task.id, "merge PR 17 into main")
    engine.decide_approval(approval.id, True, "CI is green and the diff is small")
    pause_mid_edit(repo)
    checkpoint = engine.checkpoint(
        task.id,
        CheckpointRequest(
            reason=CheckpointReason.INTERRUPT,
            note="laptop lid closed",
            done=("reproduce the bug", "open PR 17"),
            todo=("fix the session check", "add a regression test"),
            tokens_used=250,
            usd_used=1.5,
        ),
    ).checkpoint
    assert checkpoint is not None and checkpoint.base_commit == base

    original_files = tree_state(repo)
    original_status = status(repo)
    original_staged, original_unstaged = staged_diff(repo), unstaged_diff(repo)
    assert "M  src/util.py" not in original_status  # staged *and* edited again: "MM"
    assert "MM src/util.py" in original_status and "D  delete_me.txt" in original_status

    target = tmp_path / "resumed"
    plan = engine.resume(checkpoint.ref, into=target)

    # The files, byte for byte (and mode), as the snapshot and `pitstop checkout` have them.
    checked_out = tmp_path / "checkout"
    engine.checkout(checkpoint.ref, checked_out)
    assert tree_state(target) == original_files == tree_state(checked_out)
    assert os.access(target / "bin/run.sh", os.X_OK)
    assert not (target / "delete_me.txt").exists()
    # The same staged / unstaged / untracked split, on the base commit, on pitstop/<task>.
    assert status(target) == original_status
    assert staged_diff(target) == original_staged
    assert unstaged_diff(target) == original_unstaged
    assert git(target, "rev-parse", "HEAD").strip() == base
    assert git(target, "symbolic-ref", "--short", "HEAD").strip() == f"pitstop/{task.id}"
    assert plan.branch == f"pitstop/{task.id}" and plan.workdir == target
    # The user's own work tree is exactly as they left it.
    assert tree_state(repo) == original_files and status(repo) == original_status
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "main"

    brief = json.loads(plan.brief_json.read_text())
    assert brief["task"] == task.id and brief["checkpoint"] == checkpoint.ref
    assert brief["objective"] == "fix the login bug" and brief["note"] == "laptop lid closed"
    assert brief["workdir"] == str(target) and brief["base_commit"] == base
    assert brief["done"] == ["reproduce the bug", "open PR 17"]
    assert brief["todo"] == ["fix the session check", "add a regression test"]
    assert [(e["id"], e["label"], e["outcome"], e["show"]) for e in brief["evidence"]] == [
        (tests.id, "unit tests", "exit 0", f"pitstop evidence show {tests.id}")
    ]
    assert [(e["key"], e["kind"], e["target"]) for e in brief["already_done_do_not_repeat"]] == [
        ("pr-17", "pr", "github.com/acme/app/pull/17")
    ]
    assert brief["uncertain"] == []
    assert [e["key"] for e in brief["failed_may_retry"]] == ["deploy-staging"]
    assert [(a["id"], a["state"], a["by"], a["reason"]) for a in brief["approvals"]] == [
        (approval.id, "approved", engine.actor, "CI is green and the diff is small")
    ]
    assert brief["budget_left"]["tokens"] == 750
    assert brief["budget_left"]["usd"] == pytest.approx(8.5)
    assert brief["budget_left"]["minutes"] is None
    assert brief["validation_warnings"] == []

    md = plan.brief_md.read_text()
    assert plan.brief_md.parent == plan.brief_json.parent
    assert "**Objective:** fix the login bug" in md
    done_part = md.split("## Done", 1)[1].split("## Still to do", 1)
    assert "- reproduce the bug" in done_part[0] and "- open PR 17" in done_part[0]
    assert "- fix the session check" in done_part[1].split("##", 1)[0]
    assert f"`pitstop evidence show {tests.id}`" in md
    do_not_repeat = md.split("## Already done — do not repeat", 1)[1].split("##", 1)[0]
    assert "`pr-17`" in do_not_repeat and "deploy-staging" not in do_not_repeat
    assert "deploy-staging" in md.split("## Failed", 1)[1]
    assert f"**approved** by {engine.actor}: CI is green and the diff is small" in md
    assert "- tokens: 750" in md and "- usd: 8.5" in md

    rows = resume_rows(store_root)
    assert len(rows) == 1
    row = rows[0]
    assert (row["state"], row["verdict"], row["seq"]) == ("active", "ready", checkpoint.seq)
    assert row["workdir"] == str(target) and row["branch"] == f"pitstop/{task.id}"
    assert row["brief_path"] == str(plan.brief_md)
    assert row["restore_ms"] == plan.restore_ms and row["restore_ms"] >= 0
    assert engine.get_task(task.id).status is TaskStatus.RESUMING
    actions = [(e.entity, e.action) for e in engine.events(task.id)]
    assert ("checkpoint", "validate") in actions
    assert ("resume", "lease") in actions and ("checkpoint", "resume") in actions

    # A second resume while the first holds the lease is refused, and touches nothing.
    with pytest.raises(ResumeRefusedError) as refused:
        engine.resume(checkpoint.ref, into=tmp_path / "second")
    assert refused.value.exit_code == 4
    assert "lease" in refused.value.message and f"resume {plan.resume_id}" in refused.value.message
    assert not (tmp_path / "second").exists()
    assert len(resume_rows(store_root)) == 1


def test_second_engine_is_refused_while_the_lease_is_live(
    paused: Paused, tmp_path: Path, store_root: Path
) -> None:
    """Two operators (two engines, one store) racing to resume the same checkpoint."""
    first = paused.engine.resume(paused.ref, into=tmp_path / "a")
    with Engine(actor="bob") as other, pytest.raises(ResumeRefusedError) as refused:
        other.resume(paused.ref, into=tmp_path / "b")
    assert refused.value.exit_code == 4
    assert f"resume {first.resume_id}" in refused.value.message
    assert [r["state"] for r in resume_rows(store_root)] == ["active"]


def test_an_older_checkpoint_resumes_too(paused: Paused, tmp_path: Path) -> None:
    first_files = tree_state(paused.repo)
    (paused.repo / "src/app.py").write_text("print('later')\n")
    later = paused.engine.checkpoint(paused.task_id).checkpoint
    assert later is not None and later.seq == 2
    plan = paused.engine.resume(paused.ref, into=tmp_path / "older")
    assert tree_state(plan.workdir) == first_files


def test_default_target_is_beside_the_repository(paused: Paused) -> None:
    plan = paused.engine.resume(paused.ref)
    assert plan.workdir == paused.repo.parent / f"repo-pitstop-{paused.task_id}"
    assert tree_state(plan.workdir) == tree_state(paused.repo)


def test_a_new_checkpoint_ends_the_resume_and_frees_the_lease(
    paused: Paused, tmp_path: Path, store_root: Path
) -> None:
    plan = paused.engine.resume(paused.ref, into=tmp_path / "a")
    (plan.workdir / "src/app.py").write_text("print('progress')\n")
    paused.engine.checkpoint(paused.task_id, CheckpointRequest(note="progress"))
    assert [r["state"] for r in resume_rows(store_root)] == ["done"]
    again = paused.engine.resume(paused.ref, into=tmp_path / "b")
    assert again.branch == f"pitstop/{paused.task_id}-2"


# --- in place -----------------------------------------------------------------------------------


def test_in_place_is_refused_on_a_dirty_worktree_and_works_on_a_clean_one(
    paused: Paused, store_root: Path
) -> None:
    repo = paused.repo
    snapshot_files, snapshot_status = tree_state(repo), status(repo)
    snapshot_staged = staged_diff(repo)

    with pytest.raises(UsageError) as refused:
        paused.engine.resume(paused.ref, in_place=True)
    assert "cannot resume in place" in refused.value.message
    assert "uncommitted changes" in refused.value.message
    assert "--into" in refused.value.message
    assert tree_state(repo) == snapshot_files  # nothing was overwritten
    assert [r["state"] for r in resume_rows(store_root)] == ["failed"]  # lease given back

    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    assert status(repo) == ""
    plan = paused.engine.resume(paused.ref, in_place=True)
    assert plan.workdir == repo and plan.branch == "main"
    assert tree_state(repo) == snapshot_files
    assert status(repo) == snapshot_status
    assert staged_diff(repo) == snapshot_staged
    assert [r["state"] for r in resume_rows(store_root)] == ["failed", "active"]


def test_in_place_is_refused_when_head_moved(paused: Paused) -> None:
    repo = paused.repo
    base = paused.engine.get_checkpoint(paused.ref).base_commit or ""
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    (repo / "docs/guide.txt").write_text("a later commit\n")
    git(repo, "commit", "-qam", "later work")
    head = git(repo, "rev-parse", "HEAD").strip()
    with pytest.raises(UsageError) as refused:
        paused.engine.resume(paused.ref, in_place=True)
    assert head[:12] in refused.value.message and base[:12] in refused.value.message


def test_into_and_in_place_together_are_refused(paused: Paused, tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        paused.engine.resume(paused.ref, into=tmp_path / "x", in_place=True)


# --- stale, unsupported -------------------------------------------------------------------------


def test_stale_is_refused_unless_accepted(paused: Paused, tmp_path: Path) -> None:
    (paused.repo / "uv.lock").write_text("version = 2\n")
    with pytest.raises(ResumeRefusedError) as refused:
        paused.engine.resume(paused.ref, into=tmp_path / "no")
    assert refused.value.exit_code == 3
    assert "stale" in refused.value.message and "uv.lock" in refused.value.message
    assert "--yes" in refused.value.message
    assert not (tmp_path / "no").exists()

    plan = paused.engine.resume(paused.ref, into=tmp_path / "yes", accept_stale=True)
    assert plan.verdict == "stale"
    assert (plan.workdir / "uv.lock").read_text().startswith("version = 1")


def test_an_accepted_stale_resume_tells_the_agent_why_it_was_stale(
    paused: Paused, tmp_path: Path
) -> None:
    """The brief's validation section must carry the drift the operator chose to accept."""
    (paused.repo / "uv.lock").write_text("version = 2\n")
    plan = paused.engine.resume(paused.ref, into=tmp_path / "yes", accept_stale=True)
    brief = json.loads(plan.brief_json.read_text())
    assert any("uv.lock" in warning for warning in brief["validation_warnings"]), brief
    assert "uv.lock" in plan.brief_md.read_text()


def test_warnings_reach_the_brief(paused: Paused, tmp_path: Path) -> None:
    env_base = paused.engine.get_checkpoint(paused.ref).base_commit or ""
    # Move main behind the agent's back without touching the changed files.
    index = paused.repo / ".git" / "tmp-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "read-tree", env_base], cwd=paused.repo, env=env, check=True)
    tree = (
        subprocess.run(
            ["git", "write-tree"], cwd=paused.repo, env=env, check=True, capture_output=True
        )
        .stdout.decode()
        .strip()
    )
    new = git(paused.repo, "commit-tree", tree, "-p", env_base, "-m", "Empty upstream commit")
    git(paused.repo, "update-ref", "refs/heads/main", new.strip())
    plan = paused.engine.resume(paused.ref, into=tmp_path / "w")
    assert plan.verdict == "ready_with_warnings"
    brief = json.loads(plan.brief_json.read_text())
    assert any("Empty upstream commit" in w for w in brief["validation_warnings"])
    assert "## Validation warnings" in plan.brief_md.read_text()


def test_a_manifest_from_a_newer_pitstop_refuses_resume_as_unsupported(
    paused: Paused, tmp_path: Path, store_root: Path
) -> None:
    """Validate says unsupported (exit 5); resume must refuse with the same verdict and code."""
    rewrite_manifests(store_root, paused.task_id, lambda d: d.update(schema="pitstop.manifest/9"))
    assert paused.engine.validate(paused.ref).verdict.exit_code == 5
    with pytest.raises(ResumeRefusedError) as refused:
        paused.engine.resume(paused.ref, into=tmp_path / "never")
    assert refused.value.exit_code == 5
    assert "unsupported" in refused.value.message
    assert not (tmp_path / "never").exists()


# --- launching the harness ----------------------------------------------------------------------

FAKE_HARNESS = """\
import json, os, sys
brief = os.environ["PITSTOP_BRIEF"]
with open(brief, encoding="utf-8") as handle:
    text = handle.read()
record = {
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "env": {k: v for k, v in os.environ.items() if k.startswith("PITSTOP_")},
    "brief_first_line": text.splitlines()[0],
    "brief_mentions_todo": "add a regression test" in text,
    "sees_new_module": os.path.exists("src/new_module.py"),
}
with open(sys.argv[-1] if sys.argv[-1].endswith(".json") else "SEEN.json", "w") as out:
    json.dump(record, out)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


def fake_harness_config(tmp_path: Path) -> tuple[str, Path]:
    script = tmp_path / "fake harness.py"  # a space, to prove the template quoting
    script.write_text(FAKE_HARNESS)
    seen = tmp_path / "seen.json"
    command = (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} "
        f"{{brief}} {{workdir}} {{task}} {{checkpoint}} {shlex.quote(str(seen))}"
    )
    return f"[harness.fake]\nresume = {json.dumps(command)}\n", seen


def test_launch_runs_the_harness_in_the_workdir_with_the_brief(
    isolated_env: dict[str, Path],
    tmp_path: Path,
    store_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config, seen = fake_harness_config(tmp_path)
    write_config(isolated_env, config)
    monkeypatch.setenv("FAKE_EXIT", "7")
    with Engine() as engine:
        repo = init_repo(tmp_path / "repo", BASE_FILES)
        task = engine.start_task(
            repo=repo, objective="fix the login bug", harness=NamedVersion("fake", "1")
        )
        pause_mid_edit(repo)
        checkpoint = engine.checkpoint(
            task.id, CheckpointRequest(todo=("add a regression test",))
        ).checkpoint
        assert checkpoint is not None
        plan = engine.resume(checkpoint.ref, into=tmp_path / "work")
        assert plan.command[:2] == ("sh", "-c")
        code = engine.launch(plan)
        events = engine.events(task.id)

    assert code == 7
    record = json.loads(seen.read_text())
    assert record["argv"] == [
        str(plan.brief_md),
        str(tmp_path / "work"),
        task.id,
        checkpoint.ref,
        str(seen),
    ]
    assert Path(record["cwd"]) == tmp_path / "work"
    assert record["env"]["PITSTOP_TASK"] == task.id
    assert record["env"]["PITSTOP_CHECKPOINT"] == checkpoint.ref
    assert record["env"]["PITSTOP_BRIEF"] == str(plan.brief_md)
    assert record["env"]["PITSTOP_WORKDIR"] == str(tmp_path / "work")
    assert record["brief_first_line"].startswith(f"# Resume brief — {task.id}")
    assert record["brief_mentions_todo"] and record["sees_new_module"]

    (row,) = resume_rows(store_root)
    assert (row["launched"], row["exit_code"], row["state"]) == (1, 7, "done")
    launched = [e for e in events if e.action == "launch-exit"]
    assert len(launched) == 1 and launched[0].to_state == "7"


def test_launch_reports_a_signal_as_128_plus_n(
    isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    write_config(isolated_env, '[harness.fake]\nresume = "kill -TERM $$"\n')
    with Engine() as engine:
        repo = init_repo(tmp_path / "repo", BASE_FILES)
        task = engine.start_task(repo=repo, objective="x", harness=NamedVersion("fake"))
        pause_mid_edit(repo)
        checkpoint = engine.checkpoint(task.id).checkpoint
        assert checkpoint is not None
        plan = engine.resume(checkpoint.ref, into=tmp_path / "work")
        assert engine.launch(plan) == 128 + 15


def test_builtin_templates_and_quoting() -> None:
    values = {
        "brief": "/tmp/a dir/BRIEF.md",
        "workdir": "/w",
        "task": "t",
        "checkpoint": "t@1",
        "session": "",
    }
    assert harness_command(None, None, values) == ("sh", "-c", '"${SHELL:-sh}"')
    assert (
        harness_command(None, "claude-code", values)[2] == "claude \"$(cat '/tmp/a dir/BRIEF.md')\""
    )
    with_session = {**values, "session": "abc-123"}
    assert harness_command(None, "claude-code", with_session)[2].startswith(
        "claude --resume abc-123 "
    )
    assert harness_command(None, "codex", values)[2].startswith("codex ")
    assert harness_command("run {brief}", "x", values)[2] == "run '/tmp/a dir/BRIEF.md'"
    with pytest.raises(UsageError) as bad:
        harness_command("run {nonsense}", "x", values)
    assert "{nonsense}" in bad.value.message or "nonsense" in bad.value.message


# --- accept / reject ----------------------------------------------------------------------------


def test_accept_and_reject_are_recorded_with_their_reason(
    paused: Paused, tmp_path: Path, store_root: Path
) -> None:
    engine = paused.engine
    with pytest.raises(NotFoundError):
        engine.judge_resume(paused.task_id, True, "nothing to judge")
    first = engine.resume(paused.ref, into=tmp_path / "a")
    with pytest.raises(UsageError):
        engine.judge_resume(paused.task_id, True, "   ")
    result = engine.judge_resume(paused.task_id, False, "it reverted the session fix")
    assert result == {
        "task": paused.task_id,
        "resume": first.resume_id,
        "accepted": False,
        "reason": "it reverted the session fix",
    }
    # Judging ends the resume: the checkpoint may be resumed again.
    second = engine.resume(paused.ref, into=tmp_path / "b")
    engine.judge_resume(paused.task_id, True, "tests pass, diff reviewed")

    rows = engine.resume_records(paused.task_id)
    assert [(r["id"], r["accepted"], r["accept_reason"], r["state"]) for r in rows] == [
        (first.resume_id, 0, "it reverted the session fix", "done"),
        (second.resume_id, 1, "tests pass, diff reviewed", "done"),
    ]
    # At rest the reasons are sealed under the task's key (DESIGN §6).
    assert all(isinstance(r["accept_reason"], bytes) for r in resume_rows(store_root))
    judged = [
        (e.action, e.entity_id, e.reason, e.actor)
        for e in engine.events(paused.task_id)
        if e.action in ("accepted", "rejected")
    ]
    assert judged == [
        ("rejected", str(first.resume_id), "it reverted the session fix", engine.actor),
        ("accepted", str(second.resume_id), "tests pass, diff reviewed", engine.actor),
    ]


def test_the_brief_carries_evidence_recorded_before_earlier_checkpoints(
    engine: Engine, tmp_path: Path, devnull: int
) -> None:
    """Resuming the newest checkpoint must still show what the test run before @1 showed."""
    repo = init_repo(tmp_path / "repo", BASE_FILES)
    task = engine.start_task(repo=repo, objective="fix the login bug")
    _outcome, early = engine.run_command(
        task.id,
        [sys.executable, "-c", "print('1 failed, 2 passed')"],
        label="tests before the fix",
        out_fd=devnull,
        err_fd=devnull,
    )
    pause_mid_edit(repo)
    engine.checkpoint(task.id, CheckpointRequest(note="first"))
    (repo / "src/app.py").write_text("print('fixed')\n")
    _outcome, late = engine.run_command(
        task.id,
        [sys.executable, "-c", "print('3 passed')"],
        label="tests after the fix",
        out_fd=devnull,
        err_fd=devnull,
    )
    second = engine.checkpoint(task.id, CheckpointRequest(note="second")).checkpoint
    assert second is not None and second.seq == 2
    plan = engine.resume(second.ref, into=tmp_path / "w")
    brief = json.loads(plan.brief_json.read_text())
    assert [e["id"] for e in brief["evidence"]] == [early.id, late.id]


def test_losing_the_lease_race_after_validation_is_refused_as_blocked(
    paused: Paused, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another resume takes the lease between our validation and our lease: exit 4, as always."""
    engine = paused.engine
    validate = resume_usecase.validate

    def validate_then_lose_the_race(session: Any, *args: Any, **kwargs: Any) -> Any:
        report = validate(session, *args, **kwargs)
        if session is engine:  # the rival's own resume validates undisturbed
            with Engine(actor="bob") as rival:
                rival.resume(paused.ref, into=tmp_path / "rival")
        return report

    monkeypatch.setattr(resume_usecase, "validate", validate_then_lose_the_race)
    with pytest.raises(ResumeRefusedError) as refused:
        engine.resume(paused.ref, into=tmp_path / "mine")
    assert refused.value.exit_code == 4
    assert "lease" in refused.value.message
    assert not (tmp_path / "mine").exists()
