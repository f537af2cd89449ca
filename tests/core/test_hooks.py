"""core.harness in-process: the rule list, command normalisation, the guard's decisions,
settings.

The end-to-end recorded session (real processes) is in tests/tui/test_cli_hooks.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from core.engine import Engine
from core.errors import UsageError
from core.harness.claude_code import claude_code
from core.harness.commands import match_command
from core.harness.context import HookContext, HookReply
from core.harness.install import (
    CLAUDE_CODE_EVENTS,
    HOOK_TIMEOUT_S,
    install,
    installed_events,
    settings_path,
    uninstall,
)
from core.harness.rules import DEFAULT_RULES, Rule, load_rules
from core.models import ApprovalState, EffectState, TaskStatus

SESSION = "0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9"


# --- rules and normalisation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("git push", "git-push"),
        ("git push origin main --force", "git-push"),
        ("git -C ../other push", "git-push"),
        ("cd app && GIT_TRACE=1 git push origin HEAD", "git-push"),
        ("npm test; npm publish --access public", "npm-publish"),
        ("/usr/bin/git push", "git-push"),
        ("sudo docker push registry.example.com/app:1.2", "docker-push"),
        ("gh pr create --fill", "gh-pr-create"),
        ("gh pr merge 12 --squash", "gh-pr-merge"),
        ("gh -R acme/app pr comment 3 -b hi", "gh-pr-comment"),
        ("gh release create v1.0", "gh-release"),
        ("twine upload dist/*", "twine-upload"),
        ("kubectl -n prod apply -f deploy.yaml", "kubectl-apply"),
        ("kubectl delete pod web-1", "kubectl-apply"),
        ("helm upgrade web ./chart", "helm-upgrade"),
        ("terraform -chdir=infra apply -auto-approve", "terraform-apply"),
        ("curl -X POST https://api.example.com/deploy", "http-write"),
        ("curl -d '{\"a\":1}' https://hooks.example.com/x", "http-write"),
        ("curl --json @body.json api.example.com/items", "http-write"),
        ("curl -XDELETE https://api.example.com/items/3", "http-write"),
        ("wget --method=PUT https://files.example.com/a", "http-write"),
        ("wget --post-data 'a=1' https://example.com/form", "http-write"),
        ("ls | tee out.txt && git push", "git-push"),
    ],
)
def test_risky_commands_match(command: str, rule: str) -> None:
    found = match_command(command, DEFAULT_RULES)
    assert found is not None and found.rule.name == rule
    assert found.key.startswith(f"{rule}:") and len(found.key) == len(rule) + 17


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "git status",
        "git log --oneline | head",
        "echo git push",
        "grep -r 'npm publish' docs",
        "git pushd",
        "gh pr view 12",
        "curl https://example.com/data.json",
        "curl -X GET https://api.example.com/items",
        "curl -X POST http://localhost:8000/api",
        "curl -d a=1 http://127.0.0.1:5000/form",
        "wget https://example.com/file.tar.gz",
        "kubectl get pods",
        "terraform plan",
        "",
        "   ",
        "echo 'unbalanced",
    ],
)
def test_harmless_commands_do_not_match(command: str) -> None:
    assert match_command(command, DEFAULT_RULES) is None


def test_normalised_command_keys_spellings_alike() -> None:
    keys = {
        match_command(text, DEFAULT_RULES).key  # type: ignore[union-attr]
        for text in (
            "git push origin main",
            "git  push   origin main ",
            "git push 'origin' \"main\"",
        )
    }
    assert len(keys) == 1
    other = match_command("git push origin release", DEFAULT_RULES)
    assert other is not None and other.key not in keys


def test_rules_from_config(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        """
[hooks.rules.git-push]
approval = false

[hooks.rules.npm-publish]
enabled = false

[hooks.rules.deploy]
match = ["make deploy", "./scripts/release.sh"]
"""
    )
    rules = {rule.name: rule for rule in load_rules(config)}
    assert rules["git-push"].approval is False
    assert rules["git-push"].match == (("git", "push"),)
    assert "npm-publish" not in rules
    assert rules["deploy"].approval is True
    assert match_command("npm publish", tuple(rules.values())) is None
    found = match_command("make deploy ENV=prod", tuple(rules.values()))
    assert found is not None and found.rule.name == "deploy"
    assert load_rules(tmp_path / "absent.toml") == DEFAULT_RULES


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[hooks.rules.x]\nmatch = 3\n", "must be command words"),
        ("[hooks.rules.x]\napproval = true\n", "needs match"),
        ("[hooks.rules.git-push]\napprove = true\n", "unknown key"),
        ("[hooks.rules.git-push]\nenabled = 'no'\n", "true or false"),
        ("[hooks.rules]\nx = 1\n", "must be a table"),
        ("[hooks\n", "cannot read"),
    ],
)
def test_bad_rule_config_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_rules(config)


def test_bad_config_blocks_guarded_calls_only(tmp_path: Path, repo: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[hooks.rules.x]\nmatch = 3\n")
    context = HookContext(config_path=config)
    reply = claude_code(event("PreToolUse", repo, command="ls"), context)
    assert reply.exit_code == 2 and "blocked to be safe" in reply.stderr
    assert "config.toml" in reply.stderr
    reply = claude_code(
        event("Notification", repo, message="hello"), HookContext(config_path=config)
    )
    assert reply.exit_code == 0


# --- the guard, in process --------------------------------------------------------------------


def event(name: str, cwd: Path, **fields: Any) -> bytes:
    body: dict[str, Any] = {
        "session_id": SESSION,
        "transcript_path": str(cwd / "transcript.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": name,
    }
    command = fields.pop("command", None)
    if command is not None:
        body["tool_name"] = "Bash"
        body["tool_input"] = {"command": command}
    body.update(fields)
    return json.dumps(body).encode()


def run(raw: bytes) -> HookReply:
    return claude_code(raw, HookContext())


def denied(reply: HookReply) -> str:
    assert reply.exit_code == 0
    output = json.loads(reply.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == "deny"
    reason: str = output["permissionDecisionReason"]
    return reason


def test_rule_without_approval_runs_once(repo: Path, store_root: Path) -> None:
    run(event("SessionStart", repo, source="startup"))
    assert run(event("PreToolUse", repo, command="gh pr create --fill")).stdout == ""
    with Engine() as engine:
        [task] = engine.list_tasks()
        [effect] = engine.list_effects(task.id)
        assert effect.state is EffectState.IN_PROGRESS and engine.list_approvals(task.id) == []
    # While it runs (or if its PostToolUse never came) a second attempt is blocked.
    reason = denied(run(event("PreToolUse", repo, command="gh pr create --fill")))
    assert "outcome is unknown" in reason and "pitstop effect confirm" in reason
    run(
        event(
            "PostToolUse",
            repo,
            command="gh pr create --fill",
            tool_response={"stdout": "https://github.com/acme/app/pull/7\n", "stderr": ""},
        )
    )
    with Engine() as engine:
        assert engine.get_effect(task.id, effect.key).state is EffectState.CONFIRMED
    assert denied(run(event("PreToolUse", repo, command="gh  pr create --fill"))).startswith(
        "already done at "
    )


def test_failed_action_can_be_retried(repo: Path) -> None:
    run(event("SessionStart", repo))
    run(event("PreToolUse", repo, command="gh pr comment 3 -b shipped"))
    failure = run(
        event(
            "PostToolUseFailure",
            repo,
            command="gh pr comment 3 -b shipped",
            error="Exit code 1\nHTTP 502: Bad Gateway",
        )
    )
    assert failure.exit_code == 0
    with Engine() as engine:
        [task] = engine.list_tasks()
        [effect] = engine.list_effects(task.id)
        assert effect.state is EffectState.FAILED and effect.exit_code is None
        [item] = engine.list_evidence(task.id)
        assert item.exit_code == 1
    assert run(event("PreToolUse", repo, command="gh pr comment 3 -b shipped")).stdout == ""
    with Engine() as engine:
        assert engine.get_effect(task.id, effect.key).attempts == 2


def test_rejected_approval_blocks(repo: Path) -> None:
    run(event("SessionStart", repo))
    reason = denied(run(event("PreToolUse", repo, command="npm publish")))
    with Engine() as engine:
        [task] = engine.list_tasks()
        [approval] = engine.list_approvals(task.id)
        assert approval.id in reason
        engine.decide_approval(approval.id, False, "not on a Friday")
        assert engine.get_approval(approval.id).state is ApprovalState.REJECTED
    reason = denied(run(event("PreToolUse", repo, command="npm publish")))
    assert "rejected" in reason and "not on a Friday" in reason


def test_interrupted_action_becomes_uncertain(repo: Path) -> None:
    run(event("SessionStart", repo))
    config_rules = (
        *(r for r in DEFAULT_RULES if r.name != "docker-push"),
        Rule("docker-push", (("docker", "push"),), approval=False),
    )
    context = HookContext(rules=config_rules)
    assert claude_code(event("PreToolUse", repo, command="docker push app:1"), context).stdout == ""
    claude_code(
        event(
            "PostToolUse",
            repo,
            command="docker push app:1",
            tool_response={"stdout": "pushing", "stderr": "", "interrupted": True},
        ),
        HookContext(rules=config_rules),
    )
    with Engine() as engine:
        [task] = engine.list_tasks()
        [effect] = engine.list_effects(task.id)
        assert effect.state is EffectState.UNCERTAIN
    reason = denied(
        claude_code(
            event("PreToolUse", repo, command="docker push app:1"), HookContext(rules=config_rules)
        )
    )
    assert "uncertain" in reason


def test_secret_in_command_never_stored_in_clear(repo: Path, store_root: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    command = f"curl -X POST -H 'Authorization: token {token}' https://api.github.com/repos/a/b"
    run(event("SessionStart", repo))
    denied(run(event("PreToolUse", repo, command=command)))
    with Engine() as engine:
        [task] = engine.list_tasks()
        [effect] = engine.list_effects(task.id)
        assert token not in (effect.target or "")
    for path in store_root.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path


def test_notifications_and_prompts_move_the_task(repo: Path) -> None:
    run(event("SessionStart", repo))
    run(
        event(
            "Notification",
            repo,
            message="Claude is waiting for your input",
            notification_type="idle_prompt",
        )
    )
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.status is TaskStatus.WAITING
    run(event("Notification", repo, message="Build finished"))  # not a wait: nothing
    run(event("UserPromptSubmit", repo, prompt="go on"))
    with Engine() as engine:
        assert engine.get_task(task.id).status is TaskStatus.RUNNING
    run(event("Notification", repo, message="Claude needs your permission to use Bash"))
    with Engine() as engine:
        assert engine.get_task(task.id).status is TaskStatus.WAITING
    run(event("PostToolUse", repo, command="ls", tool_response={"stdout": "a\n"}))
    with Engine() as engine:
        assert engine.get_task(task.id).status is TaskStatus.RUNNING


def test_validation_warns_when_the_transcript_is_gone(repo: Path) -> None:
    transcript = repo.parent / "session.jsonl"
    transcript.write_text("{}\n")
    raw = json.loads(event("SessionStart", repo))
    raw["transcript_path"] = str(transcript)
    run(json.dumps(raw).encode())
    (repo / "README.md").write_text("# changed\n")
    assert run(event("SessionEnd", repo, reason="other")).recorded[0].startswith("checkpoint")
    with Engine() as engine:
        [task] = engine.list_tasks()
        assert task.status is TaskStatus.PAUSED
        report = engine.validate(task.id, offline=True)
        [found] = [f for f in report.findings if f.check == "transcript"]
        assert found.status.value == "pass"
        transcript.unlink()
        report = engine.validate(task.id, offline=True)
        [found] = [f for f in report.findings if f.check == "transcript"]
        assert found.status.value == "warn" and str(transcript) in found.message


def test_precompact_checkpoint_and_unknown_events(repo: Path) -> None:
    run(event("SessionStart", repo))
    (repo / "README.md").write_text("# changed\n")
    reply = run(event("PreCompact", repo, trigger="auto"))
    assert reply.exit_code == 0 and reply.recorded[0].startswith("checkpoint ")
    assert run(event("SomethingNew", repo, extra={"x": 1})) == HookReply()
    non_bash = event("PreToolUse", repo, tool_name="Write", tool_input={"file_path": "/x"})
    assert run(non_bash) == HookReply()


def test_outside_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    reply = run(event("SessionStart", plain))
    assert reply.exit_code == 0 and "not in a git repository" in reply.stderr
    reply = run(event("PreToolUse", plain, command="git push"))
    assert reply.exit_code == 0 and "not guarded" in reply.stderr


def test_multiline_command_is_guarded(repo: Path) -> None:
    command = "git add -A &&\n  git commit -m 'release\n\nnotes' &&\n  git push origin main"
    run(event("SessionStart", repo))
    reason = denied(run(event("PreToolUse", repo, command=command)))
    assert "waiting for approval" in reason
    with Engine() as engine:
        [task] = engine.list_tasks()
        [effect] = engine.list_effects(task.id)
        assert effect.kind == "git-push" and "\n" not in (effect.target or "")


def test_guard_without_command_fails_closed(repo: Path) -> None:
    raw = event("PreToolUse", repo, tool_name="Bash", tool_input={"cmd": "git push"})
    reply = run(raw)
    assert reply.exit_code == 2 and "tool_input.command" in reply.stderr


def test_hooks_module_loads_no_heavy_library() -> None:
    import subprocess

    probe = (
        "import sys, core.harness.claude_code, core.harness.codex, core.harness.guard,"
        " core.harness.tool_results, core.harness.install\n"
        "heavy = ['git', 'sqlite_utils', 'textual', 'rich', 'cryptography', 'zstandard',"
        " 'click', 'core.engine']\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == "[]"


def test_hook_evidence_commits_once(repo: Path) -> None:
    run(event("SessionStart", repo))
    with Engine() as engine:
        [task] = engine.list_tasks()
        statements: list[str] = []
        engine.db.conn.set_trace_callback(statements.append)
        item = engine.add_evidence_output(
            task.id, b"token=ghp_" + b"a" * 36 + b"\n3 passed in 0.1s\n", argv=["pytest"]
        )
        engine.db.conn.set_trace_callback(None)
        assert statements.count("COMMIT") == 1  # one fsync for the item, its chunk and its event
        assert item.state == "complete" and item.summary_text == "pytest: 3 passed"
        assert [e.action for e in engine.events(task.id)][-1] == "record"


RECORDING_PROBE = """
import json, sys
from core.harness.claude_code import claude_code
from core.harness.context import HookContext
replies = [claude_code(raw.encode(), HookContext()) for raw in json.loads(sys.argv[1])]
heavy = ['git', 'sqlite_utils', 'click', 'textual', 'rich', 'tui', 'core.security.identity',
         'core.sharing', 'core.sharing.remotes', 'core.sharing.layout',
         'core.sharing.tracking', 'core.sharing.sealing', 'core.sharing.adoption',
         'core.sharing.evidence_transfer', 'core.sharing.checkpoint_export',
         'core.sharing.checkpoint_import', 'core.sharing.ledger_commit', 'core.sharing.push',
         'core.sharing.fetch', 'core.sharing.listing', 'core.sharing.sync',
         'core.ledger.facts', 'core.ledger.fact_format', 'core.ledger.local_facts',
         'core.ledger.merge', 'core.ledger.apply', 'core.restore.validate',
         'core.economics.model', 'core.restore.resume',
         'dataclasses', 'inspect', 'hyperscan', 'secrets', 'tempfile', 'random',
         # ~3 ms of start-up (issue 22): on these paths typing is for type checkers only
         'typing',
         # OpenSSL's hashes (~2 ms to load): a checkpoint's digests are small, built-in ones
         '_hashlib', 'hmac',
         # shutil loads bz2 and lzma (~1 ms): scratch directories are removed without it
         'shutil', 'bz2', 'lzma',
         # ~3.5 ms with threading, selectors, signal and locale: a checkpoint's git calls only
         # read, and start without it (core.git.spawn); a call that writes would load it
         'subprocess',
         'core.harness.install', 'core.harness.codex', 'core.harness.guard',
         # the engine's use-cases load on first use (issue 22): none of these on a hook's path
         'core.engine.resume', 'core.engine.validate', 'core.engine.sharing',
         'core.engine.trust', 'core.engine.measures', 'core.engine.audit']
print(json.dumps({
    "recorded": [list(reply.recorded) for reply in replies],
    "loaded": [m for m in heavy if m in sys.modules],
}))
"""


@pytest.mark.parametrize(
    ("events", "loaded"),
    [
        # Observations of a running session: the store is opened, nothing of git (zstandard,
        # which compresses the evidence, loads typing itself; the evidence's SHA-256 streams
        # through OpenSSL's, which a `pitstop run` of 200 MB needs).
        (["UserPromptSubmit", "PostToolUse", "Notification"], ["typing", "_hashlib"]),
        # A checkpoint runs git itself (GitPython only creates the store's repository, once);
        # validation, resume and economics stay unloaded. None of them loads dataclasses (with
        # inspect, ~9 ms of a hook call): the records on these paths are named tuples.
        (["PreCompact"], []),
        # A stop after every turn asks only the policy (core.economics.policy) whether it comes
        # too soon.
        (["Stop"], []),
    ],
)
def test_recording_hooks_load_only_what_they_use(
    repo: Path, events: list[str], loaded: list[str]
) -> None:
    import subprocess

    run(event("SessionStart", repo))
    run(event("PreCompact", repo))  # a first checkpoint creates the store's own repository
    (repo / "README.md").write_text("# changed\n")
    fields: dict[str, dict[str, Any]] = {
        "PostToolUse": {
            "command": "pytest -q",
            "tool_response": {"stdout": "3 passed in 0.1s\n", "stderr": ""},
        },
        "Notification": {"notification_type": "idle_prompt", "message": "waiting"},
    }
    raws = [event(name, repo, **fields.get(name, {})).decode() for name in events]
    out = subprocess.run(
        [sys.executable, "-c", RECORDING_PROBE, json.dumps(raws)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    report = json.loads(out.stdout)
    assert all(report["recorded"]), report  # each event recorded something
    assert report["loaded"] == loaded


# --- Claude Code settings ----------------------------------------------------------------------


def test_install_merges_and_uninstall_restores(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    theirs = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": "./guard.sh"},
                        {
                            "type": "command",
                            "command": "pitstop hook claude-code --event PreToolUse",
                        },
                    ],
                },
            ]
        },
        "model": "opus",
    }
    original = json.dumps(theirs, indent=2) + "\n"
    path.write_text(original)
    added = install(path)
    # Already there (shared group): only Pitstop's own entry is brought up to date (its guard
    # now blocks when `pitstop` cannot start); theirs stays first, as it was.
    assert set(added) == {e for e, _ in CLAUDE_CODE_EVENTS}
    [shared] = json.loads(path.read_text())["hooks"]["PreToolUse"]
    assert shared["matcher"] == "Bash" and shared["hooks"] == [
        {"type": "command", "command": "./guard.sh"},
        {"type": "command", "command": "pitstop hook claude-code --event PreToolUse || exit 2"},
    ]
    assert install(path) == []
    removed = uninstall(path)
    assert "PreToolUse" in removed
    data = json.loads(path.read_text())
    assert data == {
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
            ]
        },
        "model": "opus",
    }
    assert uninstall(path) == []


def test_install_into_a_new_file_and_remove_it_all(tmp_path: Path) -> None:
    path = tmp_path / "proj" / ".claude" / "settings.json"
    assert installed_events(path) == []
    install(path)
    assert sorted(installed_events(path)) == sorted(e for e, _ in CLAUDE_CODE_EVENTS)
    data = json.loads(path.read_text())
    [group] = data["hooks"]["PreToolUse"]
    assert group["matcher"] == "Bash|Write|Edit|MultiEdit|NotebookEdit"
    assert group["hooks"][0]["timeout"] == HOOK_TIMEOUT_S
    assert "matcher" not in data["hooks"]["Stop"][0]
    uninstall(path)
    assert json.loads(path.read_text()) == {}


def test_settings_path_scopes(repo: Path, tmp_path: Path) -> None:
    (repo / "src").mkdir(exist_ok=True)
    assert settings_path("project", repo / "src") == repo / ".claude" / "settings.json"
    assert settings_path("user") == Path.home() / ".claude" / "settings.json"
    with pytest.raises(UsageError):
        settings_path("global")


def test_install_upgrades_pitstops_old_bash_only_matcher(tmp_path: Path) -> None:
    """A PreToolUse hook installed for Bash only gets the file tools too (they are guarded)."""
    path = tmp_path / ".claude" / "settings.json"
    install(path)
    data = json.loads(path.read_text())
    data["hooks"]["PreToolUse"][0]["matcher"] = "Bash"  # as versions before the file guard
    path.write_text(json.dumps(data))
    assert install(path) == ["PreToolUse"]
    [group] = json.loads(path.read_text())["hooks"]["PreToolUse"]
    assert group["matcher"] == "Bash|Write|Edit|MultiEdit|NotebookEdit"
    assert install(path) == []
