"""`core.records.Record`: the semantics of `@dataclass` / `@dataclass(frozen=True)`, checked against
`dataclasses` itself where the two should agree."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib.util
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest

from fermix_cli.core import records
from fermix_cli.core.records import Record, asdict, field, replace


class Point(Record, frozen=True):
    x: int
    y: int = 0


class Tagged(Record):
    name: str
    tags: list[str] = field(default_factory=list)
    count: int = 0
    note: str = field(default="", repr=False, compare=False)
    cache: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    KIND: ClassVar[str] = "tagged"


class Base(Record):
    a: int
    b: str = "b"


class Child(Base):
    c: float = 1.0
    b: str = "child"  # a redeclared base field keeps its place, with the new default


class Checked(Record, frozen=True):
    low: int
    high: int
    span: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("low > high")
        object.__setattr__(self, "span", self.high - self.low)


class Nested(Record):
    point: Point
    points: list[Point]
    by_name: dict[str, Point]
    pair: tuple[Point, int]


# ----- __init__ -------------------------------------------------------------------------------


def test_init_takes_fields_in_order_positionally_or_by_keyword() -> None:
    assert (Point(1, 2).x, Point(1, 2).y) == (1, 2)
    assert Point(y=5, x=4) == Point(4, 5)
    assert Point(3).y == 0
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, 2, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, z=3)  # type: ignore[call-arg]


def test_default_factory_gives_each_instance_its_own_value() -> None:
    one, two = Tagged("one"), Tagged("two")
    one.tags.append("x")
    one.cache["k"] = 1
    assert two.tags == [] and two.cache == {}
    assert Tagged("three", ["given"]).tags == ["given"]


def test_init_false_field_is_not_a_parameter_but_is_set() -> None:
    with pytest.raises(TypeError):
        Tagged("x", [], 0, "", {})  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Tagged("x", cache={})  # type: ignore[call-arg]
    assert Tagged("x").cache == {}


def test_init_false_field_without_default_is_left_unset() -> None:
    class Later(Record):
        a: int
        b: int = field(init=False)

    later = Later(1)
    assert not hasattr(later, "b")
    later.b = 2
    assert later.b == 2


def test_classvar_is_not_a_field() -> None:
    assert "KIND" not in Tagged.__record_fields__
    assert Tagged.KIND == "tagged"
    assert "KIND" not in asdict(Tagged("x"))


def test_a_field_without_default_after_one_with_a_default_is_refused_at_class_creation() -> None:
    with pytest.raises(TypeError, match="'b' without a default"):

        class Bad(Record):  # type: ignore[misc]
            a: int = 0
            b: int

    with pytest.raises(TypeError, match="'c' without a default"):

        class BadChild(Point):  # type: ignore[misc]
            c: int


def test_a_mutable_default_is_refused_as_dataclasses_does() -> None:
    with pytest.raises(ValueError, match="default_factory"):

        class Shared(Record):
            items: list[int] = []  # noqa: RUF012

    with pytest.raises(ValueError):
        field(default=1, default_factory=int)


def test_records_have_slots_and_no_instance_dict() -> None:
    p = Point(1)
    assert not hasattr(p, "__dict__")
    t = Tagged("x")
    with pytest.raises(AttributeError):
        t.other = 1  # type: ignore[attr-defined]


def test_a_generated_init_is_compiled_after_the_first_instances_then_kept() -> None:
    class Lazy(Record):
        a: int

    lazy = Lazy.__init__
    for n in range(records.COMPILE_AFTER):
        assert Lazy(n).a == n
    assert Lazy.__init__ is lazy
    Lazy(-1)
    compiled = Lazy.__init__
    assert compiled is not lazy
    assert Lazy(2).a == 2
    assert Lazy.__init__ is compiled
    assert compiled.__qualname__.endswith("Lazy.__init__")


def _fresh_kinds() -> list[type]:
    class Mixed(Record):
        a: int
        b: list[int] = field(default_factory=list)
        c: str = "c"
        d: int = field(default=4, init=False)
        e: dict[str, int] = field(default_factory=dict, init=False)
        f: int = field(init=False)

    class FrozenChecked(Record, frozen=True):
        low: int
        high: int = 10
        span: int = field(default=0, init=False)

        def __post_init__(self) -> None:
            if self.low > self.high:
                raise ValueError("low > high")
            object.__setattr__(self, "span", self.high - self.low)

    return [Mixed, FrozenChecked]


INIT_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((1,), {}),
    ((1, [2]), {}),
    ((1,), {"c": "x"}),
    ((), {"a": 1, "b": [3], "c": "y"}),
    ((), {"high": 3, "low": 1}),
    ((1, 2, 3, 4), {}),
    ((), {}),
    ((1,), {"a": 2}),
    ((1,), {"d": 5}),
    ((1,), {"nope": 5}),
    ((20,), {}),
]


def _outcome(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        obj = cls(*args, **kwargs)
    except (TypeError, ValueError) as e:
        return type(e)
    return repr(obj), {f: getattr(obj, f, "unset") for f in cls.__record_fields__}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("args", "kwargs"), INIT_CALLS)
def test_the_interpreted_and_the_compiled_init_agree(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    interpreted, compiled = _fresh_kinds(), _fresh_kinds()
    for cls in compiled:
        before = cls.__init__
        for _ in range(records.COMPILE_AFTER + 1):
            with contextlib.suppress(TypeError, ValueError):
                cls(1)
        assert cls.__init__ is not before
    for lazy, real in zip(interpreted, compiled, strict=True):
        assert _outcome(lazy, args, kwargs) == _outcome(real, args, kwargs)
        assert lazy.__init__ is not real.__init__


def test_an_explicit_init_is_kept() -> None:
    class Own(Record):
        a: int

        def __init__(self, text: str) -> None:
            self.a = int(text)

    assert Own("3").a == 3  # type: ignore[arg-type]


# ----- inheritance ------------------------------------------------------------------------------


def test_base_fields_come_first_and_a_redeclared_field_keeps_its_place() -> None:
    assert list(Child.__record_fields__) == ["a", "b", "c"]
    child = Child(1)
    assert (child.a, child.b, child.c) == (1, "child", 1.0)
    assert Child(1, "x", 2.0) == Child(a=1, b="x", c=2.0)
    assert Child.__match_args__ == ("a", "b", "c")
    assert Base(1) != Child(1, "b")  # different classes are never equal


def test_frozen_and_mutable_records_cannot_inherit_from_each_other() -> None:
    with pytest.raises(TypeError, match="frozen"):

        class Thawed(Point, frozen=False):
            pass

    with pytest.raises(TypeError, match="frozen"):

        class Hardened(Base, frozen=True):
            pass

    class Unmarked(Point):  # inherits frozen=True
        z: int = 0

    with pytest.raises(AttributeError):
        Unmarked(1).z = 2  # type: ignore[misc]


def test_match_statement_uses_init_fields() -> None:
    match Point(1, 2):
        case Point(x, y):
            assert (x, y) == (1, 2)
        case _:
            pytest.fail("no match")


# ----- frozen, eq, hash, repr -----------------------------------------------------------------


def test_frozen_fields_cannot_be_assigned_or_deleted() -> None:
    p = Point(1, 2)
    with pytest.raises(AttributeError, match="frozen"):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(AttributeError, match="frozen"):
        del p.x  # type: ignore[misc]
    assert p.x == 1


@dataclasses.dataclass(frozen=True)
class DcPoint:
    x: int
    y: int = 0


@dataclasses.dataclass
class DcTagged:
    name: str
    tags: list[str] = dataclasses.field(default_factory=list)
    count: int = 0
    note: str = dataclasses.field(default="", repr=False, compare=False)


@pytest.mark.parametrize(
    ("left", "right"),
    [((1, 2), (1, 2)), ((1, 2), (1, 3)), ((0, 0), (0, 0)), ((1,), (1, 0))],
)
def test_eq_and_hash_agree_with_dataclasses(left: tuple[int, ...], right: tuple[int, ...]) -> None:
    assert (Point(*left) == Point(*right)) == (DcPoint(*left) == DcPoint(*right))
    assert (hash(Point(*left)) == hash(Point(*right))) == (hash(DcPoint(*left)) == hash(DcPoint(*right)))
    assert len({Point(*left), Point(*right)}) == len({DcPoint(*left), DcPoint(*right)})


def test_compare_false_fields_are_ignored_by_eq_and_hidden_fields_by_repr() -> None:
    assert Tagged("a", note="one") == Tagged("a", note="two")
    assert Tagged("a", count=1) != Tagged("a", count=2)
    assert (DcTagged("a", note="one") == DcTagged("a", note="two")) is True
    assert repr(Tagged("a", ["t"], 2, "n")) == "Tagged(name='a', tags=['t'], count=2)"
    assert repr(Tagged("a", ["t"], 2, "n")) == repr(DcTagged("a", ["t"], 2, "n")).replace(
        "DcTagged", "Tagged"
    )
    assert repr(Point(1, 2)) == "Point(x=1, y=2)"
    assert Point(1) != (1, 0)
    assert Point(1).__eq__((1, 0)) is NotImplemented


def test_mutable_records_are_not_hashable_frozen_ones_are() -> None:
    with pytest.raises(TypeError, match="unhashable"):
        hash(Tagged("a"))
    assert hash(Point(1, 2)) == hash(Point(1, 2))


def test_a_record_defining_its_own_eq_or_hash_keeps_it() -> None:
    class ById(Record):
        id: int
        label: str = ""

        def __eq__(self, other: object) -> bool:
            return isinstance(other, ById) and other.id == self.id

        def __hash__(self) -> int:
            return self.id

    assert ById(1, "a") == ById(1, "b")
    assert hash(ById(7)) == 7


# ----- __post_init__ ---------------------------------------------------------------------------


def test_post_init_validates_and_computes() -> None:
    assert Checked(1, 4).span == 3
    with pytest.raises(ValueError, match="low > high"):
        Checked(5, 1)
    assert Checked(1, 4) == Checked(1, 4)


def test_post_init_runs_for_subclasses_and_replace() -> None:
    class Wider(Checked):
        extra: int = 0

    assert Wider(0, 2, 9).span == 2
    assert replace(Checked(1, 2), high=10).span == 9


# ----- replace and asdict -----------------------------------------------------------------------


def test_replace_builds_a_new_record_through_init() -> None:
    p = Point(1, 2)
    assert p.replace(y=5) == Point(1, 5)
    assert replace(p, x=0) == Point(0, 2)
    assert p == Point(1, 2)
    t = Tagged("a", ["x"], note="kept")
    assert replace(t, count=3) == Tagged("a", ["x"], 3)
    assert replace(t, count=3).note == "kept"
    with pytest.raises(TypeError, match="no init field 'z'"):
        p.replace(z=1)
    with pytest.raises(TypeError, match="no init field 'cache'"):
        replace(t, cache={})


def test_replace_keeps_private_looking_fields() -> None:
    class Handles(Record):
        name: str
        _cache: dict[str, int] | None = field(default=None, repr=False)

    h = Handles("a", _cache={"k": 1})
    assert h.replace(name="b")._cache == {"k": 1}
    assert h.replace(_cache=None)._cache is None


def test_asdict_converts_nested_records_and_containers_like_dataclasses() -> None:
    n = Nested(Point(1, 2), [Point(3)], {"o": Point(0)}, (Point(4, 4), 7))
    got = asdict(n)
    assert got == {
        "point": {"x": 1, "y": 2},
        "points": [{"x": 3, "y": 0}],
        "by_name": {"o": {"x": 0, "y": 0}},
        "pair": ({"x": 4, "y": 4}, 7),
    }
    assert isinstance(got["pair"], tuple)

    @dataclasses.dataclass
    class DcNested:
        point: DcPoint
        points: list[DcPoint]
        by_name: dict[str, DcPoint]
        pair: tuple[DcPoint, int]

    dc = DcNested(DcPoint(1, 2), [DcPoint(3)], {"o": DcPoint(0)}, (DcPoint(4, 4), 7))
    assert got == dataclasses.asdict(dc)
    assert asdict(Tagged("a")) == {"name": "a", "tags": [], "count": 0, "note": "", "cache": {}}


# ----- copy and pickle ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        Point(1, 2),
        Tagged("a", ["t"], 3, "n"),
        Child(1, "x"),
        Checked(1, 3),
        Nested(Point(1), [], {}, (Point(2), 1)),
    ],
    ids=["frozen", "mutable", "inherited", "post_init", "nested"],
)
def test_copy_deepcopy_and_pickle_round_trip(record: Any) -> None:
    for clone in (copy.copy(record), copy.deepcopy(record), pickle.loads(pickle.dumps(record))):
        assert type(clone) is type(record)
        assert clone == record
        assert repr(clone) == repr(record)
        for name in type(record).__record_fields__:
            assert getattr(clone, name) == getattr(record, name)


def test_deepcopy_copies_mutable_fields_and_copy_shares_them() -> None:
    t = Tagged("a", ["t"])
    deep, shallow = copy.deepcopy(t), copy.copy(t)
    t.tags.append("u")
    assert deep.tags == ["t"]
    assert shallow.tags is t.tags


def test_copy_does_not_rerun_post_init_and_keeps_frozen() -> None:
    c = copy.copy(Checked(1, 3))
    assert c.span == 2
    with pytest.raises(AttributeError):
        c.low = 0  # type: ignore[misc]


# ----- type checking -----------------------------------------------------------------------------

MYPY_SAMPLE = """
from typing import ClassVar
from fermix_cli.core.records import Record, field, replace


class Hit(Record, frozen=True):
    path: str
    line: int = 0
    tags: list[str] = field(default_factory=list)
    LIMIT: ClassVar[int] = 5


class Counter(Record):
    n: int = 0
    seen: list[str] = field(default_factory=list, init=False)


h = Hit("a.py", 3, ["x"])
k = Hit(path="b.py")
line: int = h.line
h2: Hit = h.replace(line=4)
h3: Hit = replace(h, line=5)
c = Counter(2)
c.n += 1
{h, k}
"""

MYPY_ERRORS = """
h.line = 4
Hit()
Hit("a", "three")
Counter(1, ["seen"])
"""


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None, reason="mypy is not installed (the test extras have it)"
)
def test_mypy_sees_records_as_dataclasses(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    sample = tmp_path / "sample.py"
    text = textwrap.dedent(MYPY_SAMPLE) + textwrap.dedent(MYPY_ERRORS)
    sample.write_text(text)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(sample),
        ],
        capture_output=True,
        text=True,
        cwd=repo,
        env={"MYPYPATH": str(repo), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    misuses = MYPY_ERRORS.strip().splitlines()
    expected = [n for n, line in enumerate(text.splitlines(), 1) if line in misuses]
    # the sample is accepted; each of the four misuses is an error
    assert sorted({int(e.split(":")[1]) for e in errors}) == expected, run.stdout
    assert len(expected) == 4
