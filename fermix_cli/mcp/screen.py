"""`fermix mcp serve`'s input check: a line the SDK would drop unanswered gets an answer instead.

The SDK's stdio transport parses each line itself and drops, silently, one it cannot read: the client
then waits for ever. It also reads JSON more loosely than fermix (duplicate keys, NaN). So each line
is checked first, with fermix's own parser (`core/jsonin`, the one `registry.invoke` uses), then with
the SDK's own message model:

- not valid UTF-8: a -32700 Parse error; nothing runs;
- a message whose `id` is not a string or an integer (`null`, `true`, `1.0`, `{}`): a -32600 Invalid
  Request with `id: null` (the SDK would read it as a notification and never answer);
- not JSON by fermix's rules, or not a message the SDK accepts (a lone surrogate such as `\\udc80`,
  a wrong field): a `tools/call` request gets its tool error as an `isError` result, as invalid
  arguments always do; any other request a -32700 Parse error or -32600 Invalid Request.

An answer carries the request's id when a lenient read of the line finds one, else `id: null` (JSON-RPC
2.0). A failing notification or response is only logged: JSON-RPC never answers those. A refused
`tools/call` goes on to the SDK rewritten as a call of `REFUSED_CALL` that carries the error, so the
SDK shapes the result for the session's protocol revision; the handler answers it and runs nothing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.jsonin import parse_json
from ..core.logs import logger

if TYPE_CHECKING:
    from mcp.types import JSONRPCError

log = logger("fermix.mcp.server")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# Never a registry tool's name (those are snake_case): the rewritten call of a refused tools/call.
REFUSED_CALL = "fermix/refused-input"


def screen(raw: bytes) -> str | JSONRPCError | None:
    """What to do with one input line: the line for the SDK, an error to send back, or None (nothing)."""
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        where = f"byte 0x{raw[e.start]:02x} at offset {e.start}"
        problem = ToolError("invalid_json", f"the message is not valid UTF-8 ({where}); send UTF-8 text")
        return _refuse(raw.decode("utf-8", "surrogateescape"), PARSE_ERROR, problem, as_tool_result=False)
    try:
        message = parse_json(text)
    except ToolError as e:
        return _refuse(text, PARSE_ERROR, e)
    if isinstance(message, dict) and "id" in message and not _is_request_id(message["id"]):
        # The SDK reads a request with such an id as a notification (its model allows extra fields)
        # and never answers; JSON-RPC 2.0 answers -32600 with id null, and MCP ids are never null.
        shown = json.dumps(message["id"], ensure_ascii=False)[:40]
        problem = ToolError("invalid_json", f"the id {shown} is not a string or an integer; send one that is")
        return _refuse(text, INVALID_REQUEST, problem)
    from mcp.types import jsonrpc_message_adapter
    from pydantic import ValidationError

    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as e:
        first = e.errors()[0] if e.errors() else {"msg": str(e), "loc": ()}
        where = ".".join(str(p) for p in first.get("loc", ()))
        reason = f"{first['msg']} (at {where})" if where else str(first["msg"])
        return _refuse(text, INVALID_REQUEST, ToolError("invalid_json", f"not a valid MCP message: {reason}"))
    return text


def _refuse(
    text: str, code: int, problem: ToolError, *, as_tool_result: bool = True
) -> str | JSONRPCError | None:
    from mcp.types import ErrorData, JSONRPCError

    message = _lenient(text)
    answerable = not isinstance(message, dict) or ("id" in message and "method" in message)
    if not answerable and ("method" in message or "result" in message or "error" in message):
        log.warning("MCP input dropped (a notification or response: JSON-RPC answers neither): %s", problem)
        return None
    request_id = _request_id(message)
    log.warning("MCP request %r refused: %s", request_id, problem.message)
    if as_tool_result and request_id is not None and message.get("method") == "tools/call":
        line = _refused_call(message, request_id, problem)
        if line is not None:
            return line
    label = "Parse error" if code == PARSE_ERROR else "Invalid Request"
    return JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=ErrorData(code=code, message=f"{label}: {problem.message}", data=problem.to_dict()),
    )


def _lenient(text: str) -> Any:
    """The line read as Python's json reads it (last duplicate wins, NaN allowed), None when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _request_id(message: Any) -> int | str | None:
    """The id of a request, when `message` is one whose id JSON-RPC allows (a string or an integer)."""
    if not isinstance(message, dict) or "method" not in message:
        return None
    rid = message.get("id")
    return rid if _is_request_id(rid) else None


def _is_request_id(value: Any) -> bool:
    """Whether `value` is an id MCP allows: a string or an integer (never null, a boolean or a float)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _refused_call(message: dict[str, Any], request_id: int | str, problem: ToolError) -> str | None:
    """The tools/call rewritten as a call of REFUSED_CALL carrying `problem`, or None if the SDK would
    not take even that (then the caller answers with a JSON-RPC error)."""
    from mcp.types import jsonrpc_message_adapter
    from pydantic import ValidationError

    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    refused: dict[str, Any] = {"name": REFUSED_CALL, "arguments": {"error": problem.to_dict()}}
    for extra in ({"_meta": meta}, {}) if meta is not None else ({},):  # _meta carries the revision
        line = json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {**extra, **refused}},
            ensure_ascii=False,
        )
        try:
            jsonrpc_message_adapter.validate_json(line, by_name=False)
        except (ValidationError, UnicodeEncodeError):
            continue
        return line
    return None


def refusal(arguments: Any) -> ToolError:
    """The error a REFUSED_CALL carries."""
    error = arguments.get("error") if isinstance(arguments, dict) else None
    if not isinstance(error, dict):
        return ToolError("invalid_json", "the request could not be read", {})
    details = error.get("details")
    return ToolError(
        str(error.get("code", "invalid_json")),
        str(error.get("message", "")),
        details if isinstance(details, dict) else {},
    )
