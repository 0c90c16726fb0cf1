"""The checks behind fermix's Params: scalars, and how a failure is reported, the way pydantic does.

Each check validates one value and returns it (a float field turns an int into a float) or raises
`Invalid` with pydantic's error types, messages and context. Locations are relative to the value
checked: containers put their key in front as errors pass through, so a success costs no bookkeeping.
Which pydantic behaviour each check mirrors is pinned by tests that run pydantic itself as the oracle.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..records import Record


class LineError(Record):
    """One failure, shaped like an entry of pydantic's `ValidationError.errors()`."""

    type: str
    loc: tuple[Any, ...]
    msg: str
    input: Any
    ctx: dict[str, Any] | None = None

    def under(self, key: Any) -> LineError:
        return LineError(self.type, (key, *self.loc), self.msg, self.input, self.ctx)


class Invalid(Exception):
    """A value failed its check; each error's location is relative to that value."""

    def __init__(self, errors: list[LineError]) -> None:
        super().__init__(errors)
        self.errors = errors


def fail(kind: str, msg: str, value: Any, ctx: dict[str, Any] | None = None) -> Invalid:
    return Invalid([LineError(kind, (), msg, value, ctx)])


def under(key: Any, errors: list[LineError]) -> list[LineError]:
    """`errors` as seen from the container that holds the failing value at `key`."""
    return [e.under(key) for e in errors]


def plural(n: int) -> str:
    return "" if n == 1 else "s"


def show_number(value: int | float) -> str:
    """A bound as pydantic's messages print it (floats without exponent or a trailing `.0`)."""
    if isinstance(value, int):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "inf", "-inf": "-inf"}[repr(value)]
    from decimal import Decimal

    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def rust_dollar(pattern: str) -> str:
    """`pattern` for Python's re with each `$` (outside a character class) meaning the end of the text."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        out.append(r"\Z" if ch == "$" and not in_class else ch)
        i += 1
    return "".join(out)


def require_utf8(value: str) -> None:
    """Refuse a string with a lone surrogate (JSON's \\ud800 escapes make them).

    pydantic does so wherever it needs the text as UTF-8: to measure or match a string, to look it
    up among string literals or a model's field names; a plain `str` field takes it as it is.
    """
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            msg = "Input should be a valid string, unable to parse raw data as a unicode string"
            raise fail("string_unicode", msg, value) from None


def lone_surrogate_path(value: Any) -> str | None:
    """Where in a JSON-like value a string (or key) with a lone surrogate sits, as `a.b[2]`; None if nowhere."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            if not _encodes(node):
                return where or "(input)"
        elif isinstance(node, dict):
            for key, item in node.items():
                bad = isinstance(key, str) and not _encodes(key)
                name = ascii(key) if bad else str(key)
                at = f"{where}.{name}" if where else name
                if bad:
                    return at
                stack.append((item, at))
        elif isinstance(node, list | tuple):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(node))
    return None


def _encodes(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def refuse_lone_surrogates(value: Any) -> Any:
    """A model's before-check: every string of the input, keys included, must be valid UTF-8."""
    where = lone_surrogate_path(value)
    if where is not None:
        raise ValueError(
            f"{where} has text that is not valid UTF-8 (a lone surrogate such as \\udc80, or bytes that do "
            "not decode); send UTF-8 text"
        )
    return value


class Check:
    """Validates one value; carries what the JSON schema of that value needs."""

    js_updates: dict[str, Any] | None = None  # description/title from a Field in a nested Annotated
    js_extra: Any = None  # that Field's json_schema_extra (a dict or a callable)

    def __call__(self, value: Any) -> Any:
        raise NotImplementedError

    @property
    def tag(self) -> str:
        """pydantic's label for this check as a union member (it appears in error locations)."""
        raise NotImplementedError

    def exact(self, value: Any) -> bool:
        """Whether an accepted `value` matched without conversion (a union prefers such a member)."""
        return True

    def constrain(self, constraints: dict[str, Any]) -> Check:
        if constraints:
            raise TypeError(f"constraints {sorted(constraints)} do not apply to {self.tag}")
        return self

    def _take(self, constraints: dict[str, Any], allowed: tuple[str, ...]) -> None:
        unknown = sorted(set(constraints) - set(allowed))
        if unknown:
            raise TypeError(f"constraints {unknown} do not apply to {self.tag}")
        for name, value in constraints.items():
            setattr(self, name, value)


class AnyCheck(Check):
    def __call__(self, value: Any) -> Any:
        return value

    @property
    def tag(self) -> str:
        return "any"


class BoolCheck(Check):
    def __call__(self, value: Any) -> Any:
        if value is True or value is False:
            return value
        raise fail("bool_type", "Input should be a valid boolean", value)

    @property
    def tag(self) -> str:
        return "bool"


class StrCheck(Check):
    def __init__(self) -> None:
        self.min_length: int | None = None
        self.max_length: int | None = None
        self.pattern: str | None = None
        self._regex: re.Pattern[str] | None = None
        self._plain = True

    @property
    def tag(self) -> str:
        return "str" if self._plain else "constrained-str"

    def constrain(self, constraints: dict[str, Any]) -> Check:
        self._take(constraints, ("min_length", "max_length", "pattern"))
        # Python's re, searched like pydantic's Rust engine; the two agree on the syntax both accept
        # once `$` means the end of the text, as in Rust (Python's also matches before a final newline).
        self._regex = None if self.pattern is None else re.compile(rust_dollar(self.pattern))
        self._plain = self.min_length is None and self.max_length is None and self.pattern is None
        return self

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str):
            raise fail("string_type", "Input should be a valid string", value)
        if self._plain:
            return value
        require_utf8(value)
        n = self.min_length
        if n is not None and len(value) < n:
            msg = f"String should have at least {n} character{plural(n)}"
            raise fail("string_too_short", msg, value, {"min_length": n})
        n = self.max_length
        if n is not None and len(value) > n:
            msg = f"String should have at most {n} character{plural(n)}"
            raise fail("string_too_long", msg, value, {"max_length": n})
        if self._regex is not None and self._regex.search(value) is None:
            msg = f"String should match pattern '{self.pattern}'"
            raise fail("string_pattern_mismatch", msg, value, {"pattern": self.pattern})
        return value


class _Bounded(Check):
    """Numbers with pydantic's bounds, checked in pydantic's order (le, lt, ge, gt)."""

    def __init__(self) -> None:
        self.ge: int | float | None = None
        self.gt: int | float | None = None
        self.le: int | float | None = None
        self.lt: int | float | None = None
        self.declared: dict[str, int | float] = {}  # as written, for the JSON schema

    def _take_bounds(self, constraints: dict[str, Any], kinds: type | tuple[type, ...], what: str) -> None:
        """Take `ge`/`gt`/`le`/`lt` from `constraints`, each of `kinds` (never a bool)."""
        for name, bound in constraints.items():
            if isinstance(bound, bool) or not isinstance(bound, kinds):
                raise TypeError(f"{name}={bound!r}: {what}")
        self._take(constraints, ("ge", "gt", "le", "lt"))
        self.declared.update(constraints)

    def _bounded(self) -> bool:
        return not (self.ge is None and self.gt is None and self.le is None and self.lt is None)

    def _check_bounds(self, number: int | float, value: Any) -> None:
        if self.le is not None and not number <= self.le:
            msg = f"Input should be less than or equal to {show_number(self.le)}"
            raise fail("less_than_equal", msg, value, {"le": self.le})
        if self.lt is not None and not number < self.lt:
            raise fail(
                "less_than", f"Input should be less than {show_number(self.lt)}", value, {"lt": self.lt}
            )
        if self.ge is not None and not number >= self.ge:
            msg = f"Input should be greater than or equal to {show_number(self.ge)}"
            raise fail("greater_than_equal", msg, value, {"ge": self.ge})
        if self.gt is not None and not number > self.gt:
            msg = f"Input should be greater than {show_number(self.gt)}"
            raise fail("greater_than", msg, value, {"gt": self.gt})


class IntCheck(_Bounded):
    @property
    def tag(self) -> str:
        return "constrained-int" if self._bounded() else "int"

    def constrain(self, constraints: dict[str, Any]) -> Check:
        self._take_bounds(constraints, int, "an int field takes int bounds")
        return self

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, int) or isinstance(value, bool):  # strict: no bools, no 1.0
            raise fail("int_type", "Input should be a valid integer", value)
        self._check_bounds(value, value)
        return value


class FloatCheck(_Bounded):
    @property
    def tag(self) -> str:
        return "constrained-float" if self._bounded() else "float"

    def constrain(self, constraints: dict[str, Any]) -> Check:
        self._take_bounds(constraints, (int, float), "a float field takes number bounds")
        for name in ("ge", "gt", "le", "lt"):  # pydantic keeps a float field's bounds as floats
            bound = getattr(self, name)
            if bound is not None:
                setattr(self, name, float(bound))
        return self

    def exact(self, value: Any) -> bool:
        return not isinstance(value, int)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, float):
            number = value
        elif isinstance(value, int) and not isinstance(value, bool):  # strict mode still takes ints
            try:
                number = float(value)
            except OverflowError:
                raise fail("float_type", "Input should be a valid number", value) from None
        else:
            raise fail("float_type", "Input should be a valid number", value)
        self._check_bounds(number, value)
        return number


class LiteralCheck(Check):
    def __init__(self, values: tuple[Any, ...]) -> None:
        for v in values:
            if not isinstance(v, str | int):  # bool is an int
                raise TypeError(f"Literal value {v!r}: only str, int and bool literals are supported")
        self.values = values
        self.has_str = any(isinstance(v, str) for v in values)
        shown = [repr(v) for v in values]
        self.expected = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"

    @property
    def tag(self) -> str:
        return f"literal[{','.join(repr(v) for v in self.values)}]"

    def __call__(self, value: Any) -> Any:
        if self.has_str and isinstance(value, str):
            require_utf8(value)
        for v in self.values:  # by type and value: True is not 1, "1" is not 1
            if type(value) is type(v) and value == v:
                return v
        raise fail("literal_error", f"Input should be {self.expected}", value, {"expected": self.expected})


def run_validator(func: Callable[[Any], Any], value: Any) -> Any:
    """Call a user validator the way pydantic does: ValueError and AssertionError become errors."""
    try:
        return func(value)
    except (ValueError, AssertionError) as e:
        raise run_validator_error(e, value) from None


def run_validator_error(e: ValueError | AssertionError, value: Any) -> Invalid:
    """The input error a validator's ValueError or AssertionError on `value` becomes."""
    if isinstance(e, AssertionError):
        return fail("assertion_error", f"Assertion failed, {e}", value, {"error": e})
    return fail("value_error", f"Value error, {e}", value, {"error": e})
