"""display_path: a canonical path shown relative to the working directory when inside it."""

from __future__ import annotations

import posixpath

from hypothesis import given
from hypothesis import strategies as st

from fermix_cli.tools.coding.pathrules import display_path

_part = st.sampled_from(["a", "b", "ab", "a.b", "é", ".hidden", "a b"])
_abs = st.lists(_part, max_size=4).map(lambda parts: "/" + "/".join(parts))


@given(cwd=_abs, path=_abs)
def test_display_path_agrees_with_relpath(cwd: str, path: str) -> None:
    shown = display_path(path, cwd)
    if path == cwd:
        assert shown == "."
    elif path.startswith(cwd.rstrip("/") + "/"):
        assert shown == posixpath.relpath(path, cwd)
    else:
        assert shown == path  # outside the working directory: absolute


def test_prefix_siblings_are_not_inside() -> None:
    assert display_path("/work/ab/x", "/work/a") == "/work/ab/x"
    assert display_path("/work/a/x", "/work/a") == "x"
    assert display_path("/x/y", "/") == "x/y"
