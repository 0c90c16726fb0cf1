"""The shared matcher: regex repairs, per-pattern plans, and hits equal to a line-by-line scan."""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fermix_cli.core.errors import ToolError
from fermix_cli.core.search.match import Matcher, is_binary
from fermix_cli.core.search.regexsource import as_literal, repair_regex, required_literal


@pytest.mark.parametrize(
    ("pattern", "repaired"),
    [
        ("fn run(", r"fn run\("),
        ("run)", r"run\)"),
        ("(a)(b", r"(a)\(b"),
        ("((a)", r"\((a)"),
        ("a{2}", "a{2}"),
        ("a{2,}", "a{2,}"),
        ("a{2,5}", "a{2,5}"),
        ("a{,5}", r"a\{,5\}"),
        ("{x}", r"\{x\}"),
        ("map[key", r"map\[key"),
        ("[abc]", "[abc]"),
        ("[]a]", "[]a]"),
        ("[^]a]", "[^]a]"),
        ("[[:alpha:]]+", "[[:alpha:]]+"),
        ("a]", r"a\]"),
        (r"\(literal\)", r"\(literal\)"),
        ("[(]", "[(]"),
        ("end\\", "end\\\\"),
        ("(?:a|b)c", "(?:a|b)c"),
    ],
)
def test_repairs(pattern: str, repaired: str) -> None:
    assert repair_regex(pattern) == repaired
    with warnings.catch_warnings():
        # `[[:alpha:]]` compiles (a POSIX class for `regex`); `re` warns it may be a nested set one day.
        warnings.simplefilter("ignore", FutureWarning)
        re.compile(repaired)


def test_plans() -> None:
    m = Matcher(["plain", "a+b", "fn(", "?x"], regex=True, literal_fallback=True, repair=True)
    assert [p.kind for p in m.plans] == ["regex", "regex", "regex_repaired", "literal_fallback"]
    assert not m.is_literal
    assert Matcher(["fn", "def x"], regex=True, literal_fallback=True, repair=True).is_literal
    with pytest.raises(ToolError) as e:
        Matcher(["?x"], regex=True)
    assert e.value.code == "invalid_regex"
    with pytest.raises(ToolError):
        Matcher([""])


def test_binary_probe() -> None:
    assert is_binary(b"a\x00b") and not is_binary(b"a" * 5000 + b"\x00")
    assert is_binary(b"a" * 5000 + b"\x00", 8192)


def test_no_phantom_line_after_the_final_newline() -> None:
    m = Matcher(["x*"], regex=True)
    assert [h.line for h in m.lines(b"a\nb\n")] == [1, 2]
    assert [h.line for h in m.lines(b"a\nb")] == [1, 2]


TEXT = st.lists(st.sampled_from(["ab", "a", "b", "", "xyz", "abab", "\r", " ", "é"]), max_size=12).map(
    "\n".join
)


@settings(max_examples=200, deadline=None)
@given(TEXT, st.lists(st.sampled_from(["a", "ab", "b", "z", "é", "a b"]), min_size=1, max_size=3))
def test_literal_hits_equal_a_line_scan(text: str, needles: list[str]) -> None:
    data = text.encode()
    got = [(h.line, data[h.start : h.end]) for h in Matcher(needles).lines(data)]
    lines = data.split(b"\n")
    want = [(i + 1, ln) for i, ln in enumerate(lines) if any(n.encode() in ln for n in needles)]
    assert got == want


@settings(max_examples=200, deadline=None)
@given(
    TEXT,
    st.sampled_from(
        [
            r"a+b",
            r"^a",
            r"b$",
            r"[xy]z",
            r"(ab)+",
            r"a|z",
            r"\s",
            r"\s+\w",
            r"^$",
            r"$",
            r".",
            r"\s*",
            r"[^a]",
        ]
    ),
)
def test_regex_hits_equal_a_line_scan(text: str, pattern: str) -> None:
    data = text.encode()
    got = [h.line for h in Matcher([pattern], regex=True).lines(data)]
    rx = re.compile(pattern.encode())
    lines = data.split(b"\n") if data else []  # an empty file has no lines
    if lines and lines[-1] == b"" and len(lines) > 1:
        lines = lines[:-1]
    want = [i + 1 for i, ln in enumerate(lines) if rx.search(ln)]
    assert got == want


def test_spans_are_relative_to_the_line() -> None:
    data = b"zz\nab ab\n"
    m = Matcher(["ab"])
    hit = next(iter(m.lines(data)))
    assert m.spans(data, hit.start, hit.end) == [(0, 2), (3, 5)]
    r = Matcher([r"a\w"], regex=True)
    assert r.spans(data, hit.start, hit.end) == [(0, 2), (3, 5)]


@pytest.mark.parametrize(
    ("source", "text"),
    [(r"frozenset\(", "frozenset("), (r"a\.b", "a.b"), (r"a\\b", "a\\b"), ("abc", "abc"),
     (r"\w", None), ("a.b", None), (r"x\d", None), ("a\\", None), (r"\1", None), ("a|b", None)],
)  # fmt: skip
def test_regexes_that_only_spell_text_are_searched_as_literals(source: str, text: str | None) -> None:
    assert as_literal(source) == text
    if text is not None:
        data = f"x\n{text} y\nz {text}\n".encode()
        fast = Matcher([source], regex=True)
        assert fast.is_literal
        assert [h.line for h in fast.lines(data)] == [2, 3]


@pytest.mark.parametrize(
    ("source", "needed"),
    [(r"class \w+Error\(", "class "), (r"def \w+_\w+\(self", "(self"), ("abc|def", None),
     ("foo(bar)?baz", "foo"), ("abcd*", "abc"), ("(?i)hello", None), (r"(a)\1xyz", None),
     (r"\d{3}-\d{4}", None), ("a{2}bcd", "bcd"), (r"\x41bcd", None), (r"import\s+os", "import")],
)  # fmt: skip
def test_required_literal(source: str, needed: str | None) -> None:
    assert required_literal(source) == needed


PIECES = st.sampled_from(
    ["ab", "abc", "x", r"\w+", r"\s", "[ab]", "(cd)?", "e*", "fgh", r"\(", ".", "{", "q{2}"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(PIECES, min_size=1, max_size=5).map("".join),
    st.lists(st.text("abcdefghqx (_", max_size=12), max_size=6),
)
def test_a_required_literal_is_in_every_matching_line(source: str, lines: list[str]) -> None:
    source = repair_regex(source)
    needed = required_literal(source)
    rx = re.compile(source)
    for line in lines:
        if needed is not None and rx.search(line):
            assert needed in line
    data = "\n".join(lines).encode()
    fast = [h.line for h in Matcher([source], regex=True).lines(data)]
    seen = lines if data else []  # an empty file has no lines
    if seen and seen[-1] == "" and len(seen) > 1:
        seen = seen[:-1]  # nor is there a line after a final newline
    assert fast == [i + 1 for i, ln in enumerate(seen) if rx.search(ln)]
