"""The search tools' start-up: a warm grep, find or list_files call imports neither dataclasses nor inspect."""

from __future__ import annotations

import json
from typing import Any

import pytest
from search_fixture import FIXTURE, make_tree

from tests.conftest import Env


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("grep", {"patterns": ["run"], "context": 1}),  # ranked: labels, context rows, the page
        ("grep", {"patterns": ["run"], "mode": "raw"}),
        ("find", {"query": "run"}),
        ("list_files", {"path": "src"}),
    ],
)
def test_warm_search_call_imports_neither_dataclasses_nor_inspect(
    world: Env, tool: str, args: dict[str, Any]
) -> None:
    # No ignore files: their rules are matched with pathspec, which uses dataclasses itself.
    make_tree(world.project, {path: body for path, body in FIXTURE.items() if not path.startswith(".")})
    # The first call caches the config, as on every call but the first.
    assert world.tool(tool, args).code == 0
    # `import dataclasses` brings in inspect (with ast, dis and tokenize), and each @dataclass
    # compiles generated code at import: together about 15 ms of a fresh grep process.
    r, loaded = world.imports_of(["tool", tool, "--json", json.dumps(args)], ["dataclasses", "inspect"])
    assert r.code == 0, r.stderr
    assert loaded == []
    assert r.json()["returned"] > 0, "the call walked, matched and printed"
