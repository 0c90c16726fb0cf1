"""A scripted MCP stdio server in plain Python, for the wire layer's edge cases the SDK stub cannot show.

`python wire_server.py LOG [VERSION] [stubborn]`: every message received is appended to LOG (one JSON
line each); the server answers `initialize` with VERSION, lists its tools over two pages, and ignores
SIGTERM when `stubborn` (so the client has to kill it).
"""

from __future__ import annotations

import json
import signal
import sys

log_path = sys.argv[1]
version = sys.argv[2] if len(sys.argv) > 2 else "2025-11-25"
if "stubborn" in sys.argv[3:]:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

PAGES = {
    None: {"tools": [{"name": "add", "inputSchema": {"type": "object"}}], "nextCursor": "page-2"},
    "page-2": {
        "tools": [
            {"name": "ask_back", "inputSchema": {"type": "object"}},
            {"name": "hang"},
            {"name": "latin1"},
            {"name": "latin1_no_id"},
            {"name": "nested"},
            {"name": "big", "inputSchema": {"type": "object", "properties": {"chars": {"type": "integer"}}}},
            {"name": "a.b", "description": "Say a.b."},  # both become mcp_<server>_a_b
            {"name": "a_b", "description": "Say a_b."},
        ]
    },
}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def receive() -> dict | None:
    line = sys.stdin.readline()
    if not line:
        return None
    message = json.loads(line)
    with open(log_path, "a") as f:
        f.write(json.dumps(message) + "\n")
    return message


def answer(request: dict) -> None:
    method, rid, params = request["method"], request["id"], request.get("params") or {}
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "wire", "version": "0"},
                },
            }
        )
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": PAGES[params.get("cursor")]})
    elif method == "tools/call" and params["name"] == "add":
        total = params["arguments"]["a"] + params["arguments"]["b"]
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "content": [{"type": "text", "text": str(total)}],
                    "structuredContent": {"sum": total},
                },
            }
        )
    elif method == "tools/call" and params["name"] == "ask_back":
        # The server asks the client two things before it answers: a ping and a roots listing.
        send({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
        send({"jsonrpc": "2.0", "id": "s2", "method": "roots/list"})
        got = {}
        while len(got) < 2:
            reply = receive()
            if reply is None:
                return
            if reply.get("id") in ("s1", "s2"):
                got[reply["id"]] = reply
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [], "structuredContent": got}})
    elif method == "tools/call" and params["name"] in ("latin1", "latin1_no_id"):
        # An answer in Latin-1, not UTF-8: its text holds the bytes 0xff 0xfe; without its id, when asked.
        head = b'{"jsonrpc":"2.0",' + (b"" if params["name"] == "latin1_no_id" else b'"id":%d,' % rid)
        sys.stdout.buffer.write(head + b'"result":{"content":[{"type":"text","text":"a\xff\xfeb"}]}}\n')
        sys.stdout.buffer.flush()
    elif method == "tools/call" and params["name"] == "nested":
        # An answer nested deeper than a JSON parser follows.
        sys.stdout.write(f'{{"jsonrpc":"2.0","id":{rid},"result":' + "[" * 200_000 + "\n")
        sys.stdout.flush()
    elif method == "tools/call" and params["name"] == "big":
        text = "\u20ac" * params["arguments"]["chars"]  # three UTF-8 bytes each
        result = {"content": [{"type": "text", "text": text}], "structuredContent": {"echo": text}}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "tools/call" and params["name"] in ("a.b", "a_b"):
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": params["name"]}]}})
    elif method == "tools/call" and params["name"] == "hang":
        pass  # never answers: the client times out and cancels
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}})


while (message := receive()) is not None:
    if "method" in message and "id" in message:
        answer(message)
