"""fermix as an MCP client: `[mcp.servers.NAME]` tools registered as `mcp_NAME_TOOL`, against real servers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.config import validate_config
from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import Registry
from fermix_cli.core.tooldoc import tool_markdown
from fermix_cli.mcp.client import fermix_names, load_servers, server_for, tool_name
from tests.conftest import REPO, Env

STUB = Path(__file__).with_name("stub_mcp_server.py")
WIRE_SERVER = Path(__file__).with_name("wire_server.py")


def toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def configure(world: Env, servers: dict[str, dict[str, Any]], extra: str = "") -> None:
    world.fermix_home.mkdir(mode=0o700, exist_ok=True)
    text = extra
    for name, block in servers.items():
        text += f"\n[mcp.servers.{name}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in block.items())
    (world.fermix_home / "config.toml").write_text(text)


def stub(*args: str, **more: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(STUB), *args], **more}


ALLOW_LOCAL = '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'


def web(url: str, **more: Any) -> dict[str, Any]:
    """The shared SDK stub over Streamable HTTP (started once), for tests whose subject is not stdio."""
    return {"url": url, **more}


# ----- config and names --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "needle"),
    [
        ({}, "exactly one of command"),
        ({"command": "x", "url": "http://h/mcp"}, "exactly one of command"),
        ({"url": "ftp://h"}, "url"),
        ({"url": "http://h/mcp", "args": ["x"]}, "apply only to a command server"),
        ({"command": "x", "headers": {"a": "b"}}, "apply only to a url server"),
        ({"command": "x", "policy_class": "root"}, "policy_class"),
        ({"command": "x", "env": {"BAD-NAME": "v"}}, "env"),
        ({"command": "x", "surprise": 1}, "surprise"),
    ],
)
def test_server_config_is_validated(block: dict[str, Any], needle: str) -> None:
    with pytest.raises(ToolError) as e:
        validate_config({"mcp": {"servers": {"gh": block}}})
    assert e.value.code == "invalid_config" and needle in e.value.message
    assert e.value.details["key"].startswith("mcp.servers.gh")


@pytest.mark.parametrize("name", ["GitHub", "has space", "x" * 40, "_lead"])
def test_server_names_are_validated(name: str) -> None:
    with pytest.raises(ToolError):
        validate_config({"mcp": {"servers": {name: {"command": "x"}}}})


def test_tool_names() -> None:
    assert tool_name("github", "create_issue") == "mcp_github_create_issue"
    assert tool_name("s", "weird.name/with spaces") == "mcp_s_weird_name_with_spaces"
    assert tool_name("s", "x" * 80) is None
    assert server_for("mcp_my_srv_tool", ["my", "my_srv"]) == "my_srv"
    assert server_for("mcp_other_tool", ["my"]) is None


def _h(remote: str) -> str:
    import hashlib

    return hashlib.sha256(remote.encode()).hexdigest()[:6]


@pytest.mark.parametrize(
    ("remotes", "names"),
    [
        (["add", "echo"], {"add": "mcp_s_add", "echo": "mcp_s_echo"}),
        # the tool whose name needed no rewriting keeps it, whatever the order
        (["a.b", "a_b"], {"a_b": "mcp_s_a_b", "a.b": f"mcp_s_a_b_{_h('a.b')}"}),
        (["a_b", "a.b"], {"a_b": "mcp_s_a_b", "a.b": f"mcp_s_a_b_{_h('a.b')}"}),
        # neither is exact: the first listed keeps it
        (
            ["a.b", "a b", "a/b"],
            {"a.b": "mcp_s_a_b", "a b": f"mcp_s_a_b_{_h('a b')}", "a/b": f"mcp_s_a_b_{_h('a/b')}"},
        ),
        (  # 64 characters, the most a provider takes: the suffix replaces the end
            ["x" * 57 + ".", "x" * 57 + "_"],
            {
                "x" * 57 + "_": "mcp_s_" + "x" * 57 + "_",
                "x" * 57 + ".": "mcp_s_" + "x" * 51 + f"_{_h('x' * 57 + '.')}",
            },
        ),
        (["add", "add"], {"add": "mcp_s_add"}),
        (["x" * 80], {}),
    ],
)
def test_fermix_names_are_unique(remotes: list[str], names: dict[str, str]) -> None:
    assert fermix_names("s", remotes) == names
    assert all(len(n) <= 64 for n in names.values())


def test_tools_whose_names_clash_are_both_reachable(world: Env, tmp_path: Path) -> None:
    """`a.b` and `a_b` both map to mcp_wire_a_b: neither disappears, each call reaches its own tool."""
    configure(world, {"wire": {"command": sys.executable, "args": [str(WIRE_SERVER), str(tmp_path / "log")]}})
    listed = {t["name"]: t for t in world.run("mcp", "tools", "--json").json()["tools"]}
    renamed = f"mcp_wire_a_b_{_h('a.b')}"
    assert {"mcp_wire_a_b", renamed} <= set(listed)
    assert world.tool("mcp_wire_a_b").json()["text"] == "a_b"
    assert world.tool(renamed).json()["text"] == "a.b"
    described = world.tool("tool_describe", {"name": renamed}).json()["markdown"]
    assert "MCP tool 'a.b' on server wire" in described
    log = (world.fermix_home / "logs").glob("*.log")
    assert any(f"'a_b' and 'a.b' both map to mcp_wire_a_b; 'a.b' is {renamed}" in p.read_text() for p in log)


def test_a_name_two_servers_share_means_the_same_tool_listed_and_called(world: Env) -> None:
    """Server w's `a_b` and server w_a's `b` are both mcp_w_a_b: a call by name reaches w_a's (the longest
    server name, `server_for`), so the listing shows that one too, and the clash is logged."""
    from fermix_cli.mcp.toolset import McpToolset

    class Canned(McpToolset):
        def server_tools(self, name: str, config: Any, ctx: Any) -> dict[str, Any]:
            return {"mcp_w_a_b": f"{name}'s tool", f"mcp_{name}_own": f"{name}'s own"}

    configure(world, {"w": {"command": "x"}, "w_a": {"command": "x"}})
    ctx = world.context()
    try:
        loaded = Canned().load(ctx)
    finally:
        ctx.close()
    assert loaded == {"mcp_w_a_b": "w_a's tool", "mcp_w_own": "w's own", "mcp_w_a_own": "w_a's own"}
    assert server_for("mcp_w_a_b", ["w", "w_a"]) == "w_a"


def test_a_listed_tool_is_called_even_when_a_longer_server_name_shares_its_prefix(
    world: Env, tmp_path: Path
) -> None:
    """Server w's `a_b` is mcp_w_a_b; server w_a (no tool `b`) shares the prefix mcp_w_a_: the name still
    means w's tool, listed and called alike (CLI, tool_call, tool_describe)."""
    wire = {"command": sys.executable, "args": [str(WIRE_SERVER), str(tmp_path / "log")]}
    configure(world, {"w": wire, "w_a": wire})
    listed = {t["name"]: t for t in world.run("mcp", "tools", "--json").json()["tools"]}
    assert listed["mcp_w_a_b"]["server"] == "w" and listed["mcp_w_a_add"]["server"] == "w_a"
    found = world.tool("tool_search", {"query": "Say a_b"}).json()
    assert "mcp_w_a_b" in json.dumps(found)
    assert world.tool("mcp_w_a_b").json()["text"] == "a_b"
    assert world.tool("tool_call", {"name": "mcp_w_a_b", "arguments": {}}).json()["text"] == "a_b"
    assert "Say a_b." in world.tool("tool_describe", {"name": "mcp_w_a_b"}).json()["markdown"]
    assert world.tool("mcp_w_a_add", {"a": 1, "b": 2}).json()["structured_content"] == {"sum": 3}


# ----- the CLI against a real stdio server ---------------------------------------------------------


def test_mcp_tools_lists_fermix_names(world: Env) -> None:
    configure(world, {"stub": stub(), "off": stub(enabled=False)})
    r = world.run("mcp", "tools", "--json")
    assert r.code == 0, r.stderr
    data = r.json()
    names = [t["name"] for t in data["tools"]]
    assert names == sorted(names)
    assert {"mcp_stub_add", "mcp_stub_echo", "mcp_stub_fail", "mcp_stub_weird_name_with_spaces"} <= set(names)
    assert all(t["server"] == "stub" and t["policy_class"] == "external_api" for t in data["tools"])
    assert data["failed"] == {}
    assert world.run("mcp", "servers", "--json").json()[1] == {
        "name": "stub",
        "enabled": True,
        "transport": "stdio",
        "endpoint": f"{sys.executable} {STUB}",
        "policy_class": "external_api",
    }


def test_call_by_name_from_the_cli(world: Env) -> None:
    configure(world, {"stub": stub()})
    r = world.tool("mcp_stub_add", {"a": 2, "b": 40})
    assert r.code == 0, r.stderr
    assert r.json()["structured_content"] == {"sum": 42}
    assert r.stderr == ""  # the server's stderr went to its log
    log = world.fermix_home / "logs" / "mcp-stub.log"
    assert "stub MCP server starting" in log.read_text()
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    r = world.run("tool", "mcp_stub_echo", "--text", "--text-to-send", "x")
    assert r.code == 2 and r.error()["code"] == "unknown_flag"  # flags come from the server's schema
    r = world.run("tool", "mcp_stub_echo", "--json", '{"text":"hi there"}', "--text")
    assert r.code == 0 and r.stdout == "hi there\n"


def test_the_bridges_from_the_cli_see_the_mcp_servers(world: Env, http_server: str) -> None:
    # `fermix tool tool_search` reaches the same toolsets as a model run: the servers' tools are found.
    configure(world, {"stub": web(http_server)}, extra=ALLOW_LOCAL)
    r = world.tool("tool_search", {"query": "add two integers sum"})
    assert r.code == 0, r.stderr
    found = r.json()
    assert found["total_available"] >= 4
    assert found["matches"][0] == {
        "name": "mcp_stub_add",
        "plugin": "mcp",
        "description": found["matches"][0]["description"],
    }
    r = world.tool("tool_describe", {"name": "mcp_stub_add"})
    assert r.code == 0 and r.json()["input_schema"]["required"] == ["a", "b"]
    r = world.tool("tool_call", {"name": "mcp_stub_add", "arguments": {"a": 19, "b": 23}})
    assert r.code == 0, r.stderr
    assert r.json()["structured_content"] == {"sum": 42}
    listed = {t["name"] for t in world.run("tool", "list", "--json").json()}
    assert "tool_search" in listed and "mcp_stub_add" not in listed  # listing starts no server
    r = world.run("--trust", "guest", "tool", "tool_search", "--json", '{"query": "add"}')
    assert r.code == 0 and r.json()["total_available"] == 0  # the server's policy class is external_api
    r = world.run(
        "--trust", "guest", "tool", "tool_call", "--json", '{"name": "mcp_stub_add", "arguments": {}}'
    )
    assert r.code == 1 and r.error()["message"] == "Unknown capability: mcp_stub_add"  # not malformed input


def test_schema_comes_from_the_server(world: Env, http_server: str) -> None:
    configure(world, {"stub": web(http_server)}, extra=ALLOW_LOCAL)
    schema = world.run("tool", "mcp_stub_add", "--schema").json()
    assert schema["required"] == ["a", "b"]
    assert schema["properties"]["a"]["type"] == "integer"


@pytest.mark.parametrize(
    ("tool", "args", "code", "exit_code"),
    [
        ("mcp_stub_add", {"a": "two", "b": 1}, "invalid_input", 2),
        ("mcp_stub_add", {"a": 1}, "invalid_input", 2),
        ("mcp_stub_fail", {}, "mcp_tool_error", 1),
        ("mcp_stub_missing", {}, "unknown_tool", 2),
    ],
)
def test_errors(
    world: Env, tool: str, args: dict[str, Any], code: str, exit_code: int, http_server: str
) -> None:
    configure(world, {"stub": web(http_server)}, extra=ALLOW_LOCAL)
    r = world.tool(tool, args)
    assert r.code == exit_code, r.stderr
    assert r.error()["code"] == code
    if code == "mcp_tool_error":
        assert r.error()["message"] == "boom: the stub failed on purpose"


def test_env_passthrough_and_cwd(world: Env, tmp_path: Path) -> None:
    work = tmp_path / "srv"
    work.mkdir()
    configure(
        world,
        {"stub": stub(env={"STUB_TOKEN": "t0k"}, env_passthrough=["STUB_PASSED"], cwd=str(work))},
    )
    env = {**world.env, "STUB_PASSED": "through", "STUB_SECRET": "never"}
    r = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "tool", "mcp_stub_environment"],
        env=env,
        cwd=world.project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["structured_content"]
    assert got == {"token": "t0k", "passed": "through", "secret": "", "cwd": str(work)}


def test_tools_allowlist(world: Env, http_server: str) -> None:
    configure(world, {"stub": web(http_server, tools=["add"])}, extra=ALLOW_LOCAL)
    names = [t["name"] for t in world.run("mcp", "tools", "--json").json()["tools"]]
    assert names == ["mcp_stub_add"]
    assert world.tool("mcp_stub_echo", {"text": "x"}).error()["code"] == "unknown_tool"


def test_policy_class_from_config_applies_to_guests(world: Env, http_server: str) -> None:
    configure(world, {"stub": web(http_server)}, extra=ALLOW_LOCAL)
    r = world.run("--trust", "guest", "tool", "mcp_stub_add", "--json", '{"a":1,"b":1}')
    assert r.code == 3 and r.error()["code"] == "policy_denied"
    configure(world, {"stub": web(http_server, policy_class="read_only")}, extra=ALLOW_LOCAL)
    r = world.run("--trust", "guest", "tool", "mcp_stub_add", "--json", '{"a":1,"b":1}')
    assert r.code == 0, r.stderr


def test_server_that_fails_to_start(world: Env, http_server: str) -> None:
    configure(world, {"broken": stub("crash"), "stub": web(http_server)}, extra=ALLOW_LOCAL)
    r = world.tool("mcp_broken_anything", {})
    assert r.code == 1 and r.error()["code"] == "mcp_unavailable"
    assert "[mcp.servers.broken]" in r.error()["message"]
    r = world.run("mcp", "tools", "--json")
    assert r.code == 1
    data = r.json()
    assert "broken" in data["failed"] and any(t["name"] == "mcp_stub_add" for t in data["tools"])
    configure(world, {"gone": {"command": "/no/such/mcp-server"}})
    r = world.tool("mcp_gone_x", {})
    assert r.code == 1 and r.error()["code"] == "mcp_unavailable"


def test_a_server_that_exits_at_once_is_reported_with_its_last_words_and_no_traceback(world: Env) -> None:
    script = "echo 'error: MY_API_KEY is not set' >&2; exit 1"
    configure(world, {"broken": {"command": "/bin/sh", "args": ["-c", script]}})
    log = world.fermix_home / "logs" / "mcp-broken.log"
    for args in (["mcp", "tools", "broken"], ["tool", "mcp_broken_anything", "--json", "{}"]):
        r = world.run(*args)
        assert r.code == 1
        assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr
        assert "the server exited (exit status 1): error: MY_API_KEY is not set" in r.stderr
        assert f"the server's log ({log})" in r.stderr and "fermix mcp tools broken" in r.stderr
    assert "Traceback" in (world.fermix_home / "logs" / "fermix.log").read_text()  # kept for the log
    r = world.run("doctor")
    line = next(x for x in r.stdout.splitlines() if "mcp servers" in x)
    assert "not started here" in line and "fermix mcp tools" in line


def test_call_timeout(world: Env) -> None:
    configure(world, {"stub": stub(call_timeout_ms=300)})
    started = time.monotonic()
    r = world.tool("mcp_stub_nap", {"seconds": 5})
    assert r.code == 1 and r.error()["code"] == "timeout", r.stderr
    assert time.monotonic() - started < 30


def test_an_answer_that_is_not_utf8_is_an_mcp_error_not_a_timeout(world: Env, tmp_path: Path) -> None:
    configure(
        world,
        {
            "wire": {
                "command": sys.executable,
                "args": [str(WIRE_SERVER), str(tmp_path / "log")],
                "call_timeout_ms": 120_000,
            }
        },
    )
    started = time.monotonic()
    r = world.tool("mcp_wire_latin1")
    assert time.monotonic() - started < 60  # the call timeout is two minutes
    assert r.code == 1 and r.error()["code"] == "mcp_error", r.stderr
    assert r.error()["message"].startswith("MCP server wire: its answer is not valid UTF-8 (byte 0xff")


def test_a_large_result_is_cut_at_the_cap_and_says_so(world: Env, tmp_path: Path) -> None:
    """A remote tool's 3 MB answer reaches neither a script nor a model whole: 1 MiB, cut between
    characters, and the cut is stated in the JSON and in what a model reads."""
    from fermix_cli.mcp.client import MAX_RESULT_BYTES

    configure(world, {"wire": {"command": sys.executable, "args": [str(WIRE_SERVER), str(tmp_path / "log")]}})
    chars = 1_000_000  # 3 MB of UTF-8, twice over (text and structured content)
    r = world.tool("mcp_wire_big", {"chars": chars})
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["truncated"] is True and out["cap_bytes"] == MAX_RESULT_BYTES
    assert out["result_bytes"] > 6_000_000
    # The text is in `text` and in its content block: 1 MiB in all, so half of it each.
    assert out["text"] == "\u20ac" * (MAX_RESULT_BYTES // 2 // 3) and "structured_content" not in out
    assert out["content"] == [{"type": "text", "text": out["text"]}]
    assert len(r.stdout.encode()) < MAX_RESULT_BYTES + 1000  # the JSON a script reads
    shown = world.run("tool", "mcp_wire_big", "--chars", str(chars), "--text")
    assert shown.code == 0, shown.stderr
    assert len(shown.stdout.encode()) < MAX_RESULT_BYTES + 1000
    assert f"[truncated: the MCP server's result was {out['result_bytes']} bytes" in shown.stdout


def test_machine_call_of_a_builtin_never_imports_mcp(world: Env) -> None:
    configure(world, {"stub": stub()})
    (world.project / "n.txt").write_text("x\n")
    code = (
        "import sys; sys.argv=['fermix','tool','file_read','--json','{\"path\":\"n.txt\"}'];"
        "from fermix_cli.__main__ import main; rc=main();"
        "bad=[m for m in ('mcp','anyio','fermix_cli.mcp.client') if m in sys.modules];"
        "print(rc, bad, file=sys.stderr)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=world.env,
        cwd=world.project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.stderr.strip().endswith("0 []"), r.stderr


def test_an_mcp_tool_call_never_imports_the_sdk(world: Env, http_server: str) -> None:
    # The client is fermix's own wire layer: calling a server's tool never loads the SDK.
    configure(world, {"stub": web(http_server), "local": stub()}, extra=ALLOW_LOCAL)
    code = (
        "import sys, json; from fermix_cli.__main__ import main; rcs=[];"
        "sys.argv=['fermix','tool','mcp_local_echo','--json','{\"text\":\"x\"}']; rcs.append(main());"
        "bad=[m for m in sys.modules if m.split('.')[0] in ('mcp','mcp_types','anyio','httpx')];"
        "sys.argv=['fermix','tool','mcp_stub_add','--json','{\"a\":1,\"b\":2}']; rcs.append(main());"
        "bad+=[m for m in sys.modules if m.split('.')[0] in ('mcp','mcp_types')];"
        "print(rcs, bad, file=sys.stderr)"
    )  # (httpx itself loads anyio for a URL server; the stdio path loads neither)
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=world.env,
        cwd=world.project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.stderr.strip().endswith("[0, 0] []"), r.stderr


# ----- in-process: registry specs, deferral metadata, policy -----------------------------------------


@pytest.fixture
def loaded(world: Env, http_server: str) -> Iterator[tuple[Registry, Any]]:
    from fermix_cli.mcp.client import pool

    configure(world, {"stub": web(http_server)}, extra=ALLOW_LOCAL)
    reg = Registry(modules={})
    ctx = world.context()
    report = load_servers(reg, ctx)
    assert report.failed == {}
    yield reg, ctx
    ctx.close()
    pool().close()


def test_specs_are_deferred_mcp_tools(loaded: tuple[Registry, Any]) -> None:
    reg, ctx = loaded
    spec = reg.get("mcp_stub_add")
    assert spec.kind == "mcp" and spec.deferred is True and spec.category == "mcp"
    assert spec.policy_class == "external_api"
    assert spec.hints.read_only is True and spec.hints.idempotent is True and spec.hints.open_world is False
    assert reg.get("mcp_stub_echo").hints.open_world is True  # no annotations: assume the open world
    assert {"fermix", "coding"} <= spec.toolsets
    doc = tool_markdown(spec)
    assert doc.startswith("# mcp_stub_add\n") and "(mcp tool)" in doc and "`a` (integer, required)" in doc
    assert reg.invoke("mcp_stub_add", {"a": 1, "b": 2}, ctx)["structured_content"] == {"sum": 3}
    ok, text, _ = reg.invoke_for_model("mcp_stub_fail", {}, ctx)
    assert not ok and text == "mcp_tool_error: boom: the stub failed on purpose"


def test_policy_is_enforced_at_invoke(loaded: tuple[Registry, Any]) -> None:
    reg, ctx = loaded
    narrowed = ctx.derive(origin="subagent", policy_ceiling=frozenset({"read_only"}))
    with pytest.raises(ToolError) as e:
        reg.invoke("mcp_stub_add", {"a": 1, "b": 2}, narrowed)
    assert e.value.code == "policy_denied"
    only_echo = ctx.derive(allowed_tools=frozenset({"mcp_stub_echo"}))
    with pytest.raises(ToolError):
        reg.invoke("mcp_stub_add", {"a": 1, "b": 2}, only_echo)
    assert reg.invoke("mcp_stub_echo", {"text": "y"}, only_echo)["text"] == "y"


def test_loading_twice_keeps_the_first_registration(loaded: tuple[Registry, Any]) -> None:
    reg, ctx = loaded
    again = load_servers(reg, ctx)
    assert again.registered == [] and again.failed == {}


# ----- fermix talking to fermix --------------------------------------------------------------------


def test_fermix_mcp_serve_as_a_configured_server(world: Env) -> None:
    (world.project / "shared.txt").write_text("from the other side\n")
    configure(
        world,
        {
            "self": {
                "command": sys.executable,
                "args": ["-m", "fermix_cli", "mcp", "serve"],
                "env": {"PYTHONPATH": str(REPO), "FERMIX_HOME": str(world.fermix_home)},
                "cwd": str(world.project),
            }
        },
    )
    r = world.tool("mcp_self_file_read", {"path": "shared.txt"})
    assert r.code == 0, r.stderr
    assert r.json()["structured_content"]["content"].startswith("from the other side")
    r = world.tool("mcp_self_file_write", {"path": "x.txt", "content": "x"})
    assert r.code == 2 and r.error()["code"] == "unknown_tool"  # not served without --allow


# ----- a URL server, through the network guard -----------------------------------------------------


def test_url_server_needs_its_host_allowed(world: Env, http_server: str) -> None:
    configure(world, {"web": {"url": http_server}})
    r = world.tool("mcp_web_add", {"a": 1, "b": 1})
    assert r.code == 3 and r.error()["code"] == "blocked_url"
    assert "allowed_private_hosts" in r.error()["message"] and r.error()["details"]["server"] == "web"
    configure(world, {"web": {"url": http_server}}, extra=ALLOW_LOCAL)
    r = world.tool("mcp_web_add", {"a": 20, "b": 22})
    assert r.code == 0, r.stderr
    assert r.json()["structured_content"] == {"sum": 42}


def test_url_server_that_does_not_answer_is_unavailable(world: Env) -> None:
    configure(world, {"web": {"url": "http://127.0.0.1:9/mcp"}}, extra=ALLOW_LOCAL)  # the discard port
    r = world.tool("mcp_web_add", {"a": 1, "b": 1})
    assert r.code == 1 and r.error()["code"] == "mcp_unavailable", r.stderr
    assert "[mcp.servers.web]" in r.error()["message"]


def test_sse_server_through_the_guard(world: Env, sse_server: str) -> None:
    configure(world, {"old": {"url": sse_server, "transport": "sse"}}, extra=ALLOW_LOCAL)
    r = world.tool("mcp_old_add", {"a": 40, "b": 2})
    assert r.code == 0, r.stderr
    assert r.json()["structured_content"] == {"sum": 42}


def test_the_http_client_judges_every_request_through_the_guard() -> None:
    # Past the up-front host check: the client the wire layer uses refuses a private host by itself.
    from fermix_cli.mcp.wire import http_client

    with http_client([], {}) as client, pytest.raises(ToolError) as e:
        client.get("http://127.0.0.1:9/")
    assert e.value.code == "blocked_url"
    with http_client(["127.0.0.1"], {}) as client, pytest.raises(ToolError) as e:
        client.get("http://127.0.0.1:9/")  # allowed, and nothing listens on the discard port
    assert e.value.code in ("connect_failed", "network")


# ----- a model run: MCP tools deferred behind tool_search / tool_describe / tool_call ----------------


def _ask(world: Env, steps: list[list[dict[str, Any]]], *extra: str) -> dict[str, Any]:
    r = world.run("ask", "--json", "--provider", "echo", *extra, json.dumps({"tool_calls": steps}))
    assert r.code == 0, r.stderr
    return r.json()


def test_model_finds_and_calls_mcp_tools_through_the_bridges(world: Env, http_server: str) -> None:
    configure(world, {"stub": web(http_server)}, extra=ALLOW_LOCAL)
    out = _ask(
        world,
        [
            [{"name": "tool_search", "arguments": {"query": "add two integers sum"}}],
            [{"name": "tool_describe", "arguments": {"name": "mcp_stub_add"}}],
            [{"name": "tool_call", "arguments": {"name": "mcp_stub_add", "arguments": {"a": 2, "b": 3}}}],
            [{"name": "mcp_stub_echo", "arguments": {"text": "direct"}}],
        ],
    )
    echoed = json.loads(out["response"])
    # Deferred: the schemas stay off the wire; the names are listed in the system prompt.
    assert "tool_search" in echoed["tools"] and "mcp_stub_add" not in echoed["tools"]
    assert "- mcp_stub_add" in echoed["system"]
    results = [r["output"] for r in echoed["tool_results"]]
    search = json.loads(results[0])
    assert search["matches"][0]["name"] == "mcp_stub_add" and search["matches"][0]["plugin"] == "mcp"
    assert "# mcp_stub_add" in results[1] and '"a"' in results[1]
    assert json.loads(results[2]) == {"sum": 5}
    assert results[3] == "direct"
    # The loop unwraps tool_call: policy and the call log see the real tool.
    assert [c["name"] for c in out["tool_calls"]] == [
        "tool_search",
        "tool_describe",
        "mcp_stub_add",
        "mcp_stub_echo",
    ]
    assert all(c["ok"] for c in out["tool_calls"])


def test_model_run_policy_applies_to_mcp_tools(world: Env, http_server: str) -> None:
    configure(world, {"stub": web(http_server)}, extra=ALLOW_LOCAL)
    call = {"name": "tool_call", "arguments": {"name": "mcp_stub_add", "arguments": {"a": 1, "b": 1}}}
    r = world.run(
        "--trust", "guest", "ask", "--json", "--provider", "echo", json.dumps({"tool_calls": [call]})
    )
    assert r.code == 0, r.stderr
    results = json.loads(r.json()["response"])["tool_results"]
    assert results[0]["output"] == "unknown_tool: Unknown capability: mcp_stub_add"
    search = {"name": "tool_search", "arguments": {"query": "add"}}
    r = world.run(
        "--trust", "guest", "ask", "--json", "--provider", "echo", json.dumps({"tool_calls": [search]})
    )
    assert json.loads(json.loads(r.json()["response"])["tool_results"][0]["output"])["total_available"] == 0


def test_model_run_with_deferral_off_puts_mcp_schemas_inline(world: Env, http_server: str) -> None:
    configure(
        world,
        {"stub": web(http_server)},
        extra=ALLOW_LOCAL + "[fermix_core.tools.tool_search]\nenabled = false\n",
    )
    out = _ask(world, [[{"name": "mcp_stub_add", "arguments": {"a": 4, "b": 4}}]])
    echoed = json.loads(out["response"])
    assert "mcp_stub_add" in echoed["tools"] and "tool_search" not in echoed["tools"]
    assert json.loads(echoed["tool_results"][0]["output"]) == {"sum": 8}


def test_a_broken_server_does_not_stop_a_model_run(world: Env, http_server: str) -> None:
    configure(world, {"broken": stub("crash"), "stub": web(http_server)}, extra=ALLOW_LOCAL)
    out = _ask(world, [[{"name": "tool_search", "arguments": {"query": "echo text"}}]])
    search = json.loads(json.loads(out["response"])["tool_results"][0]["output"])
    assert any(m["name"] == "mcp_stub_echo" for m in search["matches"])
    assert "MCP server broken" in (world.fermix_home / "logs" / "fermix.log").read_text()
