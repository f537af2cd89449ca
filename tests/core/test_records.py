"""`core.records.NamedTuple` builds what `typing.NamedTuple` builds, without loading `typing`.

The records every command reads (`core.models`, `core.paths`, `core.config`, ...) are made by it
so the commands people type to look around start without `typing` (issue 22); anything code does
with a record must then behave as it did with typing's.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing

import pytest

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
