"""No anonymous door (invariant 13): every way in without a valid, current device is refused.

Each attack runs against the real application over a real store: no cookie, a forged cookie,
a cookie from another store, a revoked device, a forged / expired / reused pairing link, a
write without (or with the wrong) CSRF token, and a flood of attempts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from core.engine import Engine
from core.models import ApprovalState, EffectState
from tests.web.conftest import csrf_of, make_client, pair
from web.effects import check_digest
from web.guard import COOKIE
from web.limits import RateLimits

SECRET_WORDS = ("push to main", "Ship the")


def _writes(approval_id: str, task_id: str) -> list[tuple[str, dict[str, str]]]:
    return [
        (f"/approvals/{approval_id}", {"decision": "approve", "reason": "ok"}),
        (f"/effects/{task_id}/fx/check", {"run": "yes", "shown": check_digest("exit 0")}),
        (f"/effects/{task_id}/fx/settle", {"state": "confirmed", "reason": "ok"}),
        ("/forget", {}),
    ]


def _reads(approval_id: str, task_id: str) -> list[str]:
    return ["/", "/inbox.part", f"/approvals/{approval_id}", f"/effects/{task_id}/fx", "/live"]


@pytest.fixture
def waiting(engine: Engine, task_id: str) -> str:
    """A pending approval and an uncertain effect (`fx`) on the task."""
    engine.propose_effect(task_id, "fx", "deploy", check="exit 0")
    engine.move_effect(task_id, "fx", EffectState.IN_PROGRESS)
    engine.move_effect(task_id, "fx", EffectState.UNCERTAIN)
    return engine.request_approval(task_id, "push to main").id


def _refused_unpaired(response) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 401, response.text
    assert "Not paired" in response.text
    assert not any(word in response.text for word in SECRET_WORDS)
    assert COOKIE not in response.headers.get("set-cookie", "")


def test_every_page_and_write_refuses_a_browser_without_a_session(
    client: TestClient, engine: Engine, task_id: str, waiting: str
) -> None:
    for path in _reads(waiting, task_id):
        _refused_unpaired(client.get(path))
    for path, data in _writes(waiting, task_id):
        _refused_unpaired(client.post(path, data={**data, "csrf": "0" * 64}))
    assert engine.get_approval(waiting).state is ApprovalState.PENDING
    assert engine.get_effect(task_id, "fx").state is EffectState.UNCERTAIN


def test_a_forged_session_cookie_is_refused(
    client: TestClient, engine: Engine, task_id: str, waiting: str
) -> None:
    client.cookies.set(COOKIE, "forged-" + "a" * 40)
    for path in _reads(waiting, task_id):
        _refused_unpaired(client.get(path))


def test_a_cookie_from_another_store_is_refused(
    paired: TestClient, tmp_path: Path, task_id: str, waiting: str
) -> None:
    other_root = tmp_path / "other-store"
    with Engine(other_root):
        pass
    token = paired.cookies.get(COOKIE)
    assert token
    with make_client(other_root) as elsewhere:
        elsewhere.cookies.set(COOKIE, token)
        _refused_unpaired(elsewhere.get("/"))


def test_a_revoked_device_is_refused_at_once(
    paired: TestClient, engine: Engine, task_id: str, waiting: str
) -> None:
    assert paired.get("/").status_code == 200
    csrf = csrf_of(paired.get(f"/approvals/{waiting}").text)
    [device] = engine.list_devices()
    engine.revoke_device(device.id)
    _refused_unpaired(paired.get("/"))
    _refused_unpaired(
        paired.post(
            f"/approvals/{waiting}", data={"csrf": csrf, "decision": "approve", "reason": "x"}
        )
    )
    assert engine.get_approval(waiting).state is ApprovalState.PENDING


def test_unpairing_from_the_page_revokes_the_device(paired: TestClient, engine: Engine) -> None:
    csrf = csrf_of(paired.get("/").text)
    gone = paired.post("/forget", data={"csrf": csrf})
    assert gone.status_code == 200 and "no longer paired" in gone.text
    assert not engine.list_devices()[0].active
    _refused_unpaired(paired.get("/"))


def test_every_write_refuses_a_missing_or_wrong_csrf_token(
    paired: TestClient, engine: Engine, task_id: str, waiting: str
) -> None:
    right = csrf_of(paired.get("/").text)
    for path, data in _writes(waiting, task_id):
        for csrf in (None, "", "0" * 64, right[:-1] + ("0" if right[-1] != "0" else "1")):
            sent = dict(data) if csrf is None else {**data, "csrf": csrf}
            answer = paired.post(path, data=sent)
            assert answer.status_code == 403, (path, csrf, answer.text)
            assert "Refused" in answer.text
    assert engine.get_approval(waiting).state is ApprovalState.PENDING
    assert engine.get_effect(task_id, "fx").state is EffectState.UNCERTAIN
    assert engine.list_devices()[0].active


def test_the_csrf_token_of_one_device_does_not_work_for_another(
    paired: TestClient, store_root: Path, engine: Engine, task_id: str, waiting: str
) -> None:
    theirs = csrf_of(paired.get("/").text)
    with make_client(store_root) as other:
        pair(other, engine, "bob")
        answer = other.post(
            f"/approvals/{waiting}", data={"csrf": theirs, "decision": "approve", "reason": "x"}
        )
        assert answer.status_code == 403
    assert engine.get_approval(waiting).state is ApprovalState.PENDING


def test_a_forged_pairing_token_is_refused(client: TestClient, engine: Engine) -> None:
    engine.create_pairing("alice")
    answer = client.post("/pair", data={"token": "A" * 43}, follow_redirects=False)
    assert answer.status_code == 403 and "unknown, already used or expired" in answer.text
    assert COOKIE not in answer.headers.get("set-cookie", "")
    assert engine.list_devices() == []


def test_a_pairing_link_works_once(client: TestClient, store_root: Path, engine: Engine) -> None:
    link = engine.create_pairing("alice")
    first = client.post("/pair", data={"token": link.token}, follow_redirects=False)
    assert first.status_code == 303
    with make_client(store_root) as second_browser:
        again = second_browser.post("/pair", data={"token": link.token}, follow_redirects=False)
        assert again.status_code == 403
        _refused_unpaired(second_browser.get("/"))
    assert len(engine.list_devices()) == 1


def test_an_expired_pairing_link_is_refused(
    client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = engine.create_pairing("alice", minutes=1)
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", link.expires_at)
    answer = client.post("/pair", data={"token": link.token}, follow_redirects=False)
    assert answer.status_code == 403
    assert engine.list_devices() == []


def test_opening_a_pairing_link_only_shows_a_button(client: TestClient, engine: Engine) -> None:
    link = engine.create_pairing("alice")
    shown = client.get(f"/pair/{link.token}")
    assert shown.status_code == 200 and 'id="pair"' in shown.text
    assert COOKIE not in shown.headers.get("set-cookie", "")
    # a link previewer that fetched it has not used it up
    assert (
        client.post("/pair", data={"token": link.token}, follow_redirects=False).status_code == 303
    )


def test_the_session_cookie_is_httponly_strict_and_secure_over_tls(
    store_root: Path, engine: Engine
) -> None:
    for base, secure in (("http://127.0.0.1", False), ("https://inbox.example", True)):
        with TestClient(make_client(store_root).app, base_url=base) as browser:
            link = engine.create_pairing("alice")
            answer = browser.post("/pair", data={"token": link.token}, follow_redirects=False)
            cookie = answer.headers["set-cookie"].lower()
            assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
            assert ("secure" in cookie.replace("samesite", "")) is secure
            if secure:
                assert "strict-transport-security" in answer.headers


def test_pairing_attempts_are_rate_limited(store_root: Path, engine: Engine) -> None:
    limits = RateLimits(pairing_attempts=3, failed_requests=100)
    with make_client(store_root, limits) as browser:
        for _ in range(3):
            assert browser.post("/pair", data={"token": "x" * 43}).status_code == 403
        link = engine.create_pairing("alice")
        stopped = browser.post("/pair", data={"token": link.token}, follow_redirects=False)
        assert stopped.status_code == 429
        assert browser.get(f"/pair/{link.token}").status_code == 429
    assert engine.list_devices() == []


def test_unpaired_requests_are_rate_limited(store_root: Path, engine: Engine) -> None:
    limits = RateLimits(pairing_attempts=100, failed_requests=4)
    with make_client(store_root, limits) as browser:
        browser.cookies.set(COOKIE, "guess")
        statuses = [browser.get("/").status_code for _ in range(6)]
        assert statuses == [401, 401, 401, 401, 429, 429]
