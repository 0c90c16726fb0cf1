"""A value past a documented maximum is refused (exit 2), never silently capped; the maximum itself runs.

Through the real CLI, one row per bounded parameter of the coding search tools.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Env

# (tool, base arguments, field, maximum)
BOUNDED = [
    ("grep", {"patterns": ["x"]}, "context", 20),
    ("grep", {"patterns": ["x"]}, "limit", 500),
    ("find", {"query": "x"}, "limit", 200),
    ("list_files", {}, "limit", 5000),
    ("ast_grep", {"pattern": "print($A)"}, "limit", 500),
]


@pytest.mark.parametrize(("tool", "base", "field", "maximum"), BOUNDED)
def test_past_the_maximum_is_refused(
    world: Env, tool: str, base: dict[str, Any], field: str, maximum: int
) -> None:
    (world.project / "a.py").write_text("print(1)\nx = 1\n")
    for value in (maximum + 1, 2**31):
        r = world.tool(tool, {**base, field: value})
        assert r.code == 2, (tool, field, value, r)
        assert r.stdout == ""
        assert field in r.stderr
    schema = world.run("tool", tool, "--schema")
    assert schema.json()["properties"][field]["maximum"] == maximum


@pytest.mark.parametrize(("tool", "base", "field", "maximum"), BOUNDED)
def test_the_maximum_itself_runs(
    world: Env, tool: str, base: dict[str, Any], field: str, maximum: int
) -> None:
    (world.project / "a.py").write_text("print(1)\nx = 1\n")
    r = world.tool(tool, {**base, field: maximum})
    assert r.code in (0, 1), r  # 1: nothing matched, for the tools that say so
    assert '"code":"invalid' not in r.stderr
