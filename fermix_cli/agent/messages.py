"""The provider-neutral conversation: messages, tool calls, usage, and what a provider streams back.

Providers translate these to and from their wire formats; the loop, transcripts and renderers only
ever see these types.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Literal

from ..core.records import Record, field

Role = Literal["user", "assistant", "tool"]


def valid_unicode(text: str) -> str:
    """`text` as valid Unicode: a lone surrogate (a model's JSON can carry `\\ud800`; a tool's output
    can hold a name that is not UTF-8) becomes U+FFFD, so it can be stored, printed and sent on.
    A surrogate pair split across two code points is joined."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def escaped_surrogates(raw_json: str) -> str:
    """A tool call's raw JSON arguments with each lone surrogate written as JSON's `\\udXXX` escape:
    storable as UTF-8, and still refused by the tool's input check (not silently changed)."""
    if raw_json.isascii():
        return raw_json
    try:
        raw_json.encode("utf-8")
    except UnicodeEncodeError:
        return raw_json.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw_json


def new_call_id() -> str:
    """A fresh, globally unique tool-call id (also the `tool_calls` row id)."""
    return f"call_{uuid.uuid4().hex[:24]}"


class ToolCall(Record):
    """One call a model asked for. `wire_id` is the model's own id; `call_id` is unique everywhere."""

    name: str
    arguments: str
    wire_id: str
    call_id: str = field(default_factory=new_call_id)

    def parsed_arguments(self) -> Any:
        """The arguments as JSON when they parse, else the raw text (for display and logs)."""
        try:
            return json.loads(self.arguments) if self.arguments.strip() else {}
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
            return self.arguments

    def to_json(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "id": self.wire_id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolCall:
        return cls(
            name=data["name"], arguments=data["arguments"], wire_id=data["id"], call_id=data["call_id"]
        )


class OpaqueBlock(Record):
    """Part of a model's reply that only the provider that made it reads: kept verbatim with the reply and
    sent back with it (the Messages API's `thinking` and `redacted_thinking` blocks, whose signature the
    API checks). The loop and the transcript carry it without looking inside; other providers ignore it.

    `provider` and `model` say where it came from (a block goes back only to the model that wrote it);
    `after_calls` is how many of the reply's tool calls came before it (0: it opened the reply).
    """

    provider: str
    model: str
    data: dict[str, Any]
    after_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "after_calls": self.after_calls,
            "data": self.data,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OpaqueBlock:
        return cls(data["provider"], data["model"], data["data"], int(data.get("after_calls") or 0))


class Message(Record):
    """A turn of the conversation. Tool results carry the wire id of the call they answer."""

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    # Image files a tool result carries (a screenshot): sent as image blocks to a model that takes them.
    images: list[str] = field(default_factory=list)
    # An assistant reply's provider-only parts (thinking blocks), sent back as they came.
    opaque_blocks: list[OpaqueBlock] = field(default_factory=list)


class Usage(Record):
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens

    def to_json(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


class ToolSchema(Record, frozen=True):
    """A tool as a provider advertises it."""

    name: str
    description: str
    parameters: dict[str, Any]


class ModelRequest(Record):
    model: str
    system: str
    messages: list[Message]
    tools: list[ToolSchema]
    tool_choice: str | None = None  # auto, required, none, or the name of the one tool to call
    reasoning_effort: str | None = None  # none, low, medium, high, xhigh, max (providers that take one)


# ----- what a provider streams --------------------------------------------------------------------


class TextDelta(Record, frozen=True):
    text: str


class ToolCallEvent(Record, frozen=True):
    """A complete tool call (providers assemble streamed fragments before emitting it)."""

    wire_id: str | None
    name: str
    arguments: str


class OpaqueEvent(Record, frozen=True):
    """A block of the reply the provider needs back verbatim with the turn (see OpaqueBlock); never text
    for the person or the model's answer."""

    data: dict[str, Any]


class UsageEvent(Record, frozen=True):
    usage: Usage


class Finish(Record, frozen=True):
    reason: str


# Finish reasons of a reply that did not end by itself: cut off by the output (or context) limit
# (Chat Completions `length`, Messages `max_tokens`), or stopped by the provider's filter or policy.
CUT_OFF = frozenset({"length", "max_tokens", "model_context_window_exceeded"})
FILTERED = frozenset({"content_filter", "refusal"})


StreamEvent = TextDelta | ToolCallEvent | OpaqueEvent | UsageEvent | Finish


class ModelResponse(Record):
    """One model call, assembled from its stream."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = ""
    opaque_blocks: list[OpaqueBlock] = field(default_factory=list)
