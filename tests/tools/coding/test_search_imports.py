"""The search tools' start-up: a warm grep, find or list_files call imports neither dataclasses nor inspect."""

from __future__ import annotations

import json
import os
import subprocess
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
    code = (
        f"import sys; sys.argv=['fermix','tool',{tool!r},'--json',{json.dumps(args)!r}];"
        "from fermix_cli.__main__ import main; rc=main();"
        "print('LOADED', [m for m in ('dataclasses', 'inspect') if m in sys.modules]); sys.exit(rc)"
    )
    proc = subprocess.run(
        [os.sys.executable, "-c", code], capture_output=True, text=True, env=world.env, cwd=world.project
    )
    assert proc.returncode == 0, proc.stderr
    result, loaded = proc.stdout.strip().rsplit("\n", 1)
    assert loaded == "LOADED []"
    assert json.loads(result)["returned"] > 0, "the call walked, matched and printed"
