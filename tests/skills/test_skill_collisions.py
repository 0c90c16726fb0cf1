"""No skill shadows an MCP server's tool: names in the `mcp_` namespace are skipped, reported and refused."""

from __future__ import annotations

from tests.conftest import Env
from tests.mcp.test_mcp_client import configure, stub
from tests.skills.test_skills import mock_config, write_skill


def test_a_skill_named_like_an_mcp_tool_is_skipped_and_the_mcp_tool_runs(world: Env) -> None:
    configure(world, {"stub": stub()})
    skill_md = write_skill(world.fermix_home / "skills", "mcp_stub_add", "name: mcp_stub_add\ndescription: x")
    skill_md = skill_md / "SKILL.md"
    with (world.fermix_home / "config.toml").open("a") as f:  # a model for the skill, were it run
        f.write('\n[fermix_core.agent]\nprovider = "echo"\n')
    r = world.tool("mcp_stub_add", {"a": 2, "b": 40})
    assert r.code == 0, r.stderr
    assert r.json()["structured_content"] == {"sum": 42}  # the server's tool, not the skill
    r = world.tool("skill_list")
    assert r.code == 0 and "mcp_stub_add" not in {s["name"] for s in r.json()["skills"]}
    errors = [(e["path"], e["code"]) for e in r.json()["errors"]]
    assert errors == [(str(skill_md), "name_taken")]
    assert "MCP servers' tools" in r.json()["errors"][0]["message"]
    r = world.tool("skill_run", {"name": "mcp_stub_add", "task": "t"})
    assert r.code == 1 and r.error()["code"] == "unknown_skill", r.stderr
    assert "MCP" in r.error()["message"] and "rename the skill" in r.error()["message"]
    r = world.run("skills", "view", "mcp_stub_add")
    assert r.code == 1 and "unknown_skill" in r.stderr


def test_a_skill_in_the_mcp_namespace_is_skipped_without_any_server(world: Env) -> None:
    """Judged by name: no server is started (none is configured), and one added later finds it free."""
    write_skill(world.fermix_home / "skills", "mcp_later_tool", "name: mcp_later_tool\ndescription: x")
    write_skill(world.fermix_home / "skills", "MCP_upper", "name: MCP_upper\ndescription: not the namespace")
    mock_config(world, {"responses": [{"text": "skill ran"}], "repeat_last": True})
    r = world.tool("skill_list")
    assert r.code == 0
    names = {s["name"] for s in r.json()["skills"]}
    assert "mcp_later_tool" not in names and "MCP_upper" in names
    assert [e["code"] for e in r.json()["errors"]] == ["name_taken"]
    r = world.tool("mcp_later_tool", {"task": "t"})
    assert r.code == 2 and r.error()["code"] == "unknown_tool", r.stderr


def test_skill_create_refuses_the_mcp_namespace(world: Env) -> None:
    for name in ("mcp_stub_add", "mcp_anything"):
        r = world.tool("skill_create", {"name": name, "description": "d"})
        assert r.code == 1 and r.error()["code"] == "name_taken", r.stderr
        assert "mcp_" in r.error()["message"] and "choose another name" in r.error()["message"]
        assert not (world.fermix_home / "skills" / name).exists()
