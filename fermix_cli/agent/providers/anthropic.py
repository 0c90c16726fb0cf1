"""`anthropic`: the Messages API with streaming, tool use and extended thinking (anthropic_thinking.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ...core.errors import ToolError
from ..messages import (
    Finish,
    Message,
    ModelRequest,
    OpaqueEvent,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    Usage,
    UsageEvent,
)
from .anthropic_effort import effort_fields
from .anthropic_thinking import (
    StreamedThinking,
    assistant_blocks,
    blocks_for,
    is_complete,
    is_thinking,
    thinking_refusal,
)
from .http import ProviderHTTP, decode_json, interrupted, reported_error
from .images import inline_set, split_images, takes_images
from .sse import ERROR_FIELD, iter_sse

if TYPE_CHECKING:
    from ...core.context import ToolContext
    from . import ProviderChoice

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return {}
    return value if isinstance(value, dict) else {}


def wire_messages(
    messages: list[Message], *, vision: bool = True, provider: str | None = None, model: str = ""
) -> list[dict[str, Any]]:
    """Provider-neutral history as Messages API turns: tool results ride in user turns, same roles merge.

    A tool result's images go inside its `tool_result` as base64 image blocks. An assistant message's
    thinking blocks that `provider`'s `model` wrote go back with it, unmodified and first.
    """
    out: list[dict[str, Any]] = []
    inline = inline_set(messages, vision)
    for i, m in enumerate(messages):
        blocks: list[dict[str, Any]] = []
        role = "assistant" if m.role == "assistant" else "user"
        if m.role == "tool":
            sent, lines = split_images(messages, i, inline, vision)
            text = "\n".join([m.content, *lines]) if lines else m.content
            content: str | list[dict[str, Any]] = text
            if sent:
                content = [{"type": "text", "text": text}] if text else []
                content += [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": img.media_type, "data": img.data},
                    }
                    for img in sent
                ]
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id,
                    "content": content,
                    "is_error": m.is_error,
                }
            )
        elif m.role == "assistant":
            kept = blocks_for(m.opaque_blocks, provider, model)
            blocks = assistant_blocks(m.content, m.tool_calls, kept, _tool_input)
        elif m.content.strip():  # the API refuses a text block of whitespace only (HTTP 400)
            blocks.append({"type": "text", "text": m.content})
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def request_body(
    request: ModelRequest, max_tokens: int | None, *, vision: bool = True, provider: str | None = None
) -> dict[str, Any]:
    """The Messages API request; `provider` is the name thinking blocks were kept under (see wire_messages)."""
    messages = wire_messages(request.messages, vision=vision, provider=provider, model=request.model)
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
        "messages": messages,
        "stream": True,
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        if request.tool_choice is not None:
            body["tool_choice"] = wire_tool_choice(request.tool_choice)
    if request.reasoning_effort is not None:
        body.update(
            effort_fields(
                request.model,
                request.reasoning_effort,
                max_tokens=body["max_tokens"],
                explicit_max_tokens=max_tokens is not None,
                thinking_refused=thinking_refusal(request.tool_choice, bool(request.tools), messages),
            )
        )
    return body


def wire_tool_choice(choice: str) -> dict[str, str]:
    """`auto`, `none`, `required` (the Messages API's `any`), or the name of the tool to force."""
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def _input_tokens(usage: dict[str, Any]) -> int:
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(int(usage.get(k) or 0) for k in keys)


def _stream_error(provider: str, err: Any, where: str = "mid-stream") -> ToolError:
    kind = err.get("type", "") if isinstance(err, dict) else ""
    message = err.get("message", "") if isinstance(err, dict) else str(err)
    code = "rate_limited" if kind == "rate_limit_error" else "provider_error"
    return ToolError(code, f"{provider} reported {kind or 'an error'} {where}: {message}", {"type": kind})


def _is_error_event(data: str) -> bool:
    """The Messages API's own `error` event (`{"type": "error", "error": {...}}`)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return False
    return isinstance(doc, dict) and doc.get("type") == "error"


def parse_stream(events: Iterable[Any], provider: str) -> Iterator[StreamEvent]:
    """Messages API events (message_start, content_block_*, message_delta, ...) as stream events.

    Thinking never becomes text: a finished thinking or redacted_thinking block is one OpaqueEvent."""
    usage = Usage()
    blocks: dict[int, dict[str, Any]] = {}
    thinking = StreamedThinking()
    finish = ""
    stopped = False
    for event in events:
        if event.event == ERROR_FIELD and not _is_error_event(event.data):
            raise reported_error(provider, event.data)  # llama.cpp's server: an `error: {...}` field
        data = decode_json(event.data, provider)
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == "message_start":
            u = (data.get("message") or {}).get("usage") or {}
            usage = Usage(_input_tokens(u), int(u.get("output_tokens") or 0))
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            index = int(data.get("index", len(blocks)))
            if thinking.start(index, block):
                continue
            blocks[index] = {**block, "partial": ""}
            if block.get("type") == "text" and block.get("text"):
                yield TextDelta(block["text"])
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            if thinking.delta(int(data.get("index", 0)), delta):
                continue
            block = blocks.setdefault(int(data.get("index", 0)), {"type": "text", "partial": ""})
            if delta.get("type") == "text_delta" and delta.get("text"):
                yield TextDelta(delta["text"])
            elif delta.get("type") == "input_json_delta":
                block["partial"] += delta.get("partial_json", "")
        elif kind == "content_block_stop":
            kept = thinking.stop(int(data.get("index", 0)))
            if kept is not None:
                yield OpaqueEvent(kept)
            block = blocks.get(int(data.get("index", 0)), {})
            if block.get("type") == "tool_use":
                arguments = block["partial"] or json.dumps(block.get("input") or {})
                yield ToolCallEvent(block.get("id"), block.get("name", ""), arguments)
        elif kind == "message_delta":
            finish = (data.get("delta") or {}).get("stop_reason") or finish
            u = data.get("usage") or {}
            if "output_tokens" in u:
                usage.output_tokens = int(u["output_tokens"] or 0)
            if u.get("input_tokens"):
                usage.input_tokens = _input_tokens(u)
        elif kind == "error":
            raise _stream_error(provider, data.get("error"))
        elif kind == "message_stop":
            stopped = True
            break
    if not (stopped or finish):
        raise interrupted(provider, "message_stop")
    yield UsageEvent(usage)
    yield Finish(finish or "end_turn")


def parse_message(data: Any, provider: str) -> Iterator[StreamEvent]:
    """A non-streamed Message, as the same events."""
    if isinstance(data, dict) and data.get("type") == "error":
        raise _stream_error(provider, data.get("error"), "instead of a message")
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise ToolError("provider_error", f"{provider} sent a message without content", {})
    for block in data["content"]:
        if is_thinking(block):
            if is_complete(block):
                yield OpaqueEvent(dict(block))
        elif block.get("type") == "text" and block.get("text"):
            yield TextDelta(block["text"])
        elif block.get("type") == "tool_use":
            yield ToolCallEvent(block.get("id"), block.get("name", ""), json.dumps(block.get("input") or {}))
    u = data.get("usage") or {}
    yield UsageEvent(Usage(_input_tokens(u), int(u.get("output_tokens") or 0)))
    yield Finish(data.get("stop_reason") or "end_turn")


class AnthropicProvider:
    def __init__(self, choice: ProviderChoice, ctx: ToolContext) -> None:
        self.name = choice.name
        self.choice = choice
        key = choice.api_key()
        if key is None and choice.is_official:
            raise ToolError(
                "auth_failed",
                f"no API key for {choice.name}: export ANTHROPIC_API_KEY=..., or set "
                f"fermix_core.providers.{choice.name}.api_key (or api_key_env)",
                {"provider": choice.name},
            )
        self.headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
        }
        self.headers.update({k.lower(): v for k, v in choice.settings.headers.items()})
        if key:
            self.headers["x-api-key"] = key
        base = choice.base_url
        self.url = f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"
        self.http = ProviderHTTP(choice, ctx)
        self.vision = takes_images(choice)

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        body = request_body(request, self.choice.settings.max_tokens, vision=self.vision, provider=self.name)
        with self.http.post(self.url, self.headers, body) as response:
            kind = response.headers.get("content-type", "")
            if "json" in kind:
                raw = response.read().decode("utf-8", "replace")
                yield from parse_message(decode_json(raw, self.name), self.name)
                return
            if "html" in kind:
                raise self.http.not_an_event_stream(response, self.url)
            yield from parse_stream(iter_sse(response.iter_lines()), self.name)

    def close(self) -> None:
        self.http.close()
