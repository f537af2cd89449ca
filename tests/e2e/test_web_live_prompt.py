"""A real Claude Code permission prompt, answered from the web inbox in a real browser.

The pinned `claude` (tests/e2e/clients.py) runs in print mode against the scripted Messages API
with Pitstop's hooks installed and no `--allowedTools`, so the model's `touch` needs the user's
permission: the `PermissionRequest` hook turns it into an approval and holds the prompt open.
Meanwhile a paired headless Chromium on a real `pitstop serve` sees the prompt appear without
reloading (server-sent events), marked as held with its time left, and the approver answers it:
approved, the tool runs; rejected, the tool does not run and the model is told who said no and
why. The store must record both decisions through interface `web`, by alice, from her device.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from core.engine import Engine
from core.models import ApprovalState, Interface
from tests.e2e.browser import chromium, require_browser, serve, wait_until
from tests.e2e.claude_session import Session, Workspace, make_workspace, require_claude, run_claude
from tests.e2e.mock_messages_api import ToolUse

pytestmark = [pytest.mark.e2e, pytest.mark.claude_code]

APPROVED = "touched on purpose: reviewed on my phone"
REJECTED = "not in this repository"
# Set on the page once it is shown; still set later means the page was never reloaded.
MARK = "window.__pitstopNoReload = 'kept'"
MARKED = "return window.__pitstopNoReload || null"


def _text(driver: Any) -> str:
    """The page's visible text ('' while a navigation replaces the page)."""
    from selenium.common.exceptions import WebDriverException

    try:
        return str(driver.find_element("tag name", "body").text)
    except WebDriverException:
        return ""


class Background:
    """One `claude -p` session run in a thread while the test drives the browser."""

    def __init__(self, workspace: Workspace, command: str) -> None:
        self.session: Session | None = None
        self.error: BaseException | None = None
        tool = ToolUse("Bash", {"command": command, "description": "make a file"})
        self._thread = threading.Thread(target=self._run, args=(workspace, tool), daemon=True)
        self._thread.start()

    def _run(self, workspace: Workspace, tool: ToolUse) -> None:
        try:
            # No --allowedTools: `touch` in the repository needs the user's permission.
            self.session = run_claude(workspace, [[tool]], args=(), timeout=90)
        except BaseException as error:  # re-raised in the test's thread by `result`
            self.error = error

    def result(self) -> Session:
        """The finished session (it ends once the prompt is answered)."""
        self._thread.join(timeout=90)
        if self.error is not None:
            raise self.error
        assert self.session is not None, "claude did not end within 90 s"
        return self.session


def _answer_live(driver: Any, command: str, button: str, reason: str) -> str:
    """Wait for the held prompt of `command` to appear on the inbox unreloaded; decide it."""
    driver.execute_script(MARK)
    wait_until(lambda: command in _text(driver), f"the live prompt for {command}", seconds=45)
    page = _text(driver)
    assert "prompt held" in page, page
    wait_until(lambda: " s left" in _text(driver), "the prompt's time left")
    assert driver.execute_script(MARKED) == "kept", "the inbox reloaded to show the prompt"
    with Engine() as engine:
        [pending] = [a for a in engine.list_approvals(None, True) if command in a.action]
    link = f'a[href="/approvals/{pending.id.replace(":", "%3A")}"]'
    driver.find_element("css selector", link).click()
    wait_until(lambda: driver.find_elements("id", "reason"), f"the page of {pending.id}")
    driver.find_element("id", "reason").send_keys(reason)
    driver.find_element("id", button).click()
    wait_until(lambda: "Waiting for you" in _text(driver), "the inbox after deciding")
    return pending.id


def test_a_real_claude_permission_prompt_is_answered_from_the_browser(tmp_path: Path) -> None:
    require_claude()
    require_browser()
    workspace = make_workspace(tmp_path / "ws")
    with serve(dict(os.environ)) as served, chromium() as driver:
        driver.get(served.link)
        driver.find_element("id", "pair").click()
        wait_until(lambda: "Waiting for you" in _text(driver), "the inbox after pairing")

        first = Background(workspace, "touch made-it")
        approved_id = _answer_live(driver, "touch made-it", "approve", APPROVED)
        allowed = first.result()

        second = Background(workspace, "touch never-made")
        rejected_id = _answer_live(driver, "touch never-made", "reject", REJECTED)
        denied = second.result()
    assert "Traceback" not in "".join(served.output)

    for session in (allowed, denied):
        assert session.returncode == 0, session.stderr[-2000:]
        assert session.result.get("result") == "done", session.result
    assert allowed.payload("PermissionRequest")["tool_input"]["command"] == "touch made-it"
    assert (workspace.repo / "made-it").exists()
    assert allowed.result.get("permission_denials") == []
    assert denied.payload("PermissionRequest")["tool_input"]["command"] == "touch never-made"
    assert not (workspace.repo / "never-made").exists()
    [told] = denied.tool_result_texts()
    assert f"rejected by alice in Pitstop ({rejected_id}: {REJECTED})" in told, told
    refused = denied.result["permission_denials"]
    assert [d.get("tool_input", {}).get("command") for d in refused] == ["touch never-made"]

    with Engine() as engine:
        assert engine.get_approval(approved_id).state is ApprovalState.APPROVED
        assert engine.get_approval(rejected_id).state is ApprovalState.REJECTED
        [device] = engine.list_devices()
        rows = engine.db.execute(
            "SELECT entity_id, action, actor, interface, detail FROM events "
            "WHERE entity = 'approval' ORDER BY id"
        ).fetchall()
        decisions = [
            (r[0], r[1], r[2], r[3], json.loads(r[4] or "{}").get("device"))
            for r in rows
            if r[1] in ("approve", "reject")
        ]
        assert decisions == [
            (approved_id, "approve", "alice", "web", device.id),
            (rejected_id, "reject", "alice", "web", device.id),
        ]
        asked = {r[0]: r[3] for r in rows if r[1] not in ("approve", "reject")}
        assert asked == {approved_id: "hook", rejected_id: "hook"}, asked
        reasons = {
            e.entity_id: e.reason
            for e in engine.events(approved_id.split(":")[0])
            if e.interface is Interface.WEB and e.entity_id in (approved_id, rejected_id)
        }
        assert reasons == {approved_id: APPROVED, rejected_id: REJECTED}
