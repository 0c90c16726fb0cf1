"""The search tools' start-up: a warm grep, find or list_files call imports neither dataclasses, inspect
nor pathspec, also in a tree with ignore files (fermix matches their rules itself)."""

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
    make_tree(world.project, FIXTURE)  # with .gitignore, .ignore and .p4ignore
    # The first call caches the config, as on every call but the first.
    assert world.tool(tool, args).code == 0
    # `import dataclasses` brings in inspect (with ast, dis and tokenize), and each @dataclass
    # compiles generated code at import: together about 15 ms of a fresh grep process.
    watched = ["dataclasses", "inspect", "pathspec"]
    r, loaded = world.imports_of(["tool", tool, "--json", json.dumps(args)], watched)
    assert r.code == 0, r.stderr
    assert loaded == []
    assert r.json()["returned"] > 0, "the call walked, matched and printed"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("grep", {"patterns": ["run"]}),
        ("content_search", {"pattern": "run"}),
        ("glob_search", {"pattern": "**/*.py"}),
        ("find", {"query": "run"}),
    ],
)
def test_a_search_call_imports_no_tempfile_shutil_sysconfig_or_base64(
    world: Env, tool: str, args: dict[str, Any]
) -> None:
    """rg found beside the interpreter (a pip install) ends the engine lookup, and rg's stderr goes to
    a pipe: neither tempfile (with random and hashlib), shutil nor sysconfig is imported, about 2.5
    ms of each search process. (Perforce rule files, which need a temporary ignore file, are absent.)
    Nor base64 (0.5 ms), which only a line that is not UTF-8 needs."""
    from fermix_cli.core.search import engines

    engine = engines.locate("rg")
    if engine is None or engine.source != "interpreter":
        pytest.skip("rg is not installed beside this interpreter (the lookup goes on to PATH)")
    make_tree(world.project, {"src/run.py": "def run():\n    pass\n", "README.md": "run it\n"})
    r, loaded = world.imports_of(
        ["tool", tool, "--json", json.dumps(args)], ["tempfile", "shutil", "sysconfig", "base64"]
    )
    assert r.code == 0, r.stderr
    assert loaded == []
