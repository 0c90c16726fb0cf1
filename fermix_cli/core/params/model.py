"""Tool input models: declared with pydantic's API, validated by fermix's own strict validator.

A machine call (`fermix tool NAME`) validates its arguments without importing pydantic, which
costs more than the rest of the call's start-up. Tool modules write their `Params` exactly as
they would with pydantic (`Annotated[str, Field(max_length=4096, description=...)] = None`,
`AfterValidator`, `model_validator(mode="before")`) and get pydantic's strict-mode behaviour:
the same accepted values, the same error types, messages and locations, the same JSON schema
(`schema.py`). The subset is listed in `fieldtypes.py`; the tests check every registered
tool against a real pydantic model built from the same declarations.
"""

from __future__ import annotations

from collections.abc import Callable
from types import GenericAlias
from typing import Any, ClassVar, Literal, Self

from .check import (
    Check,
    FloatCheck,
    Invalid,
    LineError,
    fail,
    refuse_lone_surrogates,
    require_utf8,
    run_validator,
    run_validator_error,
    under,
)
from .compound import AfterCheck, DictCheck, ListCheck, NullableCheck
from .fieldtypes import UNSET, ConfigDict, FieldInfo, ParamField, compile_fields


class ValidationError(ValueError):
    """Input a Params class refused; `errors()` lists each failure as pydantic does."""

    def __init__(self, title: str, line_errors: list[LineError]) -> None:
        super().__init__(title, line_errors)
        self.title = title
        self.line_errors = line_errors

    def errors(self, *, include_url: bool = True, include_input: bool = True) -> list[dict[str, Any]]:
        """One dict per failure: `type`, `loc`, `msg`, `input` and, where pydantic gives one, `ctx`."""
        out = []
        for e in self.line_errors:
            item: dict[str, Any] = {"type": e.type, "loc": e.loc, "msg": e.msg}
            if include_input:
                item["input"] = e.input
            if e.ctx is not None:
                item["ctx"] = e.ctx
            out.append(item)
        return out

    def error_count(self) -> int:
        return len(self.line_errors)

    def __str__(self) -> str:
        n = len(self.line_errors)
        lines = [f"{n} validation error{'' if n == 1 else 's'} for {self.title}"]
        for e in self.line_errors:
            lines.append(".".join(str(p) for p in e.loc) or "(input)")
            lines.append(
                f"  {e.msg} [type={e.type}, input_value={e.input!r}, input_type={type(e.input).__name__}]"
            )
        return "\n".join(lines)


class _BeforeValidator:
    """A `model_validator(mode="before")` in a class body; still callable as the classmethod it wraps."""

    def __init__(self, func: Any) -> None:
        self.func = func if isinstance(func, classmethod) else classmethod(func)

    def __get__(self, obj: Any, owner: type | None = None) -> Callable[[Any], Any]:
        return self.func.__get__(obj, owner)  # type: ignore[no-any-return]


class _AfterValidator:
    """A `model_validator(mode="after")` in a class body: a method that checks the built instance."""

    def __init__(self, func: Any) -> None:
        self.func = func

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self.func.__get__(obj, owner) if obj is not None else self.func


def model_validator(*, mode: Literal["before", "after"]) -> Callable[[Any], Any]:
    """Run a validator on the whole model, as pydantic's `model_validator` does.

    "before": a classmethod on the raw input, before the fields are checked; validators run subclass
    first. "after": a method on the validated instance, returning it; parents' run first. A
    ValueError becomes an input error located at the model, any other exception (a ToolError, say)
    propagates as it is.
    """
    if mode == "before":
        return _BeforeValidator
    if mode == "after":
        return _AfterValidator
    raise TypeError(
        f"model_validator(mode={mode!r}): fermix's Params support only mode='before' and mode='after'"
    )


class _Plan:
    """What validating one Params class takes, worked out on its first use."""

    def __init__(self, cls: type[Params]) -> None:
        self.fields: tuple[ParamField, ...] = compile_fields(cls)
        self.names = frozenset(f.name for f in self.fields)
        config = cls.model_config
        self.extra = config.get("extra", "forbid")
        supported = set(config) <= {"extra", "strict", "defer_build"} and config.get("strict", True) is True
        if not supported or self.extra not in ("forbid", "allow"):
            raise TypeError(f"{cls.__name__}: model_config {config!r} is not supported")
        found: dict[str, _BeforeValidator | _AfterValidator] = {}
        for klass in reversed(cls.__mro__):  # an override keeps its parent's place, as in pydantic
            for name, attr in vars(klass).items():
                if isinstance(attr, _BeforeValidator | _AfterValidator):
                    found[name] = attr
                elif name in found:
                    del found[name]
        self.before = [getattr(cls, n) for n, v in reversed(found.items()) if isinstance(v, _BeforeValidator)]
        self.after = [v.func for v in found.values() if isinstance(v, _AfterValidator)]
        # Nested models left out of the input are built when first read: a config file names few of
        # its sections, and building the others' defaults would compile every section's checks.
        self.lazy = {
            f.name: f
            for f in self.fields
            if (isinstance(f.default_factory, type) and issubclass(f.default_factory, Params))
            or getattr(f.default_factory, "lazy_default", False)  # e.g. a config section not yet imported
        }


def _default(field: ParamField) -> Any:
    if field.default_factory is not None:
        return field.default_factory()
    return _copy_default(field.default)


def _copy_default(value: Any) -> Any:
    if type(value) in _EMPTY and not value:  # the usual mutable default: a fresh empty one is its copy
        return type(value)()
    try:
        hash(value)
    except TypeError:  # a mutable default is copied for each instance, as pydantic does
        import copy

        return copy.deepcopy(value)
    return value


_EMPTY = (list, dict)


def _dump(value: Any, mode: str) -> Any:
    if isinstance(value, Params):
        return value.model_dump(mode=mode)  # type: ignore[arg-type]
    if isinstance(value, list):
        return [_dump(v, mode) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v, mode) for k, v in value.items()}
    return value


def _as_json(check: Check, value: Any) -> Any:
    """`value` as pydantic serialises a field of this type to JSON: a float field's int as a float.

    Only defaults can need it (validation already made them floats).
    """
    while isinstance(check, AfterCheck | NullableCheck) and value is not None:
        check = check.inner
    if isinstance(check, FloatCheck) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(check, ListCheck) and isinstance(value, list):
        return [_as_json(check.item, v) for v in value]
    if isinstance(check, DictCheck) and isinstance(value, dict):
        return {k: _as_json(check.value, v) for k, v in value.items()}
    return _dump(value, "json")


def drop_allowed_nulls(allowed: frozenset[str], value: Any) -> Any:
    """`value` without the nulls of `allowed` fields; a null anywhere else is refused (ValueError)."""
    if not isinstance(value, dict) or None not in value.values():
        return value
    for key, item in value.items():
        if item is None and key not in allowed:
            raise ValueError(
                f"{key} is null; leave the field out to use its default (null is accepted only where the "
                "schema lists it)"
            )
    return {k: v for k, v in value.items() if v is not None}


class Params:
    """Base of every tool's input model: strict types, unknown fields refused, null refused unless listed.

    A validated instance reads like a pydantic model: one attribute per field, plus
    `model_dump()` and `model_extra`.
    """

    model_config: ClassVar[ConfigDict] = {"extra": "forbid", "strict": True}
    _plan: ClassVar[_Plan | None] = None

    def __init__(self, /, **data: Any) -> None:
        if not data:
            defaults = type(self)._defaults_only()
            if defaults is not None:
                self.__dict__.update(defaults)
                return
        self.__dict__.update(type(self).model_validate(data).__dict__)

    @classmethod
    def _defaults_only(cls) -> dict[str, Any] | None:
        """The instance values of `cls()` read straight from the declarations, or None to validate.

        A config section the file leaves out is built this way on first read: pydantic does not check
        defaults, so nothing needs compiling. Anything this cannot read for certain (a required field,
        a default inside `Annotated`, a ClassVar, a model validator, extra fields) takes the full path.
        """
        if cls.__dict__.get("_plan") is not None or cls.model_config.get("extra", "forbid") != "forbid":
            return None
        values: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            if klass is not Params and any(  # Params' own validator only drops nulls from the input
                isinstance(v, _BeforeValidator | _AfterValidator) for v in vars(klass).values()
            ):
                return None
            for name, annotation in klass.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
                if name.startswith("_") or name == "model_config":
                    continue
                if isinstance(annotation, str):
                    if "ClassVar" in annotation or "Field(" in annotation:
                        return None
                elif not (annotation is Any or isinstance(annotation, type | GenericAlias)):
                    return None  # e.g. Annotated[...] built at run time: its metadata may hold a default
                declared = getattr(cls, name, UNSET)
                if isinstance(declared, FieldInfo):
                    factory = declared.default_factory
                    if factory is None and declared.default is UNSET:
                        return None
                    if isinstance(factory, type) and issubclass(factory, Params):
                        values.pop(name, None)  # a nested model: built on first read, as after validation
                        continue
                    if getattr(factory, "lazy_default", False):
                        values.pop(name, None)
                        continue
                    declared = factory() if factory is not None else declared.default
                elif declared is UNSET:
                    return None
                values[name] = _copy_default(declared)
        return values

    # Fields where JSON null stands for "omitted" (where the seed or the reference says so: providers
    # that must send every key send null); the published schema lists null for them. Anywhere else null
    # is refused: not every tool's contract lets null mean omission (ast_grep's `operation`).
    # Unannotated, so it is no field and no config key.
    null_means_absent = frozenset[str]()

    @model_validator(mode="before")
    @classmethod
    def _null_means_absent(cls, value: Any) -> Any:
        return drop_allowed_nulls(cls.null_means_absent, value)

    @model_validator(mode="before")
    @classmethod
    def _strings_are_utf8(cls, value: Any) -> Any:
        return refuse_lone_surrogates(value)

    @classmethod
    def _params_plan(cls) -> _Plan:
        plan = cls.__dict__.get("_plan")  # the class's own: a subclass has fields of its own
        if plan is None:
            plan = cls._plan = _Plan(cls)
        return plan  # type: ignore[no-any-return]

    @classmethod
    def model_validate(cls, obj: Any) -> Self:
        """A validated instance of `cls`, or ValidationError."""
        try:
            return cls._params_check(obj)  # type: ignore[no-any-return]
        except Invalid as e:
            raise ValidationError(cls.__name__, e.errors) from None

    @classmethod
    def _params_check(cls, value: Any) -> Any:
        plan = cls._params_plan()
        original = value
        for validator in plan.before:
            value = run_validator(validator, value)
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            msg = f"Input should be a valid dictionary or instance of {cls.__name__}"
            raise fail("model_type", msg, value, {"class_name": cls.__name__})
        values: dict[str, Any] = {}
        errors: list[LineError] = []
        for field in plan.fields:
            name = field.name
            if name in value:
                try:
                    values[name] = field.check(value[name])
                except Invalid as e:
                    errors.extend(under(name, e.errors))
            elif name in plan.lazy:
                pass  # a nested model's default, built on first read (`__getattr__`)
            elif not field.required:
                values[name] = _default(field)
            else:
                errors.append(LineError("missing", (name,), "Field required", value))
        extra: dict[str, Any] | None = None
        if not plan.names.issuperset(value):
            for key, item in value.items():
                if key in plan.names:
                    continue
                if isinstance(key, str):
                    require_utf8(key)  # pydantic stops at such a key, dropping the errors found so far
                if plan.extra == "forbid":
                    errors.append(
                        LineError("extra_forbidden", (key,), "Extra inputs are not permitted", item)
                    )
                else:
                    extra = {} if extra is None else extra
                    extra[key] = item
        if errors:
            raise Invalid(errors)
        obj = cls.__new__(cls)
        obj.__dict__.update(values)
        if plan.extra == "allow":
            obj.__dict__["_extra"] = extra or {}
        for check in plan.after:
            try:
                obj = check(obj)
            except (ValueError, AssertionError) as e:
                raise run_validator_error(e, original) from None
        return obj

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        """The JSON schema pydantic's `model_json_schema()` gives for the same declarations."""
        from .schema import model_json_schema

        return model_json_schema(cls)

    @property
    def model_extra(self) -> dict[str, Any] | None:
        """Unknown fields kept by a class with `extra="allow"`; None for other classes."""
        return self.__dict__.get("_extra")

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """Field values (nested models as dicts), then any extra fields.

        In "json" mode a float field's int default comes out as a float, as in pydantic.
        """
        fields = self._params_plan().fields
        if mode == "json":
            out = {f.name: _as_json(f.check, getattr(self, f.name)) for f in fields}
        else:
            out = {f.name: _dump(getattr(self, f.name), mode) for f in fields}
        out.update(_dump(self.__dict__.get("_extra") or {}, mode))
        return out

    def _lazy_default(self, name: str, declared: FieldInfo | None = None) -> Any:
        """The default of a nested model left out of the input, built on first read and kept.

        `declared` is the field's own `Field(default_factory=...)` when read through it: a nested model
        or lazy section is then built from it without compiling this class's checks (an instance made
        from defaults alone never needed them).
        """
        factory = declared.default_factory if declared is not None else None
        if not (
            (isinstance(factory, type) and issubclass(factory, Params))
            or getattr(factory, "lazy_default", False)
        ):
            lazy = self._params_plan().lazy.get(name)
            if lazy is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            factory = lazy.default_factory
        assert factory is not None
        value = self.__dict__[name] = factory()
        return value

    def __getattr__(self, name: str) -> Any:
        if name in self._params_plan().lazy:
            return self._lazy_default(name)
        extra = self.__dict__.get("_extra")
        if extra is not None and name in extra:
            return extra[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        names = [f.name for f in self._params_plan().fields]
        return [getattr(self, n) for n in names] == [getattr(other, n) for n in names] and (
            self.__dict__.get("_extra") == other.__dict__.get("_extra")
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.model_dump().items())
        return f"{type(self).__name__}({shown})"
