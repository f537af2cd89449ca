"""Fixtures for the web inbox: a real store with a task waiting, and browsers paired or not."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from core.engine import Engine
from tests.core.corekit import init_repo
from web.app import create_app
from web.limits import RateLimits

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@pytest.fixture
def store_root(isolated_env: dict[str, Path]) -> Path:
    """The store directory PITSTOP_HOME points at."""
    return isolated_env["store"]


@pytest.fixture
def engine(store_root: Path) -> Iterator[Engine]:
    """The operator's engine on the test's store (the agent's side and the CLI's)."""
    with Engine(store_root) as opened:
        yield opened


@pytest.fixture
def task_id(engine: Engine, tmp_path: Path) -> str:
    """A task in a real repository, with one checkpoint."""
    repo = init_repo(tmp_path / "repo", {"README.md": "# demo\n", "app.py": "print(1)\n"})
    task = engine.start_task(repo=repo, objective="Ship the <b>release</b> notes")
    (repo / "app.py").write_text("print(2)\nprint(3)\n")
    from core.engine import CheckpointRequest
    from core.models import CheckpointReason

    engine.checkpoint(task.id, CheckpointRequest(reason=CheckpointReason.MILESTONE))
    return task.id


def make_client(store_root: Path, limits: RateLimits | None = None) -> TestClient:
    """A browser on a fresh server over the store (not paired)."""
    return TestClient(create_app(store_root, limits), base_url="http://127.0.0.1")


@pytest.fixture
def client(store_root: Path) -> Iterator[TestClient]:
    """A browser that is not paired."""
    with make_client(store_root) as browser:
        yield browser


def pair(browser: TestClient, engine: Engine, approver: str = "alice") -> None:
    """Pair the browser through a fresh pairing link, as a person would."""
    link = engine.create_pairing(approver)
    assert browser.get(f"/pair/{link.token}").status_code == 200
    answer = browser.post("/pair", data={"token": link.token}, follow_redirects=False)
    assert answer.status_code == 303, answer.text


@pytest.fixture
def paired(store_root: Path, engine: Engine) -> Iterator[TestClient]:
    """A browser paired as approver `alice`."""
    with make_client(store_root) as browser:
        pair(browser, engine)
        yield browser


def csrf_of(html: str) -> str:
    """The CSRF token a page's forms carry."""
    found = CSRF.search(html)
    assert found, html
    return found.group(1)


FORM = re.compile(r'<form method="post" action="([^"]+)"[^>]*>(.*?)</form>', re.S)
HIDDEN = re.compile(r'<input type="hidden" name="([a-z]+)" value="([^"]*)">')


def form_fields(html: str, action: str, which: int = 0) -> dict[str, str]:
    """The hidden fields of a page's `which`-th form posting to `action`, as a browser sends."""
    forms = [body for target, body in FORM.findall(html) if target == action]
    assert len(forms) > which, f"no form #{which} posting to {action} in:\n{html}"
    return dict(HIDDEN.findall(forms[which]))
