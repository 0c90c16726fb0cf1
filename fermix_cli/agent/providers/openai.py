"""`openai`: the Chat Completions API with streaming and tool calls, at any OpenAI-compatible base URL
(OpenAI, Ollama, llama.cpp's server, vLLM, LM Studio, OpenRouter)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ...core.errors import ToolError
from ..messages import (
    Finish,
    Message,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    Usage,
    UsageEvent,
)
from .calls import ToolCallAssembler
from .http import ProviderHTTP, decode_json, error_text, interrupted, reported_error
from .images import inline_set, split_images, takes_images
from .profiles import SchemaProfile, apply_profile, profile_for
from .sse import ERROR_FIELD, iter_sse

if TYPE_CHECKING:
    from ...core.context import ToolContext
    from . import ProviderChoice


def wire_messages(system: str, messages: list[Message], *, vision: bool = False) -> list[dict[str, Any]]:
    """Provider-neutral history as Chat Completions messages.

    A tool message takes text only, so the images tool results carry follow the run of tool messages
    as one user message of image parts (or, for a model without vision, a line naming each file).
    """
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    inline = inline_set(messages, vision)
    pending: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if m.role != "tool" and pending:
            out.append({"role": "user", "content": pending})
            pending = []
        if m.role == "user":
            out.append({"role": "user", "content": m.content})
        elif m.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                # "" rather than null: llama.cpp's server answers HTTP 500 to a null content, and
                # leaving the field out fails there too; OpenAI, vLLM and Ollama accept "".
                item["content"] = m.content
                item["tool_calls"] = [
                    {
                        "id": c.wire_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": wire_arguments(c.arguments)},
                    }
                    for c in m.tool_calls
                ]
            out.append(item)
        else:
            sent, lines = split_images(messages, i, inline, vision)
            content = "\n".join([m.content, *lines]) if lines else m.content
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": content})
            if sent:
                pending.append(
                    {
                        "type": "text",
                        "text": f"Image(s) returned by tool call {m.tool_call_id} ({m.tool_name}):",
                    }
                )
                pending += [{"type": "image_url", "image_url": {"url": img.data_url}} for img in sent]
    if pending:
        out.append({"role": "user", "content": pending})
    return out


def wire_arguments(raw: str) -> str:
    """A call's arguments as the wire takes them: always a JSON object. Ollama and llama.cpp's server
    parse every call in the history and refuse the whole request over one that is not an object (a
    model's broken JSON); the transcript keeps the raw text, and the tool's answer said what was wrong."""
    try:
        value = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return "{}"
    return raw if isinstance(value, dict) else "{}"


def request_body(
    request: ModelRequest, max_tokens: int | None, profile: SchemaProfile = "full", *, vision: bool = False
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model,
        "messages": wire_messages(request.system, request.messages, vision=vision),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": apply_profile(t.parameters, profile),
                },
            }
            for t in request.tools
        ]
        if request.tool_choice is not None:
            body["tool_choice"] = wire_tool_choice(request.tool_choice)
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if request.reasoning_effort is not None:
        # Chat Completions' levels; fermix's `max` is the highest one the API names.
        body["reasoning_effort"] = "xhigh" if request.reasoning_effort == "max" else request.reasoning_effort
    return body


def wire_tool_choice(choice: str) -> Any:
    """`auto`, `required` and `none` as they are; any other value forces the tool of that name."""
    if choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _usage(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    return Usage(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))


def parse_stream(events: Iterable[Any], provider: str) -> Iterator[StreamEvent]:
    """Chat Completions SSE chunks (`data: {...}` ... `data: [DONE]`) as stream events.

    A stream is complete once it has sent a `finish_reason` or `[DONE]`; one that stops before either
    was cut off, and its tool calls (perhaps incomplete) are never passed on.
    """
    calls = ToolCallAssembler()
    usage: Usage | None = None
    finish = ""
    done = False
    for event in events:
        if event.event == ERROR_FIELD:  # llama.cpp's server: `error: {...}`, then `data: [DONE]`
            raise reported_error(provider, event.data)
        if event.data.strip() == "[DONE]":
            done = True
            break
        chunk = decode_json(event.data, provider)
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error"):
            raise reported_error(provider, event.data)
        usage = _usage(chunk.get("usage")) or usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str) and delta["content"]:
                yield TextDelta(delta["content"])
            for fragment in delta.get("tool_calls") or []:
                calls.add(fragment)
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    if not (done or finish):
        raise interrupted(provider, "a finish_reason or data: [DONE]")
    yield from calls.events()
    if usage is not None:
        yield UsageEvent(usage)
    yield Finish(finish or "stop")


def parse_completion(data: Any, provider: str) -> Iterator[StreamEvent]:
    """A non-streamed completion (servers that ignore `stream`), as the same events."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices:
        said = error_text(data)
        if said:  # an error document with HTTP 200 (OpenRouter: out of credits, upstream failures)
            raise ToolError("provider_error", f"{provider} answered with an error: {said}", {})
        raise ToolError("provider_error", f"{provider} sent a completion without choices", {})
    message = choices[0].get("message") or {}
    if message.get("content"):
        yield TextDelta(str(message["content"]))
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        args = fn.get("arguments", "")
        raw = args if isinstance(args, str) else json.dumps(args)
        yield ToolCallEvent(call.get("id") or None, fn.get("name", ""), raw)
    usage = _usage(data.get("usage"))
    if usage is not None:
        yield UsageEvent(usage)
    yield Finish(choices[0].get("finish_reason") or "stop")


class OpenAIProvider:
    def __init__(self, choice: ProviderChoice, ctx: ToolContext) -> None:
        self.name = choice.name
        self.choice = choice
        key = choice.api_key()
        if key is None and choice.is_official:
            raise ToolError(
                "auth_failed",
                f"no API key for {choice.name}: export OPENAI_API_KEY=..., or set "
                f"fermix_core.providers.{choice.name}.api_key (or api_key_env)",
                {"provider": choice.name},
            )
        self.headers = {"content-type": "application/json", "accept": "text/event-stream"}
        self.headers.update({k.lower(): v for k, v in choice.settings.headers.items()})
        if key:
            self.headers["authorization"] = f"Bearer {key}"
        self.url = f"{choice.base_url}/chat/completions"
        self.http = ProviderHTTP(choice, ctx)
        self.profile = profile_for(choice)
        self.vision = takes_images(choice)

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        body = request_body(request, self.choice.settings.max_tokens, self.profile, vision=self.vision)
        with self.http.post(self.url, self.headers, body) as response:
            kind = response.headers.get("content-type", "")
            if "json" in kind:
                raw = response.read().decode("utf-8", "replace")
                yield from parse_completion(decode_json(raw, self.name), self.name)
                return
            if "html" in kind:
                raise self.http.not_an_event_stream(response, self.url)
            yield from parse_stream(iter_sse(response.iter_lines()), self.name)

    def close(self) -> None:
        self.http.close()
