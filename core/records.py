"""`NamedTuple` without `typing`: the same classes, built straight on `collections.namedtuple`.

Why: `typing` (with what it loads) is ~3 ms of a ~10 ms Python start on the machines the bench
runs on, and the commands people type to look around (`locate`, `task list`, `checkpoints`)
otherwise load nothing that needs it (issue 22). Modules write

    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from core.records import NamedTuple

so type checkers see `typing.NamedTuple` and the running program this one. Both the class form
(fields as annotations, defaults, methods, properties, a docstring) and the call form
(`NamedTuple("Name", [("field", type), ...])`) make what `typing.NamedTuple` makes: a
`collections.namedtuple` subclass of `tuple` with `_fields`, `_replace`, `_asdict`, ...
Annotations are kept as written (strings under `from __future__ import annotations`), not
turned into `ForwardRef`s: nothing here reads them at run time.
"""

from collections import namedtuple

_PROHIBITED = frozenset(
    {
        "__new__",
        "__init__",
        "__slots__",
        "__getnewargs__",
        "_fields",
        "_field_defaults",
        "_make",
        "_replace",
        "_asdict",
        "_source",
    }
)
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__", "__qualname__"})


def _build(name: str, fields: list[str], defaults: list[object], module: str) -> type:
    made: type = namedtuple(name, fields, defaults=defaults, module=module)  # type: ignore[misc]
    return made


class _RecordMeta(type):
    """Turns `class X(NamedTuple): ...` into a namedtuple class, as `typing.NamedTupleMeta`."""

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, object]) -> type:
        if bases != (_RecordBase,):
            raise TypeError("a NamedTuple record can only inherit from NamedTuple")
        annotations = ns.get("__annotations__", {})
        assert isinstance(annotations, dict)
        defaults: list[object] = []
        for field in annotations:
            if field in ns:
                defaults.append(ns[field])
            elif defaults:
                raise TypeError(f"non-default field {field!r} follows a default one in {name}")
        made = _build(name, list(annotations), defaults, str(ns["__module__"]))
        made.__annotations__ = dict(annotations)
        made.__qualname__ = str(ns.get("__qualname__", name))
        for key, value in ns.items():
            if key in _PROHIBITED:
                raise AttributeError(f"cannot overwrite NamedTuple attribute {key}")
            if key not in _SPECIAL and key not in annotations:
                setattr(made, key, value)
        return made


# The base a record's class statement names (through `__mro_entries__`), made without running
# `_RecordMeta.__new__`, which turns every class below it into a namedtuple.
_RecordBase = type.__new__(_RecordMeta, "NamedTuple", (), {})


def _module_of_caller() -> str:
    import sys

    return str(sys._getframe(2).f_globals.get("__name__", "__main__"))


class _NamedTupleFactory:
    """`NamedTuple`: a base to subclass, or a function of a name and (field, type) pairs."""

    def __call__(self, name: str, fields: list[tuple[str, object]]) -> type:
        made = _build(name, [field for field, _ in fields], [], _module_of_caller())
        made.__annotations__ = dict(fields)
        return made

    def __mro_entries__(self, bases: tuple[object, ...]) -> tuple[type]:
        return (_RecordBase,)


NamedTuple = _NamedTupleFactory()
