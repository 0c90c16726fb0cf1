"""fermix's Params validator on the whole supported subset, row by row, with pydantic as the oracle.

The tools use only part of the subset; these classes use all of it (nested models, extra="allow",
float bounds, patterns, unions, validators, inheritance). Each row states what fermix answers and
the same row run through the pydantic twin must answer the same.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fermix_cli.core.errors import ToolError
from fermix_cli.core.params import AfterValidator, ConfigDict, Field, Params, ValidationError, model_validator
from fermix_cli.core.registry import Registry, ToolSpec, clean_schema
from tests.core.pydantic_twin import outcome, twin
from tests.core.schema_inputs import hostile, objects


def _no_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("blank text")
    return value.strip()


def _no_x(value: str) -> str:
    if value == "x":
        raise AssertionError("x is reserved")  # as a failing assert statement would
    return value


Word = Annotated[str, Field(min_length=1, max_length=5), AfterValidator(_no_blank)]


class Point(Params):
    """A point on the map."""

    lat: Annotated[float, Field(ge=-90, le=90, description="Latitude")]
    lon: Annotated[float, Field(gt=-180.5, lt=180.5)] = 0
    label: Annotated[str | None, Field(pattern=r"^[a-z]+$", max_length=8)] = None


class Kitchen(Params):
    count: Annotated[int, Field(ge=1, le=2**31, description="How many")] = 1
    ratio: float | None = None
    flag: bool = False
    name: Annotated[str, Field(min_length=2, max_length=4)]
    mode: Literal["a", "b", "c"] | None = None
    one: Literal["only"] | None = None
    either: int | Annotated[str, Field(max_length=3)] | None = None
    number: float | int | None = None
    words: Annotated[list[Word], Field(min_length=1, max_length=3)] = ["w"]  # noqa: RUF012 - copied per instance
    tags: Annotated[list[Annotated[str, Field(max_length=2)]], Field(default_factory=list, max_length=4)]
    target: dict[Annotated[str, Field(max_length=3)], str | int] | None = None
    loose: dict[str, Any] = {}  # noqa: RUF012
    anything: Annotated[Any, Field(description="Any JSON")] = None
    where: Point | None = None
    route: list[Point] = []  # noqa: RUF012
    home: Annotated[Point, Field(description="Home base")] = Point.model_validate({"lat": 1})
    checked: Annotated[str, AfterValidator(_no_x)] = ""


class Audited(Params):
    text: str = Field(description="Assigned Field, pydantic style")

    @model_validator(mode="before")
    @classmethod
    def _audit(cls, value: Any) -> Any:
        if isinstance(value, dict) and value.get("text") == "boom":
            raise ValueError("boom is not allowed")
        if isinstance(value, dict) and "text" in value and value["text"] is None:
            raise ToolError("invalid_input", "text may not be null", {})
        return value


class StrictAudited(Audited):
    level: int = 0

    @model_validator(mode="before")
    @classmethod
    def _level_words(cls, value: Any) -> Any:
        if isinstance(value, dict) and value.get("level") == "high":
            return {**value, "level": 3}
        return value


class Open(Params):
    model_config = ConfigDict(strict=True, extra="allow")

    known: int = 0


class Nullable(Params):
    null_means_absent = frozenset({"count", "mode"})  # a seed that lets null stand for omission

    count: Annotated[int, Field(ge=1)] = 1
    mode: Literal["a", "b"] | None = None
    flag: bool = False


def null_refused(key: str, loc: tuple[str, ...] = ()) -> tuple[str, tuple[str, ...], str]:
    msg = f"Value error, {key} is null; leave the field out to use its default (null is accepted only where the schema lists it)"
    return ("value_error", loc, msg)


CLASSES: list[type[Params]] = [Point, Kitchen, Audited, StrictAudited, Open, Nullable]

INT, NUMBER, STR = (
    "Input should be a valid integer",
    "Input should be a valid number",
    "Input should be a valid string",
)
UNICODE = "Input should be a valid string, unable to parse raw data as a unicode string"


def not_utf8(where: str) -> tuple[str, tuple[str, ...], str]:
    """fermix refuses a lone surrogate anywhere in the input, before any field is checked."""
    msg = (
        f"Value error, {where} has text that is not valid UTF-8 (a lone surrogate such as \\udc80, or bytes "
        "that do not decode); send UTF-8 text"
    )
    return ("value_error", (), msg)


EXTRA = "Extra inputs are not permitted"


def ab(**fields: Any) -> dict[str, Any]:
    """A Kitchen input: the required name plus `fields`."""
    return {"name": "ab", **fields}


# (class, input, "ok" or (error type, location, message) of the first error)
ROWS: list[tuple[type[Params], dict[str, Any], Any]] = [
    (Kitchen, ab(), "ok"),
    (Kitchen, ab(count=None, mode=None), null_refused("count")),
    (Nullable, {"count": None, "mode": None}, "ok"),
    (Nullable, {"count": None, "flag": None}, null_refused("flag")),
    (Kitchen, {}, ("missing", ("name",), "Field required")),
    (Kitchen, ab(bogus=1), ("extra_forbidden", ("bogus",), EXTRA)),
    (Kitchen, ab(count=True), ("int_type", ("count",), INT)),
    (Kitchen, ab(count=1.0), ("int_type", ("count",), INT)),
    (Kitchen, ab(count=0), ("greater_than_equal", ("count",), "Input should be greater than or equal to 1")),
    (
        Kitchen,
        ab(count=2**40),
        ("less_than_equal", ("count",), "Input should be less than or equal to 2147483648"),
    ),
    (
        Kitchen,
        ab(count=10**40),
        ("less_than_equal", ("count",), "Input should be less than or equal to 2147483648"),
    ),
    (Kitchen, ab(ratio=2), "ok"),
    (Kitchen, ab(ratio=2**1024), ("float_type", ("ratio",), NUMBER)),
    (Kitchen, ab(ratio="1.5"), ("float_type", ("ratio",), NUMBER)),
    (Kitchen, ab(flag=1), ("bool_type", ("flag",), "Input should be a valid boolean")),
    (Kitchen, {"name": 12}, ("string_type", ("name",), STR)),
    (Kitchen, {"name": "abcde"}, ("string_too_long", ("name",), "String should have at most 4 characters")),
    (Kitchen, {"name": "a"}, ("string_too_short", ("name",), "String should have at least 2 characters")),
    (Kitchen, {"name": "a\ud800"}, not_utf8("name")),
    (Kitchen, {"name": "ab", "tags": ["x", "\udc80"]}, not_utf8("tags[1]")),
    (Kitchen, ab(mode="d"), ("literal_error", ("mode",), "Input should be 'a', 'b' or 'c'")),
    (Kitchen, ab(one="two"), ("literal_error", ("one",), "Input should be 'only'")),
    (Kitchen, ab(either=7), "ok"),
    (Kitchen, ab(either="abcd"), ("int_type", ("either", "int"), INT)),
    (Kitchen, ab(either=True), ("int_type", ("either", "int"), INT)),
    (Kitchen, ab(number=3), "ok"),
    (Kitchen, ab(number=3.5), "ok"),
    (
        Kitchen,
        ab(words=[]),
        ("too_short", ("words",), "List should have at least 1 item after validation, not 0"),
    ),
    (Kitchen, ab(words=[" a "]), "ok"),
    (Kitchen, ab(words=["  "]), ("value_error", ("words", 0), "Value error, blank text")),
    (
        Kitchen,
        ab(words=["a", 1, "b", "c"]),
        ("too_long", ("words",), "List should have at most 3 items after validation, not 4"),
    ),
    (Kitchen, ab(words="a"), ("list_type", ("words",), "Input should be a valid list")),
    (Kitchen, ab(tags=["abc"]), ("string_too_long", ("tags", 0), "String should have at most 2 characters")),
    (Kitchen, ab(target={"k": 1, "v": "s"}), "ok"),
    (
        Kitchen,
        ab(target={"long": 1}),
        ("string_too_long", ("target", "long", "[key]"), "String should have at most 3 characters"),
    ),
    (Kitchen, ab(target={"k": 1.5}), ("string_type", ("target", "k", "str"), STR)),
    (Kitchen, ab(target=[]), ("dict_type", ("target",), "Input should be a valid dictionary")),
    (Kitchen, ab(loose={"a": [1, {"b": None}]}, anything=[True]), "ok"),
    (Kitchen, ab(where={"lat": 1, "lon": 2, "label": None}), null_refused("label", ("where",))),
    (
        Kitchen,
        ab(where={"lat": 91}),
        ("less_than_equal", ("where", "lat"), "Input should be less than or equal to 90"),
    ),
    (
        Kitchen,
        ab(where={"lat": 0, "lon": 180.5}),
        ("less_than", ("where", "lon"), "Input should be less than 180.5"),
    ),
    (
        Kitchen,
        ab(where={"lat": 0, "label": "Ab"}),
        ("string_pattern_mismatch", ("where", "label"), "String should match pattern '^[a-z]+$'"),
    ),
    (Kitchen, ab(where={"lat": 0, "x": 1}), ("extra_forbidden", ("where", "x"), EXTRA)),
    (
        Kitchen,
        ab(where=5),
        ("model_type", ("where",), "Input should be a valid dictionary or instance of Point"),
    ),
    (Kitchen, ab(route=[{"lat": 1}, {}]), ("missing", ("route", 1, "lat"), "Field required")),
    (Kitchen, ab(checked="x"), ("assertion_error", ("checked",), "Assertion failed, x is reserved")),
    (Kitchen, {"name": "ab", "\ud800": 1}, not_utf8("'\\ud800'")),
    (Audited, {"text": "hi"}, "ok"),
    (Audited, {"text": "boom"}, ("value_error", (), "Value error, boom is not allowed")),
    (StrictAudited, {"text": "hi", "level": "high"}, "ok"),
    (
        StrictAudited,
        {"text": "boom", "level": "high"},
        ("value_error", (), "Value error, boom is not allowed"),
    ),
    (Open, {"known": 1, "other": [1], "gone": None}, null_refused("gone")),
    (Open, {"known": "1"}, ("int_type", ("known",), INT)),
]


@pytest.mark.parametrize(("cls", "data", "expected"), ROWS)
def test_row(cls: type[Params], data: dict[str, Any], expected: Any) -> None:
    mine = outcome(cls, data)
    assert mine == outcome(twin(cls), data)
    if expected == "ok":
        assert mine[0] == "ok"
    else:
        assert mine[0] == "invalid"
        kind, loc, msg, *_ = mine[1][0]
        assert (kind, loc, msg) == expected


@pytest.mark.parametrize("cls", CLASSES)
def test_schema_is_pydantics(cls: type[Params]) -> None:
    import json

    mine, theirs = clean_schema(cls.model_json_schema()), clean_schema(twin(cls).model_json_schema())
    assert json.dumps(mine) == json.dumps(theirs)


@pytest.mark.parametrize("cls", CLASSES)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_verdicts_are_pydantics(cls: type[Params], data: st.DataObject) -> None:
    args = data.draw(
        objects(clean_schema(cls.model_json_schema())) | st.dictionaries(st.text(max_size=6), hostile)
    )
    assert outcome(cls, args) == outcome(twin(cls), args)


def test_a_null_field_is_a_tool_error_when_a_validator_says_so() -> None:
    with pytest.raises(ToolError, match="text may not be null"):
        Audited.model_validate({"text": None})
    assert outcome(Audited, {"text": None}) == outcome(twin(Audited), {"text": None})


def test_instances_read_like_pydantic_models() -> None:
    k = Kitchen.model_validate({"name": "ab", "where": {"lat": 2}, "words": [" w "]})
    assert (k.name, k.count, k.words, k.tags, k.where.lat, k.where.lon) == ("ab", 1, ["w"], [], 2.0, 0)
    assert isinstance(k.where, Point) and type(k.where.lat) is float
    assert k.model_dump()["where"] == {"lat": 2.0, "lon": 0, "label": None}
    assert k == Kitchen.model_validate({"name": "ab", "where": {"lat": 2}, "words": ["w"]})
    assert repr(Point.model_validate({"lat": 1})) == "Point(lat=1.0, lon=0, label=None)"
    assert Kitchen(name="ab").count == 1
    o = Open.model_validate({"x": 1})
    assert (o.model_extra, o.x, o.model_dump()) == ({"x": 1}, 1, {"known": 0, "x": 1})
    assert Kitchen.model_validate({"name": "ab"}).model_extra is None


def test_mutable_defaults_are_never_shared() -> None:
    a, b = Kitchen.model_validate({"name": "ab"}), Kitchen.model_validate({"name": "cd"})
    a.words.append("x")
    a.tags.append("y")
    a.loose["z"] = 1
    assert (b.words, b.tags, b.loose) == (["w"], [], {})
    assert a.home == b.home and a.home is not b.home


def test_validation_error_reads_like_pydantics() -> None:
    with pytest.raises(ValidationError) as e:
        Kitchen.model_validate({"count": "2", "bogus": 1})
    assert e.value.error_count() == 3
    assert str(e.value).splitlines()[:3] == [
        "3 validation errors for Kitchen",
        "count",
        "  Input should be a valid integer [type=int_type, input_value='2', input_type=str]",
    ]


def test_registry_envelope_names_the_field_and_the_rest() -> None:
    reg = Registry({})
    reg.register(ToolSpec("kitchen", "test", "read_only", "A stand-in.", Kitchen, lambda p, c: {}))
    with pytest.raises(ToolError) as e:
        reg.parse(reg.get("kitchen"), {"name": "ab", "count": True, "where": {"lat": "n"}})
    assert e.value.code == "invalid_input"
    assert e.value.message == (
        "count: Input should be a valid integer (and 1 more). Run: fermix tool kitchen --schema"
    )
    assert e.value.details["errors"] == [
        {"field": "count", "message": "Input should be a valid integer", "type": "int_type", "got": True},
        {"field": "where.lat", "message": "Input should be a valid number", "type": "float_type"},
    ]


@pytest.mark.parametrize(
    "annotation",
    [
        "set[int]",
        "tuple[int, ...]",
        "dict[int, str]",
        "int | list[int]",
        "Annotated[int, Field(max_length=3)]",
        "Annotated[str, AfterValidator(_no_x), Field(max_length=3)]",
        "Annotated[list[int], Field(ge=1)]",
        "Annotated[int | str, Field(ge=1)]",
        "Literal[1.5]",
        "Annotated[int, Field(ge=1.5)]",
    ],
)
def test_what_the_subset_does_not_cover_is_refused_at_first_use(annotation: str) -> None:
    namespace: dict[str, Any] = {"__annotations__": {"value": annotation}, "__module__": __name__}
    cls = type("Unsupported", (Params,), namespace)
    with pytest.raises(TypeError, match="field 'value'"):
        cls.model_validate({})


def test_only_before_and_after_model_validators_are_supported() -> None:
    with pytest.raises(TypeError, match="mode='before'"):
        model_validator(mode="wrap")  # type: ignore[arg-type]
