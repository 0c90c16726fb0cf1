"""Subagent identities: agent files (Claude Code's format) that give `subagents` workers a role, tools
and a model; discovery, the worker's system prompt and tools, model precedence, and the CLI listing."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.agent.subagents.identities import parse_identity
from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from tests.agent.model_server import ModelServer, text
from tests.conftest import Env

REVIEWER = """\
---
name: reviewer
description: Reviews code for bugs. Use after edits.
tools: Read, Grep, Bash(git:*), TodoWrite
model: inherit
color: red
---
You are a careful code reviewer. Say REVIEWER-ROLE in every answer.
"""


def agent_file(directory: Path, filename: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / filename
    path.write_text(text)
    return path


def identity(name: str, body: str, *, tools: str | None = None, model: str | None = None) -> str:
    lines = ["---", f"name: {name}", f"description: The {name} identity"]
    if tools is not None:
        lines.append(f"tools: {tools}")
    if model is not None:
        lines.append(f"model: {model}")
    return "\n".join([*lines, "---", body, ""])


def agents(world: Env) -> Path:
    return world.fermix_home / "agents"


def mock_script(world: Env, routes: list[dict[str, Any]], extra: str = "") -> None:
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    path = world.fermix_home / "workers.json"
    path.write_text(json.dumps({"by_prompt": routes}))
    (world.fermix_home / "config.toml").write_text(
        f'[fermix_core.agent]\nprovider = "mock"\n\n[fermix_core.providers.mock]\nscript = "{path}"\n' + extra
    )


@pytest.fixture
def server(world: Env) -> Iterator[ModelServer]:
    """A 127.0.0.1 Chat Completions server as the workers' provider (`local`, default model `test-model`)."""
    srv = ModelServer()
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text(
        '[fermix_core.agent]\nprovider = "local"\n'
        f'[fermix_core.providers.local]\ntype = "openai"\nbase_url = "{srv.base}/v1"\n'
        'default_model = "test-model"\nmax_retries = 0\n'
        '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
    )
    try:
        yield srv
    finally:
        srv.close()


def run(world: Env, args: dict[str, Any]) -> Any:
    ctx = world.context(cwd=str(world.project))
    try:
        return default_registry().invoke("subagents", args, ctx)
    finally:
        ctx.close()


def worker_rows(world: Env, sql: str) -> list[Any]:
    ctx = world.context()
    try:
        return [dict(r) for r in ctx.state.query(sql)]
    finally:
        ctx.close()


def system_of(request: dict[str, Any]) -> str:
    (system,) = [m["content"] for m in request["messages"] if m["role"] == "system"]
    return str(system)


def tools_of(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


# ----- parsing ------------------------------------------------------------------------------------


def test_a_claude_code_agent_file_loads_with_its_tools_mapped() -> None:
    found = parse_identity(REVIEWER.encode(), "/a/reviewer.md")
    assert (found.name, found.description) == ("reviewer", "Reviews code for bugs. Use after edits.")
    assert found.tools == ("file_read", "content_search")
    assert found.unmapped_tools == ("Bash(git:*)", "TodoWrite")  # granting nothing
    assert found.model is None  # inherit
    assert found.instructions == "You are a careful code reviewer. Say REVIEWER-ROLE in every answer."


@pytest.mark.parametrize(
    ("tools_line", "tools"),
    [
        ("tools: [Read, glob_search, WebFetch]", ("file_read", "glob_search", "web_fetch")),
        ("tools:\n  - Grep\n  - Glob", ("content_search", "glob_search")),
        ("tools: Read,Read , Grep", ("file_read", "content_search")),
        ("tools:", ()),  # present but blank: no tools, never "all"
        ("tools: []", ()),
        ("", None),  # absent: the workers' tools as they are
    ],
)
def test_tools_as_a_list_or_a_comma_separated_string(tools_line: str, tools: Any) -> None:
    data = f"---\nname: a\ndescription: d\n{tools_line}\n---\nbody\n".encode()
    assert parse_identity(data, "/x/a.md").tools == tools


@pytest.mark.parametrize(
    ("data", "code", "where"),
    [
        ("---\ndescription: d\n---\nbody\n", "invalid_frontmatter", "/x/a.md:2: missing required key: name"),
        ("---\nname: a\n---\nbody\n", "invalid_frontmatter", "/x/a.md:2: missing required key: description"),
        ("---\nname: a\ndescription:\n---\nbody\n", "invalid_frontmatter", "/x/a.md:3: missing required key"),
        ("---\nname: a b\ndescription: d\n---\nbody\n", "invalid_name", "/x/a.md:2: name 'a b' must match"),
        (
            "---\nname: a\ndescription: d\ncolor: [red\n---\nbody\n",
            "invalid_frontmatter_line",
            "/x/a.md:5: YAML",
        ),
        (
            "---\nname: a\ndescription: d\ntools: 5\n---\nbody\n",
            "invalid_frontmatter",
            "/x/a.md:4: tools must",
        ),
        (
            "---\nname: a\ndescription: d\ntools: [Read, 3]\n---\nb\n",
            "invalid_frontmatter",
            "/x/a.md:4: tools",
        ),
        ("---\nname: a\ndescription: d\nmodel:\n---\nbody\n", "invalid_frontmatter", "/x/a.md:4: model must"),
        ("---\nname: a\ndescription: d\n---\n\n  \n", "invalid_frontmatter", "/x/a.md:5: the instructions"),
        ("name: a\ndescription: d\n", "invalid_frontmatter", "/x/a.md:1: an agent file must start"),
        ("---\nname: a\ndescription: d\nbody\n", "invalid_frontmatter", "/x/a.md:1: the frontmatter has no"),
        ("---\nname: &n a\ndescription: *n\n---\nb\n", "invalid_frontmatter", "/x/a.md:3: YAML aliases"),
    ],
)
def test_bad_files_are_typed_errors_naming_file_and_line(data: str, code: str, where: str) -> None:
    with pytest.raises(ToolError) as e:
        parse_identity(data.encode(), "/x/a.md")
    assert e.value.code == code
    assert e.value.message.startswith(where), e.value.message


def test_an_oversized_file_is_refused_and_a_bom_or_crlf_is_not() -> None:
    big = f"---\nname: a\ndescription: d\n---\n{'x' * 65_536}\n".encode()
    with pytest.raises(ToolError) as e:
        parse_identity(big, "/x/a.md")
    assert e.value.code == "too_large" and "/x/a.md:1:" in e.value.message
    windows = "\ufeff---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n".encode()
    assert parse_identity(windows, "/x/a.md").instructions == "body"


# ----- discovery -----------------------------------------------------------------------------------


def listed(world: Env, *extra: str) -> Any:
    r = world.run("subagents", "identities", "--json", *extra)
    assert r.code == 0, r.stderr
    return r.json()


def test_discovery_refuses_symlinks_and_non_files_and_skips_bad_files(world: Env) -> None:
    agent_file(agents(world), "reviewer.md", REVIEWER)
    outside = agent_file(world.root / "elsewhere", "linked.md", identity("linked", "x"))
    (agents(world) / "linked.md").symlink_to(outside)
    (agents(world) / "folder.md").mkdir()
    agent_file(agents(world), "broken.md", "---\nname: broken\ndescription: [x\n---\nb\n")
    agent_file(agents(world), "notes.txt", "not an agent file")
    out = listed(world)
    assert [i["name"] for i in out["identities"]] == ["reviewer"]
    errors = {Path(e["path"]).name: e for e in out["errors"]}
    assert set(errors) == {"linked.md", "folder.md", "broken.md"}
    assert errors["linked.md"]["code"] == "symlink_refused"
    assert errors["folder.md"]["code"] == "not_a_file"
    assert errors["broken.md"]["code"] == "invalid_frontmatter_line"
    assert errors["broken.md"]["message"].startswith(f"{agents(world) / 'broken.md'}:")


def test_the_first_root_wins_a_duplicate_name_and_the_other_is_reported(world: Env) -> None:
    world.fermix_home.mkdir(parents=True)
    (world.fermix_home / "config.toml").write_text(
        '[fermix_core.subagents]\nroots = ["claude-agents", "missing"]\n'
    )
    home = agent_file(agents(world), "reviewer.md", REVIEWER)
    other = agent_file(world.fermix_home / "claude-agents", "review.md", identity("reviewer", "other"))
    agent_file(world.fermix_home / "claude-agents", "tester.md", identity("tester", "tests"))
    out = listed(world)
    assert [(i["name"], i["path"], i["root"]) for i in out["identities"]] == [
        ("reviewer", str(home), "home"),
        ("tester", str(world.fermix_home / "claude-agents" / "tester.md"), "config"),
    ]
    duplicate, missing = out["errors"]
    assert duplicate["code"] == "duplicate_identity" and duplicate["path"] == str(other)
    assert str(home) in duplicate["message"]
    assert missing["code"] == "invalid_identity_root" and "'missing'" in missing["message"]


def test_a_model_fermix_cannot_resolve_is_a_load_error_at_its_line(world: Env) -> None:
    # No provider configured and no key in the environment: `llama3` has nowhere to run.
    path = agent_file(agents(world), "writer.md", identity("writer", "w", model="llama3"))
    agent_file(agents(world), "plain.md", identity("plain", "p"))
    out = listed(world)
    assert [i["name"] for i in out["identities"]] == ["plain"]
    (error,) = out["errors"]
    assert error["code"] == "no_provider"
    assert error["message"].startswith(f"{path}:4: model 'llama3' cannot be used:")


def test_a_claude_alias_without_an_anthropic_provider_is_the_default_and_the_listing_says_so(
    world: Env, server: ModelServer
) -> None:
    """`model: sonnet` (Claude Code's alias) on a setup with no Anthropic provider: the identity loads,
    `fermix subagents identities` says the default is used, and the worker runs on the default model
    instead of sending `sonnet` to a server that does not know it."""
    agent_file(agents(world), "writer.md", identity("writer", "Write.", model="sonnet"))
    r = world.run("subagents", "identities")
    assert r.code == 0 and r.stderr == "", r.stderr
    assert (
        "  model: sonnet (not available: no Anthropic provider; the default is used)" in r.stdout.splitlines()
    )
    (entry,) = world.run("subagents", "identities", "--json").json()["identities"]
    assert (entry["model"], entry["model_note"]) == (
        "sonnet",
        "not available: no Anthropic provider; the default is used",
    )
    server.queue(text("written"))
    out = run(world, {"tasks": [{"id": "w", "task": "write"}], "identity": "writer"})
    assert out["results"][0]["status"] == "completed", out
    assert [s.body["model"] for s in server.seen] == ["test-model"]  # the provider's default


def test_the_built_in_anthropic_provider_counts_only_with_its_key(world: Env) -> None:
    from fermix_cli.agent.providers import claude_family_route

    ctx = world.context()  # no config.toml: only the built-in provider types
    config = ctx.config
    ctx.close()
    assert claude_family_route(config, "sonnet", env={}) is None
    choice = claude_family_route(config, "sonnet", env={"ANTHROPIC_API_KEY": "k"})
    assert choice is not None and (choice.name, choice.model) == ("anthropic", "claude-sonnet-4-5")


@pytest.mark.parametrize(
    ("alias", "default_model", "expected"),
    [
        ("sonnet", None, "claude-sonnet-4-5"),
        ("haiku", None, "claude-haiku-4-5"),
        ("opus", "claude-opus-4-7", "claude-opus-4-7"),  # the provider's own model of that family
        ("haiku", "claude-opus-4-7", "claude-haiku-4-5"),  # ... only of that family
    ],
)
def test_a_claude_alias_runs_on_the_anthropic_provider_when_one_is_configured(
    world: Env, server: ModelServer, alias: str, default_model: str | None, expected: str
) -> None:
    """With a provider of type anthropic configured beside the default (openai-compatible) one, a Claude
    alias is that family on it: the worker's request goes to the Messages API with a Claude model."""
    with (world.fermix_home / "config.toml").open("a") as f:
        f.write(f'[fermix_core.providers.claude]\ntype = "anthropic"\nbase_url = "{server.base}"\n')
        if default_model:
            f.write(f'default_model = "{default_model}"\n')
    agent_file(agents(world), "m.md", identity("m", "Role.", model=alias))
    r = world.run("subagents", "identities")
    assert f"  model: {alias} ({expected} on claude)" in r.stdout.splitlines(), r.stdout
    server.queue(text("ok"))
    out = run(world, {"tasks": [{"id": "a", "task": "t"}], "identity": "m"})
    assert out["results"][0]["status"] == "completed", out
    assert [(s.path.rstrip("/").endswith("/v1/messages"), s.body["model"]) for s in server.seen] == [
        (True, expected)
    ]


# ----- the worker ------------------------------------------------------------------------------------


def test_the_identity_s_instructions_join_the_worker_s_system_prompt_and_its_tools_narrow(
    world: Env, server: ModelServer
) -> None:
    agent_file(agents(world), "reviewer.md", REVIEWER.replace("Read, Grep", "Read, Write, Grep"))
    server.queue(text("reviewed"))
    out = run(world, {"tasks": [{"id": "r", "task": "review a.py"}], "identity": "reviewer"})
    (entry,) = out["results"]
    assert (entry["status"], entry["output"], entry["identity"]) == ("completed", "reviewed", "reviewer")
    (request,) = [s.body for s in server.seen]
    system = system_of(request)
    assert "You are fermix" in system  # fermix's own framing stays
    assert system.endswith(
        "## Your role: reviewer\n\nYou are a careful code reviewer. Say REVIEWER-ROLE in every answer."
    )
    # file_read and content_search (Write is never a worker's; Bash(git:*) and TodoWrite map to nothing)
    assert tools_of(request) == {"file_read", "content_search"}


def test_a_worker_without_an_identity_keeps_its_whole_surface(world: Env, server: ModelServer) -> None:
    server.queue(text("plain"))
    out = run(world, {"tasks": [{"id": "p", "task": "look"}]})
    assert "identity" not in out["results"][0]
    (request,) = [s.body for s in server.seen]
    assert "Your role" not in system_of(request)
    assert {"file_read", "content_search", "glob_search", "web_fetch"} <= tools_of(request)


def test_tools_outside_the_identity_are_refused_when_called(world: Env) -> None:
    """Hiding is not the barrier: a call to a tool the identity does not grant (glob_search, in the
    worker's surface) or cannot grant (file_write, never a worker's) is refused at execution."""
    agent_file(agents(world), "reader.md", identity("reader", "Read only.", tools="Read, Write"))
    (world.project / "a.txt").write_text("hello")
    calls = [
        {"tool_calls": [{"name": "glob_search", "arguments": {"pattern": "*.txt"}}]},
        {"tool_calls": [{"name": "file_write", "arguments": {"path": "w.txt", "content": "x"}}]},
        {"tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]},
        {"text": "done"},
    ]
    mock_script(world, [{"contains": "task r", "responses": calls}])
    out = run(world, {"tasks": [{"id": "r", "task": "task r", "identity": "reader"}]})
    assert out["results"][0]["status"] == "completed"
    assert not (world.project / "w.txt").exists()
    rows = worker_rows(world, "SELECT tool, ok, error_code FROM tool_calls WHERE session_id != 'default'")
    assert [(r["tool"], r["ok"]) for r in rows] == [("glob_search", 0), ("file_write", 0), ("file_read", 1)]
    assert rows[0]["error_code"] == rows[1]["error_code"] == "policy_denied"


def test_an_identity_whose_tools_miss_the_surface_gives_a_worker_with_no_tools(
    world: Env, server: ModelServer
) -> None:
    agent_file(agents(world), "writer.md", identity("writer", "Write things.", tools="Write, Edit"))
    server.queue(text("no tools"))
    out = run(world, {"tasks": [{"id": "w", "task": "write"}], "identity": "writer"})
    assert out["results"][0]["status"] == "completed"
    (request,) = [s.body for s in server.seen]
    assert tools_of(request) == set()


def test_an_identity_s_tools_never_reach_past_the_worker_s_toolset(world: Env, server: ModelServer) -> None:
    """A caller in the coding toolset: the identity's `Bash` and `Read` are that toolset's `bash` and
    `read`, while `web_search`, a personal tool the coding set does not have, is not added."""
    agent_file(agents(world), "coder.md", identity("coder", "Code.", tools="Bash, Read, web_search"))
    server.queue(text("coded"))
    ctx = world.context(cwd=str(world.project), toolset="coding")
    try:
        out = default_registry().invoke(
            "subagents", {"tasks": [{"id": "c", "task": "code"}], "identity": "coder"}, ctx
        )
    finally:
        ctx.close()
    assert out["results"][0]["status"] == "completed"
    (request,) = [s.body for s in server.seen]
    assert tools_of(request) == {"bash", "read"}


@pytest.mark.parametrize(
    ("toolset", "expected"),
    [
        ("fermix", {"file_read", "content_search", "glob_search"}),
        ("coding", {"read", "grep", "find", "list_files"}),
    ],
)
def test_claude_code_tool_names_resolve_in_the_worker_s_toolset(
    world: Env, server: ModelServer, toolset: str, expected: set[str]
) -> None:
    """`tools: Read, Grep, Glob, LS` (a Claude Code agent file) gives a worker its toolset's equivalents:
    the personal set's file_read, content_search and glob_search, or coding's read, grep, find and
    list_files (LS has no exact personal equivalent, so it grants nothing there)."""
    agent_file(agents(world), "scout.md", identity("scout", "Look.", tools="Read, Grep, Glob, LS"))
    server.queue(text("looked"))
    ctx = world.context(cwd=str(world.project), toolset=toolset)
    try:
        out = default_registry().invoke(
            "subagents", {"tasks": [{"id": "s", "task": "look"}], "identity": "scout"}, ctx
        )
    finally:
        ctx.close()
    assert out["results"][0]["status"] == "completed", out
    (request,) = [s.body for s in server.seen]
    assert tools_of(request) == expected


def test_an_unknown_identity_fails_the_call_before_any_worker(world: Env) -> None:
    agent_file(agents(world), "reviewer.md", REVIEWER)
    agent_file(agents(world), "broken.md", "---\nname: broken\n---\nb\n")
    mock_script(world, [{"contains": "t", "responses": [{"text": "x"}]}])
    for args in (
        {"tasks": [{"id": "a", "task": "t"}], "identity": "nobody"},
        {"tasks": [{"id": "a", "task": "t", "identity": "reviewer"}], "identity": "nobody"},
        {"tasks": [{"id": "a", "task": "t"}, {"id": "b", "task": "t", "identity": "broken"}]},
    ):
        with pytest.raises(ToolError) as e:
            run(world, args)
        assert e.value.code == "unknown_identity"
        assert "(available: reviewer)" in e.value.message and "<home>/agents/NAME.md" in e.value.message
        assert e.value.details["available"] == ["reviewer"]
    assert (
        "broken.md did not load" in e.value.message and "missing required key: description" in e.value.message
    )
    assert worker_rows(world, "SELECT id FROM conversations WHERE parent_id IS NOT NULL") == []
    # The same through the CLI: the typed error on stderr, exit 1, nothing on stdout.
    r = world.tool("subagents", {"tasks": [{"id": "a", "task": "t"}], "identity": "nobody"})
    assert (r.code, r.stdout, r.error()["code"]) == (1, "", "unknown_identity")


def test_a_task_s_identity_overrides_the_call_s(world: Env, server: ModelServer) -> None:
    agent_file(agents(world), "reviewer.md", REVIEWER)
    agent_file(agents(world), "tester.md", identity("tester", "Say TESTER-ROLE."))
    server.queue(text("one"), text("two"), text("three"))
    out = run(
        world,
        {
            "tasks": [
                {"id": "a", "task": "first"},
                {"id": "b", "task": "second", "identity": "tester"},
                {"id": "c", "task": "third"},
            ],
            "identity": "reviewer",
            "max_concurrency": 1,
        },
    )
    assert [r.get("identity") for r in out["results"]] == ["reviewer", "tester", "reviewer"]
    roles = [system_of(s.body).rpartition("## Your role: ")[2].split("\n")[0] for s in server.seen]
    assert roles == ["reviewer", "tester", "reviewer"]
    assert "TESTER-ROLE" in system_of(server.seen[1].body)
    assert tools_of(server.seen[1].body) != tools_of(server.seen[0].body)  # tester keeps the surface


@pytest.mark.parametrize(
    ("routing", "call", "model"),
    [
        ("", {}, "identity-model"),  # the identity's model over the provider's default
        ('subagent_model = "routed-model"\n', {}, "identity-model"),  # ... and over routing's
        ('subagent_model = "routed-model"\n', {"model": "call-model"}, "call-model"),  # the call's wins
        ('subagent_model = "routed-model"\n', {"provider": "local"}, "routed-model"),  # as does its provider
    ],
)
def test_model_precedence_call_then_identity_then_routing(
    world: Env, server: ModelServer, routing: str, call: dict[str, Any], model: str
) -> None:
    with (world.fermix_home / "config.toml").open("a") as f:
        f.write(f"[fermix_core.routing]\n{routing}")
    agent_file(agents(world), "m.md", identity("m", "Role.", model="identity-model"))
    server.queue(text("ok"))
    out = run(world, {"tasks": [{"id": "a", "task": "t"}], "identity": "m", **call})
    assert out["results"][0]["status"] == "completed", out
    assert [s.body["model"] for s in server.seen] == [model]


# ----- discoverability ---------------------------------------------------------------------------------


def test_the_model_is_shown_the_installed_identities(world: Env) -> None:
    spec = default_registry().get("subagents")
    ctx = world.context()
    try:
        empty = spec.schema_for(ctx)
        agent_file(agents(world), "reviewer.md", REVIEWER)
        agent_file(agents(world), "long.md", identity("long", "x").replace("The long identity", "y" * 500))
        schema = spec.schema_for(ctx)
    finally:
        ctx.close()
    assert "None is installed" in empty["properties"]["identity"]["description"]
    shown = schema["properties"]["identity"]["description"]
    assert "reviewer: Reviews code for bugs. Use after edits." in shown
    assert "long: " + "y" * 150 in shown and "y" * 200 not in shown  # bounded
    task = schema["properties"]["tasks"]["items"]["properties"]["identity"]["description"]
    assert "reviewer: Reviews code" in task
    assert "reviewer" not in spec.input_schema()["properties"]["identity"]["description"]  # --schema, docs


def test_cli_lists_identities_and_load_errors(world: Env) -> None:
    agent_file(agents(world), "reviewer.md", REVIEWER)
    r = world.run("subagents", "identities")
    assert r.code == 0 and r.stderr == ""
    assert r.stdout.splitlines() == [
        "reviewer: Reviews code for bugs. Use after edits.",
        "  tools: file_read, content_search (not mapped: Bash(git:*), TodoWrite)",
        "  model: inherit",
        f"  file:  {agents(world) / 'reviewer.md'}",
    ]
    agent_file(agents(world), "bad.md", "---\nname: bad\ndescription: d\n---\n")
    r = world.run("subagents", "identities")
    assert r.code == 0 and r.stdout.startswith("reviewer:")  # a bad file is never fatal
    assert r.stderr.startswith(f"not loaded: {agents(world) / 'bad.md'}:5: the instructions")
    strict = world.run("subagents", "identities", "--strict")
    assert strict.code == 1
    data = world.run("subagents", "identities", "--json").json()
    assert data["identities"][0]["tools"] == ["file_read", "content_search"]
    assert [e["code"] for e in data["errors"]] == ["invalid_frontmatter"]


def test_cli_with_none_installed_says_how_to_add_one_and_bad_config_is_bad_input(world: Env) -> None:
    r = world.run("subagents", "identities")
    assert r.code == 0 and "No subagent identities installed. Add one as <home>/agents/NAME.md" in r.stdout
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text('[fermix_core.subagents]\nroots = "not-a-list"\n')
    bad = world.run("subagents", "identities")
    assert bad.code == 2 and "fermix_core.subagents.roots" in bad.stderr
    assert os.listdir(world.fermix_home) == ["config.toml"] or "agents" not in os.listdir(world.fermix_home)


def test_an_agent_file_hard_linked_to_a_protected_file_is_not_read(world: Env) -> None:
    """A second name for a protected file (a hard link, which the symlink check cannot see) is refused
    unread, as skill files are: its body would otherwise go into a worker's system prompt."""
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    secret = world.fermix_home / "auth.json"  # on the protected list
    secret.write_text(identity("leaky", "SECRET-TOKEN-123"))
    agents(world).mkdir(parents=True)
    os.link(secret, agents(world) / "leaky.md")
    agent_file(agents(world), "reviewer.md", REVIEWER)
    out = listed(world)
    assert [i["name"] for i in out["identities"]] == ["reviewer"]
    (error,) = out["errors"]
    assert error["code"] == "protected_path" and Path(error["path"]).name == "leaky.md"
    assert "SECRET-TOKEN-123" not in json.dumps(out)
    with pytest.raises(ToolError) as e:
        run(world, {"tasks": [{"id": "a", "task": "t"}], "identity": "leaky"})
    assert e.value.code == "unknown_identity" and "SECRET-TOKEN-123" not in e.value.message
