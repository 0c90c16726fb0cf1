"""Black-box: grep, find, list_files and ast_grep through the real `fermix` process."""

from __future__ import annotations

import json

import pytest
from search_fixture import FIXTURE, make_tree

from fermix_cli.core.errors import ToolError
from tests.conftest import Env


def test_grep_cli_json_and_text(world: Env) -> None:
    make_tree(world.project, FIXTURE)
    r = world.tool("grep", {"patterns": ["run"], "limit": 2})
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["format"] == "grouped_v1" and out["returned"] == 2 and out["next_offset"] == 2
    t = world.run(
        "tool", "grep", "--json", json.dumps({"patterns": ["run"], "mode": "raw", "limit": 1}), "--text"
    )
    assert t.code == 0
    # The page note, then what the search left out (bad.txt matches on a line that is not UTF-8).
    assert t.stdout.startswith(
        "docs/running.md:3:To run the tool, call run.\n\n[more matches; use offset=1]\n"
    )
    assert "[incomplete: 1 line left out (invalid_utf8)" in t.stdout
    bad = world.tool("grep", {"patterns": [""]})
    assert bad.code == 2 and bad.stdout == "" and bad.error()["code"] == "invalid_pattern"
    denied = world.tool("grep", {"patterns": ["x"], "path": "~/.ssh"})
    assert denied.code == 3 and denied.error()["code"] == "protected_path"


def test_find_cli(world: Env) -> None:
    make_tree(world.project, FIXTURE)
    r = world.run("tool", "find", "--query", "run", "--text")
    assert r.code == 0 and r.stdout == "src/run.rs\ndocs/running.md\nsrc/lib/runner.py\n"
    r = world.tool("find", {"query": "x" * 600})
    assert r.code == 2 and r.error()["code"] == "query_too_long"


def test_list_files_cli(world: Env) -> None:
    make_tree(world.project, {"a.txt": "x", "b/c.txt": "y"})
    r = world.tool("list_files", {})
    assert r.code == 0 and r.json()["output"] == "a.txt\nb/"
    r = world.tool("list_files", {"path": "a.txt"})
    assert r.code == 1 and r.error()["code"] == "invalid_path"  # the disk's state, not a malformed call


def test_ast_grep_cli_search_rewrite_outline(world: Env) -> None:
    make_tree(world.project, {"app.py": "print('hi')\n"})
    r = world.tool("ast_grep", {"pattern": "print($A)", "rewrite": "log($A)"}, "--text")
    assert r.code == 0 and r.stdout == "@@ app.py:1 bytes[0:11] @@\n-print('hi')\n+log('hi')\n"
    assert (world.project / "app.py").read_text() == "print('hi')\n"
    r = world.tool("ast_grep", {"operation": "outline", "path": "app.py"})
    assert r.code == 0 and r.json()["symbols_returned"] == 0


def test_unknown_language_is_a_clean_input_error(world: Env) -> None:
    make_tree(world.project, {"app.py": "x = 1\n"})
    r = world.tool("ast_grep", {"pattern": "x", "language": "klingon"})
    assert r.code == 2 and r.stdout == ""
    assert r.error()["code"] == "invalid_language"
    assert "panicked" not in r.stderr and "Traceback" not in r.stderr


def test_tools_are_listed_in_the_coding_toolset(world: Env) -> None:
    r = world.run("tool", "list", "--json")
    assert r.code == 0
    names = {t["name"] for t in r.json()}
    assert {"grep", "find", "list_files", "ast_grep"} <= names
    from fermix_cli.core.registry import default_registry

    for name in ("grep", "find", "list_files", "ast_grep"):
        spec = default_registry().get(name)
        assert spec.toolsets == frozenset({"coding"}) and spec.policy_class == "read_only" and spec.owner_only
        assert spec.examples and spec.failure_modes and spec.render is not None


def test_guests_cannot_search_or_list(world: Env, invoke) -> None:
    make_tree(world.project, {"a.py": "x = 1\n"})
    for name, args in (
        ("grep", {"patterns": ["x"]}),
        ("find", {"query": "a"}),
        ("list_files", {}),
        ("ast_grep", {"pattern": "x = $A"}),
    ):
        with pytest.raises(ToolError) as e:
            invoke(name, args, trust="guest")
        assert e.value.code == "policy_denied", name
        assert invoke(name, args)  # the owner may
