"""A small MCP server for the client tests: `python stub_mcp_server.py [stdio|http PORT|sse PORT|crash]`."""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations

server = MCPServer("stub")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False))
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers and return their sum."""
    return {"sum": a + b}


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail() -> CallToolResult:
    """Always report an error."""
    return CallToolResult(
        content=[TextContent(type="text", text="boom: the stub failed on purpose")], is_error=True
    )


@server.tool()
def nap(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "awake"


@server.tool()
def environment() -> dict[str, str]:
    """Report the stub's token variable, a passed-through variable and its working directory."""
    return {
        "token": os.environ.get("STUB_TOKEN", ""),
        "passed": os.environ.get("STUB_PASSED", ""),
        "secret": os.environ.get("STUB_SECRET", ""),
        "cwd": os.getcwd(),
    }


@server.tool(name="weird.name/with spaces")
def weird() -> str:
    """A tool whose name needs cleaning."""
    return "ok"


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    print(f"stub MCP server starting ({mode})", file=sys.stderr, flush=True)
    if mode == "crash":
        sys.exit(3)
    if mode in ("http", "sse"):
        import uvicorn

        app = server.streamable_http_app() if mode == "http" else server.sse_app()
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run("stdio")
