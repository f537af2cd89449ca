"""Settling an uncertain side effect from the web under the dashboard's confirmation rules.

The check is shown before it runs and runs only on the approver's explicit choice; its output is
kept, redacted, as evidence and shown on the page; exit 0 settles it as happened, exit 1 only
once the approver confirms after reading the output, anything else not at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from core.engine import Engine
from core.models import EffectState
from tests.web.conftest import csrf_of, form_fields

TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


def _uncertain(engine: Engine, task_id: str, key: str, check: str) -> str:
    engine.propose_effect(task_id, key, "deploy", target="preview", check=check)
    engine.move_effect(task_id, key, EffectState.IN_PROGRESS)
    engine.move_effect(task_id, key, EffectState.UNCERTAIN, note="timed out")
    return f"/effects/{task_id}/{key}"


def _check_items(engine: Engine, task_id: str) -> list:  # type: ignore[type-arg]
    return [item for item in engine.list_evidence(task_id) if item.source == "check"]


@pytest.fixture
def says(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A shell word that prints `text` and a token (from a file: a check may hold no secret)."""

    def printing(text: str) -> str:
        path = tmp_path / f"says-{abs(hash(text))}.txt"
        path.write_text(f"{text}, {TOKEN}\n")
        return f"cat {path}"

    return printing


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """A file the check creates when (and only when) it runs."""
    return tmp_path / "check-ran"


def test_the_check_is_shown_first_and_runs_only_when_chosen(
    paired: TestClient, engine: Engine, task_id: str, marker: Path, says
) -> None:
    check = f"{says('preview is up')} && touch {marker} && exit 0"
    page_url = _uncertain(engine, task_id, "deploy-1", check)
    page = paired.get(page_url).text
    assert f"touch {marker}" in page and "Run the check" in page
    assert not marker.exists()
    url = f"{page_url}/check"
    form = form_fields(page, url)
    unchosen = paired.post(url, data=form)  # the form, but not the button
    assert unchosen.status_code == 400 and "only when you press Run the check" in unchosen.text
    stale = paired.post(url, data={**form, "run": "yes", "shown": "0" * 32})
    assert stale.status_code == 409 and "changed since this page showed it" in stale.text
    assert not marker.exists()
    assert engine.get_effect(task_id, "deploy-1").state is EffectState.UNCERTAIN

    ran = paired.post(url, data={**form, "run": "yes"})
    assert ran.status_code == 200 and marker.exists()
    assert engine.get_effect(task_id, "deploy-1").state is EffectState.CONFIRMED
    assert "deploy-1 is now confirmed" in ran.text
    assert "preview is up, [REDACTED:github-token]" in ran.text and TOKEN not in ran.text
    [item] = _check_items(engine, task_id)
    assert f"evidence #{item.id}" in ran.text
    kept = b"".join(engine.evidence_output(item.id))
    assert b"[REDACTED:github-token]" in kept and TOKEN.encode() not in kept


def test_exit_1_settles_only_after_the_approver_confirms_having_read_the_output(
    paired: TestClient, engine: Engine, task_id: str, says
) -> None:
    page_url = _uncertain(engine, task_id, "mail", f"{says('no such message')}; exit 1")
    url = f"{page_url}/check"
    ran = paired.post(url, data={**form_fields(paired.get(page_url).text, url), "run": "yes"})
    assert ran.status_code == 200 and "check exit 1" in ran.text
    assert engine.get_effect(task_id, "mail").state is EffectState.UNCERTAIN  # not by itself
    assert "no such message, [REDACTED:github-token]" in ran.text and TOKEN not in ran.text
    [item] = _check_items(engine, task_id)
    assert item.exit_code == 1

    again = paired.get(page_url).text  # the kept output is on the page, not only in the answer
    assert "no such message, [REDACTED:github-token]" in again and f"#{item.id}" in again
    settle = f"{page_url}/settle"
    confirm = form_fields(again, settle)
    assert confirm["evidence"] == str(item.id)
    unseen = paired.post(settle, data={**confirm, "state": "failed", "reason": "never sent"})
    assert unseen.status_code == 400 and "Tick that you saw" in unseen.text
    assert engine.get_effect(task_id, "mail").state is EffectState.UNCERTAIN

    done = paired.post(
        settle, data={**confirm, "state": "failed", "seen": "yes", "reason": "never sent"}
    )
    assert done.status_code == 200 and "mail is now failed" in done.text
    assert engine.get_effect(task_id, "mail").state is EffectState.FAILED
    event = [e for e in engine.events(task_id) if e.entity_id == "mail"][-1]
    assert event.reason == (
        f"precondition check exit 1, evidence #{item.id}, read by the operator: never sent"
    )
    assert (event.actor, event.interface.value) == ("alice", "web")


def test_a_did_not_happen_citing_anything_but_this_effects_exit_1_check_is_refused(
    paired: TestClient, engine: Engine, task_id: str
) -> None:
    other_url = _uncertain(engine, task_id, "other", "echo gone; exit 1")
    url = f"{other_url}/check"
    paired.post(url, data={**form_fields(paired.get(other_url).text, url), "run": "yes"})
    [other_run] = _check_items(engine, task_id)
    agent_item = engine.add_evidence_output(task_id, b"it did not happen\n", argv=["true"])
    page_url = _uncertain(engine, task_id, "mail", "exit 1")
    csrf = csrf_of(paired.get(page_url).text)
    for cited in (str(other_run.id), str(agent_item.id), "x1"):
        answer = paired.post(
            f"{page_url}/settle",
            data={"csrf": csrf, "evidence": cited, "state": "failed", "seen": "yes", "reason": "r"},
        )
        assert answer.status_code == 400 and "is not a run of mail&#39;s check" in answer.text
    assert engine.get_effect(task_id, "mail").state is EffectState.UNCERTAIN


def test_a_check_that_cannot_tell_shows_its_output_and_offers_no_confirmation(
    paired: TestClient, engine: Engine, task_id: str
) -> None:
    page_url = _uncertain(engine, task_id, "mail", "echo 'dns failure'; exit 3")
    url = f"{page_url}/check"
    ran = paired.post(url, data={**form_fields(paired.get(page_url).text, url), "run": "yes"})
    assert "Nothing was settled" in ran.text and "dns failure" in ran.text
    assert 'name="evidence"' not in ran.text  # no "it did not happen" from this run
    assert engine.get_effect(task_id, "mail").state is EffectState.UNCERTAIN


def test_running_or_confirming_a_check_without_the_csrf_token_is_refused(
    paired: TestClient, engine: Engine, task_id: str, marker: Path
) -> None:
    page_url = _uncertain(engine, task_id, "mail", f"touch {marker}; exit 1")
    url = f"{page_url}/check"
    form = form_fields(paired.get(page_url).text, url)
    forged = {k: v for k, v in form.items() if k != "csrf"}
    refused = paired.post(url, data={**forged, "run": "yes"})
    assert refused.status_code == 403 and "Refused" in refused.text
    assert not marker.exists()

    paired.post(url, data={**form, "run": "yes"})
    assert marker.exists()
    settle = f"{page_url}/settle"
    confirm = {k: v for k, v in form_fields(paired.get(page_url).text, settle).items()}
    del confirm["csrf"]
    answer = paired.post(
        settle, data={**confirm, "state": "failed", "seen": "yes", "reason": "never sent"}
    )
    assert answer.status_code == 403 and "Refused" in answer.text
    assert engine.get_effect(task_id, "mail").state is EffectState.UNCERTAIN
