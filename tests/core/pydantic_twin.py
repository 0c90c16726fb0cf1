"""pydantic as the oracle for fermix's Params: the real pydantic model for the same declarations.

`twin(cls)` rebuilds a Params class as a pydantic model (class by class along the inheritance
chain, with pydantic's own `Field`, `AfterValidator` and `model_validator`, from the keywords the
declarations were written with), on a base that is the registry's pydantic `Params` as it was
before fermix validated inputs itself. `outcome` runs either side on one input and reduces the
result to comparable data: the dump with every value's type, or the errors and the registry's
`invalid_input` envelope, or a ToolError a validator raised.
"""

from __future__ import annotations

import copy
import inspect
import types
import typing
from typing import Annotated, Any, ClassVar, Union, get_args, get_origin

import pydantic
from pydantic import BaseModel, ConfigDict, model_validator

from fermix_cli.core.errors import ToolError
from fermix_cli.core.params import model as fp
from fermix_cli.core.params.check import refuse_lone_surrogates
from fermix_cli.core.params.fieldtypes import AfterValidator, FieldInfo
from fermix_cli.core.registry import _validation_error


class OracleParams(BaseModel):
    """registry.Params as it was: strict types, unknown fields refused, null only where listed."""

    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _null_means_absent(cls, value: Any) -> Any:
        original = _ORIGINALS.get(cls)
        allowed = original.null_means_absent if original is not None else frozenset()
        return fp.drop_allowed_nulls(allowed, value)

    @model_validator(mode="before")
    @classmethod
    def _strings_are_utf8(cls, value: Any) -> Any:
        return refuse_lone_surrogates(value)  # fermix's own rule: pydantic lets a plain str keep one


_TWINS: dict[type, type[BaseModel]] = {fp.Params: OracleParams}
_ORIGINALS: dict[type, type] = {}


def twin(cls: type) -> type[BaseModel]:
    """The pydantic model declared like Params class `cls`."""
    found = _TWINS.get(cls)
    if found is not None:
        return found
    (parent,) = cls.__bases__
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: dict[str, Any] = {}
    for name in inspect.get_annotations(cls):
        annotation = hints[name]
        if name.startswith("_") or name == "model_config" or get_origin(annotation) is ClassVar:
            continue
        value = cls.__dict__.get(name, ...)
        fields[name] = (_type(annotation), _field(value) if isinstance(value, FieldInfo) else _value(value))
    validators = {
        name: model_validator(mode="before")(classmethod(_bound(attr.func.__func__)))
        for name, attr in vars(cls).items()
        if isinstance(attr, fp._BeforeValidator)
    }
    validators.update(
        {
            name: model_validator(mode="after")(attr.func)
            for name, attr in vars(cls).items()
            if isinstance(attr, fp._AfterValidator)
        }
    )
    own_config = cls.__dict__.get("model_config")
    model = pydantic.create_model(  # type: ignore[call-overload]
        cls.__name__,
        __base__=_config_base(twin(parent), own_config) if own_config else twin(parent),
        __doc__=cls.__dict__.get("__doc__"),
        __validators__=validators,
        **fields,
    )
    _TWINS[cls] = model
    _ORIGINALS[model] = cls
    return model  # type: ignore[no-any-return]


def _config_base(base: type[BaseModel], config: dict[str, Any]) -> type[BaseModel]:
    settings = ConfigDict(**{**base.model_config, **config})  # type: ignore[typeddict-item]
    return type(f"{base.__name__}Config", (base,), {"model_config": settings})


def _bound(func: Any) -> Any:
    def call(model: type, value: Any) -> Any:
        return func(_ORIGINALS.get(model, model), value)

    call.__name__ = func.__name__
    return call


def _field(info: FieldInfo) -> Any:
    return pydantic.Field(
        **{k: _value(v) if k in ("default", "default_factory") else v for k, v in info.declared.items()}
    )


def _value(value: Any) -> Any:
    """A default as the twin holds it: a Params instance becomes an instance of its twin, as it is."""
    if isinstance(value, fp.Params):
        return twin(type(value)).model_construct(**{k: _value(v) for k, v in vars(value).items()})
    if isinstance(value, type) and issubclass(value, fp.Params):  # a default_factory: the twin builds it
        return twin(value)
    if isinstance(value, list):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    return value


def _type(tp: Any) -> Any:
    origin = get_origin(tp)
    if origin is Annotated:
        base, *metadata = get_args(tp)
        return Annotated[(_type(base), *(_metadata(m) for m in metadata))]  # type: ignore[valid-type]
    if origin is Union or origin is types.UnionType:
        return Union[tuple(_type(a) for a in get_args(tp))]  # noqa: UP007
    if origin is list:
        return list[_type(get_args(tp)[0])]  # type: ignore[misc]
    if origin is dict:
        key, value = get_args(tp)
        return dict[_type(key), _type(value)]  # type: ignore[misc]
    if isinstance(tp, type) and issubclass(tp, fp.Params):
        return twin(tp)
    return tp


def _metadata(item: Any) -> Any:
    if isinstance(item, FieldInfo):
        return _field(item)
    if isinstance(item, AfterValidator):
        return pydantic.AfterValidator(item.func)
    return item


# ----- comparing outcomes -----------------------------------------------------------------------


def typed(value: Any) -> Any:
    """`value` with the type of every leaf spelled out, so 1, 1.0 and True differ."""
    if isinstance(value, dict):
        return {"dict": {k: typed(v) for k, v in value.items()}}
    if isinstance(value, list):
        return {"list": [typed(v) for v in value]}
    if isinstance(value, BaseException):
        return {type(value).__name__: str(value)}
    return (type(value).__name__, value)


def _dump(model: Any) -> tuple[Any, ...]:
    extra = model.model_extra
    dump = model.model_dump()
    # pydantic cannot write text with a lone surrogate as JSON (fermix never dumps Params to JSON).
    json_dump = None if _surrogates(dump) else typed(model.model_dump(mode="json"))
    return typed(dump), json_dump, typed(extra) if extra else extra


def _surrogates(value: Any) -> bool:
    if isinstance(value, str):
        return not value.isascii() and any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        return any(_surrogates(k) or _surrogates(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_surrogates(v) for v in value)
    return False


def outcome(model: Any, data: Any) -> tuple[Any, ...]:
    """What validating `data` with `model` (a Params class or its twin) comes to, as plain data."""
    try:
        result = model.model_validate(copy.deepcopy(data))
    except (pydantic.ValidationError, fp.ValidationError) as e:
        errors = [
            (err["type"], err["loc"], err["msg"], typed(err["input"]), typed(err.get("ctx")))
            for err in e.errors(include_url=False)
        ]
        return ("invalid", errors, _validation_error("tool", e).to_dict())  # type: ignore[arg-type]
    except ToolError as e:
        return ("tool_error", e.to_dict())
    return ("ok", *_dump(result))
