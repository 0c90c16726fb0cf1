"""MCP client config: one `[mcp.servers.NAME]` block per server."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from ..core.config import EnvName, Name, Section
from ..core.params import Field, model_validator

McpServerName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")]


class McpServerConfig(Section):
    """One `[mcp.servers.NAME]` block: a stdio command (with args and env) or a URL, never both."""

    command: Name | None = None
    args: list[str] = []
    env: dict[EnvName, str] = {}
    env_passthrough: list[EnvName] = []
    cwd: Name | None = None
    url: Annotated[str, Field(pattern=r"^https?://", max_length=4096)] | None = None
    transport: Literal["streamable_http", "sse"] = "streamable_http"
    headers: dict[str, str] = {}
    enabled: bool = True
    tools: list[Name] | None = None
    policy_class: Literal["read_only", "read_write", "exec", "network", "external_api", "gui_control"] = (
        "external_api"
    )
    startup_timeout_ms: Annotated[int, Field(ge=100, le=600_000)] = 20_000
    call_timeout_ms: Annotated[int, Field(ge=100, le=3_600_000)] = 120_000

    @model_validator(mode="after")
    def _one_endpoint(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of command (a stdio server) or url (an HTTP server)")
        if self.url is None and (self.headers or self.transport != "streamable_http"):
            raise ValueError("headers and transport apply only to a url server")
        if self.command is None and (self.args or self.env or self.env_passthrough or self.cwd):
            raise ValueError("args, env, env_passthrough and cwd apply only to a command server")
        return self


CONFIG_SECTIONS = {"mcp.servers": dict[McpServerName, McpServerConfig]}
