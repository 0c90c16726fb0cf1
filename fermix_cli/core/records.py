"""Record classes for the tool-call path: what fermix uses of dataclasses, without `dataclasses`.

`import dataclasses` brings in `inspect` (with ast, dis and tokenize), and each `@dataclass` execs
generated code at import: together about 10 ms of what was a 60 ms machine call. A record lists
its fields in `_fields` (declaration order, used for `__slots__`), declares their types and writes
its own typed `__init__`. `Record` adds field-wise `==`, a dataclass-style repr and `replace`;
`FrozenRecord` makes the fields read-only and the record hashable, like `@dataclass(frozen=True)`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self


class Record:
    """A mutable record: compared by value, so (like a non-frozen dataclass) not hashable."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()  # the __init__ parameters, in order
    _hidden: ClassVar[frozenset[str]] = frozenset()  # fields left out of the repr
    _uncompared: ClassVar[frozenset[str]] = frozenset()  # fields left out of == and the hash

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self._fields if f not in self._uncompared)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields if f not in self._hidden)
        return f"{type(self).__qualname__}({shown})"

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` applied, built by `__init__` (as `dataclasses.replace` does)."""
        return type(self)(**{**{f: getattr(self, f) for f in self._fields}, **changes})


class FrozenRecord(Record):
    """A record whose fields cannot be assigned after `__init__`; hashable by value."""

    __slots__ = ()

    def _init_fields(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._values())

    def __reduce__(self) -> tuple[Any, ...]:
        # copy and pickle would set the slots one by one, which __setattr__ refuses; __init__ takes
        # the fields in order.
        return (type(self), tuple(getattr(self, f) for f in self._fields))
