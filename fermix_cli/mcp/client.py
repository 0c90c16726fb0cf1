"""fermix as an MCP client: each `[mcp.servers.NAME]` server's tools become tools `mcp_NAME_TOOL`.

They are ordinary `ToolSpec`s (kind "mcp", deferred, policy class from the server's config), offered
through the MCP toolset (`toolset.py`), so every call goes through `registry.invoke` and the policy layer
like any other tool; the handler forwards the arguments to the server over its session (`sessions.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.logs import logger
from ..core.params import ConfigDict
from ..core.records import Record, field
from ..core.registry import FailureMode, Hints, Params, Registry, ToolSpec
from ..core.toolsets import MCP_PREFIX
from .sessions import Connection, describe_error, pool, server_log, unavailable

if TYPE_CHECKING:
    from pathlib import Path

    from ..core.context import ToolContext
    from .config import McpServerConfig

log = logger("fermix.mcp.client")

PREFIX = MCP_PREFIX
MAX_NAME = 64  # what provider APIs accept for a function name
MEMBERSHIP = frozenset({"fermix", "coding"})  # the named toolsets MCP tools belong to
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# What one remote result may hand a model or a script: shell's output cap (1 MiB); more is cut, and said.
MAX_RESULT_BYTES = 1024 * 1024


def tool_name(server: str, remote: str) -> str | None:
    """`mcp_<server>_<tool>`, with characters providers refuse replaced; None when it would be too long."""
    name = f"{PREFIX}{server}_{_UNSAFE.sub('_', remote)}"
    return name if len(name) <= MAX_NAME else None


def fermix_names(server: str, remotes: list[str]) -> dict[str, str]:
    """Each remote tool's fermix name, unique: when two map to one name (`a.b` and `a_b`), a tool whose
    name needed no rewriting keeps it, else the first listed; the other gets `_` and 6 hex digits of a
    hash of its remote name. A name that would not fit is left out, a remote name listed twice counts
    once. Every rename or omission is logged."""
    import hashlib

    out: dict[str, str] = {}
    taken: dict[str, str] = {}  # fermix name -> remote
    exact = {r for r in remotes if tool_name(server, r) == f"{PREFIX}{server}_{r}"}
    for remote in [r for r in remotes if r in exact] + [r for r in remotes if r not in exact]:
        if remote in out:
            log.warning("MCP server %s: tool %r is listed twice; the second is ignored", server, remote)
            continue
        name = tool_name(server, remote)
        if name is None:
            log.warning("MCP server %s: tool %r skipped, its fermix name would be too long", server, remote)
            continue
        if name in taken:
            digest = hashlib.sha256(remote.encode("utf-8", "surrogatepass")).hexdigest()[:6]
            renamed = f"{name[: MAX_NAME - 7]}_{digest}"
            if renamed in taken:
                log.warning("MCP server %s: tool %r skipped, no unique fermix name for it", server, remote)
                continue
            log.warning(
                "MCP server %s: tools %r and %r both map to %s; %r is %s",
                server,
                taken[name],
                remote,
                name,
                remote,
                renamed,
            )
            name = renamed
        out[remote] = name
        taken[name] = remote
    return out


class McpArguments(Params):
    """Arguments for a remote tool: any object; the server's own JSON schema is checked in the handler."""

    model_config = ConfigDict(strict=True, extra="allow", defer_build=True)


# ----- registry tools -----------------------------------------------------------------------------


def _hints(annotations: Any) -> Hints:
    if not isinstance(annotations, dict):
        return Hints(open_world=True)
    read_only = annotations.get("readOnlyHint")
    return Hints(
        read_only=read_only is True,
        destructive=annotations.get("destructiveHint") is True if read_only is not True else False,
        idempotent=annotations.get("idempotentHint") is True,
        open_world=annotations.get("openWorldHint") is not False,
    )


def _schema(raw: Any) -> dict[str, Any]:
    schema = dict(raw or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def result_payload(result: dict[str, Any], cap: int = MAX_RESULT_BYTES) -> dict[str, Any]:
    """A CallToolResult as fermix returns it: the joined text, the content blocks, structured content.

    At most `cap` bytes of it in all (text as UTF-8, counted twice: it is both in `text` and in its
    `content` block; other blocks and structured content as JSON), kept in order: a text block past
    the cap is cut on a character boundary, any other block (an image, a resource) or structured
    content that does not fit whole is left out. A cut result says so: `truncated: true`,
    `result_bytes` (its full size, counted the same way) and `cap_bytes`.
    """
    content = result.get("content")
    blocks = [_without_nulls(b) for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    structured = result.get("structuredContent")
    budget, total, kept, texts = cap, 0, [], 0
    for block in blocks:
        if block.get("type") == "text":
            raw = str(block.get("text", "")).encode("utf-8", "surrogatepass")
            joint = 1 if texts else 0  # the newline that joins it to the text before, in `text`
            texts += 1
            size = joint + 2 * len(raw)
            total += size
            if size > budget:
                if budget <= joint:
                    continue
                block = {**block, "text": _utf8_prefix(raw, (budget - joint) // 2)}
                size = joint + 2 * len(block["text"].encode("utf-8", "surrogatepass"))
            budget -= size
            kept.append(block)
            continue
        size = _json_size(block)
        total += size
        if size <= budget:
            budget -= size
            kept.append(block)
    if structured is not None:
        size = _json_size(structured)
        total += size
        if size > budget:
            structured = None
    text = "\n".join(str(b.get("text", "")) for b in kept if b.get("type") == "text")
    out: dict[str, Any] = {"text": text, "content": kept}
    if structured is not None:
        out["structured_content"] = structured
    if total > cap:
        out.update(truncated=True, result_bytes=total, cap_bytes=cap)
    return out


def _utf8_prefix(raw: bytes, limit: int) -> str:
    """The longest whole-character prefix of UTF-8 `raw` within `limit` bytes."""
    end = limit
    while 0 < end < len(raw) and raw[end] & 0xC0 == 0x80:  # `end` would split a character
        end -= 1
    return raw[:end].decode("utf-8", "surrogatepass")


def _json_size(value: Any) -> int:
    import json

    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def truncation_note(payload: dict[str, Any]) -> str:
    """The line that tells a reader the result was cut ('' when it was not)."""
    if not payload.get("truncated"):
        return ""
    return (
        f"\n[truncated: the MCP server's result was {payload['result_bytes']} bytes; fermix keeps at most "
        f"{payload['cap_bytes']} (text cut, blocks that did not fit left out)]"
    )


def _render(payload: Any) -> str:
    import json

    if not isinstance(payload, dict):
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    if payload.get("text"):
        body = str(payload["text"])
    elif "structured_content" in payload:
        body = json.dumps(payload["structured_content"], ensure_ascii=False, separators=(",", ":"))
    else:
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return body + truncation_note(payload)


def _handler(name: str, server: str, remote: str, schema: dict[str, Any], conn: Connection) -> Any:
    def handle(params: McpArguments, ctx: ToolContext) -> dict[str, Any]:
        arguments = dict(params.model_extra or {})
        _validate(name, schema, arguments)
        try:
            result = conn.call(remote, arguments)
        except Exception as e:
            log_file = server_log(ctx.paths, server) if conn.config.command is not None else None
            raise _call_error(server, remote, e, log_file) from None
        payload = result_payload(result)
        if result.get("isError") is True:
            raise ToolError(
                "mcp_tool_error",
                (payload["text"] or f"{remote} on MCP server {server} reported an error")
                + truncation_note(payload),
                {"server": server, "tool": remote, "content": payload["content"]},
            )
        return payload

    return handle


def _validate(name: str, schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    import jsonschema

    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.exceptions.SchemaError:
        return  # the server's schema is broken; let the server judge the arguments
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(input)"
        raise ToolError(
            "invalid_input",
            f"{where}: {error.message}. Run: fermix tool {name} --schema",
            {"errors": [{"field": where, "message": error.message}]},
        )


def _call_error(server: str, remote: str, e: BaseException, log_file: Path | None = None) -> ToolError:
    from .wire import REQUEST_TIMEOUT, McpError

    if isinstance(e, ToolError):  # from the network guard: a refusal stays one, a lost connection is not
        return e if e.code == "blocked_url" else unavailable(server, e.message, log_file)
    if isinstance(e, TimeoutError):
        return ToolError(
            "timeout",
            f"{remote} on MCP server {server} did not answer in time",
            {"server": server, "tool": remote},
        )
    if isinstance(e, McpError):
        code = e.code
        if code == REQUEST_TIMEOUT:
            return ToolError(
                "timeout",
                f"{remote} on MCP server {server} did not answer in time",
                {"server": server, "tool": remote},
            )
        return ToolError(
            "mcp_error",
            f"MCP server {server}: {e.message}",
            {"server": server, "tool": remote, "code": code},
        )
    return unavailable(server, describe_error(e), log_file)


FAILURES = (
    FailureMode("mcp_tool_error", "the MCP server ran the tool and reported an error"),
    FailureMode("mcp_unavailable", "the MCP server could not be started or the connection was lost"),
    FailureMode("timeout", "the server did not answer within call_timeout_ms"),
    FailureMode("invalid_input", "the arguments do not match the tool's input schema"),
)


def specs_for(conn: Connection) -> list[ToolSpec]:
    """One deferred registry tool per remote tool, under the names `fermix_names` gives."""
    out: list[ToolSpec] = []
    names = fermix_names(conn.name, [str(t["name"]) for t in conn.tools])
    seen: set[str] = set()
    for tool in conn.tools:
        remote = str(tool["name"])
        name = names.get(remote)
        if name is None or remote in seen:
            continue
        seen.add(remote)
        schema = _schema(tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else None)
        annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else None
        title = (annotations or {}).get("title") or tool.get("title")
        description = (tool.get("description") or title or f"{remote} (MCP server {conn.name})").strip()
        if name != tool_name(conn.name, remote):  # renamed: say which remote tool it is
            description += f" (MCP tool {remote!r} on server {conn.name})"
        out.append(
            ToolSpec(
                name=name,
                category="mcp",
                policy_class=conn.config.policy_class,
                description=description,
                params=McpArguments,
                handler=_handler(name, conn.name, remote, schema, conn),
                hints=_hints(annotations),
                failure_modes=FAILURES,
                toolsets=MEMBERSHIP,
                kind="mcp",
                deferred=True,
                render=_render,
                _schema=schema,
            )
        )
    return out


# ----- starting servers --------------------------------------------------------------------------


class LoadReport(Record):
    registered: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def server_specs(name: str, config: McpServerConfig, ctx: ToolContext) -> tuple[Connection, list[ToolSpec]]:
    """Start server `name` (once per process) and make its tools; raises its `mcp_unavailable` error."""
    conn = pool().connect(name, config, ctx)
    return conn, specs_for(conn)


def load_servers(
    registry: Registry, ctx: ToolContext, *, only: Iterable[str] | None = None, strict: bool = False
) -> LoadReport:
    """Start the enabled servers (or just `only`) and register their tools in `registry`.

    Failures are reported; with `strict` a server that fails raises its `mcp_unavailable` error instead.
    (Runs reach MCP tools through the MCP toolset; this is for a registry of one's own, as in tests.)
    """
    report = LoadReport()
    servers = ctx.config.mcp.servers
    wanted = sorted(servers) if only is None else sorted(set(only))
    for name in wanted:
        config = servers.get(name)
        if config is None or not config.enabled:
            continue
        try:
            _, specs = server_specs(name, config, ctx)
        except ToolError as e:
            if strict:
                raise
            log.warning("MCP server %s skipped: %s", name, e.message)
            report.failed[name] = e.message
            continue
        for spec in specs:
            try:
                registry.register(spec)
            except ToolError:
                continue  # already registered in this process, or a clash with a built-in
            report.registered.append(spec.name)
    return report


def servers_for(name: str, servers: Iterable[str]) -> list[str]:
    """The configured servers an `mcp_<server>_<tool>` name may belong to, the one it means first.

    `mcp_a_b_c` is server a's `b_c` and server a_b's `c`: the longer server name wins when both have the
    tool; a server that has no such tool leaves the name to the next. The listing and a call by name
    both follow this order, so they always mean the same tool."""
    return sorted((s for s in servers if name.startswith(f"{PREFIX}{s}_")), key=lambda s: (-len(s), s))


def server_for(name: str, servers: Iterable[str]) -> str | None:
    """The longest configured server name an `mcp_<server>_<tool>` name starts with (the first candidate
    `servers_for` gives; when that server lacks the tool, the name may be another candidate's)."""
    matches = servers_for(name, servers)
    return matches[0] if matches else None
