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

The classes are built as `collections.namedtuple` builds them, less its one costly step: it
compiles a `__new__` for every class (`eval`, ~20 of its ~45 µs), and a hook process defines
some fifty records. Here the `__new__` of each arity is compiled once and given each class's
field names (`CodeType.replace`); the rest (field getters, `_make`, `_replace`, `__repr__`,
`_asdict`, `__getnewargs__`) is what namedtuple puts in the class, shared where it can be.
`tests/core/test_records.py` holds the two side by side.
"""

from __future__ import annotations

import collections
import sys
from operator import itemgetter

TYPE_CHECKING = False  # `typing` is for type checkers only: this module exists to spare it
if TYPE_CHECKING:
    from typing import Any

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


_tuple_new = tuple.__new__
_getter = getattr(collections, "_tuplegetter", None)  # namedtuple's own, where CPython has it
_new_code: dict[int, Any] = {}  # arity → the code of `__new__(_cls, a0, ..., aN)`
_function: Any = type(lambda: None)  # types.FunctionType, without importing `types`


def _new_for(name: str, fields: tuple[str, ...], defaults: tuple[object, ...]) -> object:
    """`__new__(_cls, <fields>)` making the tuple, as namedtuple's compiled one does."""
    arity = len(fields)
    template = _new_code.get(arity)
    if template is None:
        names = ", ".join(f"a{n}" for n in range(arity))
        source = f"lambda _cls, {names}: _tuple_new(_cls, ({names}{',' if arity == 1 else ''}))"
        template = eval(source, {"_tuple_new": _tuple_new, "__builtins__": {}}).__code__
        _new_code[arity] = template
    code = template.replace(co_varnames=("_cls", *fields), co_name="__new__")
    made = _function(code, {"_tuple_new": _tuple_new, "__builtins__": {}}, "__new__")
    made.__defaults__ = defaults or None
    made.__qualname__ = f"{name}.__new__"
    made.__doc__ = f"Create new instance of {name}({', '.join(fields)}{',' if arity == 1 else ''})"
    return made


def _replace(self: tuple[object, ...], /, **changes: object) -> tuple[object, ...]:
    """Return a new record replacing the fields named."""
    made = self._make(map(changes.pop, self._fields, self))  # type: ignore[attr-defined]
    if changes:
        raise ValueError(f"Got unexpected field names: {list(changes)!r}")
    return made  # type: ignore[no-any-return]


def _asdict(self: tuple[object, ...]) -> dict[str, object]:
    """Return a new dict which maps field names to their values."""
    return dict(zip(self._fields, self, strict=True))  # type: ignore[attr-defined]


def _getnewargs(self: tuple[object, ...]) -> tuple[object, ...]:
    """Return self as a plain tuple.  Used by copy and pickle."""
    return tuple(self)


def _build(name: str, fields: list[str], defaults: list[object], module: str) -> type:
    """What `collections.namedtuple(name, fields, defaults=defaults, module=module)` gives."""
    for field in fields:
        if not field.isidentifier() or field.startswith("_"):
            raise ValueError(f"invalid field name for a record: {field!r}")
    if len(set(fields)) != len(fields):
        raise ValueError(f"a field name is repeated in {name}")
    names = tuple(map(sys.intern, fields))
    count = len(names)
    listed = ", ".join(names) + ("," if count == 1 else "")
    repr_format = "(" + ", ".join(f"{field}=%r" for field in names) + ")"

    def _make(cls: type, iterable: Any) -> tuple[object, ...]:
        made: tuple[object, ...] = _tuple_new(cls, iterable)
        if len(made) != count:
            raise TypeError(f"Expected {count} arguments, got {len(made)}")
        return made

    def __repr__(self: tuple[object, ...]) -> str:
        return self.__class__.__name__ + repr_format % self

    for method, method_name in ((_make, "_make"), (__repr__, "__repr__")):
        method.__qualname__ = f"{name}.{method_name}"
    namespace: dict[str, object] = {
        "__doc__": f"{name}({listed})",
        "__slots__": (),
        "_fields": names,
        "_field_defaults": dict(zip(names[count - len(defaults) :], defaults, strict=True)),
        "__new__": _new_for(name, names, tuple(defaults)),
        "_make": classmethod(_make),
        "_replace": _replace,
        "__repr__": __repr__,
        "_asdict": _asdict,
        "__getnewargs__": _getnewargs,
        "__match_args__": names,
        "__module__": module,
    }
    for index, field in enumerate(names):
        doc = f"Alias for field number {index}"
        namespace[field] = (
            _getter(index, doc) if _getter is not None else property(itemgetter(index), doc=doc)
        )
    return type(name, (tuple,), namespace)


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
