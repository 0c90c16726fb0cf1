"""`fermix tool list` shows every kind of tool the caller may run; `fermix capabilities` lists their records.

Built-ins and skills are listed without starting anything; MCP servers' tools only when asked for
(`tool list --mcp`, `capabilities` without `--kind` or with `--kind mcp`), which starts the servers.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Env
from tests.mcp.test_mcp_client import configure, stub
from tests.skills.test_skills import write_skill


def _world(world: Env) -> Path:
    """A skill and a stdio MCP server; the path of the server's log, made when it starts."""
    configure(world, {"stub": stub()})
    write_skill(world.fermix_home / "skills", "notes", "name: notes\ndescription: Tidy my notes")
    return world.fermix_home / "logs" / "mcp-stub.log"


def test_tool_list_shows_skills_with_their_kind_and_starts_no_server(world: Env) -> None:
    started = _world(world)
    r = world.run("tool", "list", "--json")
    assert r.code == 0, r.stderr
    rows = {x["name"]: x for x in r.json()}
    assert rows["notes"]["kind"] == "skill" and rows["notes"]["policy_class"] == "exec"
    assert rows["repo_overview"]["kind"] == "skill"  # the bundled one
    assert rows["file_read"]["kind"] == "builtin"
    assert not any(n.startswith("mcp_") for n in rows)
    assert not started.exists()  # listing started no MCP server
    r = world.run("tool", "list")
    assert r.code == 0 and any(line.split()[:2] == ["notes", "skill"] for line in r.stdout.splitlines())
    assert "MCP servers stub: their tools are listed with --mcp" in r.stderr
    assert not started.exists()
    # a guest sees no skill (class exec), as it may run none
    rows = world.run("--trust", "guest", "tool", "list", "--json").json()
    assert "notes" not in {x["name"] for x in rows}


def test_tool_list_with_mcp_lists_the_servers_tools(world: Env) -> None:
    started = _world(world)
    r = world.run("tool", "list", "--mcp", "--json")
    assert r.code == 0, r.stderr
    rows = {x["name"]: x for x in r.json()}
    assert rows["mcp_stub_add"]["kind"] == "mcp" and rows["mcp_stub_add"]["policy_class"] == "external_api"
    assert rows["notes"]["kind"] == "skill" and rows["file_read"]["kind"] == "builtin"
    assert started.exists()
    r = world.run("tool", "list", "--help")
    assert r.code == 0 and "--mcp" in r.stdout


def test_capabilities_records_by_kind(world: Env) -> None:
    started = _world(world)
    r = world.run("capabilities", "--kind", "skill", "--json")
    assert r.code == 0, r.stderr
    records = {x["name"]: x for x in r.json()}
    assert set(records) == {"notes", "repo_overview"}
    notes = records["notes"]
    assert notes["kind"] == "skill" and notes["description"] == "Skill: Tidy my notes"
    assert notes["parameters"]["required"] == ["task"]
    assert (notes["policy_class"], notes["owner_only"], notes["hidden_from_agent"]) == ("exec", False, False)
    r = world.run("capabilities", "--kind", "builtin", "--json")
    assert r.code == 0, r.stderr
    records = {x["name"]: x for x in r.json()}
    assert {x["kind"] for x in records.values()} == {"builtin"} and "notes" not in records
    fr = records["file_read"]
    assert fr["owner_only"] is True and fr["parameters"]["required"] == ["path"]
    assert fr["metadata"]["category"] == "filesystem"
    assert "not_found" in {f["tag"] for f in fr["metadata"]["failure_modes"]}
    assert not started.exists()  # builtin and skill start no server
    r = world.run("capabilities", "--kind", "mcp", "--json")
    assert r.code == 0, r.stderr
    records = {x["name"]: x for x in r.json()}
    assert {x["kind"] for x in records.values()} == {"mcp"}
    assert records["mcp_stub_add"]["parameters"]["required"] == ["a", "b"]
    r = world.run("capabilities")
    assert r.code == 0, r.stderr
    kinds = {line.split()[0]: line.split()[1] for line in r.stdout.splitlines()}
    assert (kinds["file_read"], kinds["notes"], kinds["mcp_stub_add"]) == ("builtin", "skill", "mcp")
    names = list(kinds)
    assert names == sorted(names)


def test_capabilities_of_a_guest_and_of_a_server_that_fails(world: Env) -> None:
    configure(world, {"broken": stub("crash")})
    rows = world.run("--trust", "guest", "capabilities", "--json").json()
    assert rows and all(x["policy_class"] == "read_only" and not x["owner_only"] for x in rows)
    r = world.run("capabilities", "--json")
    assert r.code == 1
    assert "file_read" in {x["name"] for x in r.json()}  # the rest is listed
    assert "MCP server broken skipped:" in r.stderr
    r = world.run("capabilities", "--kind", "nope")
    assert r.code == 2 and "--kind" in r.stderr
