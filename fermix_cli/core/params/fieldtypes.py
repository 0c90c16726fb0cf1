"""Declaring Params fields (`Field`, `AfterValidator`) and turning annotations into checks.

The supported subset: str, int, float, bool, Any, `Literal[...]`, `X | None`, unions of scalars and
literals, `list[T]`, `dict[str, T]` (keys may carry length bounds and a pattern) and nested Params classes, with
`Field(...)` and `AfterValidator(...)` in `Annotated[...]`. Anything else is refused with a
TypeError when the class is first used, rather than validated differently from pydantic.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, TypedDict, Union, get_args, get_origin

from ..records import Record, field
from .check import AnyCheck, BoolCheck, Check, FloatCheck, IntCheck, LiteralCheck, StrCheck
from .compound import AfterCheck, DictCheck, ListCheck, ModelCheck, NullableCheck, UnionCheck

UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()
CONSTRAINTS = ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern")


class ConfigDict(TypedDict, total=False):
    """The model settings a Params class may set: `extra` ("forbid" or "allow")."""

    extra: Literal["forbid", "allow"]
    strict: bool
    defer_build: bool


class FieldInfo:
    """What `Field(...)` declares about a field or, inside a nested `Annotated`, about a value."""

    def __init__(self, default: Any, **kwargs: Any) -> None:
        self.declared = {k: v for k, v in kwargs.items() if v is not None}  # as written, for a pydantic twin
        if default is not ...:
            self.declared["default"] = default
        self.default = UNSET if default is ... else default
        self.default_factory: Callable[[], Any] | None = kwargs.pop("default_factory")
        self.json_schema_extra: dict[str, Any] | Callable[[dict[str, Any]], None] | None = kwargs.pop(
            "json_schema_extra"
        )
        self.js_updates = {k: kwargs.pop(k) for k in ("title", "description") if kwargs[k] is not None}
        self.constraints = {k: v for k, v in kwargs.items() if v is not None}
        if self.default is not UNSET and self.default_factory is not None:
            raise TypeError("Field: give default or default_factory, not both")

    def __repr__(self) -> str:
        return f"FieldInfo({', '.join(f'{k}={v!r}' for k, v in self.declared.items())})"

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        """On the class, this FieldInfo; on an instance without the value, the lazily built default."""
        if obj is None:
            return self
        return obj._lazy_default(self.name, self)


def Field(
    default: Any = ...,
    *,
    default_factory: Callable[[], Any] | None = None,
    title: str | None = None,
    description: str | None = None,
    ge: int | float | None = None,
    gt: int | float | None = None,
    le: int | float | None = None,
    lt: int | float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
    json_schema_extra: dict[str, Any] | Callable[[dict[str, Any]], None] | None = None,
) -> Any:
    """Declare a field's default, description and constraints, with pydantic's keywords."""
    return FieldInfo(
        default,
        default_factory=default_factory,
        title=title,
        description=description,
        ge=ge,
        gt=gt,
        le=le,
        lt=lt,
        min_length=min_length,
        max_length=max_length,
        pattern=pattern,
        json_schema_extra=json_schema_extra,
    )


class AfterValidator:
    """Run `func` on a value once its type and constraints are checked; its result is kept."""

    __slots__ = ("func",)

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func

    def __repr__(self) -> str:
        return f"AfterValidator({self.func!r})"


class ParamField(Record):
    """One compiled field of a Params class."""

    name: str
    check: Check
    default: Any
    default_factory: Callable[[], Any] | None
    js_updates: dict[str, Any] | None
    js_extra: Any
    required: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.required = self.default is UNSET and self.default_factory is None


def compile_fields(cls: type) -> tuple[ParamField, ...]:
    """The fields of a Params class, parents' first, from its (possibly string) annotations."""
    fields = []
    for name, annotation in field_annotations(cls).items():
        if get_origin(annotation) is ClassVar:
            continue
        fields.append(_field(name, annotation, getattr(cls, name, UNSET)))
    return tuple(fields)


def field_annotations(cls: type) -> dict[str, Any]:
    """`typing.get_type_hints(cls, include_extras=True)` for the names that can be fields.

    Names starting with `_` and `model_config` are skipped before their annotations are evaluated, so
    the base class's own ClassVars are not evaluated again for every model (eval compiles each string).
    """
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        own = klass.__dict__.get("__annotations__")  # noqa: RUF063 - the class's own, as get_type_hints reads them
        if not own:
            continue
        module = sys.modules.get(klass.__module__)
        module_ns = getattr(module, "__dict__", {})
        class_ns: dict[str, Any] | None = None
        for name, annotation in own.items():
            if name.startswith("_") or name == "model_config":
                continue
            if isinstance(annotation, str):  # evaluated as get_type_hints does: class names, then module's
                class_ns = dict(vars(klass)) if class_ns is None else class_ns
                annotation = eval(annotation, class_ns, module_ns)
            hints[name] = annotation
    return hints


def _field(name: str, annotation: Any, assigned: Any) -> ParamField:
    tp, metadata = annotation, []
    if get_origin(annotation) is Annotated:
        tp, *metadata = get_args(annotation)
    try:
        infos, validators = _split(metadata)
        if isinstance(assigned, FieldInfo):
            if validators and assigned.constraints:
                raise TypeError(
                    "constraints in an assigned Field(...) and an AfterValidator: put both in Annotated"
                )
            infos.append(assigned)
            assigned = UNSET
        default, factory = assigned, None
        for info in infos:
            if info.default is not UNSET or info.default_factory is not None:
                if default is not UNSET or factory is not None:
                    raise TypeError("the default is given twice")
                default, factory = info.default, info.default_factory
        constraints, js_updates, js_extra = _merge(infos)
        check = compile_type(tp).constrain(constraints)
        for func in validators:
            check = AfterCheck(check, func)
    except TypeError as e:
        raise TypeError(f"field {name!r}: {e}") from None
    return ParamField(name, check, default, factory, js_updates or None, js_extra)


def _split(metadata: list[Any]) -> tuple[list[FieldInfo], list[Callable[[Any], Any]]]:
    """The Fields and the AfterValidator functions of an `Annotated`, refusing what else it holds."""
    infos: list[FieldInfo] = []
    validators: list[Callable[[Any], Any]] = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            if validators:  # pydantic would then check the constraints after the validator
                raise TypeError("a Field(...) after an AfterValidator is not supported; put Field first")
            infos.append(item)
        elif isinstance(item, AfterValidator):
            validators.append(item.func)
        else:
            raise TypeError(f"unsupported Annotated metadata {item!r}")
    return infos, validators


def _merge(infos: list[FieldInfo]) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """Constraints, schema updates and json_schema_extra of several Fields, later ones winning."""
    constraints: dict[str, Any] = {}
    js_updates: dict[str, Any] = {}
    js_extra: Any = None
    for info in infos:
        constraints.update(info.constraints)
        js_updates.update(info.js_updates)
        js_extra = info.json_schema_extra if info.json_schema_extra is not None else js_extra
    return constraints, js_updates, js_extra


def compile_type(tp: Any) -> Check:
    """A fresh check for the type `tp` (fresh, so constraints and descriptions can be set on it)."""
    origin = get_origin(tp)
    if origin is Annotated:
        base, *metadata = get_args(tp)
        return _annotated(compile_type(base), metadata)
    simple: dict[Any, type[Check]] = {str: StrCheck, int: IntCheck, float: FloatCheck, bool: BoolCheck}
    if tp in simple:
        return simple[tp]()
    if tp is Any:
        return AnyCheck()
    if origin is Union or origin is types.UnionType:
        members = [a for a in get_args(tp) if a is not type(None)]
        if len(members) == 1:
            inner = compile_type(members[0])
        else:
            inner = UnionCheck([compile_type(m) for m in members])
        return NullableCheck(inner) if len(members) < len(get_args(tp)) else inner
    if origin is Literal:
        return LiteralCheck(get_args(tp))
    if tp is list or origin is list:
        args = get_args(tp)
        return ListCheck(compile_type(args[0]) if args else AnyCheck())
    if tp is dict or origin is dict:
        key_type, value_type = get_args(tp) or (str, Any)
        key = compile_type(key_type)
        if not isinstance(key, StrCheck) or key.js_updates or key.js_extra:
            raise TypeError(
                f"dict keys must be str, optionally with length bounds or a pattern, not {key_type!r}"
            )
        return DictCheck(key, compile_type(value_type))
    if isinstance(tp, type) and hasattr(tp, "_params_check"):
        return ModelCheck(tp)
    raise TypeError(f"{tp!r} is not a type fermix's Params support")


def _annotated(check: Check, metadata: list[Any]) -> Check:
    """A nested `Annotated[T, ...]`: Field constraints first, then AfterValidators, in order."""
    infos, validators = _split(metadata)
    if any(info.default is not UNSET or info.default_factory is not None for info in infos):
        raise TypeError("a default belongs to the field, not to a nested type")
    constraints, js_updates, js_extra = _merge(infos)
    check = check.constrain(constraints)
    for func in validators:
        check = AfterCheck(check, func)
    if js_updates:
        check.js_updates = {**(check.js_updates or {}), **js_updates}
    if js_extra is not None:
        check.js_extra = js_extra
    return check
