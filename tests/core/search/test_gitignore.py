"""fermix's ignore-rule matcher against pathspec's GitIgnoreSpec, the oracle, on generated rules and paths."""

from __future__ import annotations

import pathspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fermix_cli.core.search.gitignore import IgnoreRules, translate

PIECES = [
    "a",
    "b",
    "ab",
    ".x",
    "*",
    "**",
    "?",
    "[ab]",
    "[!a]",
    "[]a]",
    "[a-",
    "\\*",
    "\\",
    " ",
    "\\ ",
    "#",
    "!",
    "/",
]
LINE = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join)
SEGMENT = st.sampled_from(["a", "b", "ab", "ba", ".x", "a b", "*", "#a", "!a", "[a"])
PATH = st.tuples(st.lists(SEGMENT, min_size=1, max_size=4).map("/".join), st.booleans())


def oracle(lines: list[str]) -> pathspec.GitIgnoreSpec:
    kept = []
    for line in lines:
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except Exception:
            continue  # pathspec raises on a line Git drops or that matches nothing; fermix drops it
        kept.append(line)
    return pathspec.GitIgnoreSpec.from_lines(kept)


def verdict(spec: pathspec.GitIgnoreSpec, path: str) -> bool | None:
    include = spec.check_file(path).include
    return None if include is None else bool(include)


@settings(max_examples=400, deadline=None)  # the CI budget; the example database keeps what failed
@given(st.lists(LINE, min_size=1, max_size=5), st.lists(PATH, min_size=1, max_size=8))
def test_verdicts_equal_pathspec(lines: list[str], paths: list[tuple[str, bool]]) -> None:
    ours = IgnoreRules(lines)
    spec = oracle(lines)
    for path, is_dir in paths:
        p = path + "/" if is_dir else path
        assert ours.check(p) == verdict(spec, p), (lines, p)


@settings(max_examples=400, deadline=None)  # the CI budget; the example database keeps what failed
@given(LINE)
def test_each_line_translates_like_pathspec(line: str) -> None:
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    try:
        want = GitIgnoreSpecPattern.pattern_to_regex(line)
    except ValueError:
        want = (None, None)  # pathspec raises where Git drops the line
    got = translate(line)
    assert got[1] == want[1]
    assert (got[0] is None) == (want[0] is None)


@pytest.mark.parametrize(
    ("lines", "path", "expected"),
    [
        (["*/"], "d/", True),  # every directory
        (["*/"], "x", None),  # but no file at the top
        (["*/", "!keep/"], "keep/", False),
        (["**/"], "a/b/", True),
        (["build/"], "src/build/", True),
        (["build/"], "build", None),  # a file named build is not a directory
        (["/top"], "top", True),
        (["/top"], "a/top", None),
        (["a/**/b"], "a/x/y/b", True),
        (["*.log", "!keep.log"], "keep.log", False),
        # As in pathspec, the file's own rule wins; the walk never gets there, since dir/ is pruned.
        (["dir/", "!dir/keep.txt"], "dir/keep.txt", False),
        (["dir/", "!dir/keep.txt"], "dir/", True),
        (["[z-a]x"], "x", None),  # a range that matches nothing: dropped
        (["!"], "x", None),  # nothing left after `!`: dropped, as Git does
        (["foo\\"], "foo", None),  # a trailing lone backslash: dropped
        (["[a"], "[a", None),  # an unclosed range: dropped
        (["foo\\ "], "foo ", True),  # an escaped trailing space is kept
        (["foo  "], "foo", True),  # plain trailing spaces are not
        (["#c", "", "   "], "c", None),
    ],
)
def test_rules(lines: list[str], path: str, expected: bool | None) -> None:
    assert IgnoreRules(lines).check(path) is expected
