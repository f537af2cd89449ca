"""`--json` output is unchanged by the per-type `jsonable` (issue 22): the same documents as the
recursive walk it replaced, for the engine's records and for any nesting of JSON's parts."""

from __future__ import annotations

import dataclasses
import json
from enum import Enum, IntEnum
from typing import Any, NamedTuple

from hypothesis import given
from hypothesis import strategies as st

from core.models import (
    Budget,
    Checkpoint,
    CheckpointReason,
    CheckpointState,
    NamedVersion,
    Task,
    TaskStatus,
)
from tui.render import dumps, jsonable


def walked(value: Any) -> Any:
    """The recursive walk `tui.render.jsonable` was before issue 22, kept as the oracle."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: walked(getattr(value, field.name)) for field in dataclasses.fields(value)
        }
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        data = {name: walked(getattr(value, name)) for name in value._fields}
        if isinstance(value, Checkpoint):
            data["ref"] = value.ref
        return data
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): walked(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [walked(v) for v in value]
    return value


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Pair(NamedTuple):
    left: Any
    right: Any


@dataclasses.dataclass(frozen=True)
class Report:
    name: str
    items: Any
    level: Level = Level.LOW
    hidden: dataclasses.InitVar[int] = 0


class Text(str):
    """A str subclass: neither plain nor an enum."""


TASK = Task(
    id="t1",
    repo_root="/repo",
    store_repo="repo-1.git",
    objective="fix \x1b[2J it",
    status=TaskStatus.RUNNING,
    created_at="2026-12-03T06:00:00Z",
    updated_at="2026-12-03T06:01:00Z",
    harness=NamedVersion("claude-code", "2.0.14"),
    model=None,
    budget=Budget(tokens=1000, usd=None, minutes=2.5),
    tokens_used=12,
    usd_used=0.5,
    credentials=("TOKEN",),
    approvers=(),
)


def a_checkpoint() -> Checkpoint:
    fields: dict[str, Any] = {name: None for name in Checkpoint._fields}
    fields.update(
        task_id="t1",
        seq=3,
        state=CheckpointState.COMPLETE,
        reason=CheckpointReason.MANUAL,
        manifest={"steps": {"done": ["a"], "todo": []}, 1: (1, 2)},
    )
    return Checkpoint(**fields)


def test_the_engines_records_come_out_as_before() -> None:
    documents = [
        TASK,
        [TASK, TASK._replace(status=TaskStatus.DONE)],
        a_checkpoint(),
        {"checkpoint": a_checkpoint(), "damaged": False, "problems": []},
        Report("gc", [Pair(Level.HIGH, (TASK,)), {2: Text("x")}], hidden=5),
    ]
    for document in documents:
        assert jsonable(document) == walked(document)
        assert dumps(document) == json.dumps(walked(document), indent=2, ensure_ascii=False)
    assert jsonable(a_checkpoint())["ref"] == "t1@3"


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.builds(Text, st.text()),
    st.sampled_from(list(TaskStatus) + list(Level) + list(CheckpointReason)),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.one_of(st.text(), st.integers()), inner, max_size=4),
        st.builds(Pair, inner, inner),
        st.builds(Report, st.text(), inner, st.sampled_from(list(Level))),
        st.builds(Budget, inner, inner, inner),
    ),
    max_leaves=20,
)


@given(values)
def test_any_nesting_comes_out_as_before(value: Any) -> None:
    assert json.dumps(jsonable(value)) == json.dumps(walked(value))
