"""Record classes: fields declared once, as annotations, with what fermix uses of dataclasses.

    class Hit(Record, frozen=True):
        path: str
        line: int = 0
        tags: list[str] = field(default_factory=list)

`Record` builds `__slots__`, a typed `__init__` (positional or keyword, in declaration order, base
fields first), `==`, a repr, `replace()` and, with `frozen=True`, read-only fields and a hash — the
same semantics as `@dataclass` / `@dataclass(frozen=True)`. It exists because `import dataclasses`
brings in `inspect` (with ast, dis and tokenize), about 10 ms of a 50 ms machine call; type checkers
see these classes as dataclasses through `dataclass_transform`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Self, TypeVar, dataclass_transform

__all__ = ["MISSING", "Record", "asdict", "field", "replace"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class FieldSpec:
    """What `field(...)` declares about one field."""

    __slots__ = ("compare", "default", "default_factory", "init", "repr")

    def __init__(
        self, default: Any, default_factory: Callable[[], Any] | Any, init: bool, repr: bool, compare: bool
    ) -> None:
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | Any = MISSING,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    """A field with a default factory, or left out of `__init__`, the repr or comparisons."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("a field takes default or default_factory, not both")
    return FieldSpec(default, default_factory, init, repr, compare)


def _is_classvar(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _check_order(name: str, fields: dict[str, FieldSpec]) -> None:
    """Refuse, when the class is created, an `__init__` parameter without a default after one with."""
    seen_default = False
    for fname, spec in fields.items():
        if not spec.init:
            continue
        if spec.default is not MISSING or spec.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"{name}: field {fname!r} without a default follows one with a default")


@dataclass_transform(field_specifiers=(field,))
class _RecordMeta(type):
    """Turns the annotations of a class body into slots, `__init__`, `__eq__`, `__repr__` and `__hash__`."""

    __record_fields__: dict[str, FieldSpec]  # every field, base fields first
    __record_frozen__: bool

    def __new__(
        mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any], *, frozen: bool | None = None
    ) -> _RecordMeta:
        inherited: dict[str, FieldSpec] = {}
        inherited_frozen: bool | None = None  # None: no base record has fields or is frozen
        for base in reversed(bases):
            if isinstance(base, _RecordMeta):
                inherited.update(base.__record_fields__)
                if base.__record_fields__ or base.__record_frozen__:
                    inherited_frozen = bool(inherited_frozen) or base.__record_frozen__
        if frozen is None:
            frozen = bool(inherited_frozen)
        elif inherited_frozen is not None and frozen != inherited_frozen:
            raise TypeError(f"{name}: a record cannot change frozen={inherited_frozen} of its base")
        own: dict[str, FieldSpec] = {}
        for fname, annotation in ns.get("__annotations__", {}).items():
            if _is_classvar(annotation):
                continue
            value = ns.pop(fname, MISSING)
            spec = value if isinstance(value, FieldSpec) else FieldSpec(value, MISSING, True, True, True)
            if spec.default.__class__.__hash__ is None:  # list, dict, set: shared by every instance
                raise ValueError(f"{name}.{fname}: mutable default, use field(default_factory=...)")
            own[fname] = spec
        fields = {**inherited, **own}
        _check_order(name, fields)
        ns["__slots__"] = tuple(f for f in own if f not in inherited)
        ns["__record_fields__"] = fields
        ns["__record_frozen__"] = frozen
        ns["__match_args__"] = tuple(f for f, s in fields.items() if s.init)
        generate_init = "__init__" not in ns
        if frozen:
            ns.setdefault("__setattr__", _frozen_setattr)
            ns.setdefault("__delattr__", _frozen_delattr)
            ns.setdefault("__hash__", _record_hash)
        elif "__eq__" not in ns and "__hash__" not in ns:
            ns["__hash__"] = None  # compared by value and mutable: not hashable (as @dataclass)
        cls = super().__new__(mcls, name, bases, ns)
        if generate_init:
            cls.__init__ = _lazy_init(cls)  # type: ignore[misc]
        return cls


# Instances a class builds through `_bind` before its `__init__` is compiled. Compiling one costs
# 100-400 us and saves about 2 us an instance (`_bind` 3 us, compiled 1 us), so it pays only past a
# hundred or so: a machine call builds a few instances each of about ten record classes, and a small
# search tens of walk entries and hits (six compiles at 32 were 1.2 ms of a 40 ms grep); a walk of a
# large tree builds thousands of one class, and those get the compiled `__init__`.
COMPILE_AFTER = 128


def _lazy_init(cls: _RecordMeta) -> Any:
    """The class's `__init__`: `_bind` for its first instances, then the compiled one, put on the class."""
    calls = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls <= COMPILE_AFTER:
            _bind(cls, self, args, kwargs)
            return
        real = _make_init(
            cls.__qualname__, cls.__record_fields__, cls.__record_frozen__, hasattr(cls, "__post_init__")
        )
        if cls.__dict__.get("__init__") is __init__:
            cls.__init__ = real  # type: ignore[misc]
        real(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _bind(cls: _RecordMeta, self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """What the compiled `__init__` does, interpreted from the fields: same arguments, same errors."""
    fields = cls.__record_fields__
    steps = cls.__dict__.get("_record_steps")
    if steps is None:  # (name, init, default, factory) per field, built once per class
        steps = tuple((f, s.init, s.default, s.default_factory) for f, s in fields.items())
        type.__setattr__(cls, "_record_steps", steps)
    n_init = sum(1 for step in steps if step[1])
    if len(args) > n_init:
        name = f"{cls.__qualname__}.__init__()"
        raise TypeError(f"{name} takes {n_init + 1} positional arguments but {len(args) + 1} were given")
    if kwargs:
        _check_keywords(cls, fields, steps, args, kwargs)
    assign = object.__setattr__ if cls.__record_frozen__ else setattr
    position = 0
    for fname, init, default, factory in steps:
        if init and position < len(args):
            value = args[position]
            position += 1
        elif init and fname in kwargs:
            value = kwargs[fname]
        elif factory is not MISSING:
            value = factory()
        elif default is not MISSING:
            value = default
        elif init:
            raise TypeError(f"{cls.__qualname__}.__init__() missing required argument: {fname!r}")
        else:
            continue  # init=False without a default: set later by the class itself
        assign(self, fname, value)
    if hasattr(cls, "__post_init__"):
        self.__post_init__()


def _check_keywords(
    cls: _RecordMeta,
    fields: dict[str, FieldSpec],
    steps: tuple[tuple[str, bool, Any, Any], ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    name = f"{cls.__qualname__}.__init__()"
    positional = {step[0] for step in [s for s in steps if s[1]][: len(args)]}
    for key in kwargs:
        if key not in fields or not fields[key].init:
            raise TypeError(f"{name} got an unexpected keyword argument {key!r}")
        if key in positional:
            raise TypeError(f"{name} got multiple values for argument {key!r}")


def _make_init(name: str, fields: dict[str, FieldSpec], frozen: bool, post_init: bool) -> Any:
    """Generate `__init__` (executed once per class: per call it is as fast as a hand-written one)."""
    params: list[str] = []
    body: list[str] = []
    env: dict[str, Any] = {"_set": object.__setattr__, "MISSING": MISSING}
    for fname, spec in fields.items():
        if spec.default_factory is not MISSING:
            env[f"_f_{fname}"] = spec.default_factory
        if spec.default is not MISSING:
            env[f"_d_{fname}"] = spec.default
        if spec.init:
            if spec.default is not MISSING:
                params.append(f"{fname}=_d_{fname}")
            elif spec.default_factory is not MISSING:
                params.append(f"{fname}=MISSING")
            else:
                params.append(fname)
            value = (
                f"_f_{fname}() if {fname} is MISSING else {fname}"
                if spec.default_factory is not MISSING
                else fname
            )
        elif spec.default_factory is not MISSING:
            value = f"_f_{fname}()"
        elif spec.default is not MISSING:
            value = f"_d_{fname}"
        else:
            continue  # init=False without a default: set later by the class itself
        body.append(f"    _set(self, {fname!r}, {value})" if frozen else f"    self.{fname} = {value}")
    if post_init:
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, env)
    init = env["__init__"]
    init.__qualname__ = f"{name}.__init__"
    return init


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise AttributeError(f"cannot assign to field {name!r} of frozen {type(self).__qualname__}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise AttributeError(f"cannot delete field {name!r} of frozen {type(self).__qualname__}")


def _record_hash(self: Any) -> int:
    return hash(self._compared())


class Record(metaclass=_RecordMeta):
    """Base of every record class; `class X(Record, frozen=True)` for an immutable, hashable one."""

    __slots__ = ()
    __record_fields__: ClassVar[dict[str, FieldSpec]]
    __record_frozen__: ClassVar[bool]

    def _compared(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f, MISSING) for f, s in self.__record_fields__.items() if s.compare)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f}={getattr(self, f, MISSING)!r}" for f, s in self.__record_fields__.items() if s.repr
        )
        return f"{type(self).__qualname__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        # copy and pickle: rebuild an empty instance, then set every field (frozen ones included)
        state = {f: getattr(self, f) for f in self.__record_fields__ if hasattr(self, f)}
        return (_rebuild, (type(self), state))

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` applied, built by `__init__` (as `dataclasses.replace` does)."""
        return replace(self, **changes)


def _rebuild(cls: type, state: dict[str, Any]) -> Any:
    obj: Any = object.__new__(cls)
    for name, value in state.items():
        object.__setattr__(obj, name, value)
    return obj


R = TypeVar("R", bound=Record)  # not the string "Record": a ForwardRef compiles it at import


def replace(obj: R, /, **changes: Any) -> R:
    """`dataclasses.replace` for records: init fields from `obj`, overridden by `changes`."""
    fields = obj.__record_fields__
    for name in changes:
        if name not in fields or not fields[name].init:
            raise TypeError(f"{type(obj).__qualname__} has no init field {name!r}")
    args = {f: getattr(obj, f) for f, s in fields.items() if s.init and f not in changes}
    return type(obj)(**args, **changes)


def asdict(obj: Any) -> Any:
    """`dataclasses.asdict` for records: nested records, lists, tuples and dicts converted recursively."""
    if isinstance(obj, Record):
        return {f: asdict(getattr(obj, f)) for f in obj.__record_fields__}
    if isinstance(obj, list | tuple):
        return type(obj)(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return {asdict(k): asdict(v) for k, v in obj.items()}
    return obj
