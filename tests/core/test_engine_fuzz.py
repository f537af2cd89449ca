"""The engine API under fuzzing: whatever a caller passes, a result or one `PitstopError`.

Hypothesis calls the `Engine` methods the CLI, the dashboard, the web inbox and hooks call —
starting tasks, checkpoints with every `CheckpointRequest` field, evidence, effects and their
moves, approvals and their decisions, validation, the readers — with values drawn from the
inputs that broke things before: NaN, infinities, numbers past 64 bits, empty, overlong and
control-character strings, NUL bytes, unknown ids and refs, and a bare string where the API
takes a sequence of strings. Each call must return, or raise a `PitstopError` (what the CLI turns
into one clear line) — never another exception, which would be an "internal error" — and when
it raised, the store's rows and its repositories' bytes (every ref included) and the user's
repository's refs must be exactly as they were.

Default 200 examples (a few seconds); `PITSTOP_FUZZ_EXAMPLES=2000` for a long run.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from core.engine import CheckpointRequest, Engine
from core.errors import PitstopError
from core.models import Budget, CheckpointReason, EffectState, Risk, TaskStatus
from tests.core.corekit import init_repo

EXAMPLES = int(os.environ.get("PITSTOP_FUZZ_EXAMPLES", "200"))

Call = tuple[str, Callable[[Any], Any]]

NASTY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "x" * 5000,
        "\x1b]52;c;aGVsbG8=\x07",
        "\x1b[2J",
        "line one\nline two",
        "\r",
        "naïve café ✓",
        "$(echo hi)",
        "../escape",
        "/proc/nope",
        "/dev/null",
        "nan",
        "inf",
        "9" * 400,
        "-1",
        "t1",
        "t1@1",
        "t1@0",
        "t1@-1",
        "t1@" + "9" * 25,
        "t1@latest",
        "t1:1",
        "t1:999",
        "t1:" + "9" * 25,
        "t1:-1",
        "nosuchtask",
        "k1",
        "10m",
        "0s",
        "-5m",
        "1e309s",
        "nans",
        "9" * 30 + "s",
        "P1D",
    ]
)
TEXT = st.one_of(
    NASTY_TEXT,
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=16),
)


def plausibly(plausible: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
    """Two in three draws plausible, so most calls get past their first check and go deep."""
    return st.integers(0, 2).flatmap(lambda i: hostile if i == 0 else plausible)


HUGE_INTS = st.one_of(
    st.sampled_from([0, -1, 1, 2**31, 2**63, 2**64, -(2**63) - 1, 10**30]),
    st.integers(min_value=-(2**70), max_value=2**70),
)
FLOATS = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 1e309, -0.0, 1e300, 2.0**64]),
    st.floats(allow_nan=True, allow_infinity=True),
)
MAYBE_TEXT = plausibly(st.sampled_from([None, "a note", "ship it"]), TEXT)
MAYBE_INT = plausibly(st.sampled_from([None, 0, 3, 1000]), HUGE_INTS)
MAYBE_FLOAT = plausibly(st.sampled_from([None, 0.0, 0.5, 12.0]), FLOATS)
TASK_ID = plausibly(st.just("t1"), st.one_of(st.just("nosuchtask"), TEXT))
APPROVAL_ID = plausibly(st.sampled_from(["t1:1", "t1:2"]), st.one_of(st.just("t1:999"), TEXT))
REF = plausibly(st.sampled_from(["t1@1", "t1", "t1@2", "t1@latest"]), TEXT)
KEY = plausibly(st.sampled_from(["k1", "k2"]), TEXT)
# A sequence of strings, or (typed loosely, easily passed) one bare string.
STRINGS = plausibly(
    st.lists(st.sampled_from(["step one", "app.py"]), max_size=2).map(tuple),
    st.one_of(st.lists(TEXT, max_size=3).map(tuple), TEXT),
)
EVIDENCE_ID = plausibly(st.sampled_from([1, 2]), st.one_of(st.just(999), HUGE_INTS))


def _call(method: str, *args: Any, **kwargs: Any) -> Call:
    """A call of `Engine.<method>`, named with its arguments (what a failure shows)."""
    shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    return f"{method}({shown[:2000]})", lambda engine: getattr(engine, method)(*args, **kwargs)


@st.composite
def start_task(draw: st.DrawFn) -> Call:
    """A task on the repository (or on a hostile path), with a hostile budget and rosters."""
    repo = draw(st.sampled_from(["{repo}", "{repo}", "{file}", "/proc/nope", "9" * 400, ""]))
    budget = draw(st.one_of(st.none(), st.builds(Budget, MAYBE_INT, MAYBE_FLOAT, MAYBE_FLOAT)))
    return _call(
        "start_task",
        repo=repo,
        objective=draw(TEXT),
        task_id=draw(st.one_of(st.none(), TEXT)),
        budget=budget,
        credentials=draw(STRINGS),
        approvers=draw(STRINGS),
    )


@st.composite
def checkpoint(draw: st.DrawFn) -> Call:
    """A checkpoint of `t1` (or an unknown task) with every request field drawn."""
    request = CheckpointRequest(
        reason=draw(st.sampled_from(list(CheckpointReason))),
        note=draw(MAYBE_TEXT),
        done=draw(STRINGS),
        todo=draw(STRINGS),
        tokens_used=draw(MAYBE_INT),
        usd_used=draw(MAYBE_FLOAT),
        force=draw(st.booleans()),
        max_file_bytes=draw(MAYBE_INT),
        note_is_news=draw(st.booleans()),
        workdir_hint=draw(st.one_of(st.none(), st.just("{repo}"), TEXT)),
        allow_secrets=draw(STRINGS),
    )
    return _call("checkpoint", draw(TASK_ID), request)


@st.composite
def request_approval(draw: st.DrawFn) -> Call:
    return _call(
        "request_approval",
        draw(TASK_ID),
        draw(TEXT),
        effect_key=draw(st.one_of(st.none(), KEY)),
        risk=draw(st.sampled_from(list(Risk))),
        expires_in=draw(MAYBE_TEXT),
        checkpoint=draw(st.booleans()),
    )


@st.composite
def propose_effect(draw: st.DrawFn) -> Call:
    return _call(
        "propose_effect",
        draw(TASK_ID),
        draw(KEY),
        draw(TEXT),
        target=draw(MAYBE_TEXT),
        check=draw(MAYBE_TEXT),
        needs_approval=draw(st.booleans()),
    )


@st.composite
def move_effect(draw: st.DrawFn) -> Call:
    return _call(
        "move_effect",
        draw(TASK_ID),
        draw(KEY),
        draw(st.sampled_from(list(EffectState))),
        note=draw(MAYBE_TEXT),
        reason=draw(MAYBE_TEXT),
    )


@st.composite
def add_evidence(draw: st.DrawFn) -> Call:
    """Evidence from output bytes (a hook's) or from a file (the CLI's)."""
    exit_code = draw(MAYBE_INT)
    duration = draw(MAYBE_FLOAT)
    if draw(st.booleans()):
        return _call(
            "add_evidence_output",
            draw(TASK_ID),
            draw(st.binary(max_size=64)),
            argv=draw(STRINGS),
            cwd=draw(MAYBE_TEXT),
            exit_code=exit_code,
            duration_s=duration,
            label=draw(MAYBE_TEXT),
        )
    return _call(
        "add_evidence_file",
        draw(TASK_ID),
        draw(st.sampled_from(["{file}", "/proc/nope", "/dev/null", "{repo}", "9" * 400])),
        command=draw(MAYBE_TEXT),
        exit_code=exit_code,
        duration_s=duration,
        label=draw(MAYBE_TEXT),
    )


@st.composite
def task_state(draw: st.DrawFn) -> Call:
    method = draw(st.sampled_from(["finish_task", "set_task_activity"]))
    reason = draw(TEXT) if method == "set_task_activity" else draw(MAYBE_TEXT)
    status = draw(st.sampled_from(list(TaskStatus)))
    return _call(method, draw(TASK_ID), status, reason)


@st.composite
def readers(draw: st.DrawFn) -> Call:
    """The read-only calls, whose refusals must be as clean as the writers'."""
    which = draw(st.integers(0, 11))
    if which == 0:
        return _call("get_task", draw(TASK_ID))
    if which == 1:
        return _call("get_checkpoint", draw(REF))
    if which == 2:
        return _call("diff", draw(REF), draw(st.sampled_from(["base", "t1@1"]) | TEXT))
    if which == 3:
        return _call("list_evidence", draw(REF))
    if which == 4:
        return _call("get_evidence", draw(EVIDENCE_ID))
    if which == 5:
        return _call("evidence_last_lines", draw(EVIDENCE_ID), draw(HUGE_INTS))
    if which == 6:
        return _call("evidence_chunk", draw(EVIDENCE_ID), draw(HUGE_INTS))
    if which == 7:
        return _call("get_approval", draw(APPROVAL_ID))
    if which == 8:
        return _call("recently_decided_approvals", draw(FLOATS))
    if which == 9:
        return _call("pending_approvals", draw(HUGE_INTS))
    if which == 10:
        # Never a long wait: a pending approval is only waited on for no time at all.
        seconds = draw(st.sampled_from([0.0, -1.0, math.nan, -math.inf, math.inf, 1e300, 2**70]))
        return _call("wait_for_decision", draw(APPROVAL_ID), seconds)
    return _call("get_effect", draw(TASK_ID), draw(KEY))


@st.composite
def more_calls(draw: st.DrawFn) -> Call:
    """Rosters, checkouts, the audit, the inbox's pairing and devices."""
    which = draw(st.integers(0, 8))
    if which == 0:
        add, remove = draw(STRINGS), draw(STRINGS)
        return _call("set_approvers", draw(TASK_ID), list(add), list(remove))
    if which == 1:
        into = draw(st.sampled_from(["{file}", "/proc/nope", "9" * 400, "", "{repo}"]) | TEXT)
        return _call("checkout", draw(REF), into)
    if which == 2:
        return _call("events", draw(st.one_of(st.none(), TASK_ID)))
    if which == 3:
        return _call("list_checkpoints", draw(TASK_ID))
    if which == 4:
        return _call("first_task_summaries", draw(HUGE_INTS), list(TaskStatus))
    if which == 5:
        return _call("create_pairing", draw(plausibly(st.just("alice"), TEXT)), draw(FLOATS))
    if which == 6:
        return _call("redeem_pairing", draw(TEXT), draw(TEXT))
    if which == 7:
        return _call("device_for_token", draw(TEXT))
    return _call("revoke_device", draw(TEXT))


CALLS = st.one_of(
    more_calls(),
    start_task(),
    checkpoint(),
    request_approval(),
    st.builds(
        lambda approval_id, approve, reason: _call("decide_approval", approval_id, approve, reason),
        APPROVAL_ID,
        st.booleans(),
        TEXT,
    ),
    propose_effect(),
    move_effect(),
    add_evidence(),
    task_state(),
    st.builds(lambda ref: _call("validate", ref, offline=True), REF),
    readers(),
)


def store_state(root: Path) -> str:
    """The store's rows (a logical dump of every table, WAL included) and its repositories'
    bytes (objects and every ref)."""
    digest = hashlib.sha256()
    with contextlib.closing(sqlite3.connect(root / "pitstop.db")) as db:
        for line in db.iterdump():
            digest.update(line.encode())
    for path in sorted((root / "repos").rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


def user_refs(repo: Path) -> str:
    """Every ref of the user's repository and what it points at."""
    out = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname) %(objectname)"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


@pytest.fixture
def busy_store(
    tmp_path: Path, isolated_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Path]:
    """Task `t1` with a checkpoint, evidence, a proposed effect `k1` and a pending approval."""
    # "Now" stands still: an approval one example asked to expire soon must not expire during
    # a later example's refusal, which would look like the refusal changed the store.
    monkeypatch.setenv("PITSTOP_FROZEN_NOW", "2026-12-03T06:00:00Z")
    repo = init_repo(tmp_path / "repo", {"app.py": "print('hi')\n"})
    out = tmp_path / "out.txt"
    out.write_text("3 passed in 0.1s\n")
    with Engine() as engine:
        engine.start_task(repo=repo, objective="fuzz", task_id="t1")
        (repo / "app.py").write_text("print('hello')\n")
        engine.checkpoint("t1", CheckpointRequest(note="first"))
        engine.add_evidence_file("t1", out)
        engine.propose_effect("t1", "k1", "deploy")
        engine.request_approval("t1", "ship it", risk=Risk.HIGH)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)  # where relative paths (checkout targets) land
    places = {"store": isolated_env["store"], "repo": repo, "file": out}
    for name in ("store", "repo"):
        shutil.copytree(places[name], tmp_path / "pristine" / name, symlinks=True)
    return places


def _reset(places: dict[str, Path]) -> None:
    """The store and the repository as the fixture left them: each example starts afresh (a
    task one example finished must not turn every later call into a refusal)."""
    pristine = places["file"].parent / "pristine"
    for name in ("store", "repo"):
        shutil.rmtree(places[name])
        shutil.copytree(pristine / name, places[name], symlinks=True)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(call=CALLS)
# Found by this test: a wait past the timer's range, a look-back of NaN or infinite hours.
@example(call=_call("wait_for_decision", "t1:1", math.inf))
@example(call=_call("recently_decided_approvals", math.nan))
@example(call=_call("recently_decided_approvals", -math.inf))
# Found by this test: a first screen of more tasks than SQLite counts (an OverflowError).
@example(call=_call("first_task_summaries", 2**63, list(TaskStatus)))
# Found by this test: a chunk number past 64 bits (an OverflowError).
@example(call=_call("evidence_chunk", 1, 2**63))
# Found by this test: a NUL byte in the agent's working directory (a hook event's `cwd`).
@example(call=_call("checkpoint", "t1", CheckpointRequest(workdir_hint="\x00")))
def test_any_engine_call_returns_or_refuses_cleanly(
    busy_store: dict[str, Path], call: Call
) -> None:
    name, invoke = call
    _reset(busy_store)
    places = {"{repo}": str(busy_store["repo"]), "{file}": str(busy_store["file"])}
    before = store_state(busy_store["store"]), user_refs(busy_store["repo"])
    with Engine() as engine:
        try:
            _with_places(invoke, places)(engine)
            event(f"{name.split('(')[0]}: done")
        except PitstopError as refusal:
            event(f"{name.split('(')[0]}: refused")
            assert str(refusal).strip(), name  # a refusal says why
            after = store_state(busy_store["store"]), user_refs(busy_store["repo"])
            assert after == before, f"{name} refused ({refusal}) but changed the store"


def _with_places(invoke: Callable[[Any], Any], places: dict[str, str]) -> Callable[..., Any]:
    """`invoke` with the `{repo}`/`{file}` placeholders of its arguments filled in."""

    def fill(value: Any) -> Any:
        if isinstance(value, str) and value in places:
            return places[value]
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return tuple(fill(v) for v in value)
        if isinstance(value, tuple):  # a NamedTuple (CheckpointRequest, Budget)
            return type(value)(*(fill(v) for v in value))
        return value

    return lambda engine: invoke(_Filling(engine, fill))


class _Filling:
    """The engine, as seen by a drawn call: every argument's placeholders filled in first."""

    def __init__(self, engine: Engine, fill: Callable[[Any], Any]) -> None:
        self._engine = engine
        self._fill = fill

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._engine, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return method(
                *(self._fill(a) for a in args), **{k: self._fill(v) for k, v in kwargs.items()}
            )

        return call
