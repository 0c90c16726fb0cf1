"""The deferral bridges (tool_search, tool_describe, tool_call), deferral in the loop, and tool_help."""

from __future__ import annotations

import json
import math
import sqlite3
from typing import Any

import pytest

from fermix_cli.agent.assemble import Agent, AgentOptions
from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import Params, Registry, ToolSpec
from fermix_cli.tools.meta.bm25 import bm25_scores, tokenize
from tests.conftest import Env


class IssueParams(Params):
    title: str
    body: str | None = None


class NoteParams(Params):
    text: str


def plugin_tools() -> list[ToolSpec]:
    def handler(p: Any, ctx: Any) -> dict[str, Any]:
        return {"echo": p.model_dump()}

    return [
        ToolSpec(
            "mcp_github_create_issue",
            "github",
            "external_api",
            "Create an issue in a GitHub repository.",
            IssueParams,
            handler,
            kind="mcp",
        ),
        ToolSpec(
            "mcp_github_list_pulls",
            "github",
            "read_only",
            "List open pull requests of a repository.",
            NoteParams,
            handler,
            kind="mcp",
        ),
        ToolSpec(
            "notes_append",
            "notes",
            "read_write",
            "Append a line to the user's notebook.",
            NoteParams,
            handler,
            kind="plugin",
        ),
        ToolSpec(
            "weather_now",
            "weather",
            "network",
            "Current weather for a city.",
            NoteParams,
            handler,
            kind="plugin",
        ),
    ]


@pytest.fixture
def registry() -> Registry:
    reg = Registry()
    for spec in plugin_tools():
        reg.register(spec)
    return reg


def ctx_for(world: Env, registry: Registry, **kw: Any) -> Any:
    ctx = world.context(**kw)
    ctx.extras["registry"] = registry
    return ctx


def run(world: Env, registry: Registry, name: str, args: dict[str, Any], **kw: Any) -> Any:
    ctx = ctx_for(world, registry, **kw)
    try:
        return registry.invoke(name, args, ctx)
    finally:
        ctx.close()


# ----- BM25 -----------------------------------------------------------------------------------------


def test_tokens_are_lowercase_alphanumeric_runs() -> None:
    assert tokenize("mcp_github_create_issue") == ["mcp", "github", "create", "issue"]
    assert tokenize("Create an Issue, v2!") == ["create", "an", "issue", "v2"]


def test_bm25_matches_the_formula() -> None:
    docs = [["create", "issue", "github"], ["list", "pulls", "github"], ["weather", "city"]]
    scores = bm25_scores("issue", docs)
    avgdl = 8 / 3
    idf = math.log((3 - 1 + 0.5) / (1 + 0.5) + 1)
    expected = idf * 1 * 2.5 / (1 + 1.5 * (1 - 0.75 + 0.75 * 3 / avgdl))
    assert scores[0] == pytest.approx(expected)
    assert scores[1] == scores[2] == 0
    assert bm25_scores("github", docs)[2] == 0 < bm25_scores("github", docs)[0]


# ----- tool_search ------------------------------------------------------------------------------------


def test_tool_search_ranks_deferred_tools(world: Env, registry: Registry) -> None:
    out = run(world, registry, "tool_search", {"query": "create github issue"})
    assert out["query"] == "create github issue"
    assert out["total_available"] == 4
    names = [m["name"] for m in out["matches"]]
    assert names[0] == "mcp_github_create_issue"
    assert names[1] == "mcp_github_list_pulls"
    assert out["matches"][0]["plugin"] == "mcp"
    assert all(not n.startswith(("file_", "tool_")) for n in names)  # built-ins are never deferred


def test_tool_search_uses_parameter_names_and_plugin_names(world: Env, registry: Registry) -> None:
    out = run(world, registry, "tool_search", {"query": "body"})
    assert [m["name"] for m in out["matches"]] == ["mcp_github_create_issue"]
    notes = run(world, registry, "tool_search", {"query": "notebook"})["matches"]
    assert notes == [
        {"name": "notes_append", "plugin": "notes", "description": "Append a line to the user's notebook."}
    ]


def test_tool_search_substring_fallback_and_limit_clamp(world: Env, registry: Registry) -> None:
    out = run(world, registry, "tool_search", {"query": "ther_n"})
    assert [m["name"] for m in out["matches"]] == ["weather_now"]
    assert len(run(world, registry, "tool_search", {"query": "github", "limit": 1})["matches"]) == 1
    assert len(run(world, registry, "tool_search", {"query": "mcp", "limit": 0})["matches"]) == 1
    assert len(run(world, registry, "tool_search", {"query": "mcp", "limit": 500})["matches"]) == 2


def test_tool_search_respects_the_callers_ceiling(world: Env, registry: Registry) -> None:
    out = run(world, registry, "tool_search", {"query": "github issue weather notebook"}, trust="guest")
    assert out["total_available"] == 1
    assert [m["name"] for m in out["matches"]] == ["mcp_github_list_pulls"]
    narrowed = run(
        world,
        registry,
        "tool_search",
        {"query": "github"},
        policy_ceiling=frozenset({"read_only", "read_write"}),
    )
    assert [m["name"] for m in narrowed["matches"]] == ["mcp_github_list_pulls"]


# ----- tool_describe and tool_help ---------------------------------------------------------------------


def test_tool_describe_returns_markdown_and_schema(world: Env, registry: Registry) -> None:
    out = run(world, registry, "tool_describe", {"name": "mcp_github_create_issue"})
    assert out["markdown"].startswith("# mcp_github_create_issue\n")
    assert "(mcp tool)" in out["markdown"]
    assert "- `title` (string, required)" in out["markdown"]
    assert "## Examples" in out["markdown"] and "## Failure modes" in out["markdown"]
    assert out["input_schema"]["required"] == ["title"]


@pytest.mark.parametrize("tool", ["tool_describe", "tool_help"])
def test_hidden_and_missing_tools_get_the_same_answer(world: Env, registry: Registry, tool: str) -> None:
    with pytest.raises(ToolError) as hidden:
        run(world, registry, tool, {"name": "mcp_github_create_issue"}, trust="guest")
    with pytest.raises(ToolError) as missing:
        run(world, registry, tool, {"name": "mcp_nope"}, trust="guest")
    assert hidden.value.message == "Unknown capability: mcp_github_create_issue"
    assert missing.value.message == "Unknown capability: mcp_nope"
    assert hidden.value.code == missing.value.code == "unknown_tool"


# ----- tool_call -------------------------------------------------------------------------------------


def test_tool_call_invokes_the_target_under_policy(world: Env, registry: Registry) -> None:
    out = run(world, registry, "tool_call", {"name": "notes_append", "arguments": {"text": "hi"}})
    assert out == {"echo": {"text": "hi"}}
    with pytest.raises(ToolError) as e:
        run(
            world, registry, "tool_call", {"name": "notes_append", "arguments": {"text": "hi"}}, trust="guest"
        )
    assert e.value.message == "Unknown capability: notes_append"


MISSING = object()


@pytest.mark.parametrize(
    ("arguments", "got"),
    [
        ([1, 2], "arguments an array"),
        ("text", "arguments a string"),
        (5, "arguments a number"),
        (2.5, "arguments a number"),
        (True, "arguments a boolean"),
        (None, "arguments null"),
        (MISSING, "no arguments"),
    ],
)
def test_malformed_tool_call_never_reaches_the_target(
    world: Env, registry: Registry, arguments: Any, got: str
) -> None:
    call = (
        {"name": "notes_append"} if arguments is MISSING else {"name": "notes_append", "arguments": arguments}
    )
    with pytest.raises(ToolError) as e:
        run(world, registry, "tool_call", call)
    assert e.value.code == "invalid_tool_call"
    # JSON's names for what came (null, a string), never Python's (NoneType, str).
    assert e.value.message.startswith(f"Malformed tool_call (got name='notes_append', {got}):"), (
        e.value.message
    )


@pytest.mark.parametrize("call", [{"name": "file_read"}, {"name": "file_read", "arguments": None}])
def test_tool_call_requires_arguments_from_the_cli(world: Env, call: dict[str, Any]) -> None:
    """The seed's table: `arguments` is required (an object); the schema says so and the CLI refuses."""
    schema = world.run("tool", "tool_call", "--schema").json()
    assert (
        schema["required"] == ["name", "arguments"] and schema["properties"]["arguments"]["type"] == "object"
    )
    r = world.tool("tool_call", call)
    assert r.code == 2 and r.error()["code"] == "invalid_tool_call", r.stderr
    got = "arguments null" if "arguments" in call else "no arguments"
    assert r.error()["message"].startswith(f"Malformed tool_call (got name='file_read', {got}):")


def test_bridges_vanish_when_deferral_is_off(world: Env, registry: Registry) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text("[fermix_core.tools.tool_search]\nenabled = false\n")
    with pytest.raises(ToolError) as e:
        run(world, registry, "tool_search", {"query": "github"})
    assert e.value.message == "Unknown capability: tool_search"
    r = world.run("tool", "list", "--json")
    assert "tool_search" not in {t["name"] for t in r.json()}
    r = world.tool("tool_call", {"name": "file_read", "arguments": {"path": "x"}})
    assert r.code == 2 and r.error()["code"] == "unknown_tool"


# ----- deferral in the loop ----------------------------------------------------------------------------


def agent_run(world: Env, registry: Registry, prompt: str, **kw: Any) -> tuple[Any, dict[str, Any]]:
    ctx = world.context(**kw)
    agent = Agent(ctx, AgentOptions(model="echo"), registry=registry)
    try:
        result = agent.run(prompt)
        return result, json.loads(result.response) if result.response else {}
    finally:
        agent.close()
        ctx.close()


def test_deferred_tools_stay_off_the_wire_and_are_listed_in_the_prompt(
    world: Env, registry: Registry
) -> None:
    _, echoed = agent_run(world, registry, "hi")
    assert {"tool_search", "tool_describe", "tool_call"} <= set(echoed["tools"])
    assert not any(n.startswith(("mcp_", "notes_", "weather_")) for n in echoed["tools"])
    assert "## Plugins" in echoed["system"]
    for name in ("mcp_github_create_issue", "notes_append", "weather_now"):
        assert f"- {name}" in echoed["system"]


def test_with_deferral_off_schemas_go_inline(world: Env, registry: Registry) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text("[fermix_core.tools.tool_search]\nenabled = false\n")
    _, echoed = agent_run(world, registry, "hi")
    assert "mcp_github_create_issue" in echoed["tools"] and "notes_append" in echoed["tools"]
    assert "tool_search" not in echoed["tools"] and "## Plugins" not in echoed["system"]


def test_without_deferred_tools_the_bridges_stay_off_the_wire(world: Env) -> None:
    _, echoed = agent_run(world, Registry(), "hi")
    assert "tool_search" not in echoed["tools"] and "## Plugins" not in echoed["system"]


def test_the_loop_unwraps_tool_call(world: Env, registry: Registry) -> None:
    prompt = json.dumps(
        {
            "tool_calls": [
                {"name": "tool_call", "arguments": {"name": "notes_append", "arguments": {"text": "x"}}},
                {"name": "notes_append", "arguments": {"text": "direct"}},
                {"name": "tool_call", "arguments": {"name": "notes_append", "arguments": "not an object"}},
                {"name": "tool_call", "arguments": {"name": "notes_append", "arguments": None}},
                {"name": "tool_call", "arguments": {"name": "notes_append"}},
            ]
        }
    )
    result, echoed = agent_run(world, registry, prompt)
    names = [o.name for o in result.outcomes]
    assert names == ["notes_append", "notes_append", "tool_call", "tool_call", "tool_call"]
    outputs = [r["output"] for r in echoed["tool_results"]]
    assert json.loads(outputs[0]) == {"echo": {"text": "x"}}
    assert json.loads(outputs[1]) == {"echo": {"text": "direct"}}
    for output in outputs[2:]:  # malformed: answered by the bridge, the target never runs
        assert output.startswith("invalid_tool_call: Malformed tool_call (got name='notes_append'"), output
    db = sqlite3.connect(world.fermix_home / "state.db")
    tools = [r[0] for r in db.execute("SELECT tool FROM tool_calls ORDER BY started_at")]
    assert tools == ["notes_append", "notes_append", "tool_call", "tool_call", "tool_call"]


def test_unwrapped_calls_obey_policy_and_loop_detection(world: Env, registry: Registry) -> None:
    wrapped = {"name": "tool_call", "arguments": {"name": "notes_append", "arguments": {"text": "x"}}}
    result, echoed = agent_run(world, registry, json.dumps({"tool_calls": [wrapped]}), trust="guest")
    assert echoed["tool_results"][0]["output"] == "unknown_tool: Unknown capability: notes_append"
    direct = {"name": "notes_append", "arguments": {"text": "x"}}
    prompt = json.dumps({"tool_calls": [[wrapped], [direct], [wrapped], [direct]]})
    result, _ = agent_run(world, registry, prompt)
    assert result.status == "loop_detected"
    assert [o.error_code for o in result.outcomes] == [None, None, "repeated_call", "cancelled"]
