"""`core.records.NamedTuple` builds what `typing.NamedTuple` builds, without loading `typing`.

The records every command reads (`core.models`, `core.paths`, `core.config`, ...) are made by it
so the commands people type to look around start without `typing` (issue 22); anything code does
with a record must then behave as it did with typing's.
"""

from __future__ import annotations

import collections
import copy
import pickle
import subprocess
import sys
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import records


class Ours(records.NamedTuple):
    """A record."""

    name: str
    size: int | None = None
    tags: tuple[str, ...] = ()

    @property
    def big(self) -> bool:
        return (self.size or 0) > 10

    def __str__(self) -> str:
        return f"{self.name}:{self.size}"


class Theirs(typing.NamedTuple):
    """A record."""

    name: str
    size: int | None = None
    tags: tuple[str, ...] = ()

    @property
    def big(self) -> bool:
        return (self.size or 0) > 10

    def __str__(self) -> str:
        return f"{self.name}:{self.size}"


def test_a_record_behaves_as_typings_does() -> None:
    for cls in (Ours, Theirs):
        made = cls("a", 11)
        assert isinstance(made, tuple) and tuple(made) == ("a", 11, ())
        assert made == ("a", 11, ()) and hash(made) == hash(("a", 11, ()))
        assert (
            made.big
            and str(made) == "a:11"
            and repr(made) == f"{cls.__name__}(name='a', size=11, tags=())"
        )
        assert made._replace(size=1) == cls("a", 1) and made._asdict() == {
            "name": "a",
            "size": 11,
            "tags": (),
        }
        assert cls._fields == ("name", "size", "tags")
        assert cls._field_defaults == {"size": None, "tags": ()}
        assert cls.__doc__ == "A record." and cls.__module__ == __name__
        assert cls.__qualname__ == cls.__name__
        assert pickle.loads(pickle.dumps(made)) == made
        with pytest.raises(AttributeError):
            made.name = "b"  # type: ignore[misc]
        with pytest.raises(TypeError):
            cls()  # type: ignore[call-arg]
    assert Ours._fields == Theirs._fields


def test_the_call_form_names_its_fields() -> None:
    Pair = records.NamedTuple("Pair", [("left", int), ("right", str)])
    assert Pair(1, "x") == (1, "x") and Pair(1, "x")._fields == ("left", "right")
    assert Pair.__module__ == __name__


def test_what_typing_refuses_is_refused() -> None:
    with pytest.raises(TypeError):

        class Unordered(records.NamedTuple):
            first: int = 0
            second: int

    with pytest.raises(AttributeError):

        class Overwrites(records.NamedTuple):
            field: int

            def _replace(self) -> None: ...


def test_importing_the_records_of_every_command_loads_no_typing() -> None:
    modules = "core.models, core.paths, core.config, core.store.db, core.engine"
    probe = f"import sys, {modules}; print('typing' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


FIELD_NAMES = st.lists(
    st.sampled_from(["name", "size", "tags", "path", "mode", "oid", "when", "x"]),
    min_size=1,
    max_size=6,
    unique=True,
)


def _outcome(make: object) -> tuple[str, object]:
    """What a call gives: ("ok", the tuple and its repr) or ("error", the exception's type)."""
    try:
        made = make()  # type: ignore[operator]
    except Exception as exc:  # the type is what is compared
        return "error", type(exc)
    return "ok", (tuple(made), repr(made).split("(", 1)[1])


@settings(max_examples=150, deadline=None)
@given(
    fields=FIELD_NAMES,
    defaults=st.integers(min_value=0, max_value=6),
    positional=st.lists(st.integers(), max_size=7),
    keywords=st.dictionaries(
        st.sampled_from(["name", "size", "tags", "path", "nope"]), st.integers(), max_size=3
    ),
)
def test_a_record_is_built_as_namedtuple_builds_it(
    fields: list[str], defaults: int, positional: list[int], keywords: dict[str, int]
) -> None:
    """Every call, right or wrong, gives what collections.namedtuple's class gives."""
    given_defaults = list(range(100, 100 + min(defaults, len(fields))))
    ours = records._build("Rec", fields, given_defaults, __name__)
    theirs = collections.namedtuple("Rec", fields, defaults=given_defaults, module=__name__)
    for attribute in ("_fields", "_field_defaults", "__match_args__", "__doc__", "__module__"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    assert ours.__new__.__doc__ == theirs.__new__.__doc__
    assert _outcome(lambda: ours(*positional, **keywords)) == _outcome(
        lambda: theirs(*positional, **keywords)
    )
    full = list(range(len(fields)))
    mine, reference = ours(*full), theirs(*full)
    assert tuple(mine) == tuple(reference) and repr(mine).endswith(repr(reference)[3:])
    assert mine._asdict() == reference._asdict()
    assert _outcome(lambda: mine._replace(**keywords)) == _outcome(
        lambda: reference._replace(**keywords)
    )
    assert _outcome(lambda: ours._make(positional)) == _outcome(lambda: theirs._make(positional))
    assert copy.copy(mine) == mine and copy.deepcopy(mine) == mine
    for index, field in enumerate(fields):
        assert getattr(mine, field) == index
        with pytest.raises(AttributeError):
            setattr(mine, field, 0)


def test_field_names_namedtuple_refuses_are_refused() -> None:
    for fields in (["_private"], ["not an identifier"], ["twice", "twice"]):
        with pytest.raises(ValueError):
            collections.namedtuple("Rec", fields)
        with pytest.raises(ValueError):
            records._build("Rec", fields, [], __name__)
