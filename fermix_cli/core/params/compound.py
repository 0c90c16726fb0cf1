"""Checks that hold other checks: `X | None`, lists, dicts, unions, AfterValidator, nested Params.

They fail like pydantic's containers: each error located under its index, key or union member,
a list past its length limit reported once as "too long" whatever its items held.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .check import (
    BoolCheck,
    Check,
    FloatCheck,
    IntCheck,
    Invalid,
    LineError,
    LiteralCheck,
    StrCheck,
    fail,
    plural,
    run_validator,
    under,
)


class NullableCheck(Check):
    """`X | None`: null, or whatever X takes. Constraints on the field apply to X."""

    def __init__(self, inner: Check) -> None:
        self.inner = inner

    @property
    def tag(self) -> str:
        return f"nullable[{self.inner.tag}]"

    def constrain(self, constraints: dict[str, Any]) -> Check:
        self.inner = self.inner.constrain(constraints)
        return self

    def __call__(self, value: Any) -> Any:
        return None if value is None else self.inner(value)


class ListCheck(Check):
    def __init__(self, item: Check) -> None:
        self.item = item
        self.min_length: int | None = None
        self.max_length: int | None = None

    @property
    def tag(self) -> str:
        return f"list[{self.item.tag}]"

    def constrain(self, constraints: dict[str, Any]) -> Check:
        self._take(constraints, ("min_length", "max_length"))
        return self

    def _too_long(self, value: list[Any]) -> Invalid:
        n = self.max_length
        assert n is not None
        msg = f"List should have at most {n} item{plural(n)} after validation, not {len(value)}"
        ctx = {"field_type": "List", "max_length": n, "actual_length": len(value)}
        return fail("too_long", msg, value, ctx)

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, list):
            raise fail("list_type", "Input should be a valid list", value)
        out: list[Any] = []
        errors: list[LineError] = []
        limit = self.max_length
        for i, x in enumerate(value):
            try:
                out.append(self.item(x))
            except Invalid as e:
                errors.extend(under(i, e.errors))
            # Like pydantic, an item past the limit replaces every error with "too long".
            if limit is not None and i >= limit:
                raise self._too_long(value)
        if errors:
            raise Invalid(errors)
        n = self.min_length
        if n is not None and len(out) < n:
            msg = f"List should have at least {n} item{plural(n)} after validation, not {len(out)}"
            raise fail(
                "too_short", msg, value, {"field_type": "List", "min_length": n, "actual_length": len(out)}
            )
        return out


def _loc_key(key: Any) -> Any:
    """A dict key as pydantic puts it in a location: text with a lone surrogate comes out lossy."""
    if isinstance(key, str) and not key.isascii():
        return key.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return key


class DictCheck(Check):
    def __init__(self, key: StrCheck, value: Check) -> None:
        self.key = key
        self.value = value

    @property
    def tag(self) -> str:
        return f"dict[{self.key.tag},{self.value.tag}]"

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise fail("dict_type", "Input should be a valid dictionary", value)
        out: dict[Any, Any] = {}
        errors: list[LineError] = []
        for k, v in value.items():
            key = k
            try:
                key = self.key(k)
            except Invalid as e:
                errors.extend(under(_loc_key(k), under("[key]", e.errors)))
            try:
                out[key] = self.value(v)
            except Invalid as e:
                errors.extend(under(_loc_key(k), e.errors))
        if errors:
            raise Invalid(errors)
        return out


class UnionCheck(Check):
    """pydantic's strict "smart" union: the first member that takes the value exactly wins, else
    the first that takes it at all (a float member takes an int, but an int member is exact)."""

    def __init__(self, members: list[Check]) -> None:
        for m in members:
            inner = m
            while isinstance(inner, AfterCheck):
                inner = inner.inner
            if not isinstance(inner, StrCheck | IntCheck | FloatCheck | BoolCheck | LiteralCheck):
                raise TypeError(f"union member {m.tag}: only str, int, float, bool and Literal are supported")
        self.members = members

    @property
    def tag(self) -> str:
        return f"union[{','.join(m.tag for m in self.members)}]"

    def __call__(self, value: Any) -> Any:
        errors: list[LineError] = []
        found = False
        best: Any = None
        for member in self.members:
            try:
                result = member(value)
            except Invalid as e:
                errors.extend(under(member.tag, e.errors))
                continue
            if member.exact(value):
                return result
            if not found:
                found, best = True, result
        if found:
            return best
        raise Invalid(errors)


class AfterCheck(Check):
    """`AfterValidator(func)`: func sees the checked value; a ValueError or AssertionError fails it."""

    def __init__(self, inner: Check, func: Callable[[Any], Any]) -> None:
        self.inner = inner
        self.func = func

    @property
    def tag(self) -> str:
        return f"function-after[{getattr(self.func, '__name__', 'function')}(), {self.inner.tag}]"

    def exact(self, value: Any) -> bool:
        return self.inner.exact(value)

    def __call__(self, value: Any) -> Any:
        value = self.inner(value)
        return run_validator(self.func, value)


class ModelCheck(Check):
    """A nested Params class, validated by that class (its own before-validators included)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    @property
    def tag(self) -> str:
        return str(self.model.__name__)

    def __call__(self, value: Any) -> Any:
        return self.model._params_check(value)
