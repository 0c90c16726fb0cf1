"""fermix's MCP client wire layer (`fermix_cli.mcp.wire`), against a scripted server and the SDK as oracle."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.mcp import wire
from fermix_cli.mcp.client import result_payload
from fermix_cli.mcp.wire import McpError, Session, StdioTransport, sse_events

WIRE_SERVER = Path(__file__).with_name("wire_server.py")


def scripted(tmp_path: Path, *args: str) -> tuple[Session, Path]:
    log = tmp_path / "received.jsonl"
    transport = StdioTransport(
        sys.executable, [str(WIRE_SERVER), str(log), *args], dict(os.environ), None, stderr=2
    )
    return Session(transport), log


def received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture
def session(tmp_path: Path) -> Iterator[tuple[Session, Path]]:
    s, log = scripted(tmp_path)
    s.initialize(10)
    yield s, log
    s.close()


def test_handshake_offers_the_newest_version_then_says_initialized(session: tuple[Session, Path]) -> None:
    s, log = session
    assert s.protocol_version == "2025-11-25" and s.server_info["name"] == "wire"
    s.ping(10)  # a request after the handshake: the server has read the notification by now
    first, second, third = received(log)
    assert first["method"] == "initialize" and first["params"]["protocolVersion"] == wire.PROTOCOL_VERSION
    assert first["params"]["clientInfo"]["name"] == "fermix" and first["params"]["capabilities"] == {}
    assert second == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert third["method"] == "ping"


@pytest.mark.parametrize(
    ("version", "ok"), [("2024-11-05", True), ("2025-06-18", True), ("1999-01-01", False)]
)
def test_the_servers_version_is_accepted_only_when_known(tmp_path: Path, version: str, ok: bool) -> None:
    s, _ = scripted(tmp_path, version)
    try:
        if ok:
            s.initialize(10)
            assert s.protocol_version == version
        else:
            with pytest.raises(ConnectionError, match="1999-01-01"):
                s.initialize(10)
    finally:
        s.close()


def test_tools_are_listed_across_pages(session: tuple[Session, Path]) -> None:
    s, log = session
    assert [t["name"] for t in s.list_tools(10)] == [
        "add",
        "ask_back",
        "hang",
        "latin1",
        "latin1_no_id",
        "nested",
        "big",
        "a.b",
        "a_b",
    ]
    lists = [m for m in received(log) if m.get("method") == "tools/list"]
    assert "params" not in lists[0] and lists[1]["params"] == {"cursor": "page-2"}


def test_call_and_errors(session: tuple[Session, Path]) -> None:
    s, _ = session
    assert s.call_tool("add", {"a": 2, "b": 3}, 10)["structuredContent"] == {"sum": 5}
    with pytest.raises(McpError) as e:
        s.request("resources/list", None, 10)
    assert e.value.code == -32601 and "resources/list" in e.value.message


def test_the_client_answers_ping_and_refuses_what_it_does_not_offer(session: tuple[Session, Path]) -> None:
    s, _ = session
    got = s.call_tool("ask_back", {}, 10)["structuredContent"]
    assert got["s1"] == {"jsonrpc": "2.0", "id": "s1", "result": {}}
    assert got["s2"]["error"]["code"] == wire.METHOD_NOT_FOUND


def test_a_timed_out_call_is_cancelled(session: tuple[Session, Path]) -> None:
    s, log = session
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        s.call_tool("hang", {}, 0.2)
    assert time.monotonic() - started < 5
    s.ping(10)  # the session still works, and the server has read the cancellation by now
    messages = received(log)
    call = next(m for m in messages if m.get("method") == "tools/call")
    cancel = next(m for m in messages if m.get("method") == "notifications/cancelled")
    assert cancel["params"]["requestId"] == call["id"] and "no answer" in cancel["params"]["reason"]


@pytest.mark.parametrize("tool", ["latin1", "latin1_no_id"])
def test_an_answer_that_is_not_utf8_fails_its_request_at_once(
    session: tuple[Session, Path], tool: str
) -> None:
    """Never repaired, never dropped to time out: the waiting request fails, naming the bad byte (found
    by its id, or, when the id cannot be read, as the only request waiting)."""
    s, _ = session
    started = time.monotonic()
    with pytest.raises(McpError) as e:
        s.call_tool(tool, {}, 30)
    assert time.monotonic() - started < 10
    assert e.value.code == wire.PARSE_ERROR
    assert "not valid UTF-8 (byte 0xff at offset" in e.value.message
    assert s.call_tool("add", {"a": 1, "b": 2}, 10)["structuredContent"] == {"sum": 3}  # still in order


def test_an_answer_nested_too_deeply_fails_its_request_at_once(session: tuple[Session, Path]) -> None:
    """A line nested deeper than the parser follows fails the waiting request as a parse error (its id
    cannot be read), and the session reads on: the reader thread must not die of it."""
    s, _ = session
    started = time.monotonic()
    with pytest.raises(McpError) as e:
        s.call_tool("nested", {}, 30)
    assert time.monotonic() - started < 10
    assert e.value.code == wire.PARSE_ERROR and "nested too deeply" in e.value.message
    assert s.call_tool("add", {"a": 1, "b": 2}, 10)["structuredContent"] == {"sum": 3}  # still in order


CAP = 20


@pytest.mark.parametrize(
    ("result", "text", "blocks", "structured", "total"),
    [
        # (the server's result, the text kept, the blocks' types kept, structured content kept, full size)
        # Text counts twice (in `text` and in its block), plus a newline joining it to the text before.
        ({"content": [{"type": "text", "text": "0123456789"}]}, "0123456789", ["text"], None, None),
        ({"content": [{"type": "text", "text": "0123456789A"}]}, "0123456789", ["text"], None, 22),
        (
            {"content": [{"type": "text", "text": "\u20ac" * 4}]},
            "\u20ac" * 3,
            ["text"],
            None,
            24,
        ),  # not mid-€
        ({"content": [{"type": "text", "text": "ab\U0001f600" * 2}]}, "ab\U0001f600ab", ["text"], None, 24),
        (
            {"content": [{"type": "text", "text": "01234"}, {"type": "text", "text": "56789xyz"}]},
            "01234\n5678",
            ["text", "text"],
            None,
            27,
        ),
        (
            {"content": [{"type": "text", "text": "0123456789"}, {"type": "text", "text": "more"}]},
            "0123456789",
            ["text"],
            None,
            29,
        ),
        ({"content": [{"type": "image", "data": "QUJD" * 9, "mimeType": "image/png"}]}, "", [], None, 85),
        ({"content": [], "structuredContent": {"k": 1}}, "", [], {"k": 1}, None),  # 7 bytes: fits
        (
            {"content": [{"type": "text", "text": "0123"}], "structuredContent": {"k": "0123456789"}},
            "0123",
            ["text"],
            None,
            26,
        ),
    ],
)
def test_results_are_capped_on_character_boundaries(
    result: dict[str, Any], text: str, blocks: list[str], structured: Any, total: int | None
) -> None:
    out = result_payload(result, cap=CAP)
    assert out["text"] == text
    assert [b["type"] for b in out["content"]] == blocks
    assert out.get("structured_content") == structured
    if total is None:
        assert "truncated" not in out
    else:
        assert (out["truncated"], out["result_bytes"], out["cap_bytes"]) == (True, total, CAP)
    in_blocks = sum(len(b["text"].encode()) for b in out["content"] if b["type"] == "text")
    assert len(out["text"].encode()) + in_blocks <= CAP  # the whole payload, the text both times


MISSING_KEY = "echo 'error: MY_API_KEY is not set' >&2; exit 3"


def exiting_server(tmp_path: Path, script: str = MISSING_KEY) -> StdioTransport:
    """A server that exits at once, its stderr appended to a log that already holds an older run's lines."""
    log = tmp_path / "mcp-x.log"
    if not log.exists():
        log.write_text("an earlier run's last words\n")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        return StdioTransport("/bin/sh", ["-c", script], dict(os.environ), None, fd, str(log))
    finally:
        os.close(fd)


def test_a_server_that_exits_fails_the_waiting_request(tmp_path: Path) -> None:
    # The server may be gone before the request is written (the write fails) or after (its output
    # ends): either way the request fails saying how it ended and what it said last, every time.
    for _ in range(30):
        s = Session(exiting_server(tmp_path))
        with pytest.raises(ConnectionError) as caught:
            s.initialize(10)
        s.close()
        assert str(caught.value) == "the server exited (exit status 3): error: MY_API_KEY is not set"


def test_a_write_to_a_server_that_has_exited_says_how_it_ended(tmp_path: Path) -> None:
    transport = exiting_server(tmp_path)
    transport.proc.wait(10)  # gone before anything is written: the write itself fails
    with pytest.raises(ConnectionError, match=r"^the server exited \(exit status 3\): error: MY_API_KEY"):
        transport.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    transport.close()
    silent = exiting_server(tmp_path, "kill -9 $$")  # says nothing: the older run's line is not its own
    silent.proc.wait(10)
    with pytest.raises(ConnectionError, match=r"^the server exited \(killed by signal 9\)$"):
        silent.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    silent.close()


def test_close_ends_the_server_and_kills_one_that_ignores_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "STDIO_EXIT_GRACE_S", 0.3)
    polite, _ = scripted(tmp_path)
    polite.initialize(10)
    polite.close()
    assert polite.transport.proc.returncode == 0  # type: ignore[attr-defined]  # stdin closed: it exited
    stubborn, _ = scripted(tmp_path, "2025-11-25", "stubborn")
    stubborn.initialize(10)
    # Closing stdin alone does not end it here: hold its input open by a second writer.
    proc = stubborn.transport.proc  # type: ignore[attr-defined]
    keep = os.dup(proc.stdin.fileno())
    try:
        started = time.monotonic()
        stubborn.close()
        assert proc.returncode == -9 and time.monotonic() - started < 5  # SIGTERM ignored, then SIGKILL
    finally:
        os.close(keep)
    with pytest.raises(ConnectionError):
        stubborn.ping(1)


def test_sse_event_parsing() -> None:
    lines = [
        b"\xef\xbb\xbf: comment",
        b"event: endpoint",
        b"data: /messages/?s=1",
        b"",
        b'data: {"a":',
        b"data: 1}",
        b"",
        b"id: 7",
    ]
    assert list(sse_events(iter(lines))) == [("endpoint", b"/messages/?s=1"), ("message", b'{"a":\n1}')]


@pytest.mark.parametrize(
    "chunks",
    [
        [b"data: a\xff\r\n\r\ndata: b\n\ndata: c\r\rdata: d"],
        [b"data: a\xff\r", b"\n\r", b"\ndata: b\n", b"\nda", b"ta: c\r", b"", b"\r", b"data: d"],
    ],
)
def test_sse_lines_split_at_every_line_end_and_keep_the_bytes(chunks: list[bytes]) -> None:
    events = list(sse_events(wire.sse_lines(iter(chunks))))
    assert events == [("message", b"a\xff"), ("message", b"b"), ("message", b"c"), ("message", b"d")]


# ----- a scripted HTTP server: answers over SSE, byte for byte ----------------------------------------


def _http_answer(message: dict[str, Any]) -> bytes:
    """The scripted answer to a request: `latin1` answers in Latin-1 (bytes 0xff 0xfe), `ok` in UTF-8."""
    rid, method = message["id"], message["method"]
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bytes", "version": "0"},
        }
        return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
    if method == "tools/call" and message["params"]["name"] == "latin1":
        return b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"a\xff\xfeb"}]}}' % rid
    text = "\u00e9\u20ac" if method == "tools/call" else None
    result = {"content": [{"type": "text", "text": text}]} if text else {}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, ensure_ascii=False).encode()


@pytest.fixture
def sse_bytes_server() -> Iterator[str]:
    """Streamable HTTP at /mcp (every answer an SSE stream) and legacy HTTP+SSE at /sse + /messages."""
    import queue
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    events: queue.Queue[bytes] = queue.Queue()
    stopping = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _stream_head(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()

        def do_GET(self) -> None:
            self._stream_head()
            self.wfile.write(b"event: endpoint\r\ndata: /messages?s=1\r\n\r\n")
            self.wfile.flush()
            while not stopping.is_set():
                try:
                    data = events.get(timeout=0.1)
                except queue.Empty:
                    continue
                try:
                    self.wfile.write(b"event: message\r\ndata: " + data + b"\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    return

        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            is_request = "id" in message and "method" in message
            if self.path.startswith("/messages") or not is_request:
                self.send_response(202)
                self.end_headers()
                if is_request:
                    events.put(_http_answer(message))
                return
            self._stream_head()
            self.wfile.write(
                b": the answer follows\n\nevent: message\ndata: " + _http_answer(message) + b"\n\n"
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    stopping.set()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("kind", ["streamable", "sse"])
def test_an_sse_answer_that_is_not_utf8_fails_its_request(sse_bytes_server: str, kind: str) -> None:
    """Over SSE as over application/json: never repaired into U+FFFD and returned as a success."""
    client = wire.http_client(["127.0.0.1"], {})
    transport: wire.Transport = (
        wire.StreamableHttpTransport(sse_bytes_server + "/mcp", client)
        if kind == "streamable"
        else wire.SseTransport(sse_bytes_server + "/sse", client)
    )
    s = Session(transport)
    try:
        s.initialize(10)
        with pytest.raises(McpError) as e:
            s.call_tool("latin1", {}, 10)
        assert e.value.code == wire.PARSE_ERROR
        assert "not valid UTF-8 (byte 0xff at offset" in e.value.message
        ok = s.call_tool("ok", {}, 10)  # UTF-8 read whole, and the session still in order
        assert ok["content"] == [{"type": "text", "text": "\u00e9\u20ac"}]
    finally:
        s.close()


# ----- side by side with the SDK's own client, against the SDK stub ---------------------------------


def _sdk_view(url: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    import anyio
    from mcp.client import Client

    async def main() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with Client(url) as client:
            tools = [
                t.model_dump(mode="json", by_alias=True, exclude_none=True)
                for t in (await client.list_tools()).tools
            ]
            results = []
            for name, args in CALLS:
                r = await client.call_tool(name, args)
                results.append(r.model_dump(mode="json", by_alias=True, exclude_none=True))
            return tools, results

    return anyio.run(main)


CALLS = [("add", {"a": 2, "b": 40}), ("echo", {"text": "hi"}), ("fail", {})]


def test_same_tools_and_results_as_the_sdk_client(http_server: str) -> None:
    sdk_tools, sdk_results = _sdk_view(http_server)
    s = Session(wire.StreamableHttpTransport(http_server, wire.http_client(["127.0.0.1"], {})))
    try:
        s.initialize(20)
        ours = s.list_tools(20)
        assert [t["name"] for t in ours] == [t["name"] for t in sdk_tools]
        for mine, theirs in zip(ours, sdk_tools, strict=True):
            assert {k: v for k, v in mine.items() if v is not None} == theirs
        for (name, args), theirs in zip(CALLS, sdk_results, strict=True):
            mine = s.call_tool(name, args, 20)
            assert result_payload(mine) == result_payload(theirs)
            assert bool(mine.get("isError")) == bool(theirs.get("isError"))
    finally:
        s.close()


def test_sse_transport_against_the_sdk_stub(sse_server: str) -> None:
    s = Session(wire.SseTransport(sse_server, wire.http_client(["127.0.0.1"], {})))
    try:
        s.initialize(20)
        assert "add" in [t["name"] for t in s.list_tools(20)]
        assert s.call_tool("add", {"a": 1, "b": 2}, 20)["structuredContent"] == {"sum": 3}
    finally:
        s.close()
