"""`fermix mcp serve`: the registry over MCP, under the same policy, in-process and as a real subprocess."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from fermix_cli.core.context import ToolContext
from fermix_cli.core.params import Field
from fermix_cli.core.registry import Hints, Params, Registry, ToolSpec, default_registry
from fermix_cli.mcp.exposure import off_by_default, served_names, tool_annotations
from fermix_cli.mcp.server import build_server
from tests.conftest import Env

Session = Any


def with_session(
    registry: Registry,
    make_context: Callable[[], ToolContext],
    allow: list[str],
    body: Callable[[Session], Awaitable[Any]],
) -> Any:
    from mcp.client import Client

    async def main() -> Any:
        server = build_server(registry, make_context, allow)
        async with Client(server) as client:
            return await body(client)

    return anyio.run(main)


def listed(world: Env, allow: list[str] | None = None, **ctx: Any) -> dict[str, Any]:
    async def body(s: Session) -> dict[str, Any]:
        return {t.name: t for t in (await s.list_tools()).tools}

    return with_session(default_registry(), lambda: world.context(**ctx), allow or [], body)


def call(world: Env, name: str, args: Any, allow: list[str] | None = None, **ctx: Any) -> Any:
    async def body(s: Session) -> Any:
        return await s.call_tool(name, args)

    return with_session(default_registry(), lambda: world.context(**ctx), allow or [], body)


# ----- listing -----------------------------------------------------------------------------------


def test_lists_registry_tools_with_schemas_and_hints(world: Env) -> None:
    tools = listed(world)
    reg = default_registry()
    assert {"file_read", "glob_search", "content_search", "tool_help"} <= set(tools)
    assert "file_write" not in tools and "file_edit" not in tools  # file-writing: off by default
    for name, tool in tools.items():
        spec = reg.get(name)
        assert tool.input_schema == spec.input_schema()
        assert tool.description.startswith(spec.description)
        assert tool.annotations.read_only_hint is spec.hints.read_only
        assert tool.annotations.open_world_hint is spec.hints.open_world
        assert tool.meta == {"fermix/policy_class": spec.policy_class, "fermix/category": spec.category}


def test_allow_turns_file_writing_tools_on(world: Env) -> None:
    tools = listed(world, ["file_write"])
    assert "file_write" in tools and "file_edit" not in tools
    ann = tools["file_write"].annotations
    assert ann.read_only_hint is False and ann.destructive_hint is True and ann.idempotent_hint is True


def test_guest_sees_only_what_a_guest_may_run(world: Env) -> None:
    tools = listed(world, ["file_write"], trust="guest")
    assert "file_write" not in tools  # --allow never widens policy
    assert "file_read" not in tools  # owner only
    assert all(default_registry().get(n).policy_class == "read_only" for n in tools)


# ----- calls -------------------------------------------------------------------------------------


def test_call_goes_through_registry_invoke(world: Env) -> None:
    (world.project / "notes.txt").write_text("one\ntwo\n")  # relative paths start at the launch cwd
    r = call(world, "file_read", {"path": "notes.txt", "offset": 2})
    assert r.is_error is False
    direct = default_registry().invoke("file_read", {"path": "notes.txt", "offset": 2}, world.context())
    assert r.structured_content == direct
    assert r.content[0].text == default_registry().get("file_read").render_for_model(direct)


def test_calls_are_recorded_as_model_driven_mcp_calls(world: Env) -> None:
    call(world, "glob_search", {"pattern": "*.txt"})
    db = sqlite3.connect(world.fermix_home / "state.db")
    rows = db.execute("SELECT tool, origin, trust, ok FROM tool_calls").fetchall()
    assert rows == [("glob_search", "mcp", "operator", 1)]


def test_file_write_refused_unless_allowed(world: Env) -> None:
    r = call(world, "file_write", {"path": "x.txt", "content": "x"})
    assert r.is_error is True
    assert r.structured_content["error"]["code"] == "policy_denied"
    assert r.content[0].text.startswith("policy_denied: ")
    assert not (world.project / "x.txt").exists()
    r = call(world, "file_write", {"path": "x.txt", "content": "x"}, ["file_write"])
    assert r.is_error is False
    assert (world.project / "x.txt").read_text() == "x"


@pytest.mark.parametrize(
    ("name", "args", "code"),
    [
        ("file_read", {"path": 5}, "invalid_input"),
        ("file_read", {"path": "a", "bogus": 1}, "invalid_input"),
        ("no_such_tool", {}, "unknown_tool"),
        ("file_read", {"path": "/etc/passwd"}, "protected_path"),
        ("file_read", {"path": "missing.txt"}, "not_found"),
    ],
)
def test_errors_come_back_as_tool_errors(world: Env, name: str, args: dict[str, Any], code: str) -> None:
    r = call(world, name, args)
    assert r.is_error is True
    assert r.structured_content["error"]["code"] == code
    assert r.content[0].text.startswith(f"{code}: ")


# ----- exec and other classes, on a registry of stand-ins -----------------------------------------


class EchoParams(Params):
    text: str = Field(description="what to echo")


def _spec(name: str, policy_class: Any, category: str, hints: Hints | None = None) -> ToolSpec:
    return ToolSpec(
        name=name,
        category=category,
        policy_class=policy_class,
        description=f"{name} stand-in",
        params=EchoParams,
        handler=lambda p, ctx: {"echo": p.text, "origin": ctx.origin, "attended": ctx.attended},
        hints=hints or Hints(),
    )


@pytest.fixture
def standins() -> Registry:
    reg = Registry(modules={})
    for spec in (
        _spec("run_shell", "exec", "shell"),
        _spec("write_thing", "read_write", "filesystem", Hints(destructive=True)),
        _spec("remember", "read_write", "memory", Hints(idempotent=True)),
        _spec("wipe_memory", "read_write", "memory", Hints(destructive=True)),
        _spec("click", "gui_control", "gui"),
        _spec("fetch", "network", "web", Hints(read_only=True, open_world=True)),
        _spec("look", "read_only", "search", Hints(read_only=True)),
    ):
        reg.register(spec)
    return reg


def test_off_by_default_rules(standins: Registry) -> None:
    off = {s.name for s in standins.all() if off_by_default(s)}
    assert off == {"run_shell", "write_thing", "wipe_memory", "click"}
    assert served_names(standins, []) == {"remember", "fetch", "look"}
    assert served_names(standins, ["run_shell"]) == {"remember", "fetch", "look", "run_shell"}
    assert tool_annotations(standins.get("look"))["readOnlyHint"] is True
    assert "destructiveHint" not in tool_annotations(standins.get("look"))


def test_exec_tool_needs_allow_and_runs_unattended(world: Env, standins: Registry) -> None:
    async def body(s: Session) -> tuple[set[str], Any]:
        names = {t.name for t in (await s.list_tools()).tools}
        return names, await s.call_tool("run_shell", {"text": "hi"})

    names, r = with_session(standins, world.context, [], body)
    assert (
        "run_shell" not in names and r.is_error and r.structured_content["error"]["code"] == "policy_denied"
    )
    names, r = with_session(standins, world.context, ["run_shell"], body)
    assert "run_shell" in names and r.is_error is False
    assert r.structured_content == {"echo": "hi", "origin": "mcp", "attended": False}


def test_a_result_that_carries_images_sends_them_as_image_content(world: Env, tmp_path: Any) -> None:
    """Screenshots (a tool's declared `images`) reach an MCP client as image content, as they reach a
    model; a file that is not an image is named in a text block instead."""
    import base64

    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    (tmp_path / "shot.png").write_bytes(png)
    (tmp_path / "notes.png").write_text("not an image")
    reg = Registry(modules={})
    reg.register(
        ToolSpec(
            name="snap",
            category="gui",
            policy_class="read_only",
            description="snap stand-in",
            params=EchoParams,
            handler=lambda p, ctx: {"paths": [str(tmp_path / "shot.png"), str(tmp_path / p.text)]},
            images=lambda result: result["paths"],
        )
    )

    async def body(s: Session) -> Any:
        return await s.call_tool("snap", {"text": "notes.png"})

    r = with_session(reg, world.context, [], body)
    assert r.is_error is False
    kinds = [c.type for c in r.content]
    assert kinds == ["text", "image", "text"]
    assert r.content[1].mime_type == "image/png" and base64.b64decode(r.content[1].data) == png
    assert "not a PNG, JPEG, GIF or WebP image" in r.content[2].text


# ----- the real command over stdio ---------------------------------------------------------------


def stdio_session(world: Env, *serve_args: str, body: Callable[[Session], Awaitable[Any]]) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "fermix_cli", "mcp", "serve", *serve_args],
        env=world.env,
        cwd=str(world.project),
    )

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            info = await session.initialize()
            assert info.server_info.name == "fermix"
            return await body(session)

    return anyio.run(main)


def test_real_stdio_server(world: Env) -> None:
    async def body(s: Session) -> tuple[set[str], Any, Any]:
        names = {t.name for t in (await s.list_tools()).tools}
        wrote = await s.call_tool("file_write", {"path": "from-mcp.txt", "content": "hello\n"})
        read = await s.call_tool("file_read", {"path": "from-mcp.txt"})
        return names, wrote, read

    names, wrote, read = stdio_session(world, "--allow", "file_write", body=body)
    assert "file_write" in names and "file_edit" not in names
    assert wrote.is_error is False, wrote.content
    assert (world.project / "from-mcp.txt").read_text() == "hello\n"
    assert read.structured_content["content"].startswith("hello")


def test_serve_list_honours_global_trust(world: Env) -> None:
    operator = world.run("mcp", "serve", "--list")
    assert operator.code == 0, operator.stderr
    assert "file_read" in operator.json() and "file_write" not in operator.json()
    assert "file_write" in world.run("mcp", "serve", "--list", "--allow", "file_write").json()
    guest = world.run("--trust", "guest", "mcp", "serve", "--list")
    assert guest.code == 0 and "file_read" not in guest.json()


def test_allow_unknown_tool_is_a_usage_error(world: Env) -> None:
    r = world.run("mcp", "serve", "--allow", "no_such_tool")
    assert r.code == 2
    assert r.error()["code"] == "usage" and "no_such_tool" in r.error()["message"]


def test_real_stdio_server_with_the_sdks_high_level_client(world: Env) -> None:
    # `mcp.Client` probes server/discover first (the 2026-07-28 era) and falls back to initialize.
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "fermix_cli", "mcp", "serve"],
        env=world.env,
        cwd=str(world.project),
    )
    (world.project / "seen.txt").write_text("seen\n")

    async def main() -> tuple[str, Any]:
        async with Client(params) as client:
            return client.protocol_version, await client.call_tool("file_read", {"path": "seen.txt"})

    version, r = anyio.run(main)
    assert version == "2026-07-28", version  # the modern era, no initialize handshake
    assert r.is_error is False and r.structured_content["content"].startswith("seen")


# ----- lines the SDK cannot read still get an answer (the raw wire) -------------------------------


class RawWire:
    """`fermix mcp serve` driven line by line: bytes out exactly as given, each answer read with a deadline."""

    def __init__(self, world: Env, *serve_args: str) -> None:
        import subprocess

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fermix_cli", "mcp", "serve", *serve_args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=world.env,
            cwd=world.project,
        )
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        self.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}).encode())
        assert self.receive(60)["id"] == 0
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def receive(self, within: float = 20) -> dict[str, Any]:
        import select

        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], within)
        assert ready, f"no answer within {within} s"
        return dict(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


def call_line(rid: int, name: str, arguments: bytes) -> bytes:
    head = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call"}).encode()[:-1]
    return head + b',"params":{"name":"' + name.encode() + b'","arguments":' + arguments + b"}}"


# (line, the answer's id, the JSON-RPC error code or "tool" for an isError result, words in its message)
UNREADABLE = [
    (b"{not json", None, -32700, "malformed JSON"),
    (call_line(11, "file_write", b'{"path":"t.txt","content":"x"')[:-3], None, -32700, "malformed JSON"),
    (
        call_line(12, "file_write", b'{"path":"d1.txt","path":"d2.txt","content":"x"}'),
        12,
        "tool",
        "duplicate key 'path'",
    ),
    (
        call_line(13, "file_write", b'{"path":"n.txt","content":"x","n":NaN}'),
        13,
        "tool",
        "NaN is not valid JSON",
    ),
    (call_line(14, "file_write", b'{"path":"s.txt","content":"\\udc80"}'), 14, "tool", "surrogate"),
    (call_line(15, "file_write", b'{"path":"u.txt","content":"a\xff\xfeb"}'), 15, -32700, "not valid UTF-8"),
    (b'{"jsonrpc":"2.0","id":16,"method":"ping","params":{"x":Infinity}}', 16, -32700, "Infinity"),
    (b'{"jsonrpc":"2.0","id":17,"method":5}', 17, -32600, "method"),
    (b"[1, 2]", None, -32600, "not a valid MCP message"),
    (b"\xff\xfe", None, -32700, "not valid UTF-8"),
    # MCP ids are strings or integers: any other id is unreadable (-32600, id null), never a notification.
    *(
        (
            b'{"jsonrpc":"2.0","id":' + rid + b',"method":"ping"}',
            None,
            -32600,
            "is not a string or an integer",
        )
        for rid in (b"true", b"2.5", b"1.0", b"null", b"{}", b"[1]")
    ),
    (
        b'{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"file_write",'
        b'"arguments":{"path":"b.txt","content":"x"}}}',
        None,
        -32600,
        "the id true is not a string or an integer",
    ),
]


def test_every_unreadable_request_is_answered_and_runs_nothing(world: Env) -> None:
    """JSON-RPC 2.0: a line that is not JSON gets -32700 with id null; where the id can be read, the
    answer carries it. fermix's own JSON rules (no duplicate keys, NaN, Infinity, invalid UTF-8) hold
    on MCP as on the CLI; a refused tools/call answers as invalid arguments do, with an isError result."""
    from mcp.types import CallToolResult, jsonrpc_message_adapter

    wire = RawWire(world, "--allow", "file_write")
    try:
        for line, rid, code, words in UNREADABLE:
            wire.send(line)
            answer = wire.receive()
            jsonrpc_message_adapter.validate_python(answer)  # a well-formed message, by the SDK's model
            assert answer["id"] == rid, (line, answer)
            if code == "tool":
                result = CallToolResult.model_validate(answer["result"])
                assert result.is_error is True, (line, answer)
                assert result.structured_content is not None
                assert result.structured_content["error"]["code"] == "invalid_json"
                assert words in result.content[0].text, (line, answer)  # type: ignore[union-attr]
            else:
                assert answer["error"]["code"] == code, (line, answer)
                assert words in answer["error"]["message"], (line, answer)
        # The session is still in order, and the refused writes wrote nothing.
        wire.send(call_line(20, "file_write", b'{"path":"ok.txt","content":"ok"}'))
        assert wire.receive()["result"]["isError"] is False
    finally:
        wire.close()
    assert sorted(p.name for p in world.project.iterdir() if p.suffix == ".txt") == ["ok.txt"]
    logged = "".join(p.read_text() for p in (world.fermix_home / "logs").glob("*.log"))
    assert "MCP request 12 refused: duplicate key 'path'" in logged
    assert "MCP request None refused: the id 2.5 is not a string or an integer" in logged


def test_a_refused_line_just_before_end_of_input_is_answered(world: Env) -> None:
    wire = RawWire(world)
    wire.send(b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":1,"a":2}}')
    assert wire.proc.stdin is not None
    wire.proc.stdin.close()
    answer = wire.receive()
    assert answer["id"] == 3 and answer["error"]["code"] == -32700
    assert wire.proc.wait(30) == 0


def test_every_request_read_before_end_of_input_is_answered_once(world: Env) -> None:
    """`printf 'ping 2\\nping 4\\ntools/list 5\\n' | fermix mcp serve`: the SDK cancels what runs at end of
    input and drops what is queued; the server waits until all are answered, then exits."""
    wire = RawWire(world)
    assert wire.proc.stdin is not None and wire.proc.stdout is not None
    lines = [
        b'{"jsonrpc":"2.0","id":2,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":4,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":5,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":"6","method":"tools/call","params":{"name":"file_read","arguments":{"path":"x"}}}',
        b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":1,"a":2}}',  # refused: duplicate key
    ]
    wire.proc.stdin.write(b"".join(line + b"\n" for line in lines))
    wire.proc.stdin.close()
    assert wire.proc.wait(30) == 0
    answers = [json.loads(line) for line in wire.proc.stdout.read().splitlines()]
    assert sorted(str(a["id"]) for a in answers) == ["2", "4", "5", "6", "7"], answers
    by_id = {a["id"]: a for a in answers}
    assert by_id[2]["result"] == {} and by_id[4]["result"] == {}
    assert "file_read" in {t["name"] for t in by_id[5]["result"]["tools"]}
    assert by_id["6"]["result"]["isError"] is True  # no such file: answered, not dropped
    assert by_id[7]["error"]["code"] == -32700
