"""`echo`: answers with its own input as JSON, and makes the tool calls a JSON prompt asks for.

A prompt such as `{"tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]}` makes the
first model call of the run emit that call; a list of lists emits one step per model call, and
`"repeat": true` repeats the last step forever. Once no step is left, the reply is a JSON object with
the prompt, the system prompt, the tool names offered and the tool results seen in this run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

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
from .base import chunk_text, word_count


class EchoProvider:
    def __init__(self, name: str = "echo") -> None:
        self.name = name

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        last_user = max((i for i, m in enumerate(request.messages) if m.role == "user"), default=-1)
        prompt = request.messages[last_user].content if last_user >= 0 else ""
        since = request.messages[last_user + 1 :]
        step = sum(1 for m in since if m.role == "assistant")
        usage_in = sum(word_count(m.content) for m in request.messages) + word_count(request.system)
        calls, text = _scripted_step(prompt, step)
        if calls is None:
            text = json.dumps(
                {
                    "prompt": prompt,
                    "system": request.system,
                    "model": request.model,
                    "tools": [t.name for t in request.tools],
                    "tool_results": [_result(m) for m in since if m.role == "tool"],
                    "previous_messages": max(last_user, 0),
                },
                ensure_ascii=False,
            )
        for piece in chunk_text(text):
            yield TextDelta(piece)
        for n, call in enumerate(calls or []):
            yield _call_event(call, step, n)
        yield UsageEvent(Usage(usage_in, word_count(text)))
        yield Finish("tool_calls" if calls else "stop")

    def close(self) -> None:
        pass


def _result(m: Message) -> dict[str, Any]:
    return {"id": m.tool_call_id, "name": m.tool_name, "output": m.content, "is_error": m.is_error}


def _scripted_step(prompt: str, step: int) -> tuple[list[Any] | None, str]:
    """The calls (and text) a JSON prompt asks for at this step, or (None, "") for the echo reply."""
    try:
        data = json.loads(prompt)
    except ValueError:
        return None, ""
    if not isinstance(data, dict) or not isinstance(data.get("tool_calls"), list) or not data["tool_calls"]:
        return None, ""
    steps = data["tool_calls"]
    if not all(isinstance(s, list) for s in steps):
        steps = [steps]
    if step >= len(steps):
        if data.get("repeat") is not True:
            return None, ""
        step = len(steps) - 1
    text = data.get("text")
    return list(steps[step]), text if isinstance(text, str) else ""


def _call_event(call: Any, step: int, n: int) -> ToolCallEvent:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise ToolError(
            "invalid_prompt",
            'echo: each tool call must be an object like {"name": "file_read", "arguments": {...}}',
            {"call": call},
        )
    args = call.get("arguments", {})
    raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    wire_id = call.get("id") if isinstance(call.get("id"), str) else f"echo_{step}_{n}"
    return ToolCallEvent(wire_id, call["name"], raw)
