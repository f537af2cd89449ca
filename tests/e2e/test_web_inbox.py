"""The web inbox in a real browser: a real `pitstop serve`, headless Chromium at phone size.

An approver does exactly this: opens the pairing link the terminal printed, presses Pair, sees
the pending approval in the inbox, opens it, approves it with a reason, sees it gone; rejects
another; watches a Claude Code permission prompt (an approval a hook asked for) appear without
reloading, with its time left; settles an uncertain side effect. The store, read afterwards,
must say every decision came through interface `web` from approver alice's device.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.engine import Engine
from core.models import ApprovalState, EffectState, Interface, Risk
from tests.core.corekit import init_repo
from tests.e2e.browser import chromium, require_browser, serve, wait_until

pytestmark = pytest.mark.e2e

REASON = "diff reviewed on my phone"


@pytest.fixture
def store(isolated_env: dict[str, Path], tmp_path: Path) -> Path:
    """A store with a task waiting on two approvals and holding an uncertain effect."""
    root = isolated_env["store"]
    repo = init_repo(tmp_path / "repo", {"README.md": "# shop\n", "pay.py": "rate = 1\n"})
    with Engine(root) as engine:
        task = engine.start_task(repo=repo, objective="Switch invoices to EUR", task_id="invoices")
        (repo / "pay.py").write_text("rate = 0.92\n")
        engine.request_approval(
            task.id, "run the EUR migration on prod", risk=Risk.HIGH, checkpoint=True
        )
        engine.request_approval(task.id, "email every customer", risk=Risk.MEDIUM)
        engine.propose_effect(task.id, "deploy-7", "deploy", target="preview-7")
        engine.move_effect(task.id, "deploy-7", EffectState.IN_PROGRESS)
        engine.move_effect(task.id, "deploy-7", EffectState.UNCERTAIN, note="timed out")
    return root


def _text(driver) -> str:  # type: ignore[no-untyped-def]
    """The page's visible text ('' while a navigation replaces the page)."""
    from selenium.common.exceptions import WebDriverException

    try:
        return str(driver.find_element("tag name", "body").text)
    except WebDriverException:
        return ""


def _decide(driver, approval_id: str, button: str, reason: str) -> None:  # type: ignore[no-untyped-def]
    driver.find_element(
        "css selector", f'a[href="/approvals/{approval_id.replace(":", "%3A")}"]'
    ).click()
    wait_until(lambda: driver.find_elements("id", "reason"), f"the page of {approval_id}")
    driver.find_element("id", "reason").send_keys(reason)
    driver.find_element("id", button).click()
    wait_until(lambda: "Waiting for you" in _text(driver), "the inbox after deciding")


def test_pair_approve_reject_live_prompt_and_settle_in_chromium(store: Path) -> None:
    require_browser()
    env = dict(os.environ)
    with serve(env) as served, chromium() as driver:
        driver.get(served.link)
        driver.find_element("id", "pair").click()
        wait_until(lambda: "Waiting for you" in _text(driver), "the inbox after pairing")
        page = _text(driver)
        assert "run the EUR migration on prod" in page and "email every customer" in page
        assert "alice" in page

        _decide(driver, "invoices:1", "approve", REASON)
        assert "invoices:1 approved by alice" in _text(driver)
        assert "run the EUR migration on prod" not in _text(driver)
        _decide(driver, "invoices:2", "reject", "not before the announcement")
        assert "invoices:2 rejected by alice" in _text(driver)

        # A Claude Code permission prompt held open by a hook appears without reloading.
        with Engine(store, interface=Interface.HOOK, actor="claude-code") as hook:
            prompt = hook.request_approval(
                "invoices",
                "allow Bash: git push origin main, asked by the agent",
                expires_in="90s",
            )
        wait_until(lambda: "git push origin main" in _text(driver), "the live permission prompt")
        assert "prompt held" in _text(driver)
        assert wait_until(lambda: " s left" in _text(driver), "the time left")

        driver.find_element("css selector", 'a[href="/effects/invoices/deploy-7"]').click()
        wait_until(lambda: driver.find_elements("id", "reason"), "the side effect's page")
        driver.find_element("id", "reason").send_keys("the preview is up: I opened it")
        driver.find_element("id", "confirmed").click()
        wait_until(lambda: "deploy-7 is now confirmed" in _text(driver), "the settlement")
    assert "Traceback" not in "".join(served.output)
    assert served.process.returncode == 130  # stopped by Ctrl-C, as a shell reports it

    with Engine(store) as engine:
        assert engine.get_approval("invoices:1").state is ApprovalState.APPROVED
        assert engine.get_approval("invoices:2").state is ApprovalState.REJECTED
        assert engine.get_approval(prompt.id).state is ApprovalState.PENDING
        assert engine.get_effect("invoices", "deploy-7").state is EffectState.CONFIRMED
        [device] = engine.list_devices()
        rows = engine.db.execute(
            "SELECT entity_id, action, actor, interface, detail FROM events "
            "WHERE (entity = 'approval' AND action IN ('approve', 'reject')) "
            "OR (entity = 'effect' AND to_state = 'confirmed') ORDER BY id"
        ).fetchall()
        decisions = [(r[0], r[1], r[2], r[3], json.loads(r[4] or "{}").get("device")) for r in rows]
        assert decisions == [
            ("invoices:1", "approve", "alice", "web", device.id),
            ("invoices:2", "reject", "alice", "web", device.id),
            ("deploy-7", decisions[2][1], "alice", "web", device.id),
        ]
        reasons = {
            e.entity_id: e.reason for e in engine.events("invoices") if e.interface is Interface.WEB
        }
        assert reasons["invoices:1"] == REASON


def test_a_check_that_exits_1_is_shown_run_read_and_confirmed_in_chromium(
    isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """The check is on the page before it runs; what it printed is shown; "did not happen" is
    recorded only after the approver ticks having read it."""
    require_browser()
    root = isolated_env["store"]
    repo = init_repo(tmp_path / "repo", {"README.md": "# shop\n"})
    printed = tmp_path / "mailer.log"
    printed.write_text("no message with id 4711 in the outbox\n")
    with Engine(root) as engine:
        engine.start_task(repo=repo, objective="Mail the invoices", task_id="mail")
        engine.propose_effect("mail", "send-4711", "email", check=f"cat {printed}; exit 1")
        engine.move_effect("mail", "send-4711", EffectState.IN_PROGRESS)
        engine.move_effect("mail", "send-4711", EffectState.UNCERTAIN, note="timed out")
    with serve(dict(os.environ)) as served, chromium() as driver:
        driver.get(served.link)
        driver.find_element("id", "pair").click()
        wait_until(lambda: "Waiting for you" in _text(driver), "the inbox after pairing")
        driver.find_element("css selector", 'a[href="/effects/mail/send-4711"]').click()
        wait_until(lambda: driver.find_elements("id", "check"), "the side effect's page")
        assert f"cat {printed}; exit 1" in driver.find_element("id", "check-command").text
        driver.find_element("id", "check").click()
        wait_until(lambda: driver.find_elements("id", "check-output"), "the check's output")
        assert "no message with id 4711" in driver.find_element("id", "check-output").text
        with Engine(root) as engine:
            assert engine.get_effect("mail", "send-4711").state is EffectState.UNCERTAIN
        driver.find_element("id", "not-happened-reason").send_keys("the outbox has no such mail")
        driver.find_element("id", "not-happened-seen").click()
        driver.find_element("id", "confirm-failed").click()
        wait_until(lambda: "send-4711 is now failed" in _text(driver), "the settlement")
    with Engine(root) as engine:
        assert engine.get_effect("mail", "send-4711").state is EffectState.FAILED
        [item] = [e for e in engine.list_evidence("mail") if e.source == "check"]
        [event] = [e for e in engine.events("mail") if e.to_state == "failed"]
        assert event.reason == (
            f"precondition check exit 1, evidence #{item.id}, read by the operator: "
            "the outbox has no such mail"
        )
        assert (event.actor, event.interface) == ("alice", Interface.WEB)
