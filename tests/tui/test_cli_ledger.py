"""`pitstop effect …` and `pitstop approval …` end to end: real processes, stores and repos.

A session walks an agent's and an operator's side (exit codes included); every refusal gives one
line on stderr, its documented exit code, and leaves the store byte-for-byte as it was; the
README's side-effects example runs as written.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyrage
import pytest

from tests.gitconfig import EMPTY_GITCONFIG

ROOT = Path(__file__).resolve().parents[2]
# Content is encrypted at rest: every store these tests make needs a master key.
MASTER_KEY = base64.b64encode(secrets.token_bytes(32)).decode()
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": EMPTY_GITCONFIG,
    "GIT_CONFIG_NOSYSTEM": "1",
}


class Pitstop:
    """Runs `pitstop` as one operator or another against one store."""

    def __init__(self, base: Path, store: Path) -> None:
        self.base = base
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
        self.env.update(GIT_ENV)
        self.env["PITSTOP_HOME"] = str(store)
        self.env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
        self.env["PITSTOP_KEY"] = MASTER_KEY
        self.store = store

    def as_operator(self, name: str) -> dict[str, str]:
        config = self.base / f"config-{name}"
        config.mkdir(exist_ok=True)
        (config / "config.toml").write_text(f'[operator]\nname = "{name}"\n')
        return {**self.env, "PITSTOP_CONFIG_DIR": str(config)}

    def run(
        self, *args: str, who: str = "agent", extra: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tui.cli", *args],
            env={**self.as_operator(who), **(extra or {})},
            cwd=self.base,
            capture_output=True,
            text=True,
            check=False,
        )

    def ok(self, *args: str, who: str = "agent", extra: dict[str, str] | None = None) -> Any:
        result = self.run(*args, "--json", who=who, extra=extra)
        assert result.returncode == 0, (args, result.stderr)
        return json.loads(result.stdout)


def make_repo(path: Path) -> Path:
    path.mkdir()
    (path / "app.py").write_text("print('hi')\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "initial"]):
        subprocess.run(
            ["git", *args], cwd=path, env={**os.environ, **GIT_ENV}, check=True, capture_output=True
        )
    return path


def store_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.endswith(("-wal", "-shm")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int) -> None:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("pitstop: ")


@pytest.fixture
def pitstop(tmp_path: Path) -> Pitstop:
    return Pitstop(tmp_path, tmp_path / "store")


def test_an_agent_and_an_operator_work_the_ledger(pitstop: Pitstop, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    started = pitstop.ok(
        "task",
        "start",
        "--repo",
        str(repo),
        "--objective",
        "ship",
        "--id",
        "ship",
        "--approver",
        "alice",
        "--approver",
        "bob",
    )
    assert started["approvers"] == ["alice", "bob"]
    assert "approvers   alice, bob" in pitstop.run("task", "show", "ship").stdout

    proposed = pitstop.ok("effect", "propose", "--task", "ship", "--key", "pr-1", "--kind", "pr")
    assert proposed["created"] is True and proposed["effect"]["state"] == "proposed"
    again = pitstop.run("effect", "propose", "--task", "ship", "--key", "pr-1", "--kind", "deploy")
    assert again.returncode == 0
    assert "already exists in task ship: proposed" in again.stdout
    assert "warning: side effect 'pr-1' already exists with kind 'pr'" in again.stderr

    ran = pitstop.run("effect", "guard", "--task", "ship", "--key", "pr-1", "--", "echo", "opened")
    assert (ran.returncode, ran.stdout) == (0, "opened\n")
    assert ran.stderr.startswith("pitstop: side effect 'pr-1' ran and is confirmed")
    skipped = pitstop.run("effect", "guard", "--task", "ship", "--key", "pr-1", "--", "echo", "x")
    assert (skipped.returncode, skipped.stdout) == (0, "")
    assert "already confirmed" in skipped.stderr

    guard = ["effect", "guard", "--task", "ship", "--key", "deploy", "--kind", "deploy"]
    failed = pitstop.run(*guard, "--", "sh", "-c", "echo broke >&2; exit 7")
    assert failed.returncode == 7 and failed.stderr.startswith("broke\n")
    timed_out = pitstop.run(*guard, "--timeout", "0.3", "--", "sleep", "10")
    assert timed_out.returncode == 124
    refused = pitstop.run(*guard, "--", "true")
    assert_one_line_error(refused, 3)
    assert "is uncertain" in refused.stderr

    settle = ["effect", "confirm", "--task", "ship", "--key", "deploy"]
    assert_one_line_error(pitstop.run(*settle), 2)
    assert_one_line_error(pitstop.run(*settle, "--reason", "seen", who="mallory"), 1)
    settled = pitstop.ok(*settle, "--reason", "the preview URL answers", who="alice")
    assert settled["state"] == "confirmed" and settled["needs_settling"] is False

    listed = pitstop.ok("effect", "list", "--task", "ship", "--state", "confirmed")
    assert [(e["key"], e["attempts"]) for e in listed] == [("pr-1", 1), ("deploy", 2)]
    shown = pitstop.run("effect", "show", "--task", "ship", "--key", "deploy")
    assert "alice via cli  settle  uncertain → confirmed  (the preview URL answers)" in shown.stdout

    pitstop.ok(
        "effect",
        "propose",
        "--task",
        "ship",
        "--key",
        "mig",
        "--kind",
        "migration",
        "--needs-approval",
    )
    migrate = ["effect", "guard", "--task", "ship", "--key", "mig", "--", "echo", "migrated"]
    assert_one_line_error(pitstop.run(*migrate), 4)
    requested = pitstop.ok(
        "approval",
        "request",
        "--task",
        "ship",
        "--action",
        "apply 0002 on staging",
        "--effect",
        "mig",
        "--risk",
        "high",
        "--checkpoint",
        "--expires-in",
        "2h",
    )
    assert requested["id"] == "ship:1" and requested["checkpoint_seq"] == 1
    assert pitstop.ok("task", "show", "ship")["status"] == "waiting"
    inbox = pitstop.run("approval", "list", "--pending")
    assert inbox.stdout.splitlines()[0].split()[:4] == ["ID", "STATE", "RISK", "EFFECT"]
    assert "ship:1  pending  high" in inbox.stdout
    assert_one_line_error(pitstop.run(*migrate), 4)

    decided = pitstop.ok("approval", "approve", "ship:1", "--reason", "plan reviewed", who="bob")
    assert (decided["state"], decided["decided_by"]) == ("approved", "bob")
    assert pitstop.ok("approval", "list", "--pending") == []
    assert pitstop.ok("task", "show", "ship")["status"] == "paused"
    assert pitstop.run(*migrate).stdout == "migrated\n"

    log = pitstop.run("log", "ship")
    assert re.search(r"bob\s+cli\s+approval ship:1\s+approve\s+pending → approved", log.stdout)
    assert re.search(r"agent\s+cli\s+effect mig\s+confirm\s+in_progress → confirmed", log.stdout)
    events = pitstop.ok("log", "ship")
    assert all(e["interface"] == "cli" for e in events)


def test_guard_busy_while_another_guard_runs(pitstop: Pitstop, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    pitstop.ok("task", "start", "--repo", str(repo), "--objective", "busy", "--id", "busy")
    flag = tmp_path / "started"
    release = tmp_path / "release"
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "effect",
            "guard",
            "--task",
            "busy",
            "--key",
            "k",
            "--kind",
            "x",
            "--",
            "sh",
            "-c",
            f"touch {flag}; while [ ! -e {release} ]; do sleep 0.05; done",
        ],
        env=pitstop.as_operator("agent"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not flag.exists():
            assert first.poll() is None
        busy = pitstop.run(
            "effect", "guard", "--task", "busy", "--key", "k", "--wait", "0", "--", "true"
        )
        assert_one_line_error(busy, 5)
        assert "being run right now by the guard started as pid" in busy.stderr
        shown = pitstop.ok("effect", "show", "--task", "busy", "--key", "k")
        assert shown["effect"]["runner_alive"] is True
        assert shown["effect"]["needs_settling"] is False
        refused = pitstop.run("effect", "fail", "--task", "busy", "--key", "k")
        assert_one_line_error(refused, 5)
    finally:
        release.touch()
        assert first.wait(timeout=60) == 0
    final = pitstop.ok("effect", "show", "--task", "busy", "--key", "k")
    assert final["effect"]["state"] == "confirmed"


# --- refusals change nothing ---------------------------------------------------------------------

EXPIRED_AT = "2020-01-01T00:00:00.000000Z"


@pytest.fixture(scope="module")
def refusal_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with one of everything a refusal can hit, built once for all the cases."""
    base = tmp_path_factory.mktemp("refusals")
    p = Pitstop(base, base / "store")
    repo = make_repo(base / "repo")
    p.ok(
        "task",
        "start",
        "--repo",
        str(repo),
        "--objective",
        "k",
        "--id",
        "known",
        "--approver",
        "alice",
    )
    p.ok("effect", "propose", "--task", "known", "--key", "fresh", "--kind", "x")
    p.ok(
        "effect", "propose", "--task", "known", "--key", "gated", "--kind", "x", "--needs-approval"
    )
    p.ok("effect", "propose", "--task", "known", "--key", "unc", "--kind", "x")
    p.ok("effect", "start", "--task", "known", "--key", "unc")
    p.ok("effect", "uncertain", "--task", "known", "--key", "unc")
    p.ok("approval", "request", "--task", "known", "--action", "pending one")
    p.ok("approval", "request", "--task", "known", "--action", "decided one")
    p.ok("approval", "approve", "known:2", "--reason", "fine", who="alice")
    p.ok(
        "approval",
        "request",
        "--task",
        "known",
        "--action",
        "expired one",
        "--expires-in",
        "1m",
        extra={"PITSTOP_FROZEN_NOW": EXPIRED_AT},
    )
    p.ok("task", "start", "--repo", str(repo), "--objective", "done", "--id", "finished")
    p.ok("task", "done", "finished")
    return base


@pytest.mark.parametrize(
    ("args", "who", "code", "fragment"),
    [
        (["effect", "start", "--task", "nope", "--key", "k"], "agent", 2, "no task 'nope'"),
        (["effect", "start", "--task", "known", "--key", "nope"], "agent", 2, "no side effect"),
        (["effect", "show", "--task", "known", "--key", "nope"], "agent", 2, "no side effect"),
        (["effect", "list", "--task", "nope"], "agent", 2, "no task 'nope'"),
        (["effect", "list", "--state", "bogus"], "agent", 2, "--state"),
        (
            ["effect", "confirm", "--task", "known", "--key", "fresh"],
            "agent",
            1,
            "cannot become confirmed (it can only become in_progress)",
        ),
        (
            ["effect", "uncertain", "--task", "known", "--key", "unc"],
            "agent",
            1,
            "cannot become uncertain",
        ),
        (
            ["effect", "propose", "--task", "known", "--key", "", "--kind", "x"],
            "agent",
            2,
            "--key is empty",
        ),
        (
            ["effect", "propose", "--task", "finished", "--key", "k", "--kind", "x"],
            "agent",
            1,
            "finished task proposes no side effects",
        ),
        (["effect", "start", "--task", "known", "--key", "gated"], "agent", 4, "needs an approval"),
        (["effect", "confirm", "--task", "known", "--key", "unc"], "alice", 2, "needs --reason"),
        (
            ["effect", "fail", "--task", "known", "--key", "unc", "--reason", "x"],
            "mallory",
            1,
            "mallory may not settle",
        ),
        (
            ["effect", "check", "--task", "known", "--key", "fresh", "--check", "exit 0"],
            "agent",
            1,
            "only an in_progress or uncertain",
        ),
        (
            ["effect", "check", "--task", "known", "--key", "unc", "--check", "exit 7"],
            "agent",
            3,
            "cannot tell",
        ),
        (
            ["effect", "guard", "--task", "known", "--key", "nope", "--", "true"],
            "agent",
            2,
            "pass --kind",
        ),
        (
            [
                "effect",
                "guard",
                "--task",
                "known",
                "--key",
                "n",
                "--kind",
                "x",
                "--",
                "no-such-cmd",
            ],
            "agent",
            2,
            "no such command",
        ),
        (
            ["effect", "guard", "--task", "known", "--key", "unc", "--", "true"],
            "agent",
            3,
            "no precondition check",
        ),
        (
            ["effect", "guard", "--task", "known", "--key", "gated", "--", "true"],
            "agent",
            4,
            "needs an approval",
        ),
        (["effect", "guard", "--task", "known", "--key", "fresh"], "agent", 2, "Missing argument"),
        (
            ["approval", "approve", "known:1", "--reason", "ok"],
            "mallory",
            1,
            "mallory may not decide approvals for task known: only alice may",
        ),
        (
            ["approval", "reject", "known:2", "--reason", "no"],
            "alice",
            1,
            "already approved by alice",
        ),
        (["approval", "approve", "known:3", "--reason", "ok"], "alice", 1, "expired at"),
        (["approval", "approve", "known:99", "--reason", "ok"], "alice", 2, "no approval"),
        (["approval", "approve", "known", "--reason", "ok"], "alice", 2, "invalid approval id"),
        (["approval", "approve", "known:1"], "alice", 2, "--reason"),
        (["approval", "approve", "known:1", "--reason", " "], "alice", 2, "needs a --reason"),
        (["approval", "show", "nope:1"], "alice", 2, "no approval"),
        (
            ["approval", "request", "--task", "known", "--action", "x", "--effect", "nope"],
            "agent",
            2,
            "no side effect",
        ),
        (
            ["approval", "request", "--task", "known", "--action", "x", "--expires-in", "soon"],
            "agent",
            2,
            "invalid --expires-in",
        ),
        (
            ["approval", "request", "--task", "known", "--action", "x", "--risk", "extreme"],
            "agent",
            2,
            "--risk",
        ),
        (
            ["approval", "request", "--task", "nope", "--action", "x", "--checkpoint"],
            "agent",
            2,
            "no task 'nope'",
        ),
        (
            ["approval", "request", "--task", "known", "--action", "", "--checkpoint"],
            "agent",
            2,
            "--action is empty",
        ),
        (
            ["approval", "request", "--task", "finished", "--action", "x"],
            "agent",
            1,
            "asks for no approvals",
        ),
        (
            ["task", "start", "--repo", ".", "--objective", "x", "--approver", "a b"],
            "agent",
            2,
            "invalid approver",
        ),
    ],
)
def test_refusals_are_one_line_and_change_nothing(
    refusal_template: Path, tmp_path: Path, args: list[str], who: str, code: int, fragment: str
) -> None:
    shutil.copytree(refusal_template, tmp_path / "case", symlinks=True)
    p = Pitstop(tmp_path / "case", tmp_path / "case" / "store")
    before = store_digest(p.store)
    result = p.run(*args, who=who)
    assert_one_line_error(result, code)
    assert fragment in result.stderr
    assert store_digest(p.store) == before


def test_approval_show_and_expiry_are_visible(refusal_template: Path, tmp_path: Path) -> None:
    shutil.copytree(refusal_template, tmp_path / "case", symlinks=True)
    p = Pitstop(tmp_path / "case", tmp_path / "case" / "store")
    listed = p.run("approval", "list", "--task", "known")
    states = {line.split()[0]: line.split()[1] for line in listed.stdout.splitlines()[1:]}
    assert states == {"known:1": "pending", "known:2": "approved", "known:3": "expired"}
    shown = p.run("approval", "show", "known:3")
    assert "state       expired" in shown.stdout
    assert "expires     2020-01-01T00:01:00.000000Z" in shown.stdout
    pending = p.ok("approval", "list", "--pending")
    assert [a["id"] for a in pending] == ["known:1"]


# --- the README --------------------------------------------------------------------------------


def test_readme_side_effects_example_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("<!-- ledger-example")
    block = re.search(r"```bash\n(.*?)```", readme[start:], re.S)
    assert block
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PITSTOP_"))}
    env.update(GIT_ENV)
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "PITSTOP_HOME": str(tmp_path / "store"),
            "PITSTOP_CONFIG_DIR": str(tmp_path / "config"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        }
    )
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.group(1)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "refused with exit 4" in result.stdout
    assert (tmp_path / "site" / "preview.txt").read_text() == "deployed\n"
    assert (tmp_path / "site" / "releases.txt").read_text() == "published\n"


def test_a_signalled_guard_passes_the_signal_on_and_records_uncertain(
    pitstop: Pitstop, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    pitstop.ok("task", "start", "--repo", str(repo), "--objective", "sig", "--id", "sig")
    started, stopped = tmp_path / "started", tmp_path / "stopped"
    action = (
        f"trap 'touch {stopped}; exit 9' TERM; touch {started}; while true; do sleep 0.05; done"
    )
    guard = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tui.cli",
            "effect",
            "guard",
            "--task",
            "sig",
            "--key",
            "k",
            "--kind",
            "x",
            "--",
            "sh",
            "-c",
            action,
        ],
        env=pitstop.as_operator("agent"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    while not started.exists():
        assert guard.poll() is None
    guard.terminate()
    _, stderr = guard.communicate(timeout=60)
    assert guard.returncode == 128 + 15, stderr
    assert stopped.exists()  # the action got the signal too, and could clean up
    assert "is uncertain (the guard was interrupted by SIGTERM" in stderr
    shown = pitstop.ok("effect", "show", "--task", "sig", "--key", "k")
    assert (shown["effect"]["state"], shown["effect"]["exit_code"]) == ("uncertain", 9)


def test_a_decision_overruled_by_ledger_sync_shows_its_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Approved here, rejected first elsewhere: show, list and --json all name the conflict."""
    from core.engine import Engine
    from core.models import EffectState
    from core.security import signing

    monkeypatch.setenv("PITSTOP_KEY", MASTER_KEY)
    repo = make_repo(tmp_path / "repo")
    pitstop = Pitstop(tmp_path, tmp_path / "store-a")
    bob_key = signing.create_signing_key()  # Bob is his own person: his own signing key
    with (
        Engine(pitstop.store, actor="alice") as a,
        Engine(tmp_path / "store-b", actor="bob", signing_key=bob_key) as b,
    ):
        task = a.start_task(repo=repo, objective="ship", task_id="ship")
        bob_recipient = str(pyrage.x25519.Identity.generate().to_public())
        a.share_task("ship", [bob_recipient], signer=bob_key.public, label="bob")
        b.adopt_task(
            task, origin_store=a.keys.store_id, data_key=a.keys.data_key("ship", create=True)
        )
        a.propose_effect("ship", "deploy", "deploy")
        a.move_effect("ship", "deploy", EffectState.IN_PROGRESS)
        a.move_effect("ship", "deploy", EffectState.UNCERTAIN)
        a.request_approval("ship", "open the PR")
        b.apply_ledger("ship", a.export_ledger("ship"))
        b.decide_approval("ship:1", False, "not yet")
        b.move_effect("ship", "deploy", EffectState.FAILED, reason="not live")
        a.decide_approval("ship:1", True, "fine")
        a.move_effect("ship", "deploy", EffectState.CONFIRMED, reason="saw it")
        a.apply_ledger("ship", b.export_ledger("ship"))

    shown = pitstop.run("approval", "show", "ship:1", who="alice")
    assert shown.returncode == 0, shown.stderr
    assert "state       rejected" in shown.stdout
    assert "CONFLICT    conflict: decided differently; kept rejected by bob" in shown.stdout
    assert "set aside approved by alice" in shown.stdout
    assert "rejected (conflict)" in pitstop.run("approval", "list", who="alice").stdout
    assert pitstop.ok("approval", "show", "ship:1", who="alice")["conflicts"]
    effect = pitstop.run("effect", "show", "--task", "ship", "--key", "deploy", who="alice")
    assert "CONFLICT    conflict: attempt 1 settled differently; kept failed" in effect.stdout
    assert "failed (conflict)" in pitstop.run("effect", "list", who="alice").stdout
