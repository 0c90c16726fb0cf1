"""MCP: fermix's tools served over stdio, and other MCP servers' tools registered as `mcp_<server>_<tool>`.

The client side (`client`, `sessions`, `toolset`, `wire`) is fermix's own and never imports the `mcp`
SDK, whose client costs about two seconds of CPU to import; `fermix mcp serve` (`server`) uses the SDK.
"""
