"""The web inbox's pages over a real store: what an approver sees and decides, and the audit."""

from __future__ import annotations

import json

from starlette.testclient import TestClient

from core.engine import Engine
from core.models import ApprovalState, EffectState, Interface, Risk
from tests.web.conftest import csrf_of, form_fields


def _decision_events(engine: Engine, approval_id: str) -> list[tuple[str, str, str, dict]]:
    rows = engine.db.execute(
        "SELECT action, actor, interface, detail FROM events "
        "WHERE entity = 'approval' AND entity_id = ? AND action IN ('approve', 'reject')",
        [approval_id],
    ).fetchall()
    return [(a, actor, i, json.loads(d or "{}")) for a, actor, i, d in rows]


def test_the_inbox_lists_pending_approvals_with_risk_task_and_action(
    paired: TestClient, engine: Engine, task_id: str
) -> None:
    engine.request_approval(task_id, "deploy preview", risk=Risk.LOW)
    engine.request_approval(task_id, "push to main", risk=Risk.HIGH, expires_in="5m")
    page = paired.get("/")
    assert page.status_code == 200
    text = page.text
    assert "Waiting for you" in text and "deploy preview" in text and "push to main" in text
    assert text.index("push to main") < text.index("deploy preview")  # riskiest first
    assert f"{task_id} · #2" in text
    assert "left" in text  # the time left to answer
    assert "alice" in text


def test_an_approval_page_shows_its_context(
    paired: TestClient, engine: Engine, task_id: str
) -> None:
    engine.propose_effect(task_id, "deploy-1", "deploy", target="preview", check="exit 1")
    engine.add_evidence_output(
        task_id,
        b"collected 3 items\n3 passed in 0.1s\n",
        label="pytest",
        argv=["pytest"],
        exit_code=0,
    )
    made = engine.request_approval(task_id, "deploy the preview", effect_key="deploy-1")
    page = paired.get(f"/approvals/{made.id}")
    assert page.status_code == 200
    text = page.text
    assert "Ship the &lt;b&gt;release&lt;/b&gt; notes" in text  # objective, escaped
    assert "deploy → preview" in text
    assert "app.py" in text and "+2" in text  # the checkpoint's diff stat
    assert "3 passed" in text  # the evidence tail
    assert "not validated" in text


def test_approving_with_a_reason_is_audited_as_web_with_approver_and_device(
    paired: TestClient, engine: Engine, task_id: str
) -> None:
    made = engine.request_approval(task_id, "push to main")
    page = paired.get(f"/approvals/{made.id}")
    answer = paired.post(
        f"/approvals/{made.id}",
        data={"csrf": csrf_of(page.text), "decision": "approve", "reason": "looks right"},
        follow_redirects=False,
    )
    assert answer.status_code == 303
    inbox = paired.get(answer.headers["location"])
    assert f"{made.id} approved by alice" in inbox.text
    assert "push to main" not in inbox.text.split("Waiting for you")[1]
    assert engine.get_approval(made.id).state is ApprovalState.APPROVED
    [(action, actor, interface, detail)] = _decision_events(engine, made.id)
    device = engine.list_devices()[0]
    assert (action, actor, interface) == ("approve", "alice", Interface.WEB.value)
    assert detail == {"device": device.id, "approver": "alice"}


def test_rejecting_needs_a_reason(paired: TestClient, engine: Engine, task_id: str) -> None:
    made = engine.request_approval(task_id, "drop the table")
    csrf = csrf_of(paired.get(f"/approvals/{made.id}").text)
    empty = paired.post(
        f"/approvals/{made.id}", data={"csrf": csrf, "decision": "reject", "reason": "  "}
    )
    assert empty.status_code == 400 and "Say why" in empty.text
    assert engine.get_approval(made.id).state is ApprovalState.PENDING
    done = paired.post(
        f"/approvals/{made.id}", data={"csrf": csrf, "decision": "reject", "reason": "no"}
    )
    assert done.status_code == 200
    assert engine.get_approval(made.id).state is ApprovalState.REJECTED


def test_deciding_twice_says_so_and_changes_nothing(
    paired: TestClient, engine: Engine, task_id: str
) -> None:
    made = engine.request_approval(task_id, "push")
    csrf = csrf_of(paired.get(f"/approvals/{made.id}").text)
    engine.decide_approval(made.id, False, "from the terminal")
    late = paired.post(
        f"/approvals/{made.id}", data={"csrf": csrf, "decision": "approve", "reason": "ok"}
    )
    assert late.status_code in (400, 409)
    assert "Not done" in late.text
    assert engine.get_approval(made.id).state is ApprovalState.REJECTED


def test_an_unknown_approval_is_a_clear_404(paired: TestClient, task_id: str) -> None:
    page = paired.get(f"/approvals/{task_id}:99")
    assert page.status_code == 404 and "Traceback" not in page.text


def test_agent_written_strings_are_escaped_and_terminal_escapes_shown_harmless(
    paired: TestClient, engine: Engine, task_id: str
) -> None:
    hostile = "<script>alert(1)</script>\x1b[2J\x1b]0;owned\x07 rm -rf"
    made = engine.request_approval(task_id, hostile)
    engine.add_evidence_output(task_id, b"<img src=x onerror=alert(1)>\x1b[31mred\n", argv=["make"])
    for path in ("/", f"/approvals/{made.id}", "/inbox.part"):
        text = paired.get(path).text
        assert "<script>alert" not in text and "<img src=x" not in text
        assert "\x1b" not in text and "\x07" not in text
    detail = paired.get(f"/approvals/{made.id}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;␛[2J" in detail
    assert "&lt;img src=x onerror=alert(1)&gt;␛[31mred" in detail


def test_an_uncertain_effect_is_listed_and_its_check_settles_it(
    paired: TestClient, engine: Engine, task_id: str
) -> None:
    engine.propose_effect(task_id, "pr-7", "pull_request", target="repo#7", check="exit 0")
    engine.move_effect(task_id, "pr-7", EffectState.IN_PROGRESS)
    engine.move_effect(task_id, "pr-7", EffectState.UNCERTAIN, note="timed out")
    inbox = paired.get("/").text
    assert "Unsettled side effects" in inbox and "pull_request → repo#7" in inbox
    page = paired.get(f"/effects/{task_id}/pr-7")
    assert "exit 0" in page.text
    url = f"/effects/{task_id}/pr-7/check"
    checked = paired.post(url, data={**form_fields(page.text, url), "run": "yes"})
    assert checked.status_code == 200 and "check exit 0" in checked.text
    assert engine.get_effect(task_id, "pr-7").state is EffectState.CONFIRMED


def test_a_check_that_cannot_tell_settles_nothing(
    paired: TestClient, engine: Engine, task_id: str
) -> None:
    engine.propose_effect(task_id, "mail", "email", check="exit 3")
    engine.move_effect(task_id, "mail", EffectState.IN_PROGRESS)
    engine.move_effect(task_id, "mail", EffectState.UNCERTAIN)
    url = f"/effects/{task_id}/mail/check"
    shown = form_fields(paired.get(f"/effects/{task_id}/mail").text, url)
    checked = paired.post(url, data={**shown, "run": "yes"})
    assert "exited 3" in checked.text
    assert engine.get_effect(task_id, "mail").state is EffectState.UNCERTAIN


def test_did_not_happen_needs_the_check_seen_and_a_reason(
    paired: TestClient, engine: Engine, task_id: str
) -> None:
    engine.propose_effect(task_id, "mail", "email")
    engine.move_effect(task_id, "mail", EffectState.IN_PROGRESS)
    engine.move_effect(task_id, "mail", EffectState.UNCERTAIN)
    csrf = csrf_of(paired.get(f"/effects/{task_id}/mail").text)
    url = f"/effects/{task_id}/mail/settle"
    unseen = paired.post(url, data={"csrf": csrf, "state": "failed", "reason": "bounced"})
    assert unseen.status_code == 400 and "Tick that you saw" in unseen.text
    no_reason = paired.post(url, data={"csrf": csrf, "state": "failed", "seen": "yes"})
    assert no_reason.status_code == 400
    assert engine.get_effect(task_id, "mail").state is EffectState.UNCERTAIN
    done = paired.post(
        url, data={"csrf": csrf, "state": "failed", "seen": "yes", "reason": "bounced"}
    )
    assert done.status_code == 200 and "mail is now failed" in done.text
    assert engine.get_effect(task_id, "mail").state is EffectState.FAILED
    row = engine.db.execute(
        "SELECT actor, interface FROM events WHERE entity = 'effect' AND entity_id = 'mail' "
        "ORDER BY id DESC LIMIT 1"
    ).fetchone()
    assert tuple(row) == ("alice", "web")


def test_a_held_permission_prompt_is_marked_with_its_time_left(
    paired: TestClient, store_root, engine: Engine, task_id: str
) -> None:
    with Engine(store_root, interface=Interface.HOOK, actor="claude-code") as hook:
        made = hook.request_approval(
            task_id, "allow Bash: git push, asked by the agent", expires_in="120s"
        )
    text = paired.get("/").text
    assert "prompt held" in text and "left" in text
    assert "the harness holds its prompt open" in paired.get(f"/approvals/{made.id}").text


def test_static_files_and_headers(paired: TestClient) -> None:
    css = paired.get("/static/pitstop.css")
    assert css.status_code == 200 and "prefers-color-scheme: dark" in css.text
    page = paired.get("/")
    csp = page.headers["content-security-policy"]
    assert "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert "frame-ancestors 'none'" in csp
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "style=" not in page.text and "<script>" not in page.text  # nothing inline
