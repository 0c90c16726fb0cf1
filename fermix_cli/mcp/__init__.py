"""MCP: fermix's tools served over stdio, and other MCP servers' tools registered as `mcp_<server>_<tool>`.

The `mcp` SDK costs about half a second to import, so only the modules that talk MCP import it, and only
inside functions; `fermix tool NAME` for a built-in never loads it.
"""
