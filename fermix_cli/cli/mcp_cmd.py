"""`fermix mcp serve|servers`: fermix as an MCP server, and the MCP servers fermix uses as a client."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from .common import context, emit_json, handles_errors

app = typer.Typer(
    help="Model Context Protocol: serve fermix's tools over stdio, and inspect configured MCP servers.",
    no_args_is_help=True,
)


@app.command("serve")
@handles_errors
def serve_cmd(
    allow: Annotated[
        list[str] | None,
        typer.Option(
            "--allow",
            metavar="TOOL",
            help="Also serve this shell or file-writing tool (off by default); repeat for more.",
        ),
    ] = None,
    list_only: Annotated[
        bool, typer.Option("--list", help="Print the tool names that would be served, then exit.")
    ] = False,
) -> None:
    """Serve the registry's tools over MCP on stdin/stdout, under the same policy as every other caller.

    Calls are model-driven (origin mcp, not attended). Shell, GUI and file-writing tools are off unless
    --allow names them. The global --home, --cwd, --session and --trust options apply.
    """
    from ..core.logs import setup_logging
    from ..core.registry import default_registry
    from ..mcp.server import serve_stdio, served_tools

    names = list(allow or [])
    if list_only:
        emit_json(served_tools(default_registry(), context, names))
        return
    setup_logging(context().paths.log_file)
    # The SDK's own warnings go to the fermix log too: stderr belongs to the MCP client.
    sdk_log, fermix_log = logging.getLogger("mcp"), logging.getLogger("fermix")
    sdk_log.handlers, sdk_log.propagate = list(fermix_log.handlers), False
    serve_stdio(default_registry(), context, names)


@app.command("servers")
@handles_errors
def servers_cmd(as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False) -> None:
    """List the MCP servers configured under [mcp.servers.NAME] (without starting them)."""
    cfg = context().config.mcp.servers
    rows = [
        {
            "name": name,
            "enabled": s.enabled,
            "transport": "stdio" if s.command else s.transport,
            "endpoint": s.url or " ".join([s.command or "", *s.args]).strip(),
            "policy_class": s.policy_class,
        }
        for name, s in sorted(cfg.items())
    ]
    if as_json:
        emit_json(rows)
        return
    if not rows:
        typer.echo("no MCP servers configured; add an [mcp.servers.NAME] block to config.toml")
    for r in rows:
        state = "" if r["enabled"] else "  (disabled)"
        typer.echo(f"{r['name']:<16} {r['transport']:<15} {r['endpoint']}{state}")


@app.command("tools")
@handles_errors
def tools_cmd(
    servers: Annotated[
        list[str] | None,
        typer.Argument(help="Server names (default: every enabled server).", metavar="SERVER"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Start the configured MCP servers and list their tools as fermix names (mcp_SERVER_TOOL).

    Call one with `fermix tool mcp_SERVER_TOOL --json '{...}'`; a model finds them through tool_search.
    Exit 1 when a server could not be started.
    """
    from ..mcp.toolset import McpToolset

    ctx = context()
    configured = ctx.config.mcp.servers
    unknown = sorted(set(servers or ()) - set(configured))
    if unknown:
        from ..core.errors import ToolError

        raise ToolError("usage", f"no [mcp.servers.{unknown[0]}] in config.toml", {"servers": unknown})
    toolset = McpToolset()
    loaded = toolset.load(ctx, only=list(servers) if servers else None)
    failed = toolset.failures()
    rows = [
        {
            "name": s.name,
            "server": toolset.owner(s.name),
            "policy_class": s.policy_class,
            "description": s.description,
        }
        for s in (loaded[n] for n in sorted(loaded))
    ]
    if as_json:
        emit_json({"tools": rows, "failed": failed})
    else:
        for row in rows:
            first = str(row["description"]).split("\n")[0][:100]
            typer.echo(f"{row['name']:<40} {row['policy_class']:<13} {first}")
        for name, why in sorted(failed.items()):
            typer.echo(f"{name}: {why}", err=True)
    raise typer.Exit(1 if failed else 0)
