"""Hypothesis strategies for tool inputs: shaped by a JSON schema, and hostile to it.

Values at and just past the schema's limits (one character too many, one past the maximum, an
enum value in the wrong case), mixed at every level with hostile JSON: wrong types, bools for
ints, floats for ints, huge numbers, lone surrogates, nulls, unknown keys and nested garbage.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

LONGEST_DRAWN = 70_000  # boundary strings for limits up to this; past it only short strings

numbers = st.one_of(
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(
        [0, 1, -1, 1.0, 1.5, -0.0, 2**31, 2**31 + 1, 2**63, -(2**63) - 1, 10**30, 2**1024, 1e308]
    ),
)
strings = st.one_of(
    st.text(max_size=12), st.sampled_from(["", " ", "\ud800", "a\udfffb", "é" * 3, "1", "true"])
)
leaves = st.one_of(st.none(), st.booleans(), numbers, strings)
hostile = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(strings, inner, max_size=4),
    max_leaves=8,
)


def _string(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    drawn = st.text(min_size=low, max_size=low + 12)
    edges = [n for n in (low - 1, low, high, (high or 0) + 1) if n is not None and 0 <= n <= LONGEST_DRAWN]
    return drawn | st.sampled_from(edges).map(lambda n: "x" * n) | st.sampled_from(["  ", "\ud800"])


def _integer(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    low, high = schema.get("minimum"), schema.get("maximum")
    edges = [n + d for n in (low, high) if n is not None for d in (-1, 0, 1)]
    return st.integers(low, high) | st.sampled_from(edges or [0]) | st.sampled_from([True, 3.0, 2**70])


def valid_ish(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values shaped by `schema`, at and just past its limits."""
    if "anyOf" in schema:
        return st.one_of([values(s) for s in schema["anyOf"]])
    if "enum" in schema or "const" in schema:
        choices = schema.get("enum", [schema.get("const")])
        return st.sampled_from(choices) | st.sampled_from(
            [c.upper() for c in choices if isinstance(c, str)] or [0]
        )
    kind = schema.get("type")
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return _integer(schema)
    if kind == "number":
        return numbers
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        low, high = schema.get("minItems", 0), schema.get("maxItems", 6)
        return st.lists(values(schema.get("items", {})), min_size=max(low - 1, 0), max_size=min(high + 1, 10))
    if kind == "object" and "properties" in schema:
        return objects(schema)
    if kind == "object":
        extra = schema.get("additionalProperties", True)
        keys = strings | st.sampled_from(["platform", "recipient", "k" * 64, "k" * 65])
        return st.dictionaries(keys, values(extra) if isinstance(extra, dict) else hostile, max_size=4)
    return hostile


def values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.one_of(valid_ish(schema), valid_ish(schema), hostile)


def objects(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with the schema's properties (required ones usually present), plus some unknown keys."""
    props = {name: values(s) for name, s in schema.get("properties", {}).items()}
    required = {name: props[name] for name in schema.get("required", [])}
    optional = {name: s for name, s in props.items() if name not in required}
    shaped = st.fixed_dictionaries(required, optional=optional) | st.fixed_dictionaries({}, optional=props)
    unknown = st.dictionaries(st.sampled_from(["bogus", "Path", "extra", ""]), hostile, max_size=2)
    return st.one_of(shaped, shaped, st.tuples(shaped, unknown).map(lambda t: {**t[1], **t[0]}), hostile)
