"""Extended thinking on the Messages API: the blocks a reply carries, and how they go back with its turn.

With thinking on, a reply opens with `thinking` blocks (the summarised thinking and a `signature`) or
`redacted_thinking` blocks (encrypted `data`). While the model uses tools, the assistant message that
asked for them must come back with those blocks unmodified, first, before its `tool_use` blocks, in every
follow-up request of the turn (a tool-use loop is one assistant turn). The API checks each signature and
refuses (HTTP 400) a changed block, a dropped one, or a turn under way that did not start with thinking.

So the provider hands each complete block to the loop as an opaque block (`OpaqueEvent`), the loop keeps
it on the assistant message, the transcript stores it (a resumed session sends it too), and
`assistant_blocks` puts it back where it was. A block goes back only to the provider and model that wrote
it: another model cannot read it, and its signature is not valid there.

A request with `thinking: {type: enabled}` is refused when its `tool_choice` forces a tool, and when it
continues a turn that did not start with thinking; `thinking_refusal` names the case, and the budget is
then left off that request (the turn ends without thinking, the next one thinks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..messages import OpaqueBlock, ToolCall

THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})
FREE_CHOICES = frozenset({"auto", "none"})  # the tool_choice values that force no tool


def is_thinking(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in THINKING_TYPES


def is_complete(block: dict[str, Any]) -> bool:
    """A block the API takes back: thinking with its signature, redacted thinking with its data. A
    thinking block the output limit cut before its signature arrived cannot go back (it would be refused)."""
    key = "signature" if block.get("type") == "thinking" else "data"
    value = block.get(key)
    return isinstance(value, str) and bool(value)


class StreamedThinking:
    """Thinking blocks assembled from `content_block_start`, `thinking_delta` and `signature_delta` events,
    every other field of the block kept as the API sent it."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}

    def start(self, index: int, block: dict[str, Any]) -> bool:
        """Take a block that starts here; False when it is not a thinking block."""
        if not is_thinking(block):
            return False
        self.blocks[index] = dict(block)
        return True

    def delta(self, index: int, delta: dict[str, Any]) -> bool:
        """Add a thinking or signature delta to its block; False when the delta is neither."""
        kind = delta.get("type")
        key = {"thinking_delta": "thinking", "signature_delta": "signature"}.get(str(kind))
        if key is None:
            return False
        block = self.blocks.setdefault(index, {"type": "thinking"})
        piece = delta.get(key)
        if isinstance(piece, str):
            block[key] = str(block.get(key) or "") + piece
        return True

    def stop(self, index: int) -> dict[str, Any] | None:
        """The finished block at `index` if it is one to send back, else None."""
        block = self.blocks.pop(index, None)
        return block if block is not None and is_complete(block) else None


def assistant_blocks(
    text: str, calls: Sequence[ToolCall], kept: Sequence[OpaqueBlock], tool_input: Any
) -> list[dict[str, Any]]:
    """An assistant message's content: its thinking blocks first (a block the model wrote after a tool call
    stays after that call), then the text, then the tool_use blocks. `tool_input` turns a call's arguments
    into the `input` object."""
    placed: dict[int, list[dict[str, Any]]] = {}
    for b in kept:
        placed.setdefault(min(max(b.after_calls, 0), len(calls)), []).append(b.data)
    blocks: list[dict[str, Any]] = list(placed.get(0, []))
    if text.strip():  # the API refuses a text block of whitespace only (HTTP 400)
        blocks.append({"type": "text", "text": text})
    for n, c in enumerate(calls, 1):
        blocks.append({"type": "tool_use", "id": c.wire_id, "name": c.name, "input": tool_input(c.arguments)})
        blocks.extend(placed.get(n, []))
    return blocks


def blocks_for(blocks: Sequence[OpaqueBlock], provider: str | None, model: str) -> list[OpaqueBlock]:
    """The thinking blocks `provider`'s `model` wrote: the only ones it can be sent."""
    if provider is None:
        return []
    return [b for b in blocks if b.provider == provider and b.model == model and is_thinking(b.data)]


def _answers_calls(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def turn_started_without_thinking(messages: Sequence[dict[str, Any]]) -> bool:
    """Whether the request continues a turn (its last message answers tool calls) whose first assistant
    message does not open with a thinking block: the API refuses thinking for such a request.

    A user message that answers tool calls continues the turn even when it also carries new text (a
    resumed session's next prompt rides with the last results)."""
    if not messages or messages[-1].get("role") != "user" or not _answers_calls(messages[-1]):
        return False
    start = 0
    for i, m in enumerate(messages):
        if m.get("role") == "user" and not _answers_calls(m):
            start = i + 1
    first = next((m for m in messages[start:] if m.get("role") == "assistant"), None)
    if first is None:
        return False
    content = first.get("content")
    return not (isinstance(content, list) and content and is_thinking(content[0]))


def thinking_refusal(
    tool_choice: str | None, has_tools: bool, messages: Sequence[dict[str, Any]]
) -> str | None:
    """Why this request cannot carry `thinking: {type: enabled}`, or None when it can."""
    if has_tools and tool_choice is not None and tool_choice not in FREE_CHOICES:
        return (
            f"extended thinking cannot go with a tool_choice that forces a tool ({tool_choice!r}); the turn "
            "it starts runs without thinking"
        )
    if turn_started_without_thinking(messages):
        return "the turn under way started without thinking, so it ends without thinking"
    return None
