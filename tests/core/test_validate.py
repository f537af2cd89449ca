"""Restore validation, one drift per test: the right verdict and a finding that says what to do.

Every scenario starts from a real repository and a task paused mid-edit (an unstaged edit, a
staged edit, a new untracked file and a deletion), checkpointed by the real engine. The world is
then moved the way it moves for real — a branch advanced or rewritten behind the agent's back, a
commit garbage-collected, a lockfile edited, a variable unset, an approval left pending — and
`Engine.validate` must name what moved (the commit, the file, the variable) and how to fix it.
"""

from __future__ import annotations

import base64
import json
import os
import platform
import sqlite3
import subprocess
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from corekit import (
    delete_loose_object,
    git,
    init_repo,
    ls_tree,
    make_objects_loose,
    only_store_repo,
    rewrite_manifests,
    tree_state,
)

from core import clock
from core.engine import CheckpointRequest, Engine
from core.errors import ResumeRefusedError
from core.models import Budget, EffectState, NamedVersion
from core.restore.validate import Finding, Status, ValidationReport, Verdict

BASE_FILES: dict[str, str | bytes] = {
    "README.md": "# demo\n",
    "src/app.py": "print('hello')\n",
    "src/util.py": "def add(a, b):\n    return a + b\n",
    "docs/guide.txt": "line 1\nline 2\n",
    "delete_me.txt": "bye\n",
    "uv.lock": 'version = 1\n[[package]]\nname = "requests"\nversion = "2.31.0"\n',
    "requirements-dev.txt": "pytest==8.0.0\n",
}
# What the paused task changed; the checkpoint's changed files.
CHANGED = {"src/app.py", "src/util.py", "src/new_module.py", "delete_me.txt"}


# --- helpers ---------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """Evidence needs a master key; the keyring is the null backend."""
    key = base64.b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("PITSTOP_KEY", key)
    return key


def write_config(isolated_env: dict[str, Path], text: str) -> None:
    (isolated_env["config"] / "config.toml").write_text(text, encoding="utf-8")


def pause_mid_edit(repo: Path) -> None:
    """An agent stopped halfway: unstaged, staged, untracked and deleted files."""
    (repo / "src/app.py").write_text("print('hello, world')\nprint('half done')\n")
    (repo / "src/util.py").write_text("def add(a, b):\n    return a + b + 0\n")
    git(repo, "add", "src/util.py")
    (repo / "src/new_module.py").write_text("VALUE = 42\n")
    git(repo, "rm", "-q", "delete_me.txt")


def run_git(repo: Path, *args: str, env: dict[str, str] | None = None, data: bytes = b"") -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=repo,
        input=data,
        capture_output=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode().strip()


def commit_behind_the_back(
    repo: Path,
    branch: str,
    files: dict[str, str],
    message: str,
    *,
    parent: str | None = "branch",
) -> str:
    """Advance `branch` with a commit changing `files`, without touching the work tree or index.

    This is what another clone pushing and a `git fetch` + fast-forward in another worktree
    look like from here. `parent=None` makes a root commit: a rewritten branch.
    """
    index = repo / ".git" / "pitstop-test-index"
    env = {"GIT_INDEX_FILE": str(index)}
    old = run_git(repo, "rev-parse", f"refs/heads/{branch}")
    run_git(repo, "read-tree", old, env=env)
    for path, text in files.items():
        blob = run_git(repo, "hash-object", "-w", "--stdin", data=text.encode())
        run_git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
    tree = run_git(repo, "write-tree", env=env)
    index.unlink()
    parents = ["-p", old] if parent == "branch" else []
    new = run_git(repo, "commit-tree", tree, *parents, "-m", message)
    run_git(repo, "update-ref", f"refs/heads/{branch}", new, old)
    return new


def finding(report: ValidationReport, check: str) -> Finding:
    found = [f for f in report.findings if f.check == check]
    assert len(found) == 1, (check, report.findings)
    return found[0]


def only_problem(report: ValidationReport) -> Finding:
    """The one finding that is not a pass (a scenario moves exactly one thing)."""
    problems = [f for f in report.findings if f.status is not Status.PASS]
    assert len(problems) == 1, problems
    assert problems[0].fix, problems[0]
    return problems[0]


class Paused:
    """A task paused mid-edit with one checkpoint, and handles on everything around it."""

    def __init__(self, engine: Engine, repo: Path, task_id: str, ref: str) -> None:
        self.engine = engine
        self.repo = repo
        self.task_id = task_id
        self.ref = ref

    @property
    def base(self) -> str:
        base = self.engine.get_checkpoint(self.ref).base_commit
        assert base
        return base

    def validate(self, **kwargs: object) -> ValidationReport:
        return self.engine.validate(self.ref, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def start_paused(engine: Engine, tmp_path: Path) -> Callable[..., Paused]:
    """Factory: a repository, a task on it (options passed through) and one checkpoint."""

    def factory(
        *,
        files: dict[str, str | bytes] | None = None,
        on: Engine | None = None,
        request: CheckpointRequest | None = None,
        **task_options: object,
    ) -> Paused:
        eng = on or engine
        repo = init_repo(tmp_path / "repo", files or BASE_FILES)
        task = eng.start_task(repo=repo, objective="fix the login bug", **task_options)  # type: ignore[arg-type]
        pause_mid_edit(repo)
        result = eng.checkpoint(
            task.id,
            request
            or CheckpointRequest(note="paused mid-edit", done=("reproduce",), todo=("fix", "test")),
        )
        assert result.checkpoint is not None
        return Paused(eng, repo, task.id, result.checkpoint.ref)

    return factory


def config_engine(isolated_env: dict[str, Path], text: str) -> Engine:
    """An engine that read `text` as its config.toml."""
    write_config(isolated_env, text)
    return Engine()


# --- the clean case, and bookkeeping ------------------------------------------------------------


def test_untouched_checkpoint_is_ready_and_every_check_reports(
    start_paused: Callable[..., Paused],
) -> None:
    paused = start_paused()
    seen: list[Finding] = []
    report = paused.engine.validate(paused.ref, progress=seen.append)
    assert report.verdict is Verdict.READY
    assert report.verdict.exit_code == 0
    assert [f.check for f in seen] == [f.check for f in report.findings]
    checks = {f.check for f in report.findings}
    assert {
        "schema",
        "complete",
        "base-commit",
        "branch",
        "target",
        "lockfiles",
        "runtime",
        "credentials",
        "upstream",
        "side-effects",
        "approvals",
        "age",
        "budget",
        "lease",
    } <= checks
    assert all(f.status is Status.PASS for f in report.findings), report.findings
    assert "2 lockfile(s) unchanged" in finding(report, "lockfiles").message
    assert report.as_dict()["verdict"] == "ready"
    assert set(report.as_dict()["findings"][0]) == {"check", "status", "message", "fix"}


def test_every_validation_is_stored_and_audited(
    start_paused: Callable[..., Paused], store_root: Path
) -> None:
    paused = start_paused()
    first = paused.validate()
    paused.engine.request_approval(paused.task_id, "deploy to staging")
    second = paused.validate(offline=True)
    with sqlite3.connect(store_root / "pitstop.db") as db:
        rows = db.execute(
            "SELECT task_id, seq, verdict, findings, duration_ms, actor, interface "
            "FROM validations ORDER BY id"
        ).fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (paused.task_id, 1, "ready"),
        (paused.task_id, 1, "blocked"),
    ]
    assert json.loads(rows[0][3]) == [f.as_dict() for f in first.findings]
    assert json.loads(rows[1][3]) == [f.as_dict() for f in second.findings]
    assert all(r[4] >= 0 and r[5] and r[6] == "api" for r in rows)
    audited = [e for e in paused.engine.events(paused.task_id) if e.action == "validate"]
    assert [(e.entity_id, e.to_state) for e in audited] == [
        (paused.ref, "ready"),
        (paused.ref, "blocked"),
    ]


# --- the branch ---------------------------------------------------------------------------------


def test_branch_moved_touching_the_changed_files_is_stale(
    start_paused: Callable[..., Paused],
) -> None:
    paused = start_paused()
    first = commit_behind_the_back(
        paused.repo, "main", {"docs/guide.txt": "line 1 (edited upstream)\n"}, "Reword the guide"
    )
    second = commit_behind_the_back(
        paused.repo, "main", {"src/app.py": "print('upstream')\n"}, "Rewrite app greeting"
    )
    report = paused.validate()
    assert report.verdict is Verdict.STALE
    assert report.verdict.exit_code == 3
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("branch", Status.FAIL)
    assert "main" in problem.message
    assert "2 commit(s)" in problem.message
    for commit, subject in ((first, "Reword the guide"), (second, "Rewrite app greeting")):
        assert commit[:7] in problem.message and subject in problem.message
    # Only the file both sides changed is named; the guide is upstream's business alone.
    assert "src/app.py" in problem.message
    assert "docs/guide.txt" not in problem.message
    assert "rebase onto main" in problem.fix or "merge or rebase onto main" in problem.fix


def test_branch_moved_elsewhere_only_warns(start_paused: Callable[..., Paused]) -> None:
    paused = start_paused()
    moved = commit_behind_the_back(
        paused.repo, "main", {"docs/guide.txt": "line 1 (edited upstream)\n"}, "Reword the guide"
    )
    report = paused.validate()
    assert report.verdict is Verdict.READY_WITH_WARNINGS
    assert report.verdict.exit_code == 0
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("branch", Status.WARN)
    assert moved[:7] in problem.message and "Reword the guide" in problem.message
    assert "none touching" in problem.message
    assert "rebase onto main" in problem.fix


def test_rewritten_branch_is_stale(start_paused: Callable[..., Paused]) -> None:
    paused = start_paused()
    commit_behind_the_back(
        paused.repo, "main", {"README.md": "# squashed\n"}, "Squashed history", parent=None
    )
    report = paused.validate()
    assert report.verdict is Verdict.STALE
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("branch", Status.FAIL)
    assert "main was rewritten" in problem.message
    assert paused.base[:12] in problem.message
    assert "rebase" in problem.fix and "main" in problem.fix


def test_base_commit_garbage_collected_warns_and_resume_fetches_it_from_the_store(
    engine: Engine, make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    """The agent worked on a branch that was then deleted and collected in the user's repo."""
    repo = make_repo("repo", BASE_FILES)
    git(repo, "checkout", "-q", "-b", "feature/login")
    (repo / "src/app.py").write_text("print('feature work')\n")
    git(repo, "commit", "-qam", "feature: first step")
    base = git(repo, "rev-parse", "HEAD").strip()
    task = engine.start_task(repo=repo, objective="finish the login feature")
    pause_mid_edit(repo)
    checkpoint = engine.checkpoint(task.id).checkpoint
    assert checkpoint is not None and checkpoint.base_commit == base
    snapshot_files = tree_state(repo)

    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-q", "-D", "feature/login")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    probe = subprocess.run(
        ["git", "cat-file", "-e", f"{base}^{{commit}}"], cwd=repo, capture_output=True
    )
    assert probe.returncode != 0, "the base commit should be gone from the user's repo"

    report = engine.validate(checkpoint.ref)
    assert report.verdict is Verdict.READY_WITH_WARNINGS
    gone = finding(report, "base-commit")
    assert gone.status is Status.WARN
    assert base[:12] in gone.message and "gone" in gone.message
    assert "store" in gone.fix
    branch = finding(report, "branch")
    assert branch.status is Status.WARN
    assert "feature/login no longer exists" in branch.message
    assert f"pitstop/{task.id}" in branch.fix

    plan = engine.resume(checkpoint.ref, into=tmp_path / "resumed")
    assert git(plan.workdir, "rev-parse", "HEAD").strip() == base
    assert tree_state(plan.workdir) == snapshot_files
    assert any("base-commit" in warning for warning in plan.warnings)


# --- the store, the target, lockfiles -----------------------------------------------------------


def test_missing_store_objects_block(start_paused: Callable[..., Paused], store_root: Path) -> None:
    paused = start_paused()
    checkpoint = paused.engine.get_checkpoint(paused.ref)
    assert checkpoint.worktree_tree
    store_repo = only_store_repo(store_root)
    make_objects_loose(store_repo)
    _mode, _kind, blob = ls_tree(store_repo, checkpoint.worktree_tree)["src/new_module.py"]
    delete_loose_object(store_repo, blob)

    report = paused.validate()
    assert report.verdict is Verdict.BLOCKED
    assert report.verdict.exit_code == 4
    problem = finding(report, "complete")
    assert problem.status is Status.FAIL
    assert "damaged" in problem.message and "missing" in problem.message
    assert "earlier checkpoint" in problem.fix
    with pytest.raises(ResumeRefusedError) as refused:
        paused.engine.resume(paused.ref, into=paused.repo.parent / "never")
    assert refused.value.exit_code == 4
    assert not (paused.repo.parent / "never").exists()


def test_target_directory_absent_equal_or_different(
    start_paused: Callable[..., Paused], tmp_path: Path
) -> None:
    paused = start_paused()
    absent = paused.validate(into=tmp_path / "absent")
    assert absent.verdict is Verdict.READY
    assert "does not exist yet" in finding(absent, "target").message

    equal = tmp_path / "equal"
    paused.engine.checkout(paused.ref, equal)
    same = paused.validate(into=equal)
    assert same.verdict is Verdict.READY
    target = finding(same, "target")
    assert target.status is Status.PASS and "already equals the snapshot" in target.message

    (equal / "src/app.py").write_text("print('someone else was here')\n")
    dirty = paused.validate(into=equal)
    assert dirty.verdict is Verdict.BLOCKED
    problem = only_problem(dirty)
    assert (problem.check, problem.status) == ("target", Status.FAIL)
    assert str(equal) in problem.message and "differs from the snapshot" in problem.message
    assert "--into" in problem.fix

    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("unrelated\n")
    different = paused.validate(into=other)
    assert different.verdict is Verdict.BLOCKED
    assert str(other) in finding(different, "target").message


def test_changed_lockfile_is_stale_and_named(start_paused: Callable[..., Paused]) -> None:
    paused = start_paused()
    (paused.repo / "uv.lock").write_text(
        'version = 1\n[[package]]\nname = "requests"\nversion = "2.32.3"\n'
    )
    report = paused.validate()
    assert report.verdict is Verdict.STALE
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("lockfiles", Status.FAIL)
    assert "uv.lock" in problem.message
    assert "requirements-dev.txt" not in problem.message
    assert "lockfile" in problem.fix


def test_deleted_lockfile_is_stale_and_named(start_paused: Callable[..., Paused]) -> None:
    paused = start_paused()
    (paused.repo / "requirements-dev.txt").unlink()
    report = paused.validate()
    assert report.verdict is Verdict.STALE
    assert "requirements-dev.txt" in only_problem(report).message


# --- credentials and runtime identity -----------------------------------------------------------


def test_missing_credential_blocks_and_is_named(
    start_paused: Callable[..., Paused], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-1")
    monkeypatch.setenv("NPM_TOKEN", "npm-1")
    paused = start_paused(credentials=["DEPLOY_TOKEN", "NPM_TOKEN"])
    assert paused.validate().verdict is Verdict.READY
    assert "2 credential(s) present" in finding(paused.validate(), "credentials").message

    monkeypatch.delenv("DEPLOY_TOKEN")
    report = paused.validate()
    assert report.verdict is Verdict.BLOCKED
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("credentials", Status.FAIL)
    assert "DEPLOY_TOKEN" in problem.message and "NPM_TOKEN" not in problem.message
    assert "export DEPLOY_TOKEN" in problem.fix


def test_changed_credential_warns_and_is_named(
    start_paused: Callable[..., Paused], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-1")
    paused = start_paused(credentials=["DEPLOY_TOKEN"])
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-2")
    report = paused.validate()
    assert report.verdict is Verdict.READY_WITH_WARNINGS
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("credentials", Status.WARN)
    assert "DEPLOY_TOKEN" in problem.message and "different value" in problem.message
    assert "tok-1" not in problem.message + problem.fix
    assert "tok-2" not in problem.message + problem.fix
    assert "DEPLOY_TOKEN" in problem.fix


def test_other_python_version_warns(
    start_paused: Callable[..., Paused], monkeypatch: pytest.MonkeyPatch
) -> None:
    paused = start_paused()
    recorded = platform.python_version()
    major_minor = ".".join(recorded.split(".")[:2])
    monkeypatch.setattr(platform, "python_version", lambda: "2.7.18")
    report = paused.validate()
    assert report.verdict is Verdict.READY_WITH_WARNINGS
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("runtime", Status.WARN)
    assert f"Python was {recorded}, now 2.7.18" in problem.message
    assert f"Python {major_minor}" in problem.fix


def test_patch_level_python_change_passes(
    start_paused: Callable[..., Paused], monkeypatch: pytest.MonkeyPatch
) -> None:
    paused = start_paused()
    major, minor, *_ = platform.python_version().split(".")
    monkeypatch.setattr(platform, "python_version", lambda: f"{major}.{minor}.999")
    assert paused.validate().verdict is Verdict.READY


def test_other_harness_version_warns(
    start_paused: Callable[..., Paused], isolated_env: dict[str, Path]
) -> None:
    with config_engine(isolated_env, '[harness.claude-code]\nversion = "9.9"\n') as eng:
        paused = start_paused(on=eng, harness=NamedVersion("claude-code", "2.0.14"))
        report = paused.validate()
    assert report.verdict is Verdict.READY_WITH_WARNINGS
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("harness", Status.WARN)
    assert "claude-code was 2.0.14, now 9.9" in problem.message
    assert "install claude-code 2.0.14" in problem.fix


def test_harness_version_command_is_asked_and_unknown_says_how_to_tell(
    start_paused: Callable[..., Paused], isolated_env: dict[str, Path]
) -> None:
    config = '[harness.claude-code]\nversion_command = "echo claude-code 2.0.14"\n'
    with config_engine(isolated_env, config) as eng:
        paused = start_paused(on=eng, harness=NamedVersion("claude-code", "2.0.14"))
        same = paused.validate()
    assert same.verdict is Verdict.READY
    assert finding(same, "harness").message == "claude-code 2.0.14 as at the checkpoint"

    with config_engine(isolated_env, "") as plain:
        unknown = plain.validate(paused.ref)
    assert unknown.verdict is Verdict.READY  # not knowing is not a failure
    problem = finding(unknown, "harness")
    assert problem.status is Status.UNKNOWN
    assert "[harness.claude-code] version" in problem.fix


# --- the ledger, approvals, age, budget, schema, leases -----------------------------------------


def test_pending_approval_blocks_until_decided(start_paused: Callable[..., Paused]) -> None:
    paused = start_paused()
    approval = paused.engine.request_approval(paused.task_id, "run the 0042 migration on prod")
    report = paused.validate()
    assert report.verdict is Verdict.BLOCKED
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("approvals", Status.FAIL)
    assert problem.message == f"approval {approval.id} is pending (medium risk)"
    assert "0042" not in problem.message  # findings are stored plain; the action is sealed
    assert f"pitstop approval approve|reject {approval.id}" in problem.fix

    paused.engine.decide_approval(approval.id, False, "not during the freeze")
    assert paused.validate().verdict is Verdict.READY


@pytest.mark.parametrize("state", [EffectState.UNCERTAIN, EffectState.IN_PROGRESS])
def test_unsettled_side_effect_blocks(
    start_paused: Callable[..., Paused], state: EffectState
) -> None:
    paused = start_paused()
    engine = paused.engine
    engine.propose_effect(paused.task_id, "deploy-v2", "deploy", target="staging")
    engine.move_effect(paused.task_id, "deploy-v2", EffectState.IN_PROGRESS)
    if state is EffectState.UNCERTAIN:
        engine.move_effect(paused.task_id, "deploy-v2", EffectState.UNCERTAIN)
    report = paused.validate()
    assert report.verdict is Verdict.BLOCKED
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("side-effects", Status.FAIL)
    assert "deploy-v2" in problem.message and state.value in problem.message
    assert f"--task {paused.task_id} --key deploy-v2" in problem.fix

    if state is EffectState.UNCERTAIN:
        engine.move_effect(
            paused.task_id, "deploy-v2", EffectState.CONFIRMED, reason="saw it in the console"
        )
    else:
        engine.move_effect(paused.task_id, "deploy-v2", EffectState.FAILED, reason="aborted")
    assert paused.validate().verdict is Verdict.READY


def test_past_the_ttl_is_stale(
    start_paused: Callable[..., Paused],
    isolated_env: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with config_engine(isolated_env, "[validation]\nttl_days = 2\n") as eng:
        paused = start_paused(on=eng)
        assert paused.validate().verdict is Verdict.READY
        later = clock.now() + timedelta(days=3, hours=1)
        monkeypatch.setenv("PITSTOP_FROZEN_NOW", clock.to_iso(later))
        report = paused.validate()
    assert report.verdict is Verdict.STALE
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("age", Status.FAIL)
    assert "3.0 days old" in problem.message and "2-day TTL" in problem.message
    assert "start fresh" in problem.fix


def test_default_ttl_is_two_weeks(
    start_paused: Callable[..., Paused], monkeypatch: pytest.MonkeyPatch
) -> None:
    paused = start_paused()
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", clock.to_iso(clock.now() + timedelta(days=13)))
    assert paused.validate().verdict is Verdict.READY
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", clock.to_iso(clock.now() + timedelta(days=2)))
    report = paused.validate()
    assert report.verdict is Verdict.STALE
    assert "14-day TTL" in finding(report, "age").message


def test_spent_budget_blocks(start_paused: Callable[..., Paused]) -> None:
    paused = start_paused(
        budget=Budget(tokens=100_000, usd=5.0),
        request=CheckpointRequest(tokens_used=120_000, usd_used=2.5),
    )
    report = paused.validate()
    assert report.verdict is Verdict.BLOCKED
    problem = only_problem(report)
    assert (problem.check, problem.status) == ("budget", Status.FAIL)
    assert "tokens 120000/100000" in problem.message
    assert "USD" not in problem.message  # the money budget is not spent
    assert "larger budget" in problem.fix


def test_manifest_from_a_newer_pitstop_is_unsupported_and_not_half_read(
    start_paused: Callable[..., Paused], store_root: Path
) -> None:
    paused = start_paused()

    def future(document: dict[str, Any]) -> None:
        document["schema"] = "pitstop.manifest/9"
        document["repository"] = {"future": "layout"}

    rewrite_manifests(store_root, paused.task_id, future)
    seen: list[Finding] = []
    report = paused.engine.validate(paused.ref, progress=seen.append)
    assert report.verdict is Verdict.UNSUPPORTED
    assert report.verdict.exit_code == 5
    assert [f.check for f in report.findings] == ["schema"]  # nothing past the schema was read
    assert [f.check for f in seen] == ["schema"]
    problem = report.findings[0]
    assert problem.status is Status.FAIL
    assert "pitstop.manifest/9" in problem.message
    assert "upgrade pitstop" in problem.fix


def test_validation_of_an_unsupported_checkpoint_is_stored_under_its_seq(
    start_paused: Callable[..., Paused], store_root: Path
) -> None:
    paused = start_paused()
    rewrite_manifests(store_root, paused.task_id, lambda d: d.update(schema="pitstop.manifest/9"))
    report = paused.validate()
    assert report.verdict is Verdict.UNSUPPORTED
    assert report.ref == paused.ref
    with sqlite3.connect(store_root / "pitstop.db") as db:
        rows = db.execute("SELECT seq, verdict FROM validations").fetchall()
    assert rows == [(1, "unsupported")]


def test_header_from_a_newer_pitstop_is_unsupported(
    start_paused: Callable[..., Paused], store_root: Path
) -> None:
    """A checkpoint commit whose plain `pitstop.json` header has a newer schema.

    The trees and the manifest are untouched (so every hash still verifies); only the header
    says the format is newer than this Pitstop. DESIGN §5 / issue 5: never half-read.
    """
    paused = start_paused()
    checkpoint = paused.engine.get_checkpoint(paused.ref)
    store_repo = only_store_repo(store_root)
    gd = ["--git-dir", str(store_repo)]
    header = json.loads(
        run_git(store_root, *gd, "cat-file", "blob", f"{checkpoint.commit}:pitstop.json")
    )
    header["schema"] = "pitstop.checkpoint/9"
    new_header = run_git(
        store_root, *gd, "hash-object", "-w", "--stdin", data=json.dumps(header).encode()
    )
    listing = run_git(store_root, *gd, "ls-tree", f"{checkpoint.commit}^{{tree}}")
    entries = [
        line.replace(line.split()[2], new_header) if line.endswith("\tpitstop.json") else line
        for line in listing.splitlines()
    ]
    root = run_git(store_root, *gd, "mktree", data=("\n".join(entries) + "\n").encode())
    parents = run_git(store_root, *gd, "rev-list", "--parents", "-n1", str(checkpoint.commit))
    parent_args = [arg for p in parents.split()[1:] for arg in ("-p", p)]
    commit = run_git(store_root, *gd, "commit-tree", root, *parent_args, "-m", "future")
    run_git(store_root, *gd, "update-ref", f"refs/pitstop/checkpoints/{paused.task_id}", commit)
    with sqlite3.connect(store_root / "pitstop.db") as db:
        db.execute(
            "UPDATE checkpoints SET commit_sha = ? WHERE task_id = ? AND seq = 1",
            [commit, paused.task_id],
        )
    assert paused.engine.verify(paused.engine.get_checkpoint(paused.ref)) == []

    report = paused.validate()
    assert report.verdict is Verdict.UNSUPPORTED, report.findings
    assert "pitstop.checkpoint/9" in report.findings[0].message


def test_live_lease_blocks_and_an_expired_one_does_not(
    start_paused: Callable[..., Paused],
    isolated_env: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    with config_engine(isolated_env, "[validation]\nlease_minutes = 30\n") as eng:
        paused = start_paused(on=eng)
        plan = eng.resume(paused.ref, into=tmp_path / "first")
        report = paused.validate()
        assert report.verdict is Verdict.BLOCKED
        problem = only_problem(report)
        assert (problem.check, problem.status) == ("lease", Status.FAIL)
        assert f"resume {plan.resume_id} of {paused.ref}" in problem.message
        assert eng.actor in problem.message and "UTC" in problem.message
        assert "wait" in problem.fix

        monkeypatch.setenv("PITSTOP_FROZEN_NOW", clock.to_iso(clock.now() + timedelta(minutes=31)))
        expired = paused.validate()
    assert expired.verdict is Verdict.READY
    assert finding(expired, "lease").status is Status.PASS


def test_launched_holder_that_died_holds_no_lease(
    start_paused: Callable[..., Paused], store_root: Path, tmp_path: Path
) -> None:
    paused = start_paused()
    plan = paused.engine.resume(paused.ref, into=tmp_path / "first")
    assert paused.validate().verdict is Verdict.BLOCKED
    dead = subprocess.Popen(["true"])
    dead.wait()
    with sqlite3.connect(store_root / "pitstop.db") as db:
        db.execute(
            "UPDATE resumes SET launched = 1, holder_pid = ? WHERE id = ?",
            [dead.pid, plan.resume_id],
        )
    assert paused.validate().verdict is Verdict.READY
    second = paused.engine.resume(paused.ref, into=tmp_path / "second")
    assert second.resume_id != plan.resume_id


# --- upstream -----------------------------------------------------------------------------------


def test_upstream_pass_online_unknown_offline_warn_when_moved(
    engine: Engine, make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo("repo", BASE_FILES)
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    task = engine.start_task(repo=repo, objective="work against origin")
    pause_mid_edit(repo)
    checkpoint = engine.checkpoint(task.id).checkpoint
    assert checkpoint is not None
    assert (checkpoint.manifest or {})["repository"]["upstream"]["name"] == "origin/main"

    online = engine.validate(checkpoint.ref)
    assert online.verdict is Verdict.READY
    assert finding(online, "upstream").message == "origin/main unchanged on the remote"

    offline = engine.validate(checkpoint.ref, offline=True)
    assert offline.verdict is Verdict.READY  # unknown never fails
    unknown = finding(offline, "upstream")
    assert unknown.status is Status.UNKNOWN
    assert "origin/main" in unknown.message and "offline" in unknown.message
    assert "--offline" in unknown.fix

    other = tmp_path / "other-clone"
    git(tmp_path, "clone", "-q", "-b", "main", str(remote), str(other))
    (other / "docs/guide.txt").write_text("pushed by a colleague\n")
    git(other, "commit", "-qam", "colleague's change")
    git(other, "push", "-q", "origin", "main")
    pushed = git(other, "rev-parse", "HEAD").strip()

    moved = engine.validate(checkpoint.ref)
    assert moved.verdict is Verdict.READY_WITH_WARNINGS
    problem = only_problem(moved)
    assert (problem.check, problem.status) == ("upstream", Status.WARN)
    assert "origin/main moved" in problem.message and pushed[:12] in problem.message
    assert "rebase onto origin/main" in problem.fix


def test_a_remote_branch_with_the_same_last_name_is_not_mistaken_for_the_upstream(
    engine: Engine, make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    """`origin/main` is refs/heads/main, not refs/heads/fix/main (ls-remote matches tails)."""
    repo = make_repo("repo", BASE_FILES)
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    other = commit_behind_the_back(repo, "main", {"docs/x.txt": "x\n"}, "on a fix branch")
    git(repo, "push", "-q", "origin", f"{other}:refs/heads/fix/main")
    git(repo, "update-ref", "refs/heads/main", f"{other}~1")
    task = engine.start_task(repo=repo, objective="work against origin")
    pause_mid_edit(repo)
    checkpoint = engine.checkpoint(task.id).checkpoint
    assert checkpoint is not None

    report = engine.validate(checkpoint.ref)
    upstream = finding(report, "upstream")
    assert (upstream.status, upstream.message) == (
        Status.PASS,
        "origin/main unchanged on the remote",
    ), upstream
    assert report.verdict is Verdict.READY


def test_runtime_identity_is_reported_beside_a_harness_finding(
    start_paused: Callable[..., Paused], isolated_env: dict[str, Path]
) -> None:
    """A harness warning must not hide the OS / arch / Python verdict of the runtime check."""
    with config_engine(isolated_env, '[harness.claude-code]\nversion = "9.9"\n') as eng:
        paused = start_paused(on=eng, harness=NamedVersion("claude-code", "2.0.14"))
        report = paused.validate()
    assert finding(report, "harness").status is Status.WARN
    runtime = finding(report, "runtime")
    assert runtime.status is Status.PASS and platform.python_version() in runtime.message


def test_a_stale_verdict_says_whether_resuming_or_a_fresh_run_is_cheaper(
    start_paused: Callable[..., Paused],
) -> None:
    """DESIGN §5: a stale verdict weighs re-validation against a fresh run with §4's model."""
    paused = start_paused()
    (paused.repo / "uv.lock").write_text("# changed behind the agent's back\n")
    report = paused.validate()
    assert report.verdict is Verdict.STALE
    assert report.advice is not None
    assert "fresh run" in report.advice and "$" in report.advice
    assert report.as_dict()["advice"] == report.advice
