"""The JSON schema of a Params class, written the way pydantic's `model_json_schema()` writes it.

Same keys, nesting, `anyOf` flattening, `$defs`/`$ref` for nested models and key order (pydantic
sorts keys, except inside `properties` and `default`), so `registry.clean_schema` turns it into
exactly the schema models and scripts saw when Params were pydantic models. Titles are left out:
`clean_schema` drops them anyway.
"""

from __future__ import annotations

from typing import Any

from .check import AnyCheck, BoolCheck, Check, FloatCheck, IntCheck, LiteralCheck, StrCheck
from .compound import AfterCheck, DictCheck, ListCheck, ModelCheck, NullableCheck, UnionCheck
from .fieldtypes import UNSET, ParamField

_NULL = {"type": "null"}
_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}


def model_json_schema(cls: Any) -> dict[str, Any]:
    """The schema of Params class `cls`, nested models under `$defs`."""
    defs: dict[str, Any] = {}
    schema = _Writer(defs).model(cls)
    if defs:
        schema["$defs"] = defs
    return _sorted(schema, None)


class _Writer:
    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.names: dict[Any, str] = {}

    def model(self, cls: Any) -> dict[str, Any]:
        plan = cls._params_plan()
        properties = {f.name: self.field(f) for f in plan.fields}
        out: dict[str, Any] = {"properties": properties, "type": "object"}
        required = [f.name for f in plan.fields if f.required]
        if required:
            out["required"] = required
        out["additionalProperties"] = plan.extra == "allow"
        doc = cls.__dict__.get("__doc__")
        if doc:
            import inspect

            out["description"] = inspect.cleandoc(doc)
        return out

    def field(self, field: ParamField) -> dict[str, Any]:
        schema = self.check(field.check)
        if field.default is not UNSET:
            schema["default"] = _jsonable(field.default)
        return _annotate(schema, field.js_updates, field.js_extra)

    def ref(self, cls: Any) -> dict[str, Any]:
        name = self.names.get(cls)
        if name is None:
            name = cls.__name__
            while name in self.defs:  # two classes of one name: any distinct key will do
                name += "_"
            self.names[cls] = name
            self.defs[name] = {}
            self.defs[name] = self.model(cls)
        return {"$ref": f"#/$defs/{name}"}

    def check(self, check: Check) -> dict[str, Any]:
        return _annotate(self._bare(check), check.js_updates, check.js_extra)

    def _bare(self, check: Check) -> dict[str, Any]:
        if isinstance(check, StrCheck):
            out: dict[str, Any] = {"type": "string"}
            for name, key in (
                ("min_length", "minLength"),
                ("max_length", "maxLength"),
                ("pattern", "pattern"),
            ):
                if getattr(check, name) is not None:
                    out[key] = getattr(check, name)
            return out
        if isinstance(check, IntCheck | FloatCheck):
            out = {"type": "integer" if isinstance(check, IntCheck) else "number"}
            out.update({_BOUNDS[name]: bound for name, bound in check.declared.items()})
            return out
        if isinstance(check, BoolCheck):
            return {"type": "boolean"}
        if isinstance(check, AnyCheck):
            return {}
        if isinstance(check, LiteralCheck):
            return _literal(check.values)
        if isinstance(check, AfterCheck):
            return self.check(check.inner)
        if isinstance(check, NullableCheck):
            inner = self.check(check.inner)
            return _NULL.copy() if inner == _NULL else _any_of([inner, _NULL.copy()])
        if isinstance(check, UnionCheck):
            members = [self.check(m) for m in check.members]
            return members[0] if len(members) == 1 else _any_of(members)
        if isinstance(check, ListCheck):
            out = {"items": self.check(check.item), "type": "array"}
            if check.min_length is not None:
                out["minItems"] = check.min_length
            if check.max_length is not None:
                out["maxItems"] = check.max_length
            return out
        if isinstance(check, DictCheck):
            return self._dict(check)
        if isinstance(check, ModelCheck):
            return self.ref(check.model)
        raise TypeError(f"no JSON schema for {check.tag}")

    def _dict(self, check: DictCheck) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object"}
        values = self.check(check.value)
        values.pop("title", None)
        keys = self.check(check.key)
        keys.pop("title", None)
        pattern = keys.pop("pattern", None)
        if pattern is None:
            out["additionalProperties"] = values or True
        else:  # pydantic writes a key pattern as patternProperties
            out["patternProperties"] = {pattern: values}
        if keys.get("type") == "string" and len(keys) > 1:  # the keys carry constraints
            keys.pop("type")
            out["propertyNames"] = keys
        return out


def _annotate(schema: dict[str, Any], updates: dict[str, Any] | None, extra: Any) -> dict[str, Any]:
    """Apply a Field's description/title, then its json_schema_extra (a dict, or a callable editing it)."""
    if updates:
        schema = {**schema, **updates}
    if isinstance(extra, dict):
        schema.update(_jsonable(extra))
    elif extra is not None:
        extra(schema)
    return schema


def _literal(values: tuple[Any, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {"const": values[0]} if len(values) == 1 else {"enum": list(values)}
    kinds = {type(v) for v in values}
    names = {str: "string", int: "integer", bool: "boolean"}
    if len(kinds) == 1 and next(iter(kinds)) in names:
        out["type"] = names[next(iter(kinds))]
    return out


def _any_of(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """pydantic's flattened anyOf: members that are bare anyOfs are spliced in, duplicates dropped."""
    members: list[dict[str, Any]] = []
    for s in schemas:
        members.extend(s["anyOf"] if len(s) == 1 and "anyOf" in s else [s])
    unique = list({_hashable(m): m for m in members}.values())
    return unique[0] if len(unique) == 1 else {"anyOf": unique}


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _jsonable(value: Any) -> Any:
    """A default or schema extra as JSON data (nested Params as their dump)."""
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"{value!r} has no JSON form for a schema")


def _sorted(value: Any, parent: str | None) -> Any:
    """pydantic's key order: alphabetical, except the keys of `properties` and of a `default`."""
    if isinstance(value, dict):
        keys = value if parent in ("properties", "default") else sorted(value)
        return {k: _sorted(value[k], k) for k in keys}
    if isinstance(value, list):
        return [_sorted(v, parent) for v in value]
    return value
