"""What the schema publishes is what is accepted, and an exit code says whose fault a failure is."""

from __future__ import annotations

import json

import pytest

from fermix_cli.core.registry import default_registry
from tests.conftest import Env


def _nullable(prop: dict) -> bool:
    return {"type": "null"} in prop.get("anyOf", []) or None in prop.get("enum", [])


@pytest.mark.parametrize("name", sorted(s.name for s in default_registry().all()))
def test_null_is_accepted_exactly_where_published(name: str) -> None:
    spec = default_registry().find(name)
    assert spec is not None
    schema = spec.input_schema()
    for field, prop in schema.get("properties", {}).items():
        args = {k: None for k in [field]}
        try:
            spec.params.model_validate(args)
            refused_for_null = False
        except Exception as e:  # ValidationError (or a seed-specific ToolError for null)
            text = str(e)
            refused_for_null = "is null" in text or "null" in text
        if _nullable(prop):
            assert not refused_for_null, (name, field)
        else:
            assert refused_for_null, (name, field)


@pytest.mark.parametrize("value", ["٣", " 3", "3 ", "+ 3", "3_0", "３"])
def test_integer_flags_take_ascii_digits_only(world: Env, value: str) -> None:
    (world.project / "n.txt").write_text("a\nb\nc\nd\n")
    r = world.run("tool", "file_read", "--path", "n.txt", "--offset", value)
    assert r.code == 2 and r.error()["code"] == "invalid_input", r.stderr


def test_integer_flags_take_plain_digits(world: Env) -> None:
    (world.project / "n.txt").write_text("a\nb\nc\nd\n")
    r = world.run("tool", "file_read", "--path", "n.txt", "--offset", "3")
    assert r.code == 0 and r.json()["content"] == "c\nd"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("file_read", {"path": "adir"}),
        ("file_edit", {"path": "adir", "old_string": "a", "new_string": "b"}),
        ("file_write", {"path": "adir", "content": "x"}),
        ("read", {"paths": ["adir"]}),
        ("write", {"path": "adir", "content": "x"}),
        ("content_search", {"pattern": "x", "path": "afile"}),
        ("find", {"query": "x", "path": "afile"}),
        ("tool_help", {"name": "no_such_tool"}),
        ("tool_describe", {"name": "no_such_tool"}),
    ],
)
def test_the_world_not_the_input_is_exit_1(world: Env, tool: str, args: dict) -> None:
    (world.project / "adir").mkdir()
    (world.project / "afile").write_text("x\n")
    r = world.run("--cwd", str(world.project), "tool", tool, "--json", json.dumps(args))
    if r.code == 0:
        pytest.skip(f"{tool} accepts this here")  # content_search searches a single file
    assert r.code == 1, (r.code, r.stderr)


def test_routing_key_enum_holds_when_reading(world: Env) -> None:
    r = world.tool("model_routing_config", {"action": "read", "key": "bogus"})
    assert r.code == 2 and r.error()["code"] == "invalid_key"
    assert world.tool("model_routing_config", {"action": "read", "key": "subagent_model"}).code == 0
